"""The records the e-SNLI readers build are ordinary NLIExample values (fast constructor included)."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from gradebench.datasets.esnli import reader as esnli
from gradebench.datasets.records import NLIExample
from tests.conftest import FIXTURES


@pytest.fixture(params=["csv", "preproc"])
def records(request):
    root = FIXTURES / "esnli" / request.param
    return [ex for rows in esnli.read_esnli(root).examples.values() for ex in rows]


def test_fast_constructor_is_selected_and_exact():
    assert esnli._new_example is esnli._FastExample  # NLIExample's layout is the one it mirrors
    args = ("train", 3, "id-3", "A premise.", "A hypothesis.", "neutral", ("one", ""))
    fast, real = esnli._new_example(*args), NLIExample(*args)
    assert type(fast) is NLIExample
    assert fast == real and hash(fast) == hash(real) and repr(fast) == repr(real)


def test_records_behave_like_nliexample(records):
    assert records
    for ex in records:
        assert type(ex) is NLIExample
        assert ex == NLIExample(**{f.name: getattr(ex, f.name) for f in dataclasses.fields(NLIExample)})
        assert pickle.loads(pickle.dumps(ex)) == ex and copy.deepcopy(ex) == ex
        with pytest.raises(dataclasses.FrozenInstanceError):
            ex.label = "entailment"  # type: ignore[misc]
        assert dataclasses.replace(ex, row=ex.row + 1).row == ex.row + 1


def test_falls_back_when_layout_differs(monkeypatch):
    @dataclasses.dataclass(frozen=True, slots=True)
    class Other:  # a different layout: the fast path must not be used for it
        split: str
        row: int

    monkeypatch.setattr(esnli, "NLIExample", Other)
    assert esnli._example_constructor() is Other
