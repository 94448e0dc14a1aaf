"""The one registry mechanism (gradebench.registry): lazy built-ins, plugins, errors, suggestions.

The generic tests build throwaway packages under ``tmp_path``; the last ones check that the
real registries (builders, scorers, losses, metrics, recipes) use it with no hand-kept table.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
import uuid
from importlib import metadata
from pathlib import Path

import pytest

import gradebench.registry as registry_module
from gradebench.errors import DuplicateNameError, GradebenchError, InvalidArgumentError, UnknownNameError
from gradebench.registry import Registry, package_modules, plural_of, suggest
from tests.conftest import REPO

GROUP = "gradebench.test-widgets"


@pytest.fixture
def make_package(tmp_path, monkeypatch):
    """``make_package({"alpha.py": source, ...})`` -> the name of a fresh importable package.

    ``PKG`` in a source stands for the package's name; its ``__init__`` defines ``REG``, a
    widget registry whose built-ins are the package's public modules.
    """
    monkeypatch.syspath_prepend(str(tmp_path))
    made: list[str] = []

    def make(files: dict[str, str], init: str | None = None) -> str:
        name = f"regtest_{uuid.uuid4().hex[:12]}"
        root = tmp_path / name
        root.mkdir()
        init = init or (
            "from gradebench.registry import Registry, package_modules\n"
            f"REG = Registry('widget', builtins=lambda: package_modules(__name__), entry_points={GROUP!r})\n"
        )
        (root / "__init__.py").write_text(init)
        for rel, source in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(source).replace("PKG", name))
        made.append(name)
        return name

    yield make
    for mod in [m for m in sys.modules if m.split(".")[0] in made]:
        del sys.modules[mod]


@pytest.fixture
def entry_points(monkeypatch):
    """Fake installed plugins: ``entry_points([(name, value, group), ...])``; returns the call log."""
    calls: list[str] = []

    def install(eps: list[tuple[str, str, str]]) -> list[str]:
        fakes = [metadata.EntryPoint(name=n, value=v, group=g) for n, v, g in eps]

        def fake(*, group: str) -> list[metadata.EntryPoint]:
            calls.append(group)
            return [ep for ep in fakes if ep.group == group]

        monkeypatch.setattr(registry_module.metadata, "entry_points", fake)
        return calls

    return install


WIDGETS = {
    "alpha.py": """
        from PKG import REG

        @REG.register("alpha")
        class Alpha:
            pass
    """,
    "beta_gamma.py": """
        from PKG import REG

        @REG.register("beta-gamma")
        class BetaGamma:
            pass

        @REG.register("delta")
        class Delta:
            pass
    """,
    "_private.py": """
        from PKG import REG

        REG.add("hidden", object())
    """,
}


def _imported(pkg: str) -> set[str]:
    return {m.removeprefix(pkg + ".") for m in sys.modules if m.startswith(pkg + ".")}


def _registry(pkg: str) -> Registry:
    __import__(pkg)
    return sys.modules[pkg].REG


# -- lazy built-ins ----------------------------------------------------------------------------------------


def test_builtins_are_imported_on_first_lookup_only_and_the_named_module_first(make_package, entry_points):
    calls = entry_points([])
    pkg = make_package(WIDGETS)
    reg = _registry(pkg)
    assert _imported(pkg) == set() and reg.builtin_modules() == (f"{pkg}.alpha", f"{pkg}.beta_gamma")
    assert _imported(pkg) == set()  # listing the modules imports none

    assert reg.get("alpha").__name__ == "Alpha"
    assert _imported(pkg) == {"alpha"}  # the module named like the name, nothing else
    assert reg.get("beta-gamma").__name__ == "BetaGamma"  # beta-gamma -> beta_gamma
    assert _imported(pkg) == {"alpha", "beta_gamma"}
    assert calls == []  # found among the built-ins: no plugin looked up

    assert reg.names() == ["alpha", "beta-gamma", "delta"]  # _private is not a built-in module
    assert calls == [GROUP]


def test_a_name_no_module_is_named_after_imports_every_builtin(make_package, entry_points):
    entry_points([])
    pkg = make_package(WIDGETS)
    reg = _registry(pkg)
    assert reg.get("delta").__name__ == "Delta"
    assert _imported(pkg) == {"alpha", "beta_gamma"}


def test_prefix_of_a_name_names_its_module(make_package, entry_points):
    entry_points([])
    pkg = make_package({
        "dnli/__init__.py": "",
        "dnli/builder.py": "from PKG import REG\nREG.add('dnli', 1)\nREG.add('dnli-natural', 2)\n",
        "esnli/__init__.py": "",
        "esnli/builder.py": "from PKG import REG\nREG.add('esnli', 3)\n",
        "tiers/__init__.py": "",  # no builder module: not a built-in
    }, init=(
        "from gradebench.registry import Registry, package_modules\n"
        "REG = Registry('builder', builtins=lambda: package_modules(__name__, leaf='builder'))\n"
    ))
    reg = _registry(pkg)
    assert reg.builtin_modules() == (f"{pkg}.dnli.builder", f"{pkg}.esnli.builder")
    assert reg.get("dnli-natural") == 2
    assert _imported(pkg) == {"dnli", "dnli.builder"}


def test_membership_and_len_load_too(make_package, entry_points):
    entry_points([])
    reg = _registry(make_package(WIDGETS))
    assert "delta" in reg and "nope" not in reg and None not in reg
    assert len(reg) == 3 and list(reg) == ["alpha", "beta-gamma", "delta"]


# -- a broken built-in fails loudly --------------------------------------------------------------------------


def test_a_builtin_that_fails_to_import_raises_every_time(make_package, entry_points):
    entry_points([])
    broken = dict(WIDGETS, **{"broken.py": "import gradebench_no_such_dependency\n"})
    reg = _registry(make_package(broken))
    for _ in range(2):  # never skipped, not even after the first failure
        with pytest.raises(ModuleNotFoundError, match="gradebench_no_such_dependency") as err:
            reg.names()
        assert any("built-in module of the widget registry" in note for note in err.value.__notes__)
    with pytest.raises(ModuleNotFoundError):
        reg.get("zzz")  # an unknown name needs every module: the broken one is not hidden behind it
    assert reg.get("alpha").__name__ == "Alpha" and reg.get("delta").__name__ == "Delta"  # imported fine


def test_a_listed_builtin_module_that_does_not_exist_raises(make_package, entry_points):
    entry_points([])
    pkg = make_package(WIDGETS, init="")
    reg = Registry("widget", builtins=[f"{pkg}.alpha", f"{pkg}.not_written_yet"])
    with pytest.raises(ModuleNotFoundError, match="not_written_yet"):
        reg.names()


def test_an_error_inside_a_builtin_propagates_with_its_cause(make_package, entry_points):
    entry_points([])
    bad = {"alpha.py": "from PKG import REG\nREG.add('alpha', 1)\nraise RuntimeError('half-written module')\n"}
    reg = _registry(make_package(bad))
    with pytest.raises(RuntimeError, match="half-written module"):
        reg.get("alpha")


# -- plugins -------------------------------------------------------------------------------------------------


def test_entry_point_objects_are_registered_under_their_name(make_package, entry_points):
    plugin = make_package({"things.py": "class Gizmo:\n    pass\n"}, init="")
    calls = entry_points([("gizmo", f"{plugin}.things:Gizmo", GROUP), ("other", f"{plugin}.things:Gizmo", "x.y")])
    reg = _registry(make_package(WIDGETS))
    assert reg.get("gizmo").__name__ == "Gizmo"
    assert calls == [GROUP]
    assert reg.names() == ["alpha", "beta-gamma", "delta", "gizmo"]  # "other" is another group's
    assert calls == [GROUP]  # read once


def test_entry_point_modules_register_themselves(make_package, entry_points):
    pkg = make_package(WIDGETS)
    plugin = make_package({"mod.py": f"from {pkg} import REG\nREG.add('plugged', 7)\n"}, init="")
    entry_points([("plugged", f"{plugin}.mod", GROUP)])
    assert _registry(pkg).get("plugged") == 7


def test_a_module_entry_point_that_registers_nothing_is_an_error(make_package, entry_points):
    plugin = make_package({"mod.py": "X = 1\n"}, init="")
    entry_points([("silent", f"{plugin}.mod", GROUP)])
    with pytest.raises(GradebenchError, match="registered no widget 'silent'"):
        _registry(make_package(WIDGETS)).get("silent")


def test_a_plugin_that_fails_to_load_names_itself_and_keeps_the_cause(make_package, entry_points):
    entry_points([("gone", "gradebench_no_such_plugin.mod:Thing", GROUP)])
    reg = _registry(make_package(WIDGETS))
    assert reg.get("alpha").__name__ == "Alpha"  # built-ins never wait on plugins
    with pytest.raises(GradebenchError) as err:
        reg.get("gone")
    text = str(err.value)
    assert "widget plugin 'gone' (gradebench_no_such_plugin.mod:Thing" in text and GROUP in text
    assert "hint: fix or uninstall" in text and "\n" not in text
    assert isinstance(err.value.__cause__, ModuleNotFoundError)
    with pytest.raises(GradebenchError):  # still broken on the next lookup, not forgotten
        reg.names()


def test_a_plugin_cannot_take_a_builtin_name(make_package, entry_points):
    plugin = make_package({"things.py": "class Fake:\n    pass\n"}, init="")
    entry_points([("alpha", f"{plugin}.things:Fake", GROUP)])
    reg = _registry(make_package(WIDGETS))
    assert reg.get("alpha").__name__ == "Alpha"  # found among the built-ins first
    with pytest.raises(DuplicateNameError, match="widget plugin 'alpha'.*takes the name"):
        reg.names()


def test_plugins_go_through_prepare(entry_points):
    entry_points([("num", "math:pi", GROUP)])

    def only_strings(name: str, obj: object) -> object:
        if not isinstance(obj, str):
            raise InvalidArgumentError(f"widget {name!r} must be a string")
        return obj

    reg: Registry[object] = Registry("widget", entry_points=GROUP, prepare=only_strings)
    with pytest.raises(InvalidArgumentError, match="widget 'num' must be a string"):
        reg.get("num")


# -- names, duplicates, unknown names ------------------------------------------------------------------------


def test_duplicates_raise_and_prepare_runs_after_the_check():
    seen = []
    reg: Registry[int] = Registry("widget", prepare=lambda name, obj: seen.append(name) or obj + 1)

    assert reg.register("one")(1) == 1  # the decorator returns its argument
    reg.add("two", 2)
    assert reg.get("one") == 2 and reg.get("two") == 3 and seen == ["one", "two"]  # stored prepared
    with pytest.raises(DuplicateNameError, match="widget 'two' is already registered"):
        reg.add("two", 5)
    assert seen == ["one", "two"]
    for bad in ("", None, 3):
        with pytest.raises(DuplicateNameError, match="non-empty strings"):
            reg.add(bad, 1)  # type: ignore[arg-type]


def test_unknown_names_suggest_close_matches_and_list_the_known_ones_with_a_right_plural():
    reg: Registry[int] = Registry("loss")
    for name in ("listnet", "listmle", "ranknet"):
        reg.add(name, 0)
    with pytest.raises(UnknownNameError) as err:
        reg.get("listnett")
    assert err.value.message == "unknown loss 'listnett'; did you mean 'listnet' or 'listmle'?"
    assert err.value.hint == "known losses: listmle, listnet, ranknet"
    assert isinstance(err.value, KeyError)
    with pytest.raises(UnknownNameError, match=r"^unknown loss 'zzz' \(hint: known losses"):
        reg.get("zzz")
    with pytest.raises(UnknownNameError, match=r"unknown loss \['a'\]"):
        reg.get(["a"])  # type: ignore[arg-type]
    assert Registry("entry").unknown("x").hint == "known entries: (none)"
    assert Registry("datum", plural="data").unknown("x").hint == "known data: (none)"


def test_suggest():
    assert suggest("esnl", ["esnli", "dnli", "mnli"]) == "; did you mean 'esnli'?"
    assert suggest("ndcg@3", ["ndcg@5", "ndcg@10", "map"], cutoff=0.5) == "; did you mean 'ndcg@5' or 'ndcg@10'?"
    assert suggest("bleu", ["ndcg", "map"]) == ""
    assert suggest("a", []) == ""
    assert suggest("lisnet", iter(["listnet", "listnet"])) == "; did you mean 'listnet'?"  # any iterable, deduped
    assert suggest(5, ["5a"], cutoff=0.5) == "; did you mean '5a'?"


@pytest.mark.parametrize(
    ("word", "plural"),
    [("loss", "losses"), ("builder", "builders"), ("metric", "metrics"), ("recipe", "recipes"), ("scorer", "scorers"),
     ("entry", "entries"), ("key", "keys"), ("match", "matches"), ("box", "boxes"), ("split", "splits")],
)
def test_plural_of(word, plural):
    assert plural_of(word) == plural


def test_package_modules_lists_public_modules_without_importing_them(make_package):
    pkg = make_package(WIDGETS)
    assert package_modules(pkg) == [f"{pkg}.alpha", f"{pkg}.beta_gamma"]
    assert _imported(pkg) == set()


# -- the real registries use it, with no hand-kept table -----------------------------------------------------

PKG = REPO / "gradebench"


def _decorated(files: list[Path], decorator: str) -> set[str]:
    """Names registered by ``@decorator("name", ...)`` (or ``@decorator`` on a class with ``name``/``family``)."""
    names = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                continue
            for dec in node.decorator_list:
                func = dec.func if isinstance(dec, ast.Call) else dec
                if not (isinstance(func, ast.Name) and func.id == decorator):
                    continue
                if isinstance(dec, ast.Call):
                    names.add(dec.args[0].value)
                else:  # the class's own name/family attribute
                    names |= {
                        stmt.value.value for stmt in node.body
                        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant)
                        and any(isinstance(t, ast.Name) and t.id in ("name", "family") for t in stmt.targets)
                    }
    return names


def test_every_decorated_builtin_is_discovered(entry_points):
    from gradebench.datasets import builder_names
    from gradebench.losses import loss_names
    from gradebench.metrics import METRICS
    from gradebench.scorers import scorer_names

    entry_points([])  # no plugins: exactly the built-ins
    assert builder_names() == sorted(_decorated(list(PKG.glob("datasets/*/builder.py")), "register_builder"))
    scorer_modules = list(PKG.glob("scorers/*.py")) + list(PKG.glob("scorers/adapters/*.py"))  # + model adapters
    assert scorer_names() == sorted(_decorated(scorer_modules, "register_scorer"))
    assert loss_names() == sorted(_decorated(list(PKG.glob("losses/*.py")), "register_loss"))
    assert METRICS.names() == sorted(_decorated(list(PKG.glob("metrics/*.py")), "register"))
    assert len(builder_names()) >= 9 and len(scorer_names()) >= 9


def test_every_builder_class_is_registered():
    """A builder class with a ``name`` but no decorator would be invisible: none may exist."""
    from gradebench.datasets import BUILDERS, Builder, builder_names

    builder_names()
    classes = {cls for cls in _subclasses(Builder) if cls.__module__.startswith("gradebench.") and "name" in vars(cls)}
    assert classes and all(BUILDERS.get(cls.name) is cls for cls in classes)


def _subclasses(cls: type) -> set[type]:
    out = set(cls.__subclasses__())
    for sub in list(out):
        out |= _subclasses(sub)
    return out


def _names(registry: str) -> list[str]:
    import gradebench.datasets
    import gradebench.losses
    import gradebench.metrics
    import gradebench.recipes.loader
    import gradebench.scorers

    return {"builders": gradebench.datasets.builder_names, "scorers": gradebench.scorers.scorer_names,
            "losses": gradebench.losses.loss_names, "metrics": gradebench.metrics.METRICS.names,
            "recipes": gradebench.recipes.loader.recipe_names}[registry]()


@pytest.mark.parametrize(
    ("module", "registry"),
    [("datasets/__init__.py", "builders"), ("scorers/__init__.py", "scorers"), ("losses/_registry.py", "losses"),
     ("metrics/spec.py", "metrics"), ("recipes/loader.py", "recipes")],
)
def test_no_hand_kept_table_of_modules_or_names(module, registry):
    """The registries name no module and no entry: the decorators and the files on disk do."""
    tree = ast.parse((PKG / module).read_text())
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    targets = [s for s in strings if s.startswith("gradebench.") and (":" in s or s.count(".") >= 2) and " " not in s]
    assert not targets, targets  # no "module:Class" table, no list of modules (entry-point groups have one dot)
    names = _names(registry)
    assert len(names) >= 9
    assert not strings & set(names)  # no entry is named where the registry is defined


def test_real_lookups_import_only_what_they_need():
    code = textwrap.dedent("""
        import sys
        from gradebench.datasets import get_builder
        from gradebench.scorers import get_scorer_class
        from gradebench.recipes import resolve_recipe_path

        def loaded(prefix, *ends):
            return sorted(m for m in sys.modules if m.startswith(prefix) and m.endswith(ends))

        resolve_recipe_path("esnli")
        assert not loaded("gradebench.datasets.", ".builder", ".reader"), loaded("gradebench.datasets.")
        get_builder("esnli")
        builders = loaded("gradebench.datasets.", ".builder")
        assert builders == ["gradebench.datasets.esnli.builder", "gradebench.datasets.tiers.builder"], builders
        get_scorer_class("cross-encoder")
        scorers = loaded("gradebench.scorers.", "")
        assert scorers == ["gradebench.scorers.base", "gradebench.scorers.cross_encoder"], scorers
        heavy = [m for m in ("torch", "transformers", "lightgbm", "trl") if m in sys.modules]
        assert not heavy, heavy
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout == "ok\n", out.stderr


PLUGIN = """
import numpy as np

from gradebench.datasets import Builder
from gradebench.scorers import Scorer


class Shortest(Scorer):
    def score(self, lists):
        return np.zeros(lists.mask.shape)


class Mine(Builder):
    name = "mine"


class Misnamed(Builder):
    name = "other"
"""


def test_real_registries_take_plugins_from_their_groups(tmp_path):
    """In a fresh process (the registries are global): scorer and builder plugins."""
    (tmp_path / "gb_fake_plugin.py").write_text(PLUGIN)
    code = textwrap.dedent(f"""
        import sys
        from importlib import metadata

        sys.path.insert(0, {str(tmp_path)!r})
        EPS = {{
            "gradebench.scorers": [metadata.EntryPoint("shortest", "gb_fake_plugin:Shortest", "gradebench.scorers")],
            "gradebench.builders": [metadata.EntryPoint("mine", "gb_fake_plugin:Mine", "gradebench.builders"),
                                    metadata.EntryPoint("misnamed", "gb_fake_plugin:Misnamed", "gradebench.builders")],
        }}
        metadata.entry_points = lambda *, group: EPS.get(group, [])

        from gradebench.datasets import get_builder
        from gradebench.errors import InvalidArgumentError
        from gradebench.scorers import get_scorer_class, scorer_names
        import gb_fake_plugin as plugin

        cls = get_scorer_class("shortest")
        assert cls is plugin.Shortest and cls.name == "shortest" and "shortest" in scorer_names()
        assert get_builder("mine") is plugin.Mine
        try:
            get_builder("misnamed")
        except InvalidArgumentError as e:
            assert "named 'other' but registered as 'misnamed'" in str(e), e
        else:
            raise AssertionError("a misnamed builder plugin was accepted")
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout == "ok\n", out.stderr


def test_docstring_examples_run():
    import doctest

    result = doctest.testmod(registry_module)
    assert result.failed == 0 and result.attempted >= 3
