"""Issue 28 item 5: a checkpoint whose pickles were replaced is refused in one line, before any loads.

An interrupted run folder (a finished run without its final files and last checkpoint) gets one
of the checkpoint's non-weight pickles replaced by one that would open a marker file when
unpickled, or cut short. Resuming must end with a one-line :class:`RunError` naming that file and
how to start the run over (exit 2 from the CLI), and the marker must not exist: nothing ran.
"""

from __future__ import annotations

import builtins
import shutil

import pytest

torch = pytest.importorskip("torch")

from gradebench.errors import RunError  # noqa: E402
from gradebench.experiments.runs import MODEL_DIR, RUN_JSON  # noqa: E402
from gradebench.experiments.train import train  # noqa: E402
from gradebench.training.checkpoints import CHECKPOINT_DIR, verify  # noqa: E402
from tests.cli.conftest import assert_one_line_error  # noqa: E402
from tests.conftest import one_torch_thread  # noqa: E402
from tests.training._util import TINY  # noqa: E402

#: 38 train queries / 8 a batch = 5 steps an epoch: checkpoint-5, checkpoint-10
OPTS = {"epochs": 2, "batch_queries": 8, "lr": 1e-2, "seed": 3, "patience": 10}
PICKLES = ["optimizer.pt", "scheduler.pt", "rng_state.pth", "training_args.bin"]


class _OpensAFile:
    """Unpickled, calls ``open(path, "w")``: proof that loading ran code."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (builtins.open, (self.path, "w"))


@pytest.fixture(scope="module")
def finished(demo_benchmark, tmp_path_factory):
    out = tmp_path_factory.mktemp("pickles") / "run"
    with one_torch_thread():
        train(demo_benchmark, "hashed-mlp", config=TINY, options=OPTS, out=out)
    return out


def _interrupted(finished, tmp_path):
    """A copy of ``finished`` as a run killed after its first checkpoint leaves it."""
    out = tmp_path / "run"
    shutil.copytree(finished, out)
    (out / RUN_JSON).unlink()
    shutil.rmtree(out / MODEL_DIR)
    shutil.rmtree(out / CHECKPOINT_DIR / "checkpoint-10")
    return out, out / CHECKPOINT_DIR / "checkpoint-5"


def _train(bench, out, **kw):
    with one_torch_thread():
        return train(bench, "hashed-mlp", config=TINY, options=OPTS, out=out, **kw)


@pytest.mark.parametrize("name", PICKLES)
@pytest.mark.parametrize("resume", [True, False])
def test_a_pickle_that_would_run_code_is_refused_naming_the_file(name, resume, finished, demo_benchmark, tmp_path):
    out, ckpt = _interrupted(finished, tmp_path)
    marker = tmp_path / "code-ran"
    torch.save({"state": _OpensAFile(marker)}, ckpt / name)
    with pytest.raises(RunError) as e:
        _train(demo_benchmark, out, resume=resume)  # the same command continues a run, --resume or not
    assert not marker.exists()
    text = str(e.value)
    assert "\n" not in text and str(ckpt / name) in text and "io.open" in text  # what the pickle would call
    assert f"rm -r {out}" in text and "start the run over" in text
    assert (ckpt / name).is_file()  # the run folder is left for the user to look at


def test_a_truncated_optimizer_state_is_refused(finished, demo_benchmark, tmp_path):
    out, ckpt = _interrupted(finished, tmp_path)
    data = (ckpt / "optimizer.pt").read_bytes()
    (ckpt / "optimizer.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(RunError, match="optimizer.pt: the checkpoint file does not load as plain data"):
        _train(demo_benchmark, out)


def test_an_untouched_checkpoint_passes_and_the_run_continues(finished, demo_benchmark, tmp_path):
    out, ckpt = _interrupted(finished, tmp_path)
    verify(ckpt)  # every file of a real checkpoint, training_args.bin too
    assert _train(demo_benchmark, out, resume=True).resumed_from == "checkpoint-5"


def test_the_cli_says_it_in_one_line_with_exit_2(finished, demo_benchmark, tmp_path, cli):
    out, ckpt = _interrupted(finished, tmp_path)
    marker = tmp_path / "code-ran"
    torch.save(_OpensAFile(marker), ckpt / "rng_state.pth")
    argv = ["train", "--benchmark", str(demo_benchmark), "--scorer", "hashed-mlp",
            *[a for k, v in TINY.items() for a in ("--set", f"{k}={v}")], "--epochs", "2", "--batch-queries", "8",
            "--lr", "0.01", "--seed", "3", "--patience", "10", "--out", str(out), "--resume"]
    code, _, err = cli(*argv)
    assert code == 2
    assert_one_line_error(err, "rng_state.pth", "start the run over", f"rm -r {out}")
    assert "internal error" not in err
    assert not marker.exists()
