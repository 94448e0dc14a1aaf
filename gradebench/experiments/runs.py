"""Run folders: one protocol for every run that trains into a folder, and the scorer run's files.

Two kinds of run use it: scorer runs (``gradebench train``, :data:`SCORER_RUN`) and policy runs
(``gradebench lipo | grpo | ppo``, :data:`gradebench.rl.runs.POLICY_RUN`). A :class:`RunLayout`
says what a kind of run writes; the protocol is the same for all, and *crash-consistent*: a run
killed at any step is continued (or started over) by running the same command again.

1. **claim** -- :func:`claim` takes the folder's lock (:data:`LOCK_FILE`, an ``flock`` the
   operating system releases when the process dies, so a killed run leaves no stale lock; a
   second process gets :class:`RunInUse`, "in use by pid N") and decides what the folder holds
   and what happens to it: ``new`` (a missing or empty folder), ``done`` (a finished run of
   this fingerprint, returned as is, without the lock), ``resume`` (an interrupted run of this
   fingerprint of a resumable layout: continued, with or without ``--resume``), ``restart`` (an
   interrupted run of this fingerprint of a layout that cannot resume: its leftovers are
   discarded) -- or it refuses with a one-line :class:`~gradebench.errors.RunError`: a file,
   another finished run, an interrupted run of another configuration, ``--resume`` with nothing
   to resume, a non-empty folder that holds no run.
2. **begin** -- what an earlier attempt left half-written is discarded, never trusted: temp
   folders of a killed publication, and (resuming) checkpoints a killed save left without their
   ``trainer_state.json``. Then the config file (with the run fingerprint) is written; from then
   on the folder holds an interrupted run until the final file exists.
3. **publish** -- each output folder is saved into ``.<name>.incomplete-*`` inside the run folder
   and renamed onto ``<name>`` (:func:`gradebench.paths.publish_dir`).
4. **finish** -- the final file is written last, atomically: a run is complete iff it exists.
   The lock is released.
5. **failure** -- (an exception, Ctrl-C) a run keeps what it wrote only if the same command can
   continue from it: a resumable run with a complete checkpoint. Anything else is removed
   (:meth:`RunClaim.discard`), and the folder too if the run made it, so a failed command never
   blocks the corrected one. The lock is released.

Use a claim as a context manager (``with claim(...) as run:``): leaving the block releases the
lock, after :meth:`RunClaim.discard` if the block failed.

Only the main process (``RANK`` 0) locks and writes; the others decide alike and write nothing.
Named stop points (:mod:`gradebench.stops`) mark the steps the crash tests kill a run at.

A scorer run folder::

    run-config.json   written first: benchmark, scorer, loss, options, run fingerprint
    checkpoints/      the trainer's checkpoints (to continue from), if the scorer has any
    history.jsonl     one line per epoch (loss, validation metrics, separation)
    model/            the trained scorer (Scorer.save), published as above
    run.json          written last: the :class:`RunInfo`
    .run.lock         while a process works on the run (removed when it ends)

A scorer run's fingerprint is sha256 over everything that determines its weights: the benchmark
fingerprint, the scorer's name, version and resolved config, the training options (loss,
seed, list size...) and the gradebench version.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from gradebench._version import __version__
from gradebench.errors import GradebenchError, InvalidArgumentError, RunError, RunInUse
from gradebench.hashing import sha256_json
from gradebench.locks import Busy, FileLock
from gradebench.paths import check_writable_dir, publish_dir, write_json_atomic
from gradebench.stops import stop_point
from gradebench.training import checkpoints as ckpts

RUN_JSON = "run.json"
RUN_CONFIG = "run-config.json"
MODEL_DIR = "model"
#: the lock file of a run folder, while a process works on it
LOCK_FILE = ".run.lock"
RUN_SCHEMA_VERSION = 1
#: what :func:`claim` decided
Action = Literal["new", "resume", "restart", "done"]
_T = TypeVar("_T")


# -- the protocol -------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunLayout:
    """What one kind of run writes into its folder, and how its messages name it.

    Attributes:
        what: the run's name in messages (``"run"``, ``"policy run"``).
        command: the command that writes it, for hints (``"gradebench train"``).
        redo: how to make a broken run again, for hints (``"train the run again"``).
        config: the file written first (the run is claimed).
        final: the file written last (the run is complete).
        schema_version: the final file's format version.
        resumable: an interrupted run continues from its checkpoints (the same command, with or
            without ``--resume``) and a failure keeps them; otherwise it starts over and a
            failure removes what it wrote.
        outputs: the published folders (``model``, ``policy``).
        scratch: what the run writes while training (history, checkpoints, trainer state).
        checkpoints: the folder of the trainer's ``checkpoint-*`` folders (resumable layouts).
    """

    what: str
    command: str
    redo: str
    config: str
    final: str
    schema_version: int
    resumable: bool
    outputs: tuple[str, ...] = ()
    scratch: tuple[str, ...] = ()
    checkpoints: str | None = None


#: ``gradebench train``: resumable from the trainer's checkpoints
SCORER_RUN = RunLayout(what="run", command="gradebench train", redo="train the run again", config=RUN_CONFIG,
                       final=RUN_JSON, schema_version=RUN_SCHEMA_VERSION, resumable=True, outputs=(MODEL_DIR,),
                       scratch=(ckpts.CHECKPOINT_DIR, "history.jsonl"), checkpoints=ckpts.CHECKPOINT_DIR)


def is_main_process() -> bool:
    """Whether this process writes the run folder (``RANK`` 0, or no distributed launch)."""
    return os.environ.get("RANK", "0") == "0"


def read_json(path: Path, *, what: str, layout: RunLayout = SCORER_RUN) -> dict[str, Any]:
    """A run file's JSON object; any other content is a one-line :class:`RunError`."""
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunError(f"{what} not found", path=path, hint=f"give a folder written by `{layout.command}`") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise RunError(f"{what} is not valid JSON ({e})", path=path, hint=layout.redo) from None
    if not isinstance(obj, dict):
        raise RunError(f"{what} is not a JSON object", path=path, hint=layout.redo)
    return obj


def read_final(run_dir: str | Path, layout: RunLayout) -> dict[str, Any]:
    """The final file of a finished run folder, of this layout's format version."""
    d = Path(run_dir)
    if not d.is_dir():
        raise RunError(f"no such {layout.what} folder", path=d, hint=f"give the --out folder of `{layout.command}`")
    final = d / layout.final
    if not final.is_file():
        if not (d / layout.config).is_file():
            hint = f"give the --out folder of `{layout.command}`"
        elif layout.resumable:
            hint = (f"the run did not finish: continue it with `{layout.command} ... --resume` "
                    "(or the same command without --resume)")
        else:
            hint = f"the run did not finish: run the same `{layout.command}` again to start it over"
        raise RunError(f"not a finished {layout.what} (no {layout.final})", path=d, hint=hint)
    raw = read_json(final, what=layout.final, layout=layout)
    if raw.get("schema_version") != layout.schema_version:
        raise RunError(f"{layout.what} format v{raw.get('schema_version')} is not supported (this gradebench "
                       f"reads v{layout.schema_version})", path=final, hint=f"{layout.redo} with this version")
    return raw


def from_final(cls: type[_T], raw: dict[str, Any], run_dir: str | Path, layout: RunLayout) -> _T:
    """The dataclass ``cls`` (with a ``run_dir`` field) from a final file's fields; others are ignored."""
    fields = cls.__dataclass_fields__  # type: ignore[attr-defined]
    try:
        obj = cls(**{k: v for k, v in raw.items() if k in fields})
    except TypeError as e:
        raise RunError(f"{layout.final} lacks fields ({e})", path=Path(run_dir) / layout.final,
                       hint=layout.redo) from None
    obj.run_dir = str(Path(run_dir))  # type: ignore[attr-defined]
    return obj


@dataclass
class RunClaim:
    """A run folder claimed by :func:`claim`: what was decided, and every write to the folder.

    Attributes:
        action: ``new``, ``resume``, ``restart`` or ``done`` (see the module docstring).
        finished: the final file of a ``done`` run, else None.
        main: whether this process writes (the others only read).
    """

    run_dir: Path
    fingerprint: str
    layout: RunLayout
    action: Action
    finished: dict[str, Any] | None = None
    main: bool = True
    _made_dir: bool = False
    _lock: FileLock | None = field(default=None, repr=False)

    @property
    def done(self) -> bool:
        return self.action == "done"

    @property
    def checkpoint(self) -> Path | None:
        """The complete checkpoint a resumed run continues from (the last one), or None."""
        if self.action != "resume" or self.layout.checkpoints is None:
            return None
        return ckpts.last_checkpoint(self.run_dir / self.layout.checkpoints)

    def begin(self, config: dict[str, Any]) -> None:
        """Discard what an earlier attempt left (a restart: everything; a resume: temp folders and
        half-written checkpoints), then write the config file with the run fingerprint."""
        if self.done:
            raise RunError(f"the {self.layout.what} is finished; nothing to begin", path=self.run_dir)
        if not self.main:
            return
        self._made_dir = self._made_dir or not self.run_dir.is_dir()
        if self.action == "restart":
            self._remove(self.layout.scratch + self.layout.outputs)
        if self.action == "resume" and self.layout.checkpoints is not None:
            ckpts.discard_incomplete(self.run_dir / self.layout.checkpoints)
        self._remove_temps()
        write_json_atomic(self.run_dir / self.layout.config, {**config, "run_fingerprint": self.fingerprint})
        stop_point("run-begun")

    def publish(self, name: str, save: Callable[[Path], None]) -> Path:
        """``save(tmp)`` into a temp folder inside the run folder, renamed onto ``run_dir/name``."""
        final = self.run_dir / name
        if not self.main:
            return final
        self.run_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.incomplete-", dir=self.run_dir))
        try:
            save(tmp)
            stop_point("output-saved")
            publish_dir(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        stop_point("output-published")
        return final

    def finish(self, payload: dict[str, Any]) -> None:
        """Write the final file (atomically): from now on the run is complete. Releases the lock."""
        if self.main:
            write_json_atomic(self.run_dir / self.layout.final, payload)
        self.release()

    def keeps_progress(self) -> bool:
        """Whether a failure now keeps the folder for the same command to continue: a resumable run
        with a complete checkpoint."""
        return (self.layout.resumable and self.layout.checkpoints is not None
                and ckpts.last_checkpoint(self.run_dir / self.layout.checkpoints) is not None)

    def discard(self) -> None:
        """After a failure: remove what the run wrote (and the folder, if it made it), unless the same
        command can continue from it (:meth:`keeps_progress`); release the lock. A finished run
        is never touched."""
        try:
            if not self.main or self.done or (self.run_dir / self.layout.final).is_file() or self.keeps_progress():
                return
            self._remove(self.layout.scratch + self.layout.outputs + (self.layout.config,))
            self._remove_temps()
        finally:
            self.release()

    def release(self) -> None:
        """Let go of the folder's lock (idempotent); a folder this claim made and left empty is removed."""
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()
        if self._made_dir and self.main:
            with contextlib.suppress(OSError):
                self.run_dir.rmdir()  # only if empty

    def __enter__(self) -> RunClaim:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.discard()
        self.release()

    @contextlib.contextmanager
    def discarding_on_failure(self):  # noqa: ANN201 - a context manager
        """Run the body; on any exception (interrupts too) :meth:`discard`, then re-raise. (``with run:``
        does the same and also releases the lock after a success.)"""
        try:
            yield self
        except BaseException:
            self.discard()
            raise

    def _remove(self, names: tuple[str, ...]) -> None:
        for name in names:
            p = self.run_dir / name
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)

    def _remove_temps(self) -> None:
        if self.run_dir.is_dir():
            for leftover in self.run_dir.glob(".*.incomplete-*"):
                shutil.rmtree(leftover, ignore_errors=True)


def _holds_anything(d: Path) -> bool:
    return d.is_dir() and any(p.name != LOCK_FILE for p in d.iterdir())


def claim(run_dir: str | Path, fingerprint: str, layout: RunLayout, *, resume: bool = False) -> RunClaim:
    """Decide what happens to ``run_dir`` for a run of ``fingerprint`` (see the module docstring).

    A finished run is returned without the lock; otherwise (main process) the folder is created if
    missing and its lock taken, and nothing else is written. Use the claim as a context manager,
    or end it with :meth:`RunClaim.finish`, :meth:`RunClaim.discard` or :meth:`RunClaim.release`.

    Raises:
        RunInUse: another live process works on the folder.
        RunError: the folder holds something this run must not touch or cannot continue.
        InvalidArgumentError: ``resume`` for a layout that cannot resume, or an unusable ``--out``.
    """
    d = Path(run_dir)
    if resume and not layout.resumable:
        raise InvalidArgumentError(f"a {layout.what} cannot be resumed",
                                   hint="run the same command again: an interrupted run starts over")
    if d.exists() and not d.is_dir():
        raise RunError("--out is a file, not a folder", path=d, hint="choose another --out")
    main = is_main_process()
    finished = _finished(d, fingerprint, layout)
    if finished is not None:
        return RunClaim(run_dir=d, fingerprint=fingerprint, layout=layout, action="done", finished=finished, main=main)
    check_writable_dir(d, what="--out")
    run = RunClaim(run_dir=d, fingerprint=fingerprint, layout=layout, action="new", main=main)
    if main:
        run._made_dir = not d.is_dir()
        d.mkdir(parents=True, exist_ok=True)
        try:
            run._lock = FileLock.acquire(d / LOCK_FILE)
        except Busy as e:
            run.release()
            raise RunInUse(d, e.pid, layout) from None
    try:
        run.action, run.finished = _decide(d, fingerprint, layout, resume=resume)
    except BaseException:
        run.release()
        raise
    if run.done:
        run.release()  # it finished while we waited for the lock
    return run


def _finished(d: Path, fingerprint: str, layout: RunLayout) -> dict[str, Any] | None:
    """The final file of a finished run of ``fingerprint`` in ``d``, None if there is none; another
    finished run is refused."""
    if not (d / layout.final).is_file():
        return None
    finished = read_final(d, layout)
    if finished.get("run_fingerprint") != fingerprint:
        raise RunError(f"the folder holds another finished {layout.what}", path=d,
                       hint="choose another --out (or delete that run)")
    return finished


def _decide(d: Path, fingerprint: str, layout: RunLayout, *, resume: bool) -> tuple[Action, dict[str, Any] | None]:
    finished = _finished(d, fingerprint, layout)
    if finished is not None:
        return "done", finished
    if (d / layout.config).is_file():
        started = read_json(d / layout.config, what=layout.config, layout=layout)
        if started.get("run_fingerprint") != fingerprint:
            again = ("to continue it (with --resume or without)" if layout.resumable else "to start it over")
            raise RunError(f"the folder holds an interrupted {layout.what} of another configuration", path=d,
                           hint=f"choose another --out (or delete that run), or repeat that run's exact options "
                                f"{again}")
        return ("resume" if layout.resumable else "restart"), None
    if resume:
        raise RunError(f"nothing to resume here (no interrupted {layout.what})", path=d,
                       hint="drop --resume to start the run")
    if _holds_anything(d):
        raise RunError(f"--out is a non-empty folder that holds no {layout.what}", path=d,
                       hint="choose a new or empty folder")
    return "new", None


# -- scorer runs -----------------------------------------------------------------------------------
@dataclass
class RunInfo:
    """A finished training run (``run.json``)."""

    run_dir: str
    scorer: str
    scorer_version: int
    config: dict[str, Any]
    loss: str | None
    loss_params: dict[str, Any]
    options: dict[str, Any]
    seed: int
    benchmark: str
    benchmark_fingerprint: str
    benchmark_path: str
    run_fingerprint: str
    best_epoch: int | None
    best_metrics: dict[str, Any]
    history: list[dict[str, Any]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    n_train_queries: int = 0
    n_validation_queries: int = 0
    gradebench_version: str = __version__
    schema_version: int = RUN_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_fingerprint(*, benchmark_fingerprint: str, scorer: dict[str, Any], options: dict[str, Any]) -> str:
    """sha256 over everything that determines a run's weights."""
    return sha256_json({
        "benchmark_fingerprint": benchmark_fingerprint,
        "scorer": scorer,
        "options": options,
        "gradebench_version": __version__,
    })


def read_run_info(run_dir: str | Path) -> RunInfo:
    """The :class:`RunInfo` of a finished run folder."""
    return from_final(RunInfo, read_final(run_dir, SCORER_RUN), run_dir, SCORER_RUN)


def load_run(run_dir: str | Path) -> tuple[Any, RunInfo]:
    """A finished run as ``(scorer, RunInfo)``: the scorer is loaded from ``RUN_DIR/model``.

    Raises:
        RunError: missing/unfinished/corrupt run, or a checkpoint the scorer cannot load.
        UnknownNameError: the run's scorer is not registered here.
    """
    from gradebench.scorers import get_scorer_class

    info = read_run_info(run_dir)
    cls = get_scorer_class(info.scorer)
    if cls.version != info.scorer_version:
        raise RunError(
            f"the run was trained with {info.scorer} v{info.scorer_version}, this gradebench has v{cls.version}",
            path=run_dir, hint="train the run again",
        )
    model = Path(run_dir) / MODEL_DIR
    if cls.trainable and not model.is_dir():
        raise RunError("the run has no model/ folder", path=run_dir, hint="train the run again")
    try:
        scorer = cls.load(model, info.config, seed=info.seed)
    except GradebenchError:
        raise
    except Exception as e:  # noqa: BLE001 - corrupt checkpoints raise anything
        raise RunError(f"cannot load the trained {info.scorer} ({type(e).__name__}: {e})", path=model,
                       hint="the checkpoint is corrupt; train the run again") from None
    return scorer, info
