"""Test files named in the package's docstrings and the README exist (and so do the tests named with ``::``)."""

from __future__ import annotations

import ast
import re

import pytest

from tests.conftest import REPO

REFERENCE = re.compile(r"\btests/[\w/]+\.py(?:::\w+)?")


def _references() -> list[tuple[str, str]]:
    found = set()
    for path in [REPO / "README.md", *sorted((REPO / "gradebench").rglob("*.py"))]:
        for ref in REFERENCE.findall(path.read_text(encoding="utf-8")):
            found.add((str(path.relative_to(REPO)), ref))
    return sorted(found)


@pytest.mark.parametrize("where, ref", _references())
def test_a_referenced_test_exists(where, ref):
    file, _, test = ref.partition("::")
    assert (REPO / file).is_file(), f"{where} names {file}, which does not exist"
    if test:
        names = {n.name for n in ast.walk(ast.parse((REPO / file).read_text(encoding="utf-8")))
                 if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        assert test in names, f"{where} names {ref}, which {file} does not define"
