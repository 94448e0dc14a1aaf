"""fit_torch_scorer through hashed-mlp: resume, early stopping, best model, history, RNG isolation."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch

from gradebench.errors import InvalidArgumentError, RunError, UnknownNameError
from gradebench.scorers import TrainOptions, make_scorer
from gradebench.training.engine import CHECKPOINT_DIR, ListCollator, check_loss
from gradebench.training.evaluation import list_metrics
from gradebench.training.listeval import HISTORY_FILE
from tests.conftest import one_torch_thread
from tests.training._util import TINY


@pytest.fixture(autouse=True)
def _one_thread():
    with one_torch_thread():  # tiny tensors: several times faster on a busy machine
        yield


class Interrupt(Exception):
    pass


def _opts(**kw) -> TrainOptions:
    base = {"epochs": 4, "batch_queries": 8, "lr": 1e-2, "seed": 3, "patience": 10}
    return TrainOptions(**{**base, **kw})


def test_resume_continues_and_matches_an_uninterrupted_run(demo_lists, tmp_path):
    train, val, test = demo_lists["train"], demo_lists["validation"], demo_lists["test"]
    config = {**TINY, "dropout": 0.1}
    run = tmp_path / "run"

    def crash_in_epoch_3(done, total, message):  # 5 steps per epoch (38 queries / 8)
        if done > 10:
            raise Interrupt

    with pytest.raises(Interrupt):
        make_scorer("hashed-mlp", config, seed=3).fit(train, val, _opts(), run_dir=run, progress=crash_in_epoch_3)
    assert [r["epoch"] for r in map(json.loads, (run / HISTORY_FILE).read_text().splitlines())] == [1, 2]
    resumed = make_scorer("hashed-mlp", config, seed=3)
    history = resumed.fit(train, val, _opts(), run_dir=run, resume=True)
    assert [r["epoch"] for r in history] == [1, 2, 3, 4]
    assert [r["step"] for r in history] == [5, 10, 15, 20]

    straight = make_scorer("hashed-mlp", config, seed=3)
    full = straight.fit(train, val, _opts(), run_dir=tmp_path / "full")
    assert [r["loss"] for r in full] == [r["loss"] for r in history]
    np.testing.assert_array_equal(resumed.score(test), straight.score(test))


def test_resume_without_checkpoint_is_a_run_error(demo_lists, tmp_path):
    with pytest.raises(RunError, match="nothing to resume"):
        make_scorer("hashed-mlp", TINY).fit(demo_lists["train"], None, _opts(), run_dir=tmp_path, resume=True)
    with pytest.raises(RunError):
        make_scorer("hashed-mlp", TINY).fit(demo_lists["train"], None, _opts(), run_dir=None, resume=True)


def test_early_stopping_stops_when_validation_cannot_improve(demo_lists, tmp_path):
    opts = _opts(epochs=8, lr=1e-9, patience=1)
    history = make_scorer("hashed-mlp", TINY, seed=3).fit(demo_lists["train"], demo_lists["validation"], opts,
                                                          run_dir=tmp_path)
    assert len(history) == 2  # epoch 1 sets the best value, epoch 2 fails to beat it
    assert history[0]["eval_ndcg@5"] == history[1]["eval_ndcg@5"]


def test_best_epoch_weights_are_kept_and_history_is_on_disk(demo_lists, tmp_path):
    val = demo_lists["validation"]
    scorer = make_scorer("hashed-mlp", TINY, seed=5)
    history = scorer.fit(demo_lists["train"], val, _opts(epochs=5, seed=5), run_dir=tmp_path)
    best = max(r["eval_ndcg@5"] for r in history)
    assert list_metrics(scorer.score(val), val)["ndcg@5"] == pytest.approx(best, abs=1e-6)
    on_disk = [json.loads(line) for line in (tmp_path / HISTORY_FILE).read_text().splitlines()]
    assert on_disk == history
    assert len(list((tmp_path / CHECKPOINT_DIR).glob("checkpoint-*"))) <= 2


def test_without_validation_every_epoch_runs(demo_lists, tmp_path):
    history = make_scorer("hashed-mlp", TINY).fit(demo_lists["train"], None, _opts(epochs=3), run_dir=tmp_path)
    assert [r["epoch"] for r in history] == [1, 2, 3]
    assert not any(k.startswith("eval_") for r in history for k in r)


def test_fresh_run_replaces_an_old_history(demo_lists, tmp_path):
    make_scorer("hashed-mlp", TINY).fit(demo_lists["train"], None, _opts(epochs=3), run_dir=tmp_path)
    history = make_scorer("hashed-mlp", TINY).fit(demo_lists["train"], None, _opts(epochs=1), run_dir=tmp_path)
    assert [r["epoch"] for r in history] == [1]


def test_training_leaves_global_rng_untouched(demo_lists):
    torch_state, np_state, py_state = torch.get_rng_state(), np.random.get_state(), random.getstate()
    make_scorer("hashed-mlp", TINY).fit(demo_lists["train"], demo_lists["validation"], _opts(epochs=1))
    assert torch.equal(torch_state, torch.get_rng_state())
    assert random.getstate() == py_state
    after = np.random.get_state()
    assert np_state[0] == after[0] and np.array_equal(np_state[1], after[1]) and np_state[2:] == after[2:]


def test_progress_reports_steps(demo_lists):
    calls = []
    make_scorer("hashed-mlp", TINY).fit(demo_lists["train"], demo_lists["validation"], _opts(epochs=2),
                                        progress=lambda d, t, m: calls.append((d, t, m)))
    assert calls[0][0] == 0 and calls[-1][0] == calls[-1][1] == 10
    assert calls[-1][2].startswith("epoch 2/2") and "eval_ndcg@5" in calls[-1][2]


def test_collator_trims_to_widest_list_and_masks(demo_lists):
    from dataclasses import replace

    lists = demo_lists["validation"]
    mask = lists.mask.copy()
    mask[:2, 3:] = False
    lists = replace(lists, mask=mask)
    seen = {}

    def collate(rows, width):
        seen["width"] = width
        return {}

    batch = ListCollator(lists, collate)([0, 1])
    assert seen["width"] == 3 and batch["mask"].shape == (2, 3) and batch["mask"].all()
    np.testing.assert_array_equal(batch["labels"].numpy(), lists.relevance[:2, :3].astype(np.float32))
    assert ListCollator(lists, collate, label_scale=0.25)([2])["labels"].max() == pytest.approx(1.0)


def test_check_loss():
    assert check_loss("listnet", {}, scorer="x").kind == "listwise"
    with pytest.raises(UnknownNameError, match="listnett"):
        check_loss("listnett", {}, scorer="x")
    with pytest.raises(InvalidArgumentError, match="pairwise"):
        check_loss("listnet", {}, scorer="x", kinds=("pairwise",))
    with pytest.raises(InvalidArgumentError, match="no parameter"):
        check_loss("listnet", {"margin": 1.0}, scorer="x")
    with pytest.raises(InvalidArgumentError):
        check_loss(None, {}, scorer="x")
