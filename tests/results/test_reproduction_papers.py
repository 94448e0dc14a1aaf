"""The papers' figures the reproduction report quotes (gradebench/experiments/reproduction/papers.py) are
the papers' own, checked against their texts in ../shared/seeds (skipped where those are absent), and the
report's loss families are the loss registry's kinds."""

from __future__ import annotations

import pytest

from gradebench.experiments.reproduction import papers as P
from gradebench.experiments.reproduction.data import LOSS_FAMILIES
from tests.conftest import REPO

SHARED = (REPO / ".." / "shared").resolve()


def _text(prefix: str) -> str:
    found = sorted((SHARED / "seeds").glob(f"{prefix}_*.txt"))
    if not found:
        pytest.skip(f"paper {prefix} not available under {SHARED / 'seeds'}")
    return found[0].read_text(encoding="utf-8")


def test_table3():
    text = _text("000")
    names = {"mse": "MSE Regression", "bradley_terry": "Binary classification", "ranknet": "RankNet",
             "approxndcg": "ApproxNDCG", "listnet": "ListNet"}
    for loss, (ndcg, rho, sep) in P.TABLE3.items():
        assert any(line.startswith(names[loss]) and f"{ndcg:.3f} {rho:.3f} {sep:.3f}" in line
                   for line in text.splitlines()), loss
    assert list(P.TABLE3) == list(P.TABLE3_ORDER)


def test_table7():
    text = _text("000")
    rows = {"mse": "MSE Regression 0.089 No conv. 2.9/5.0 34%", "bradley_terry": "Binary classification 0.124 3,200 "
            "3.2/5.0 18%", "listnet": "ListNet (ours) 0.920 1,000 4.1/5.0 9%"}
    for loss, line in rows.items():
        assert line in text, loss
        sep, steps, quality, errors = P.TABLE7[loss]
        assert f"{sep:.3f}" in line and f"{quality}/5.0" in line and f"{round(errors * 100)}%" in line
        assert (steps is None) == ("No conv." in line) and (steps is None or f"{steps:,}" in line)


def test_worldtree_table4():
    text = _text("001")
    for model, (gold, extra, important, ndcg) in P.WORLDTREE_TABLE4.items():
        name = model.split(" (")[0]
        assert any(line.startswith(name) and f"{gold:.2f} {extra:.2f}" in line and f"{important:.2f}" in line
                   and line.rstrip().endswith(f"{ndcg:.2f}") for line in text.splitlines()), model
    assert "K = 8" in text


def test_rank_class_table4():
    text = _text("002")
    assert f"| {P.RANK_CLASS_BEST_CLASSIFIER:.3f}" in text
    low, high = P.RANK_CLASS_CONVERTED
    assert f"Converted Ranking w/ ALBERT  | {low:.3f}" in text and f"Converted Ranking w/ BERT    | {high:.3f}" in text


def test_l2r2_table1():
    text = _text("003")
    order = ("classification", "ranknet", "hinge", "lambdarank", "listnet", "listmle", "approxndcg")
    row = "RoBERTa " + " ".join(f"{P.L2R2_ROBERTA[k]:.2f}" for k in order)
    assert row in text


def test_chaosnli_scoreboard():
    refs = SHARED / "REFERENCES.md"
    if not refs.is_file():
        pytest.skip("REFERENCES.md not available")
    text = refs.read_text(encoding="utf-8")
    for bench, (jsd, kl, acc) in P.CHAOSNLI_ROBERTA_LARGE.items():
        name = bench.split("-")[1].upper()
        assert f"{name} {jsd:.3f} / {kl:.3f} / {acc:.3f}" in text


def test_families_are_the_registry_kinds():
    from gradebench.losses import LOSSES

    assert {loss: spec.kind for loss, spec in LOSSES.items()} == {
        loss: fam for fam, losses in LOSS_FAMILIES.items() for loss in losses}
