"""The trainer's checkpoints in a run folder: which are complete, which to resume from, which to drop.

``transformers.Trainer`` writes ``checkpoint-<step>/`` in place, ``trainer_state.json`` last
(after the weights, the optimizer, the scheduler and the RNG states). A checkpoint is
*complete* iff that file parses and names the checkpoint's own step; a folder without it is
what a process killed during a save leaves, and is never trusted: :func:`prepare` removes it
before a run resumes, and a run resumes from the last complete checkpoint.

No torch or transformers here: the run-folder protocol (:mod:`gradebench.experiments.runs`)
asks these questions before anything heavy is imported.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from gradebench.errors import RunError

#: the Trainer's output folder inside a run folder (``checkpoint-<step>`` subfolders)
CHECKPOINT_DIR = "checkpoints"
#: the file the Trainer writes last into a checkpoint
TRAINER_STATE = "trainer_state.json"
_NAME = re.compile(r"^checkpoint-(\d+)$")


def checkpoint_dirs(folder: str | Path) -> list[Path]:
    """The ``checkpoint-<step>`` folders in ``folder``, complete or not, by step."""
    d = Path(folder)
    if not d.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in d.iterdir() if (m := _NAME.match(p.name)) and p.is_dir()]
    return [p for _, p in sorted(found)]


def read_state(checkpoint: str | Path) -> dict[str, Any] | None:
    """A checkpoint's ``trainer_state.json``, or None if it is missing, truncated or not its own."""
    ckpt = Path(checkpoint)
    m = _NAME.match(ckpt.name)
    try:
        state = json.loads((ckpt / TRAINER_STATE).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(state, dict) or m is None or state.get("global_step") != int(m.group(1)):
        return None
    return state


def is_complete(checkpoint: str | Path) -> bool:
    """Whether the Trainer finished writing ``checkpoint`` (see the module docstring)."""
    return read_state(checkpoint) is not None


def last_checkpoint(folder: str | Path) -> Path | None:
    """The complete checkpoint with the highest step in ``folder``, or None."""
    complete = [p for p in checkpoint_dirs(folder) if is_complete(p)]
    return complete[-1] if complete else None


def discard_incomplete(folder: str | Path) -> list[Path]:
    """Remove the checkpoints of ``folder`` that a killed save left half-written; returns them."""
    removed = [p for p in checkpoint_dirs(folder) if not is_complete(p)]
    for p in removed:
        shutil.rmtree(p, ignore_errors=True)
    return removed


def training_over(checkpoint: str | Path) -> bool:
    """Whether training had ended when ``checkpoint`` was saved (last step reached, or stopped early).

    The Trainer resets its stop flag when training starts again, so a run resumed from the
    checkpoint of an early stop would train on; the caller sets ``max_steps`` to the
    checkpoint's step instead (:func:`state_step`).
    """
    state = read_state(checkpoint) or {}
    control = (state.get("stateful_callbacks") or {}).get("TrainerControl") or {}
    if isinstance(control, list):
        control = control[-1] if control else {}
    if bool((control.get("args") or {}).get("should_training_stop")):
        return True
    max_steps = state.get("max_steps")
    return isinstance(max_steps, int) and max_steps > 0 and state.get("global_step", 0) >= max_steps


def state_step(checkpoint: str | Path) -> int:
    """The optimizer step at which ``checkpoint`` was saved."""
    return int((read_state(checkpoint) or {}).get("global_step", 0))


def resume_overrides(checkpoint: str | Path | None) -> dict[str, Any]:
    """``TrainingArguments`` overrides for resuming from ``checkpoint``: none, unless training had
    ended there (an early stop, the last epoch); then ``max_steps`` is its step, so the Trainer
    only restores the state and loads the best weights (it forgets an early stop when it starts
    again, and would train on)."""
    if checkpoint is None or not training_over(checkpoint):
        return {}
    return {"max_steps": state_step(checkpoint)}


def is_main_process() -> bool:
    """Whether this process writes (``RANK`` 0, or no distributed launch)."""
    return os.environ.get("RANK", "0") == "0"


def prepare(output_dir: str | Path, history_file: str, *, resume: bool) -> Path | None:
    """Get ``output_dir`` ready for training; returns the checkpoint to resume from (None: fresh).

    ``resume``: half-written checkpoints are removed and the last complete one is returned.
    Otherwise old checkpoints and the history file are removed (a fresh run). Only the main
    process removes anything.

    Raises:
        RunError: ``resume`` but no complete checkpoint in ``output_dir/checkpoints``.
    """
    out = Path(output_dir)
    ckpt = out / CHECKPOINT_DIR
    if resume:
        if is_main_process():
            discard_incomplete(ckpt)
        last = last_checkpoint(ckpt)
        if last is None:
            raise RunError("nothing to resume: no complete checkpoint-* folder", path=ckpt,
                           hint="drop --resume to start training from scratch")
        return last
    if is_main_process():
        if ckpt.exists():
            shutil.rmtree(ckpt)
        (out / history_file).unlink(missing_ok=True)
    return None


__all__ = [
    "CHECKPOINT_DIR",
    "TRAINER_STATE",
    "checkpoint_dirs",
    "discard_incomplete",
    "is_complete",
    "last_checkpoint",
    "prepare",
    "read_state",
    "resume_overrides",
    "state_step",
    "training_over",
]
