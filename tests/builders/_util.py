"""What the builder tests share: a recipe's builder (or a variant's), and one run of a builder.

A run here is what ``gradebench build`` does before writing: locate the source files, read
them, select the units (with the skip counts) and make the graded lists.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from gradebench.datasets import get_builder
from gradebench.datasets.base import Builder, GradedList, Selection
from gradebench.recipes.loader import load_recipe
from tests.input_files import write_file


def recipe_builder(recipe: str | Path) -> Builder:
    """The registered builder of ``recipe`` (a name under recipes/, or a recipe file)."""
    r = load_recipe(recipe)
    return get_builder(r.source.family)(r)


def variant_builder(tmp_path: Path | None, base: str, keys: dict, *, name: str, extends: str | None = None) -> Builder:
    """``recipe_builder(base)`` when ``keys`` is empty; else the builder of a recipe named ``name``
    that extends ``extends`` (default ``base``) with ``keys``, written to ``tmp_path/variant.yaml``."""
    if not keys:
        return recipe_builder(base)
    assert tmp_path is not None, "a variant recipe is written to tmp_path"
    variant = {"extends": extends or base, "name": name, **keys}
    return recipe_builder(write_file(tmp_path / "variant.yaml", json.dumps(variant)))


def run_builder(b: Builder, source: Path, limit: int | None = None) -> tuple[Selection, list[GradedList]]:
    """``(selection, lists)`` of builder ``b`` on ``source``."""
    sel = b.select(b.read(b.locate(source)), limit=limit)
    return sel, b.make_lists(sel.units)


def lists_and_skips(b: Builder, source: Path, limit: int | None = None) -> tuple[list[GradedList], Counter]:
    """``(lists, skip counts)`` of builder ``b`` on ``source``."""
    sel, lists = run_builder(b, source, limit)
    return lists, sel.skipped
