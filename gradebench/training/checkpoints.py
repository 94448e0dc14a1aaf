"""The trainer's checkpoints in a run folder: which are complete, which to resume from, which to drop.

``transformers.Trainer`` writes ``checkpoint-<step>/`` in place, ``trainer_state.json`` last
(after the weights, the optimizer, the scheduler and the RNG states). A checkpoint is
*complete* iff that file parses and names the checkpoint's own step; a folder without it is
what a process killed during a save leaves, and is never trusted: :func:`prepare` removes it
before a run resumes, and a run resumes from the last complete checkpoint.

A checkpoint's pickles are not trusted either: before a run resumes, :func:`verify` checks that
each one the Trainer loads (optimizer, scheduler, scaler, RNG states) loads as plain data
(``torch.load(weights_only=True)``, which runs no code) and that ``training_args.bin`` (never
loaded) names only training-argument classes; a tampered or damaged file is a one-line
:class:`~gradebench.errors.RunError` naming it, never an ``UnpicklingError`` from inside the Trainer.

Only :func:`verify` imports torch (lazily): the run-folder protocol
(:mod:`gradebench.experiments.runs`) asks the other questions before anything heavy is imported.
"""

from __future__ import annotations

import json
import os
import re
import shlex
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


#: the pickles ``Trainer`` loads when it resumes, all with ``torch.load(weights_only=True)``
_LOADED = re.compile(r"^(optimizer\.pt|scheduler\.pt|scaler\.pt|rng_state(_\d+)?\.pth|pytorch_model\.bin)$")
#: the file ``Trainer`` writes its ``TrainingArguments`` into (pickled; never loaded on resume)
TRAINING_ARGS = "training_args.bin"
#: the numpy globals the Trainer allows in its RNG states (arrays and their dtypes)
_NUMPY_DATA = frozenset({"numpy.ndarray", "numpy.dtype", "numpy._core.multiarray._reconstruct",
                         "numpy.core.multiarray._reconstruct"})
#: where the classes pickled in :data:`TRAINING_ARGS` may come from
_ARGS_MODULES = ("transformers.", "accelerate.", "sentence_transformers.")


def start_over_hint(run_dir: str | Path) -> str:
    """How to start a run over whose checkpoints cannot be trusted."""
    return (f"start the run over: delete the run folder (rm -r {shlex.quote(str(run_dir))}) and run the same command "
            "again, or give it a new --out")


def verify(checkpoint: str | Path, run_dir: str | Path | None = None) -> None:
    """Check that resuming from ``checkpoint`` loads only plain data; runs none of its code.

    Each pickle the Trainer loads must load with ``torch.load(weights_only=True)`` (numpy arrays
    allowed, as the Trainer allows them for its RNG states); ``training_args.bin`` is only
    scanned: every global it names must be a class of transformers, accelerate or
    sentence-transformers.

    Raises:
        RunError: a file that fails, named, with how to start the run over (``run_dir``: the run
            folder, by default the checkpoint's grandparent).
    """
    import torch
    from transformers.trainer_pt_utils import safe_globals

    ckpt = Path(checkpoint)
    hint = start_over_hint(ckpt.parent.parent if run_dir is None else run_dir)
    for f in sorted(ckpt.iterdir()):
        if _LOADED.match(f.name):
            try:
                with safe_globals():
                    torch.load(f, map_location="cpu", weights_only=True)
            except Exception as e:  # noqa: BLE001 - a damaged file raises anything
                raise RunError(f"the checkpoint file does not load as plain data ({_why(f, e)}); resuming "
                               "from it is refused", path=f, hint=hint) from None
        elif f.name == TRAINING_ARGS:
            try:
                names = torch.serialization.get_unsafe_globals_in_checkpoint(f)
            except Exception as e:  # noqa: BLE001
                raise RunError(f"the checkpoint file is not a torch file ({_why(f, e)}); resuming from it is "
                               "refused", path=f, hint=hint) from None
            bad = [n for n in names if not _is_args_class(n)]
            if bad:
                raise RunError(f"the checkpoint file names {bad[0]}, not a training-arguments class; resuming "
                               "from it is refused", path=f, hint=hint)


def _is_args_class(name: str) -> bool:
    """Whether the pickled global ``name`` is a class of the libraries that pickle training arguments."""
    import importlib

    module, _, attr = name.rpartition(".")
    if not module.startswith(_ARGS_MODULES):
        return False
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        return False
    return isinstance(obj, type)


def _why(f: Path, e: Exception) -> str:
    """A short reason why ``f`` failed to load: the first global it would call that plain data does
    not name (scanned, not run), else the error's first line."""
    import torch

    try:
        called = [n for n in torch.serialization.get_unsafe_globals_in_checkpoint(f) if n not in _NUMPY_DATA
                  and not n.startswith("numpy.dtypes.")]
    except Exception:  # noqa: BLE001 - not even a torch file: the load's own error says why
        called = []
    if called:
        return f"it would call {called[0]}"
    first = next((line.strip() for line in str(e).splitlines() if line.strip()), "")
    return f"{type(e).__name__}: {first[:160]}" if first else type(e).__name__


def is_main_process() -> bool:
    """Whether this process writes (``RANK`` 0, or no distributed launch)."""
    return os.environ.get("RANK", "0") == "0"


def prepare(output_dir: str | Path, history_file: str, *, resume: bool) -> Path | None:
    """Get ``output_dir`` ready for training; returns the checkpoint to resume from (None: fresh).

    ``resume``: half-written checkpoints are removed and the last complete one is returned, once its
    pickles are verified (:func:`verify`).
    Otherwise old checkpoints and the history file are removed (a fresh run). Only the main
    process removes anything.

    Raises:
        RunError: ``resume`` but no complete checkpoint in ``output_dir/checkpoints``, or one
            whose pickles do not load as plain data (:func:`verify`).
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
        verify(last, out)
        return last
    if is_main_process():
        if ckpt.exists():
            shutil.rmtree(ckpt)
        (out / history_file).unlink(missing_ok=True)
    return None


__all__ = [
    "CHECKPOINT_DIR",
    "TRAINER_STATE",
    "TRAINING_ARGS",
    "checkpoint_dirs",
    "discard_incomplete",
    "is_complete",
    "last_checkpoint",
    "prepare",
    "read_state",
    "resume_overrides",
    "state_step",
    "start_over_hint",
    "training_over",
    "verify",
]
