"""``list_recipes()``: the shipped recipes with their metadata (for `gradebench list` and docs)."""

from __future__ import annotations

from typing import Any

from gradebench.datasets import get_builder
from gradebench.recipes.loader import load_recipe, recipe_names


def list_recipes() -> list[dict[str, Any]]:
    out = []
    for name in recipe_names():
        r = load_recipe(name)
        builder = get_builder(r.source.family)
        tiers = builder(r).tiers()
        out.append(
            {
                "name": r.name,
                "version": r.version,
                "builder": f"{builder.name} v{builder.version}",
                "description": " ".join(r.description.split()),
                "formats": list(r.source.formats),
                "default_source": r.source.default,
                "tiers": None if tiers is None else [t for t, _ in tiers],
                "grades": "synthetic tiers" if tiers is not None else "natural",
                "scoring": r.scoring.mode if tiers is not None else "natural",
                "license": r.source.license,
                "citation": r.source.citation,
            }
        )
    return out
