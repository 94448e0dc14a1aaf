"""Issue 16 (part A) for the cross-encoder's trainer: a half-written checkpoint is dropped, not trusted."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")

from gradebench.scorers import TrainOptions, make_scorer  # noqa: E402
from gradebench.stops import ENV, stopping_with  # noqa: E402
from gradebench.training.checkpoints import TRAINER_STATE  # noqa: E402
from gradebench.training.listeval import HISTORY_FILE  # noqa: E402
from tests.conftest import one_torch_thread  # noqa: E402
from tests.harness._kill import killed_at  # noqa: E402


def _fit(tiny_bert, lists, run_dir, **kw):
    scorer = make_scorer("cross-encoder", {"model": str(tiny_bert), "max_length": 96}, seed=7)
    opts = TrainOptions(loss="listnet", epochs=2, lr=1e-3, batch_queries=8, warmup_ratio=0.0)
    with one_torch_thread():
        scorer.fit(lists["train"].head(16), lists["validation"], opts, run_dir=run_dir, **kw)
    return scorer


def test_a_cross_encoder_killed_while_saving_a_checkpoint_resumes_from_the_last_complete_one(
        tiny_bert, demo_lists, tmp_path, monkeypatch):
    run = tmp_path / "cut"
    killed_at(monkeypatch, "checkpoint-saving:2", [run], lambda: _fit(tiny_bert, demo_lists, run))
    half = run / "checkpoints" / "checkpoint-4"  # 16 queries / 8 = 2 steps an epoch
    assert half.is_dir() and not (half / TRAINER_STATE).exists()
    seen = []  # at the first step after the resume: is the half-written checkpoint still there?
    monkeypatch.setenv(ENV, "train-step:1")
    with stopping_with(lambda point: seen.append(half.exists())):
        resumed = _fit(tiny_bert, demo_lists, run, resume=True)  # was: ValueError: Can't find a valid checkpoint
    monkeypatch.delenv(ENV)
    assert seen == [False]  # dropped before training went on, never trusted
    assert (half / TRAINER_STATE).is_file()  # then saved again, whole
    full = _fit(tiny_bert, demo_lists, tmp_path / "full")
    assert (run / HISTORY_FILE).read_bytes() == (tmp_path / "full" / HISTORY_FILE).read_bytes()
    val = demo_lists["validation"]
    np.testing.assert_array_equal(resumed.score(val), full.score(val))
