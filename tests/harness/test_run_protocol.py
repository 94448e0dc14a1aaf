"""The run-folder protocol shared by scorer runs and policy runs: claim, lock, begin, publish, finish, discard."""

from __future__ import annotations

import json
import os
import re

import pytest

from gradebench.errors import InvalidArgumentError, RunError
from gradebench.experiments.runs import LOCK_FILE, SCORER_RUN, RunInUse, RunLayout, claim, read_final

#: a layout like the policy runs' (cannot resume), without importing gradebench.rl
RESTARTING = RunLayout(what="policy run", command="gradebench lipo|grpo|ppo", redo="run it again",
                       config="policy-run-config.json", final="policy-run.json", schema_version=1, resumable=False,
                       outputs=("policy",), scratch=("history.jsonl", ".trainer"))
LAYOUTS = pytest.mark.parametrize("layout", [SCORER_RUN, RESTARTING], ids=["scorer", "policy"])


def _finished(run_dir, layout, fp="f1"):
    run = claim(run_dir, fp, layout)
    run.begin({"x": 1})
    run.publish(layout.outputs[0], lambda tmp: (tmp / "weights.bin").write_bytes(b"w"))
    run.finish({"run_fingerprint": fp, "schema_version": layout.schema_version, "n": 1})
    return run


@LAYOUTS
def test_new_then_done(layout, tmp_path):
    out = tmp_path / "run"
    run = claim(out, "f1", layout)
    assert run.action == "new" and not run.done
    assert sorted(p.name for p in out.iterdir()) == [LOCK_FILE]  # claiming takes the lock, writes nothing else
    run.release()
    assert not out.exists()  # a claim let go unused leaves nothing
    _finished(out, layout)
    assert json.loads((out / layout.config).read_text()) == {"x": 1, "run_fingerprint": "f1"}
    assert (out / layout.outputs[0] / "weights.bin").read_bytes() == b"w"
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temp folder left
    again = claim(out, "f1", layout, resume=layout.resumable)  # a finished run is found, --resume or not
    assert again.done and again.finished == read_final(out, layout) and again.finished["n"] == 1
    with pytest.raises(RunError, match=f"the folder holds another finished {layout.what}"):
        claim(out, "f2", layout)
    (tmp_path / "empty").mkdir()
    assert claim(tmp_path / "empty", "f1", layout).action == "new"


@LAYOUTS
def test_what_is_refused(layout, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(RunError, match="--out is a file"):
        claim(afile, "f1", layout)
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "notes.txt").write_text("mine")
    with pytest.raises(RunError, match=f"--out is a non-empty folder that holds no {layout.what}"):
        claim(junk, "f1", layout)
    out = tmp_path / "run"
    _finished(out, layout)
    raw = json.loads((out / layout.final).read_text())
    (out / layout.final).write_text(json.dumps({**raw, "schema_version": 99}))
    with pytest.raises(RunError, match=f"{layout.what} format v99 is not supported"):
        claim(out, "f1", layout)
    (out / layout.final).write_text("{not json")
    with pytest.raises(RunError, match="not valid JSON"):
        claim(out, "f1", layout)


def _checkpoint(folder, step, *, complete=True):
    """A ``checkpoint-<step>`` folder as the Trainer leaves it (complete: with its trainer_state.json last)."""
    ckpt = folder / f"checkpoint-{step}"
    ckpt.mkdir(parents=True)
    (ckpt / "model.safetensors").write_bytes(b"w")
    if complete:
        (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": []}))
    return ckpt


@pytest.mark.parametrize("resume", [False, True], ids=["same-command", "--resume"])
def test_an_interrupted_resumable_run_continues_with_or_without_resume(tmp_path, resume):
    out = tmp_path / "run"
    claim(out, "f1", SCORER_RUN).begin({"x": 1})
    _checkpoint(out / "checkpoints", 5)
    _checkpoint(out / "checkpoints", 10, complete=False)  # a save killed half-way
    (out / ".model.incomplete-abc").mkdir()  # a publication killed half-way
    with pytest.raises(RunError, match="interrupted run of another configuration.*with --resume"):
        claim(out, "f2", SCORER_RUN, resume=True)
    with pytest.raises(RunError, match="interrupted run of another configuration"):
        claim(out, "f2", SCORER_RUN)
    run = claim(out, "f1", SCORER_RUN, resume=resume)
    assert run.action == "resume"
    run.begin({"x": 1})
    assert run.checkpoint == out / "checkpoints" / "checkpoint-5"  # the last complete one
    assert (out / "checkpoints" / "checkpoint-5").is_dir()  # kept: the trainer continues from it
    assert not (out / "checkpoints" / "checkpoint-10").exists()  # a half-written checkpoint is never trusted
    assert not (out / ".model.incomplete-abc").exists()  # nor a half-written publication
    run.release()
    assert not (out / LOCK_FILE).exists()
    with pytest.raises(RunError, match="nothing to resume"):
        claim(tmp_path / "fresh", "f1", SCORER_RUN, resume=True)
    assert not (tmp_path / "fresh").exists()  # a refused claim leaves nothing


@LAYOUTS
def test_a_folder_in_use_is_refused_in_one_line_and_freed_when_its_holder_ends(layout, tmp_path):
    out = tmp_path / "run"
    first = claim(out, "f1", layout)
    with pytest.raises(RunInUse, match=rf"in use by pid {os.getpid()}") as e:
        claim(out, "f1", layout)
    assert e.value.pid == os.getpid() and "\n" not in str(e.value)
    with pytest.raises(RunInUse):  # whatever the second one wants: it does not touch the folder
        claim(out, "f2", layout)
    assert sorted(p.name for p in out.iterdir()) == [LOCK_FILE]
    first.begin({"x": 1})
    with pytest.raises(RunInUse):
        claim(out, "f1", layout)
    first.release()  # what a killed holder's operating system does too
    again = claim(out, "f1", layout)
    assert again.action == ("resume" if layout.resumable else "restart")
    again.release()
    _finished(tmp_path / "done", layout)
    holder = claim(tmp_path / "done", "f1", layout)
    assert holder.done and not (tmp_path / "done" / LOCK_FILE).exists()  # a finished run is read without the lock


def test_an_interrupted_run_that_cannot_resume_starts_over(tmp_path):
    out = tmp_path / "run"
    claim(out, "f1", RESTARTING).begin({"x": 1})
    (out / "history.jsonl").write_text('{"step": 1}\n')
    (out / ".trainer").mkdir()
    (out / "policy").mkdir()  # published, but the run was killed before its final file
    (out / ".policy.incomplete-abc").mkdir()
    with pytest.raises(RunError, match="interrupted policy run of another configuration.*to start it over"):
        claim(out, "f2", RESTARTING)
    with pytest.raises(InvalidArgumentError, match="cannot be resumed"):
        claim(out, "f1", RESTARTING, resume=True)
    run = claim(out, "f1", RESTARTING)
    assert run.action == "restart"
    run.begin({"x": 2})
    run.release()
    assert sorted(p.name for p in out.iterdir()) == ["policy-run-config.json"]
    assert json.loads((out / "policy-run-config.json").read_text())["x"] == 2


def test_a_failure_discards_what_a_restarting_run_wrote_and_keeps_a_resumable_one(tmp_path):
    out = tmp_path / "run"
    run = claim(out, "f1", RESTARTING)
    with pytest.raises(KeyboardInterrupt), run.discarding_on_failure():
        run.begin({"x": 1})
        (out / "history.jsonl").write_text("{}\n")
        run.publish("policy", lambda tmp: (tmp / "w").write_text("w"))
        raise KeyboardInterrupt
    assert not out.exists()  # the folder it made is gone too
    kept = tmp_path / "kept"
    kept.mkdir()
    run = claim(kept, "f1", RESTARTING)
    with pytest.raises(RuntimeError), run.discarding_on_failure():
        run.begin({"x": 1})
        raise RuntimeError("boom")
    assert kept.is_dir() and not any(kept.iterdir())  # a folder that was there stays, empty
    scorer = tmp_path / "scorer"
    run = claim(scorer, "f1", SCORER_RUN)
    with pytest.raises(RuntimeError), run:
        run.begin({"x": 1})
        _checkpoint(scorer / "checkpoints", 5)
        raise RuntimeError("boom")
    assert (scorer / SCORER_RUN.config).is_file() and (scorer / "checkpoints").is_dir()  # to continue from
    assert not (scorer / LOCK_FILE).exists()


def test_a_resumable_run_that_fails_before_its_first_checkpoint_leaves_nothing(tmp_path):
    # issue 16: a failed `gradebench train --loss-param target=nosuch` left run-config.json, so the
    # corrected command (another fingerprint) was refused as "an interrupted run of another configuration"
    out = tmp_path / "run"
    run = claim(out, "bad", SCORER_RUN)
    with pytest.raises(ValueError), run:
        run.begin({"x": 1})
        (out / "history.jsonl").write_text("")
        _checkpoint(out / "checkpoints", 5, complete=False)  # killed save: not progress
        raise ValueError("target must be one of softmax, normalize, raw")
    assert not out.exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    run = claim(kept, "bad", SCORER_RUN)
    with pytest.raises(KeyboardInterrupt), run:
        run.begin({"x": 1})
        raise KeyboardInterrupt
    assert kept.is_dir() and not any(kept.iterdir())
    with claim(out, "good", SCORER_RUN) as run:  # the corrected command starts
        assert run.action == "new"


def test_a_failed_publication_leaves_no_temp_folder(tmp_path):
    out = tmp_path / "run"
    run = claim(out, "f1", SCORER_RUN)
    run.begin({})

    def broken(tmp):
        (tmp / "half").write_text("h")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        run.publish("model", broken)
    run.release()
    assert sorted(p.name for p in out.iterdir()) == [SCORER_RUN.config]


def test_only_the_main_process_writes(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    out = tmp_path / "run"
    run = claim(out, "f1", RESTARTING)
    assert not run.main
    run.begin({"x": 1})
    run.publish("policy", lambda tmp: pytest.fail("a non-main process saved"))
    run.finish({"run_fingerprint": "f1", "schema_version": 1})
    run.discard()
    assert not out.exists()


def test_read_final_says_how_to_continue(tmp_path):
    out = tmp_path / "run"
    claim(out, "f1", SCORER_RUN).begin({})
    with pytest.raises(RunError, match=re.escape("did not finish: continue it with `gradebench train ... --resume`")):
        read_final(out, SCORER_RUN)
    other = tmp_path / "policy"
    claim(other, "f1", RESTARTING).begin({})
    with pytest.raises(RunError, match=re.escape("did not finish: run the same `gradebench lipo|grpo|ppo` again")):
        read_final(other, RESTARTING)
    with pytest.raises(RunError, match="no such policy run folder"):
        read_final(tmp_path / "missing", RESTARTING)
