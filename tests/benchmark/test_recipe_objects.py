"""A Recipe object given to the Python API is validated like a recipe file, before anything is written."""

from __future__ import annotations

import pytest

from gradebench.errors import RecipeError
from gradebench.experiments.build import build
from gradebench.recipes.loader import load_recipe
from gradebench.recipes.models import Recipe


def _bad_recipes():
    r = load_recipe("demo")
    yield "unknown family", r.model_copy(update={"source": r.source.model_copy(update={"family": "nosuch"})})
    yield "unsafe name", r.model_copy(update={"name": "../escaped"})
    yield "missing keys", Recipe.model_construct(**{k: v for k, v in r.model_dump().items() if k != "labels"})


@pytest.mark.parametrize(("what", "recipe"), list(_bad_recipes()), ids=lambda x: x if isinstance(x, str) else "")
def test_bad_recipe_objects_fail_in_one_line_and_write_nothing(tmp_path, what, recipe):
    with pytest.raises(RecipeError) as info:
        build(recipe, out=tmp_path / "out", progress=False, validity=False)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*"))
    assert not (tmp_path / "escaped").exists()


def test_a_valid_recipe_object_builds_the_same_benchmark_as_its_name(tmp_path):
    by_object = build(load_recipe("demo"), out=tmp_path / "a", progress=False, validity=False)
    by_name = build("demo", out=tmp_path / "b", progress=False, validity=False)
    assert by_object.fingerprint == by_name.fingerprint
