"""Find recipes by name (:data:`RECIPES`) or path and load them, with errors that name the file, line and key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from gradebench.errors import RecipeError, UnknownNameError
from gradebench.recipes.models import Recipe, recipe_model
from gradebench.registry import Registry

_PKG = Path(__file__).resolve().parents[1]


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a mapping with the same key twice (YAML 1.2 forbids it; PyYAML keeps the last)."""

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None,
                    f"duplicate key {key!r} (first on line {seen[key]})",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


def _load_yaml(text: str) -> Any:
    return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass


def recipes_dir() -> Path:
    """The folder of shipped recipes: ``gradebench/_recipes`` in a wheel, ``recipes/`` in a checkout."""
    for candidate in (_PKG / "_recipes", _PKG.parent / "recipes"):
        if candidate.is_dir():
            return candidate
    raise RecipeError("no recipes folder found", hint="reinstall gradebench", path=_PKG)


def _shipped(registry: Registry[Path]) -> None:
    for path in sorted(recipes_dir().glob("*.yaml")):
        registry.add(path.stem, path)


#: the shipped recipes: name -> ``recipes/<name>.yaml``, found on the first lookup
RECIPES: Registry[Path] = Registry("recipe", discover=_shipped, cutoff=0.5)


def recipe_names() -> list[str]:
    return RECIPES.names()


def resolve_recipe_path(name_or_path: str | Path) -> Path:
    """A recipe name (``esnli``) or a path to a YAML file."""
    text = str(name_or_path)
    p = Path(text)
    if p.suffix in (".yaml", ".yml") or p.is_file() or "/" in text:
        if not p.is_file():
            raise RecipeError("recipe file not found", path=p, hint="give a recipe name or an existing .yaml path")
        return p
    try:
        return RECIPES.get(text)
    except UnknownNameError as e:
        raise UnknownNameError(e.message, hint=f"{e.hint} (or pass a path to a .yaml file)") from None


def load_recipe(name_or_path: str | Path) -> Recipe:
    """Load and validate a recipe; any problem raises :class:`RecipeError` naming file, line and key."""
    path = resolve_recipe_path(name_or_path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise RecipeError(f"not UTF-8 text ({e.reason})", path=path, hint="save the recipe as UTF-8") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = _load_yaml(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = None if mark is None else mark.line + 1
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise RecipeError(f"invalid YAML: {problem}", path=path, line=line, hint="fix the YAML syntax") from None
    if not isinstance(data, dict):
        raise RecipeError("a recipe must be a YAML mapping", path=path, line=1, hint="start with 'name: ...'")
    data = _resolve_extends(data, path, node, seen=(path.resolve(),))
    try:
        return recipe_model(_builder_of(data, path, node)).model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(err["loc"])
        key = _dotted(loc) or None
        line = _line_of(node, loc)
        if err["type"] == "extra_forbidden":
            msg = f"unknown key {loc[-1]!r}"
            hint = "remove it or fix its spelling; see the other recipes in recipes/ for the known keys"
        elif err["type"] == "missing":
            msg = f"missing required key {loc[-1]!r}"
            hint = "add it"
        else:
            msg = err["msg"].removeprefix("Value error, ")
            hint = "fix the value"
        more = len(e.errors()) - 1
        if more:
            msg += f" (and {more} more problem{'s' if more > 1 else ''})"
        raise RecipeError(msg, path=path, line=line, key=key, hint=hint) from None


def _raw(path: Path) -> tuple[dict[str, Any], yaml.Node | None]:
    try:
        text = path.read_text(encoding="utf-8")
        return _load_yaml(text), yaml.compose(text, Loader=yaml.SafeLoader)
    except (UnicodeDecodeError, yaml.YAMLError) as e:
        raise RecipeError(f"cannot read base recipe: {e}", path=path, hint="fix the base recipe") from None


def _resolve_extends(data: dict[str, Any], path: Path, node: yaml.Node | None, seen: tuple[Path, ...]) -> dict[str, Any]:
    """Apply ``extends: <recipe>``: deep-merge this recipe over its base.

    Mappings merge key by key; lists of mappings that carry ``name`` merge item by item on
    that name (an unknown name is an error); any other value replaces the base's.
    """
    if "extends" not in data:
        return data
    base_name = data.pop("extends")
    line = _line_of(node, ("extends",))
    if not isinstance(base_name, str):
        raise RecipeError("extends must be a recipe name", path=path, line=line, key="extends", hint="e.g. extends: esnli")
    base_path = resolve_recipe_path(base_name)
    if base_path.resolve() in seen:
        raise RecipeError(f"recipe extends itself through {base_name!r}", path=path, line=line, key="extends",
                          hint="remove the cycle")
    base, base_node = _raw(base_path)
    if not isinstance(base, dict):
        raise RecipeError("a recipe must be a YAML mapping", path=base_path, line=1, hint="start with 'name: ...'")
    base = _resolve_extends(base, base_path, base_node, seen + (base_path.resolve(),))
    return _merge(base, data, path, node, ())


def _merge(base: Any, over: Any, path: Path, node: yaml.Node | None, loc: tuple[Any, ...]) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _merge(base[k], v, path, node, loc + (k,)) if k in base else v
        return out
    if (
        isinstance(base, list)
        and isinstance(over, list)
        and base
        and all(isinstance(x, dict) and "name" in x for x in base + over)
    ):
        out = list(base)
        index = {x["name"]: i for i, x in enumerate(base)}
        for j, item in enumerate(over):
            if item["name"] not in index:
                raise RecipeError(
                    f"{item['name']!r} is not in the base recipe", path=path, line=_line_of(node, loc + (j,)),
                    key=_dotted(loc + (j, "name")), hint=f"extend one of {sorted(index)}",
                )
            i = index[item["name"]]
            out[i] = _merge(base[i], item, path, node, loc + (j,))
        return out
    return over


def _builder_of(data: dict[str, Any], path: Path | None = None, node: yaml.Node | None = None) -> type:
    """The builder class named by ``source.family`` (a missing or unknown one is a RecipeError)."""
    from gradebench.datasets import get_builder

    source = data.get("source")
    family = source.get("family") if isinstance(source, dict) else None
    line = _line_of(node, ("source", "family"))
    if not isinstance(family, str):
        raise RecipeError("missing required key 'family'", path=path, line=line, key="source.family",
                          hint="name the builder that reads the source, e.g. family: esnli")
    try:
        return get_builder(family)
    except UnknownNameError as e:
        raise RecipeError(e.message, path=path, line=line, key="source.family", hint=e.hint) from None


def recipe_from_json(text: str) -> Recipe:
    """A resolved recipe back from ``recipe.model_dump_json()`` (how worker processes get it)."""
    import json

    data = json.loads(text)
    return recipe_model(_builder_of(data)).model_validate(data)


def recipe_from_dict(data: dict[str, Any]) -> Recipe:
    """Validate an in-memory recipe (tests, the Python API)."""
    try:
        return recipe_model(_builder_of(data)).model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise RecipeError(
            err["msg"].removeprefix("Value error, "), key=_dotted(tuple(err["loc"])), hint="fix the value"
        ) from None


def _dotted(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the YAML node at ``loc`` (the deepest node that exists)."""
    line = None if node is None else node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            found = None
            for k, v in node.value:
                if k.value == part:
                    found = (k, v)
                    break
            if found is None:
                return line
            line = found[0].start_mark.line + 1
            node = found[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def with_overrides(recipe: Recipe, overrides: dict[str, Any]) -> Recipe:
    """The recipe with dotted keys replaced (``{"columns.premise": "sentence1"}``), validated again.

    An unknown key fails like a recipe typo: a RecipeError naming the key.
    """
    data = recipe.model_dump(mode="json")
    for dotted, value in overrides.items():
        node = data
        parts = dotted.split(".")
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                raise RecipeError(f"unknown key {dotted!r}", key=dotted,
                                  hint=f"recipe {recipe.name!r} has no mapping {part!r} to set it in")
            node = node[part]
        node[parts[-1]] = value
    return recipe_from_dict(data)
