"""YAML config files read with their line numbers, so a problem can name the file, line and key.

Shared by everything gradebench reads from YAML and validates with pydantic: recipes
(:mod:`gradebench.recipes.loader`) and the source specs of dataset families
(:mod:`gradebench.datasets.source`). Duplicate keys are errors (YAML 1.2 forbids them; PyYAML
would keep the last); :func:`line_of` finds the 1-based line of a dotted location in the composed
node tree, and :func:`validation_problem` words the first pydantic error the same way everywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gradebench.errors import RecipeError

__all__ = ["UniqueKeyLoader", "dotted", "line_of", "load_yaml", "read_mapping", "validation_problem"]


class UniqueKeyLoader(yaml.SafeLoader):
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


def load_yaml(text: str) -> Any:
    """``text`` parsed as YAML (safe types only, duplicate keys refused)."""
    return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass


def read_mapping(path: Path, *, what: str, start_hint: str) -> tuple[dict[str, Any], yaml.Node]:
    """The YAML mapping in the file ``path`` and its node tree (for :func:`line_of`).

    Raises:
        RecipeError: the file is not UTF-8, not valid YAML (with the line), has a key twice, or
            holds something other than a mapping (``what`` names the kind of file, ``start_hint``
            how such a file starts).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise RecipeError(f"not UTF-8 text ({e.reason})", path=path, hint=f"save the {what} as UTF-8") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = load_yaml(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = None if mark is None else mark.line + 1
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise RecipeError(f"invalid YAML: {problem}", path=path, line=line, hint="fix the YAML syntax") from None
    if not isinstance(data, dict):
        raise RecipeError(f"a {what} must be a YAML mapping", path=path, line=1, hint=start_hint)
    return data, node


def dotted(loc: tuple[Any, ...]) -> str:
    """A pydantic location as a dotted key: ``("tiers", 2, "name")`` -> ``tiers[2].name``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
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


def validation_problem(errors: list[dict[str, Any]], *, unknown_key_hint: str,
                       model: type | None = None) -> tuple[str, tuple[Any, ...], str]:
    """``(message, location, hint)`` for the first of pydantic's ``ValidationError.errors()``.

    An unknown key reads ``unknown key 'x'`` (with ``unknown_key_hint``; with the pydantic
    ``model`` that was validated, followed by ``did you mean 'y'?`` where a known key at that place
    is close), a missing one ``missing required key 'x'``; any other problem keeps pydantic's
    message. More problems are counted at the end of the message.
    """
    err = errors[0]
    loc = tuple(err["loc"])
    if err["type"] == "extra_forbidden":
        from gradebench.registry import suggest

        msg, hint = f"unknown key {loc[-1]!r}", unknown_key_hint
        if model is not None:
            msg += suggest(loc[-1], known_keys(model, loc[:-1]))
    elif err["type"] == "missing":
        msg, hint = f"missing required key {loc[-1]!r}", "add it"
    else:
        msg, hint = err["msg"].removeprefix("Value error, "), "fix the value"
    more = len(errors) - 1
    if more:
        msg += f" (and {more} more problem{'s' if more > 1 else ''})"
    return msg, loc, hint


def known_keys(model: type, loc: tuple[Any, ...]) -> list[str]:
    """The keys (field names and aliases) of the pydantic model found at ``loc`` inside ``model``;
    ``[]`` where the location leads to no model (a free-form mapping). A field annotated
    ``M | None`` leads to ``M``; ``dict[str, M]`` and ``list[M]`` take the next part of ``loc`` as a
    key or index and lead to ``M`` (tests/benchmark/test_recipes.py checks each case).
    """
    import typing

    node: Any = model
    for part in loc:
        node = _model_or_container(node)
        if node is None:
            return []
        if getattr(node, "model_fields", None) is None:  # dict[str, M] / list[M]: ``part`` is a key or index
            args = typing.get_args(node)
            node = args[-1] if args else None
            continue
        fields = node.model_fields
        field = fields.get(part) or next((f for f in fields.values() if f.alias == part), None)
        if field is None:
            return []
        node = field.annotation
    node = _model_or_container(node)
    if node is None or getattr(node, "model_fields", None) is None:
        return []
    return sorted({*node.model_fields, *(f.alias for f in node.model_fields.values() if f.alias)})


def _model_or_container(annotation: Any) -> Any:
    """``annotation`` without ``Optional``/``Union``/``Annotated``: the first pydantic model or
    dict/list type in it, or None."""
    import typing

    if getattr(annotation, "model_fields", None) is not None:
        return annotation
    if typing.get_origin(annotation) in (dict, list, tuple):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_or_container(arg)
        if found is not None:
            return found
    return None
