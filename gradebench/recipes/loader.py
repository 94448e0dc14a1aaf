"""Find recipes by name (:data:`RECIPES`) or path and load them, with errors that name the file, line and key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from gradebench.errors import RecipeError, UnknownNameError
from gradebench.io.yamlio import dotted as _dotted
from gradebench.io.yamlio import line_of as _line_of
from gradebench.io.yamlio import load_yaml as _load_yaml
from gradebench.io.yamlio import read_mapping, validation_problem
from gradebench.recipes.models import Recipe, recipe_model
from gradebench.registry import Registry

_PKG = Path(__file__).resolve().parents[1]


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
    data, node = read_mapping(path, what="recipe", start_hint="start with 'name: ...'")
    data = _resolve_extends(data, path, node, seen=(path.resolve(),))
    model = recipe_model(_builder_of(data, path, node))
    try:
        return model.model_validate(data)
    except ValidationError as e:
        msg, loc, hint = validation_problem(
            e.errors(), unknown_key_hint="remove it or fix its spelling; see the other recipes in recipes/ for the known keys",
            model=model)
        raise RecipeError(msg, path=path, line=_line_of(node, loc), key=_dotted(loc) or None, hint=hint) from None


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
    model = recipe_model(_builder_of(data))
    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":  # an unknown key (a typo in --map ROLE=COLUMN): its close matches
            msg, _, _ = validation_problem([err], unknown_key_hint="", model=model)
        hint = "fix its spelling" if err["type"] == "extra_forbidden" else "fix the value"
        raise RecipeError(msg, key=_dotted(tuple(err["loc"])), hint=hint) from None


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
