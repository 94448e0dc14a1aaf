"""Issue 16 (part A): a scorer run killed at any step is continued by running the same command again.

Every kill happens at a named stop point (``GRADEBENCH_STOP_AT``, :mod:`gradebench.stops`), never
on a timer: in-process with :func:`tests.harness._kill.killed_at` (the disk state ``kill -9``
leaves), and once for real in a subprocess (``os._exit(137)``). The continued run must end with
the files of an uninterrupted run of the same seed, byte for byte: the model, ``history.jsonl``,
and ``run.json`` up to its timings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gradebench.experiments.runs import LOCK_FILE, RUN_CONFIG, RUN_JSON, SCORER_RUN, RunInUse, claim
from gradebench.experiments.train import train
from gradebench.stops import ENV, KILLED_EXIT, stopping_with
from gradebench.training.checkpoints import TRAINER_STATE
from tests.conftest import REPO, one_torch_thread
from tests.harness._kill import digests, killed_at, names
from tests.training._util import TINY

#: 38 train queries / 8 a batch = 5 steps an epoch: checkpoint-5, checkpoint-10
OPTS = {"epochs": 2, "batch_queries": 8, "lr": 1e-2, "seed": 3, "patience": 10}
#: stops early: epoch 1 sets the best value, epoch 2 cannot beat it (8 epochs allowed)
EARLY = {**OPTS, "epochs": 8, "lr": 1e-9, "patience": 1}


def _train(bench, out, options=OPTS, scorer="hashed-mlp", **kw):
    return train(bench, scorer, config=TINY, options=options, out=out, **kw)


@pytest.fixture(autouse=True)
def _one_thread():
    with one_torch_thread():  # tiny tensors: several times faster on a busy machine, and the same bits everywhere
        yield


@pytest.fixture(scope="module")
def reference(demo_benchmark, tmp_path_factory):
    """Uninterrupted runs: ``{(scorer, options name): run folder}``, made on first use."""
    root = tmp_path_factory.mktemp("uninterrupted")
    made = {}

    def get(scorer="hashed-mlp", options="OPTS"):
        key = (scorer, options)
        if key not in made:
            made[key] = root / f"{scorer}-{options}"
            with one_torch_thread():
                _train(demo_benchmark, made[key], {"OPTS": OPTS, "EARLY": EARLY}[options], scorer=scorer)
        return made[key]

    return get


def _same_as(run, ref):
    """``run`` ended exactly as the uninterrupted ``ref``, and holds nothing else."""
    assert digests(run / "model") == digests(ref / "model")
    assert (run / "history.jsonl").read_bytes() == (ref / "history.jsonl").read_bytes()
    a, b = (json.loads((d / RUN_JSON).read_text()) for d in (run, ref))
    for d in (a, b):
        del d["timings"], d["run_dir"]
    assert a == b
    assert not [n for n in names(run) if n.split("/")[-1].startswith(".")]  # no lock, no temp folder
    ckpts = sorted((run / "checkpoints").glob("checkpoint-*"))
    assert ckpts and all((c / TRAINER_STATE).is_file() for c in ckpts)


@pytest.mark.parametrize("point, resume, resumed_from, left", [
    # issue 16: killed in epoch 1 the re-run said "interrupted (hint: --resume)" and with --resume
    # "nothing to resume": the run could not be continued at all
    ("train-step:2", False, None, {RUN_CONFIG, LOCK_FILE}),
    ("train-step:2", True, None, {RUN_CONFIG, LOCK_FILE}),
    # the checkpoint is complete, its epoch's history line not written yet
    ("checkpoint-saved:1", False, "checkpoint-5", {RUN_CONFIG, LOCK_FILE, "checkpoints/checkpoint-5"}),
    # the final save: the model in its temp folder / published without run.json
    ("output-saved:1", False, "checkpoint-10", {RUN_CONFIG, LOCK_FILE, "history.jsonl", ".model.incomplete-*"}),
    ("output-published:1", True, "checkpoint-10", {RUN_CONFIG, LOCK_FILE, "history.jsonl", "model"}),
], ids=["epoch-1", "epoch-1-resume", "checkpoint-without-history", "model-in-temp", "model-without-run-json"])
def test_a_run_killed_at_any_step_ends_as_if_never_killed(demo_benchmark, reference, tmp_path, monkeypatch,
                                                          point, resume, resumed_from, left):
    out = tmp_path / "run"
    killed_at(monkeypatch, point, [out], lambda: _train(demo_benchmark, out))
    there = set(names(out))
    for name in left:
        assert any(n == name or (name.endswith("*") and n.startswith(name[:-1])) for n in there), (name, there)
    assert RUN_JSON not in there
    result = _train(demo_benchmark, out, resume=resume)
    assert not result.cached and result.resumed_from == resumed_from
    _same_as(out, reference())


def test_an_early_stopped_run_killed_in_its_final_save_stays_stopped(demo_benchmark, reference, tmp_path, monkeypatch):
    # the Trainer forgets an early stop when it starts again: resumed from the checkpoint of the stop,
    # it trained another epoch (a longer history than the uninterrupted run's)
    out = tmp_path / "run"
    killed_at(monkeypatch, "output-saved:1", [out], lambda: _train(demo_benchmark, out, EARLY))
    result = _train(demo_benchmark, out, EARLY)
    assert result.resumed_from == "checkpoint-10" and result.epochs_run == 2
    _same_as(out, reference(options="EARLY"))


def test_a_pair_mlp_run_killed_in_its_first_checkpoint_save(demo_benchmark, reference, tmp_path, monkeypatch):
    out = tmp_path / "run"
    killed_at(monkeypatch, "checkpoint-saving:1", [out], lambda: _train(demo_benchmark, out, scorer="pair-mlp"))
    ckpt = out / "checkpoints" / "checkpoint-5"
    assert ckpt.is_dir() and not (ckpt / TRAINER_STATE).exists()  # weights written, state not
    result = _train(demo_benchmark, out, scorer="pair-mlp")
    assert result.resumed_from is None  # the half-written checkpoint was not trusted: a fresh start
    _same_as(out, reference(scorer="pair-mlp"))


def _train_argv(bench, out, *extra):
    return ["train", "--benchmark", str(bench), "--scorer", "hashed-mlp", *[a for k, v in TINY.items()
            for a in ("--set", f"{k}={v}")], "--epochs", "2", "--batch-queries", "8", "--lr", "0.01", "--seed", "3",
            "--patience", "10", "--out", str(out), *extra]


def test_kill_9_during_a_checkpoint_save_then_resume(demo_benchmark, reference, tmp_path, cli, monkeypatch):
    # issue 16: a kill during a checkpoint save left checkpoint-N without trainer_state.json, and
    # --resume failed with "internal error: ValueError: Can't find a valid checkpoint"
    out = tmp_path / "run"
    env = {**os.environ, "GRADEBENCH_STOP_AT": "checkpoint-saving:2", "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "gradebench", *_train_argv(demo_benchmark, out, "--json")],
                          cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == KILLED_EXIT, done.stderr
    half = out / "checkpoints" / "checkpoint-10"
    assert half.is_dir() and not (half / TRAINER_STATE).exists() and (out / LOCK_FILE).is_file()
    seen = []  # at the first step after the resume: is the half-written checkpoint still there?
    monkeypatch.setenv(ENV, "train-step:1")
    with stopping_with(lambda point: seen.append(half.exists())):
        code, printed, err = cli(*_train_argv(demo_benchmark, out, "--resume", "--json"))
    monkeypatch.delenv(ENV)
    assert code == 0, err
    assert json.loads(printed)["resumed_from"] == "checkpoint-5"
    assert seen == [False]  # removed before training went on, never trusted
    assert (half / TRAINER_STATE).is_file()  # then written again, whole
    _same_as(out, reference())
    code, printed, _ = cli(*_train_argv(demo_benchmark, out))  # the human message says what happened
    assert code == 0 and "found (already trained)" in printed


def test_a_failed_command_leaves_nothing_that_blocks_the_corrected_one(demo_benchmark, tmp_path, cli):
    # issue 16: `--loss-param target=nosuch` failed in training and left run-config.json behind; the
    # corrected command was then refused ("holds an interrupted run of another configuration")
    out = tmp_path / "run"
    code, _, err = cli(*_train_argv(demo_benchmark, out, "--loss", "listnet", "--loss-param", "target=nosuch"))
    assert code == 2 and err.count("\n") == 1 and "nosuch" in err
    assert not out.exists()
    code, _, err = cli(*_train_argv(demo_benchmark, out, "--loss", "listnet", "--loss-param", "target=raw",
                                    "--epochs", "1"))
    assert code == 0, err
    assert (out / RUN_JSON).is_file()


def test_a_second_process_on_a_live_run_folder_gets_one_line(demo_benchmark, tmp_path, cli):
    out = tmp_path / "run"
    with claim(out, "held by someone else", SCORER_RUN):  # another live `gradebench train` (flock per open file)
        code, _, err = cli(*_train_argv(demo_benchmark, out))
        assert code == 2 and err.count("\n") == 1 and f"in use by pid {os.getpid()}" in err
        with pytest.raises(RunInUse):
            _train(demo_benchmark, out, resume=True)
        assert names(out) == [LOCK_FILE]  # untouched
    assert not out.exists()
