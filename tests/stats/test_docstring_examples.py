"""The examples in gradebench.stats docstrings run and print what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "gradebench.stats",
    "gradebench.stats.bootstrap",
    "gradebench.stats.randomization",
    "gradebench.stats.holm",
    "gradebench.stats.swap",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
