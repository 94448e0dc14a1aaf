"""The scorers behind the validity figures of issue 18: ``label-aware-blind`` and ``lexical-gbdt``.

Each runs on synthetic lists whose shortcut is known (:mod:`tests.shortcut_fixtures`): grades
that follow the query's label x a candidate word, and grades that need the query.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from gradebench.errors import InvalidArgumentError, RunError
from gradebench.metrics import PairwiseAgreement
from gradebench.scorers import TrainOptions, get_scorer_class, make_scorer
from gradebench.scorers.features import WORD_CROSS_NAMESPACES, word_cross_features
from gradebench.training.evaluation import evaluate_lists
from tests.conftest import modules_loaded_by
from tests.shortcut_fixtures import shortcut_lists

MSE = TrainOptions(loss="mse", seed=0)
RANK = TrainOptions(loss="lambdarank", eval_metric="pairwise_agreement", seed=0)
SMALL_GBDT = {"dim": 2**14, "max_columns": 500}


def _pa(scores: np.ndarray, lists) -> float:
    return evaluate_lists(scores, lists, (PairwiseAgreement(),)).values((PairwiseAgreement(),))["pairwise_agreement"]


@pytest.fixture(scope="module")
def cross():
    return {s: shortcut_lists("label_cross", s) for s in ("train", "test")}


@pytest.fixture(scope="module")
def needs():
    return {s: shortcut_lists("needs_query", s) for s in ("train", "test")}


def _padded(lists, extra: int = 2):
    """``lists`` with ``extra`` more padding columns holding junk text, grades and labels."""
    n = lists.n_queries

    def widen(a: np.ndarray, fill) -> np.ndarray:
        return np.concatenate([a, np.full((n, extra), fill, dtype=a.dtype)], axis=1)

    return replace(
        lists, candidate_ids=widen(lists.candidate_ids, "pad"), candidates=widen(lists.candidates, "alpha junk"),
        relevance=widen(lists.relevance, 3.0), score=widen(lists.score, 1.0), mask=widen(lists.mask, False),
        extra={k: widen(v, "contradiction") for k, v in lists.extra.items()},
    )


# -- registry ----------------------------------------------------------------------------------------------


def test_registered_with_metadata():
    aware, gbdt = get_scorer_class("label-aware-blind"), get_scorer_class("lexical-gbdt")
    assert (aware.kind, aware.trainable, aware.uses_loss, aware.default_loss) == ("probe", True, True, "mse")
    assert (gbdt.kind, gbdt.trainable) == ("gbdt", True)
    assert aware.Config().label_column == gbdt.Config().label_column == "label"


def test_modules_import_without_torch_or_lightgbm():
    code = "import gradebench.scorers.label_aware, gradebench.scorers.lexical_gbdt"
    assert modules_loaded_by(code, "torch", "transformers", "lightgbm")[0] == []


# -- word_cross_features -----------------------------------------------------------------------------------


def test_word_cross_features_closed_form():
    x = word_cross_features(["a cat", "a cat"], ["the cat sleeps", "the cat sleeps"], ["neutral", None], dim=2**20)
    # 3 words + 2 bigrams + 2 query words + 1 shared + 2 new, plus 3 + 2 label crosses with a label
    assert (x.getrow(0).nnz, x.getrow(1).nnz) == (15, 10)
    assert set(x.data.tolist()) == {1.0}
    # the label crosses of another label land elsewhere; the rest is the same row
    y = word_cross_features(["a cat"], ["the cat sleeps"], ["entailment"], dim=2**20)
    shared = set(x.getrow(0).indices) & set(y.getrow(0).indices)
    assert len(shared) == 10 and shared == set(x.getrow(1).indices)
    assert len(WORD_CROSS_NAMESPACES) == 7
    with pytest.raises(InvalidArgumentError, match="aligned"):
        word_cross_features(["a"], ["b", "c"], None, dim=16)


# -- label-aware-blind -------------------------------------------------------------------------------------


def test_label_aware_probe_finds_the_label_cross_that_query_blind_cannot(cross):
    aware = make_scorer("label-aware-blind", {"alpha": 1.0, "dim": 2**14}, seed=0)
    aware.fit(cross["train"], None, MSE)
    blind = make_scorer("query-blind", {"alpha": 1.0, "dim": 2**14}, seed=0)
    blind.fit(cross["train"], None, MSE)
    assert _pa(aware.score(cross["test"]), cross["test"]) > 0.95
    assert _pa(blind.score(cross["test"]), cross["test"]) < 0.6


def test_label_aware_probe_is_at_chance_when_grades_need_the_query(needs):
    aware = make_scorer("label-aware-blind", {"alpha": 1.0, "dim": 2**14}, seed=0)
    aware.fit(needs["train"], None, MSE)
    assert _pa(aware.score(needs["test"]), needs["test"]) < 0.6


def test_label_aware_probe_never_reads_the_query(cross):
    aware = make_scorer("label-aware-blind", {"alpha": 1.0, "dim": 2**14}, seed=0)
    aware.fit(cross["train"], None, MSE)
    test = cross["test"]
    blank = replace(test, queries=np.array(["?"] * test.n_queries, dtype=object))
    np.testing.assert_array_equal(aware.score(test), aware.score(blank))
    # ... but does read the label
    flipped = {"entailment": "contradiction", "contradiction": "entailment"}
    other = replace(test, extra={**test.extra, "label": np.vectorize(lambda v: flipped.get(v, v), otypes=[object])(
        test.extra["label"])})
    assert _pa(aware.score(other), test) < 0.1


def test_label_aware_probe_needs_its_label_column_and_ridge(cross):
    aware = make_scorer("label-aware-blind", {"dim": 2**14}, seed=0)
    unlabelled = replace(cross["train"], extra={})
    with pytest.raises(InvalidArgumentError, match="label column 'label'") as e:
        aware.fit(unlabelled, None, MSE)
    assert e.value.key == "label_column"
    with pytest.raises(InvalidArgumentError, match="ridge regression only"):
        aware.fit(cross["train"], None, TrainOptions(loss="listnet", seed=0))
    with pytest.raises(InvalidArgumentError) as e:
        make_scorer("label-aware-blind", {"solver": "torch"})
    assert e.value.key == "solver"


def test_label_aware_probe_round_trips_and_ignores_padding(cross, tmp_path):
    aware = make_scorer("label-aware-blind", {"dim": 2**14}, seed=0)
    aware.fit(cross["train"], cross["test"], MSE)  # alpha picked on validation lists
    aware.save(tmp_path / "m")
    loaded = get_scorer_class("label-aware-blind").load(tmp_path / "m")
    assert loaded.config == aware.config
    np.testing.assert_array_equal(loaded.score(cross["test"]), aware.score(cross["test"]))
    with pytest.raises(InvalidArgumentError, match="label_column"):
        get_scorer_class("label-aware-blind").load(tmp_path / "m", {"dim": 2**14, "label_column": "gold"})
    padded = _padded(cross["test"])
    np.testing.assert_array_equal(aware.score(padded)[:, : cross["test"].list_size], aware.score(cross["test"]))


# -- lexical-gbdt ------------------------------------------------------------------------------------------


def test_lexical_gbdt_learns_the_label_cross_and_query_matching(cross, needs):
    for data in (cross, needs):
        gbdt = make_scorer("lexical-gbdt", SMALL_GBDT, seed=0)
        gbdt.fit(data["train"], None, RANK)
        assert _pa(gbdt.score(data["test"]), data["test"]) > 0.9
    dense = make_scorer("lambdamart", seed=0)
    dense.fit(cross["train"], None, RANK)
    assert _pa(dense.score(cross["test"]), cross["test"]) < 0.6  # 14 dense features cannot see the cross


def test_lexical_gbdt_is_deterministic_and_round_trips(cross, tmp_path):
    a = make_scorer("lexical-gbdt", SMALL_GBDT, seed=3)
    history_a = a.fit(cross["train"], cross["test"], RANK)
    b = make_scorer("lexical-gbdt", SMALL_GBDT, seed=3)
    assert b.fit(cross["train"], cross["test"], RANK) == history_a
    np.testing.assert_array_equal(a.score(cross["test"]), b.score(cross["test"]))
    a.save(tmp_path / "m")
    meta = json.loads((tmp_path / "m" / "lexical_gbdt.json").read_text())
    assert meta["label_crosses"] is True and len(meta["columns"]) <= 500
    loaded = get_scorer_class("lexical-gbdt").load(tmp_path / "m")
    assert loaded.config == a.config and loaded.fitted() == a.fitted() and loaded.describe() == a.describe()
    np.testing.assert_array_equal(loaded.score(cross["test"]), a.score(cross["test"]))
    with pytest.raises(InvalidArgumentError, match="dim"):
        get_scorer_class("lexical-gbdt").load(tmp_path / "m", {**SMALL_GBDT, "dim": 2**12})
    (tmp_path / "m" / "lexical_gbdt.txt").write_text("not a model")
    with pytest.raises(RunError, match="cannot load"):
        get_scorer_class("lexical-gbdt").load(tmp_path / "m")


def test_lexical_gbdt_label_crosses_follow_the_lists(cross):
    with_label = make_scorer("lexical-gbdt", SMALL_GBDT, seed=0)
    with_label.fit(cross["train"], None, RANK)
    assert with_label.fitted()["label_crosses"] is True
    with pytest.raises(InvalidArgumentError, match="trained with the query label column 'label'"):
        with_label.score(replace(cross["test"], extra={}))
    without = make_scorer("lexical-gbdt", {**SMALL_GBDT, "label_column": None}, seed=0)
    without.fit(cross["train"], None, RANK)
    assert without.fitted()["label_crosses"] is False
    np.testing.assert_array_equal(without.score(cross["test"]), without.score(replace(cross["test"], extra={})))


def test_lexical_gbdt_tunes_on_validation_lists(needs):
    from gradebench.scorers.lexical_gbdt import GRID

    gbdt = make_scorer("lexical-gbdt", {**SMALL_GBDT, "tune": True}, seed=0)
    history = gbdt.fit(needs["train"], needs["test"], RANK)
    assert [(r["num_leaves"], r["min_child_samples"]) for r in history] == list(GRID)
    best = max(history, key=lambda r: r["eval_pairwise_agreement"])  # ties: the first
    fitted = gbdt.fitted()
    assert (fitted["num_leaves"], fitted["min_child_samples"], fitted["trees"]) == (
        best["num_leaves"], best["min_child_samples"], best["trees"])
    untuned = make_scorer("lexical-gbdt", {**SMALL_GBDT, "tune": True}, seed=0)
    assert len(untuned.fit(needs["train"], None, RANK)) == 1  # no validation lists: no grid


def test_lexical_gbdt_ignores_padding_and_refuses_untrained(cross):
    gbdt = make_scorer("lexical-gbdt", SMALL_GBDT, seed=0)
    assert gbdt.fitted() == {}
    with pytest.raises(InvalidArgumentError, match="not trained"):
        gbdt.score(cross["test"])
    gbdt.fit(cross["train"], None, RANK)
    padded = _padded(cross["test"])
    np.testing.assert_array_equal(gbdt.score(padded)[:, : cross["test"].list_size], gbdt.score(cross["test"]))


def test_lexical_gbdt_trains_and_evaluates_through_run_folders(demo_benchmark, tmp_path):
    """Usable on the leaderboard: `train` writes a run folder, `load_run` restores it, `evaluate` records it."""
    from gradebench.benchmark.lists import open_benchmark
    from gradebench.experiments.evaluate import evaluate_scorer
    from gradebench.experiments.runs import load_run
    from gradebench.experiments.train import train

    train(demo_benchmark, "lexical-gbdt", config={"min_child_samples": 5, "dim": 2**12}, out=tmp_path / "run")
    scorer, info = load_run(tmp_path / "run")
    assert scorer.list_columns() == ("label",)
    test = open_benchmark(demo_benchmark).lists("test", columns=("tier", "label"))
    assert scorer.score(test).shape == test.mask.shape and scorer.fitted()["word_columns"] > 0
    assert scorer._uses_label  # `train` read the label column the scorer asks for
    record = evaluate_scorer(demo_benchmark, scorer, split="test", n_resamples=10, run=info, write=False,
                             results_dir=tmp_path / "results")
    assert record.scorer.name == "lexical-gbdt"


def test_label_aware_probe_trains_and_evaluates_through_run_folders(demo_benchmark, tmp_path):
    """`train`/`sweep` and `evaluate` read the label column the probe names (it failed for want of it)."""
    from gradebench.experiments.evaluate import evaluate_scorer
    from gradebench.experiments.runs import load_run
    from gradebench.experiments.train import train

    train(demo_benchmark, "label-aware-blind", loss="mse", out=tmp_path / "run")
    scorer, info = load_run(tmp_path / "run")
    assert scorer.list_columns() == ("label",)
    record = evaluate_scorer(demo_benchmark, scorer, split="test", n_resamples=10, run=info, write=False,
                             results_dir=tmp_path / "results")
    assert record.scorer.name == "label-aware-blind"
    assert 0.0 <= record.metrics["pairwise_agreement"].value <= 1.0
