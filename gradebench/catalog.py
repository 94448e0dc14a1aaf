"""``list_recipes()``: the shipped recipes with their metadata (for `gradebench list` and docs)."""

from __future__ import annotations

from typing import Any

from gradebench.recipes.loader import load_recipe, recipe_names


def list_recipes() -> list[dict[str, Any]]:
    out = []
    for name in recipe_names():
        r = load_recipe(name)
        out.append(
            {
                "name": r.name,
                "version": r.version,
                "description": " ".join(r.description.split()),
                "formats": list(r.source.formats),
                "default_source": r.source.default,
                "tiers": [t.name for t in r.tiers],
                "scoring": r.scoring.mode,
                "license": r.source.license,
                "citation": r.source.citation,
            }
        )
    return out
