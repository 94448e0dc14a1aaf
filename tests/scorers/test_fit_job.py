"""Scorer.fit is written once: it hands trainable scorers their arguments as one FitJob."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from gradebench.scorers import FitJob, Scorer, TrainOptions, get_scorer_class, scorer_names


class Recorder(Scorer):
    trainable = True

    def _fit(self, job: FitJob) -> list[dict]:
        self.job = job
        return [{"epoch": 1}]

    def score(self, lists):  # pragma: no cover - not called
        return np.zeros(lists.mask.shape)


class Untrained(Scorer):
    def score(self, lists):  # pragma: no cover - not called
        return np.zeros(lists.mask.shape)


def test_fit_passes_every_argument_as_one_job(tmp_path):
    train, validation, options = object(), object(), TrainOptions(loss="listnet", epochs=2)

    def progress(done: int, total: int, message: str) -> None: ...

    scorer = Recorder()
    history = scorer.fit(train, validation, options, run_dir=tmp_path, resume=True, progress=progress)  # type: ignore[arg-type]
    assert history == [{"epoch": 1}]
    assert scorer.job == FitJob(train, validation, options, run_dir=tmp_path, resume=True, progress=progress)  # type: ignore[arg-type]
    scorer.fit(train, None, options)  # type: ignore[arg-type]
    job = scorer.job
    assert (job.validation, job.run_dir, job.resume, job.progress) == (None, None, False, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.resume = True  # type: ignore[misc]


def test_untrained_scorers_learn_nothing():
    assert Untrained().fit(object(), None, TrainOptions()) == []  # type: ignore[arg-type]


@pytest.mark.parametrize("name", scorer_names())
def test_no_builtin_scorer_repeats_the_fit_signature(name):
    cls = get_scorer_class(name)
    assert cls.fit is Scorer.fit, f"{name}: implement _fit(self, job) instead of overriding fit"
    if cls.trainable:
        assert cls._fit is not Scorer._fit, f"{name} is trainable but learns nothing"


def test_fit_job_fields_are_fit_arguments():
    import inspect

    params = list(inspect.signature(Scorer.fit).parameters)[1:]
    assert params == [f.name for f in dataclasses.fields(FitJob)]
    assert isinstance(FitJob(None, None, TrainOptions(), run_dir=Path("x")).run_dir, Path)  # type: ignore[arg-type]
