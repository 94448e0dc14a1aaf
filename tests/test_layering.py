"""The package's layers import only downward, and no modules import each other in a circle.

Every ``import`` and ``from ... import`` in ``gradebench/`` counts, at module level and inside
functions alike; only blocks under ``if TYPE_CHECKING:`` are skipped (they never run). The
layers, top to bottom (README, "Architecture"):

    cli, docs > rl > reward > experiments > scorers > training, hub > benchmark > recipes
    > datasets > io, metrics, losses, stats > core (the top-level modules)

A module may import its own layer's modules and any layer below. Packages on one layer may
import each other only where :data:`SIDEWAYS` allows it. The facade (``gradebench/__init__``)
and ``__main__`` sit above everything.

Imports by name count too: a table handed to ``gradebench._lazy.lazy_attributes`` (a module's
``__getattr__`` that imports ``table[name]`` on first use) imports every module it names, for the
layering and for the cycle check alike. No table is exempt. A package ``__init__``'s table that
names only its own submodules could be: a submodule importing its package (``from
gradebench.training import TrainOptions``) and the table naming that submodule are no cycle Python
can trip over, since the package has finished initialising before any submodule runs and its
table is read only on a later attribute access. But no such pair exists (submodules import the
defining module, not the package), so the check stays strict and keeps it that way. A table naming
a sibling module (the record modules' old names, once looked up in the store, which imports them)
is a real cycle. The old names of ``gradebench._moved`` are not imports of the package: they are
there for users' code, and nothing inside gradebench uses them (``tests/test_moved.py``).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gradebench"

#: package (first name under gradebench) -> layer rank; top-level modules are core (0)
RANK = {
    "cli": 10, "docs": 10,
    "rl": 9,
    "reward": 8,
    "experiments": 7,
    "scorers": 6,
    "training": 5, "hub": 5,
    "benchmark": 4,
    "recipes": 3,
    "datasets": 2,
    "io": 1, "metrics": 1, "losses": 1, "stats": 1,
}
#: same-layer imports between packages that are allowed (importer, imported)
SIDEWAYS: set[tuple[str, str]] = {("losses", "metrics")}
TOP = {"gradebench", "gradebench.__main__"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_module(name: str) -> bool:
    p = ROOT / name.replace(".", "/")
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


class _Imports(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool) -> None:
        self.module, self.is_package = module, is_package
        self.found: list[tuple[int, str]] = []

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
        if name == "TYPE_CHECKING":
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.split(".")[0] == "gradebench":
                self.found.append((node.lineno, alias.name))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.module.split(".") if self.is_package else self.module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if target.split(".")[0] != "gradebench":
            return
        submodules = [f"{target}.{a.name}" for a in node.names if _is_module(f"{target}.{a.name}")]
        if submodules and len(submodules) == len(node.names):
            # `from pkg import mod`: the module is what is imported (the package runs first anyway)
            self.found.extend((node.lineno, m) for m in submodules)
        else:
            self.found.append((node.lineno, target))
            self.found.extend((node.lineno, m) for m in submodules)


def lazy_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """The modules named in the tables a module hands to ``lazy_attributes(package, TABLE, ...)``.

    ``TABLE`` is a module-level name; every string in its assignment that names a gradebench module
    counts (``{name: module}`` tables and ``by_module({module: names})`` tables alike).
    """
    tables = {
        node.args[1].id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and len(node.args) >= 2 and isinstance(node.args[1], ast.Name)
        and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) == "lazy_attributes"
    }
    found = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in tables for t in node.targets):
            found.extend(
                (node.lineno, c.value) for c in ast.walk(node.value)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
                and c.value.startswith("gradebench.") and _is_module(c.value)
            )
    return found


def import_graph() -> dict[str, list[tuple[int, str]]]:
    """Module -> its imports (line, module), the modules its lazy tables name included."""
    graph: dict[str, list[tuple[int, str]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        visitor = _Imports(name, path.name == "__init__.py")
        visitor.visit(tree)
        graph[name] = visitor.found + lazy_imports(tree)
    return graph


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if module in TOP:
        return None
    return parts[1] if parts[1] in RANK else "core"


def _rank(layer: str) -> int:
    return RANK.get(layer, 0)


def violations(graph: dict[str, list[tuple[int, str]]]) -> list[str]:
    bad = []
    for module, imports in graph.items():
        here = _layer(module)
        if here is None:
            continue
        for line, target in imports:
            there = _layer(target)
            if there is None:
                bad.append(f"{module}:{line} imports the facade {target} (import the defining module)")
            elif _rank(there) > _rank(here):
                bad.append(f"{module}:{line} imports {target}: {here} must not import the layer above it ({there})")
            elif _rank(there) == _rank(here) and there != here and (here, there) not in SIDEWAYS:
                bad.append(f"{module}:{line} imports {target}: {here} and {there} are on one layer")
    return bad


def cycles(graph: dict[str, list[tuple[int, str]]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    edges = defaultdict(set)
    for module, imports in graph.items():
        for _, target in imports:
            if target != module and target in graph:
                edges[module].add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, list[tuple[int, str]]]:
    return import_graph()


def test_every_import_runs_downward(graph):
    assert violations(graph) == []


def test_no_import_cycles(graph):
    assert cycles(graph) == []


def test_every_package_has_a_layer(graph):
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages <= set(RANK), f"give {sorted(packages - set(RANK))} a layer in RANK and the README"


def test_the_checks_catch_what_they_are_for():
    fake = {
        "gradebench.benchmark.engine": [(3, "gradebench.scorers.base")],
        "gradebench.scorers.base": [(1, "gradebench.benchmark.lists")],
        "gradebench.benchmark.lists": [(7, "gradebench.benchmark.engine")],
        "gradebench.datasets.esnli.builder": [(9, "gradebench.recipes.models")],
        "gradebench.hub.load": [(2, "gradebench.training.options")],
    }
    bad = violations(fake)
    assert any("benchmark.engine:3" in b and "(scorers)" in b for b in bad)
    assert any("datasets.esnli.builder:9" in b for b in bad)
    assert any("hub.load:2" in b and "one layer" in b for b in bad)
    assert cycles(fake) == [["gradebench.benchmark.engine", "gradebench.benchmark.lists", "gradebench.scorers.base"]]


def test_function_level_and_relative_imports_are_seen(tmp_path):
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from gradebench.rl import grpo\n"
        "def f():\n    from gradebench.cli import main\n"
        "from . import engine\n"
    )
    visitor = _Imports("gradebench.benchmark.writer", False)
    visitor.visit(ast.parse(source))
    assert [t for _, t in visitor.found] == ["gradebench.cli.main", "gradebench.benchmark.engine"]


def test_lazy_tables_are_imports():
    source = (
        "from gradebench._lazy import by_module, lazy_attributes\n"
        "_LAZY = by_module({'gradebench.experiments.store': ('read_record',), 'gradebench.words': ('words',)})\n"
        "_OTHER = {'x': 'gradebench.rl.grpo'}\n"
        "__getattr__ = lazy_attributes(__name__, _LAZY, globals())\n"
    )
    assert lazy_imports(ast.parse(source)) == [(2, "gradebench.experiments.store"), (2, "gradebench.words")]
    graph = import_graph()
    assert "gradebench.experiments.build" in {t for _, t in graph["gradebench"]}
    assert "gradebench.training.options" in {t for _, t in graph["gradebench.training"]}


def test_a_lazy_table_naming_an_importer_is_a_cycle(graph):
    """The record modules once named the store in their lazy tables, while the store imports them."""
    old = ("from gradebench._lazy import lazy_attributes\n"
           '_IN_STORE = {n: "gradebench.experiments.store" for n in ("read_record",)}\n'
           "__getattr__ = lazy_attributes(__name__, _IN_STORE, globals())\n")
    record = "gradebench.experiments.record"
    graph = {**graph, record: graph[record] + lazy_imports(ast.parse(old))}
    assert any({"gradebench.experiments.record", "gradebench.experiments.store"} <= set(c) for c in cycles(graph))


def test_the_readme_architecture_names_every_package_and_core_module():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Architecture", 1)[1].split("\n## ", 1)[0]
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    named = {name for name in packages if f"`{name}/`" in section}
    assert named == packages, f"packages missing from the README's Architecture: {sorted(packages - named)}"
    core = {p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("_") and p.stem not in RANK}
    assert {m for m in core if f"`{m}`" in section} == core, sorted(m for m in core if f"`{m}`" not in section)
