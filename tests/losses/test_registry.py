"""The LOSSES registry: lookup, unknown names, metadata for generated docs, doctests, lazy import."""

from __future__ import annotations

import doctest
import importlib

import pytest

from gradebench.errors import UnknownNameError
from gradebench.losses import LOSSES, LossSpec, get_loss, loss_names, loss_table
from tests.conftest import modules_loaded_by

from ._util import ALL

MODULES = ["gradebench.losses", "gradebench.losses.pointwise", "gradebench.losses.pairwise",
           "gradebench.losses.listwise", "gradebench.losses.neuralndcg"]


def test_unknown_name_suggests_close_matches_and_lists_known() -> None:
    with pytest.raises(UnknownNameError) as info:
        get_loss("listnett")
    err = info.value
    assert "unknown loss 'listnett'" in str(err)
    assert "did you mean 'listnet'" in str(err)
    assert err.hint is not None and all(name in err.hint for name in ALL)
    assert isinstance(err, KeyError)
    with pytest.raises(UnknownNameError, match="lambdarank"):
        get_loss("lamdarank")


def test_lookup_returns_a_callable_spec() -> None:
    spec = get_loss("ranknet")
    assert isinstance(spec, LossSpec) and spec.name == "ranknet"
    assert spec.fn.spec is spec
    assert loss_names() == sorted(LOSSES.names()) == ALL


@pytest.mark.parametrize("name", ALL)
def test_metadata_is_complete(name: str) -> None:
    spec = get_loss(name)
    assert spec.kind in ("pointwise", "pairwise", "listwise")
    assert spec.source and spec.summary and spec.peer
    assert spec.mean_over
    meta = spec.as_dict()
    assert meta["name"] == name and set(meta) >= {"kind", "source", "params", "mean_over"}
    doc = spec.fn.__doc__ or ""
    for needle in ("Args:", "reduction", "mask", "Example", ">>>", "[batch, list_size]"):
        assert needle in doc, (name, needle)


def test_params_metadata() -> None:
    assert get_loss("hinge").params == {"margin": 1.0}
    assert get_loss("margin").params == {"margin": 2.0}
    assert get_loss("listnet").params == {"target": "softmax", "temperature": None}
    assert get_loss("listmle").params == {"seed": 0}
    assert get_loss("mse").params == {}


def test_table_has_one_row_per_loss() -> None:
    rows = loss_table().splitlines()
    assert len(rows) == 2 + len(ALL)
    assert all(row.count(" | ") == rows[0].count(" | ") for row in rows[2:])  # pipes escaped


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples_run(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_import_gradebench_does_not_import_torch() -> None:
    assert modules_loaded_by("import gradebench", "torch")[0] == []
