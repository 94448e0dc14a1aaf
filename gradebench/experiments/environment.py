"""Provenance of a record: package version, git commits, hardware. Never fails, never imports torch.

Two commits, because they answer two questions:

* ``gradebench_commit`` (with ``gradebench_dirty``): the code that ran -- the commit of the git
  checkout the imported ``gradebench`` package lives in (an editable install or a run from
  source), when that commit's tree holds this package. None for an install from a wheel (the
  build bakes no commit in), and for a copy inside a repository that does not track it (a
  virtual environment inside the user's project).
* ``cwd_commit``: the repository the command ran in (the user's project, or None).

Records written before these keys have ``git_commit``: the working directory's commit, which
named the user's project, not gradebench, when run there. New records write it as null.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from gradebench._version import __version__

_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
#: seconds each git command may take before its answer is given up (None)
GIT_TIMEOUT_S = 5.0
#: variables that point git at another repository than the folder it runs in
_GIT_REDIRECTS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY")


def _git(args: list[str], cwd: str | Path, *, own_repo: bool = False) -> str | None:
    """``git ARGS`` in ``cwd``: its stdout, or None when it fails (no git, not a repo, timeout...).

    ``own_repo``: ignore ``GIT_DIR`` and the like, so the answer is about ``cwd``'s repository.
    """
    env = {k: v for k, v in os.environ.items() if k not in _GIT_REDIRECTS} if own_repo else None
    try:
        out = subprocess.run(["git", *args], cwd=str(cwd), capture_output=True, text=True, env=env,
                             timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return out.stdout if out.returncode == 0 else None


def git_commit(cwd: str | Path | None = None) -> str | None:
    """``git rev-parse HEAD`` in ``cwd`` (default: the working directory), or None (no git, not a repo, timeout...)."""
    out = _git(["rev-parse", "HEAD"], cwd or os.getcwd())
    sha = (out or "").strip()
    return sha if _SHA.match(sha) else None


def package_dir() -> Path:
    """The folder of the imported ``gradebench`` package."""
    return Path(__file__).resolve().parents[1]


def source_commit(package: str | Path | None = None) -> tuple[str | None, bool | None]:
    """``(commit, dirty)`` of the git checkout that holds the ``gradebench`` package (default: the imported one).

    ``commit`` is the checkout's ``HEAD`` when that commit's tree holds the package (its
    ``__init__.py``), else None: a wheel install outside any repository, or a package folder
    that the surrounding repository does not track. ``dirty``: tracked files of the checkout
    differ from ``HEAD``, or untracked files lie in the package folder (modules there are
    imported); None when there is no commit or ``git status`` gave no answer.
    """
    try:
        pkg = Path(package) if package is not None else package_dir()
        # HEAD:./__init__.py resolves only if HEAD's tree holds the package at this path
        out = _git(["rev-parse", "--show-prefix", "HEAD", "HEAD:./__init__.py"], pkg, own_repo=True)
        lines = (out or "").split("\n")
        if len(lines) < 3 or not _SHA.match(lines[1].strip()):
            return None, None
        prefix, commit = lines[0].strip(), lines[1].strip()
        status = _git(["status", "--porcelain", "--untracked-files=normal"], pkg, own_repo=True)
        if status is None:
            return commit, None
        return commit, any(_counts_as_dirty(line, prefix) for line in status.splitlines() if line.strip())
    except Exception:  # noqa: BLE001 - provenance must never fail an evaluation
        return None, None


def _counts_as_dirty(line: str, prefix: str) -> bool:
    """A ``git status --porcelain`` line: any tracked change, or an untracked path under the package's ``prefix``."""
    if not line.startswith("?? "):
        return True
    path = line[3:].strip().strip('"')
    return path.startswith(prefix)


def torch_threads() -> int | None:
    """torch's intra-op thread count if torch is already imported, else None."""
    torch = sys.modules.get("torch")
    try:
        return None if torch is None else int(torch.get_num_threads())
    except Exception:  # noqa: BLE001 - provenance must never fail an evaluation
        return None


def torch_device(scorer: Any = None) -> tuple[str | None, str | None]:
    """``(torch version, device)`` if torch is already imported, else ``(None, None)``.

    The device is the scorer's ``device`` attribute when it has one, else ``cuda`` (with the
    GPU's name when CUDA is initialised), ``mps`` or ``cpu``.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return None, None
    version = str(getattr(torch, "__version__", None) or "") or None
    try:
        device = getattr(scorer, "device", None)
        if device is not None:
            return version, str(device)
        cuda = getattr(torch, "cuda", None)
        if cuda is not None and cuda.is_available():
            if cuda.is_initialized():
                return version, f"cuda ({cuda.get_device_name(cuda.current_device())})"
            return version, "cuda"
        mps = getattr(getattr(torch, "backends", None), "mps", None)
        if mps is not None and mps.is_available():
            return version, "mps"
        return version, "cpu"
    except Exception:  # noqa: BLE001 - provenance must never fail an evaluation
        return version, None


def environment(scorer: Any = None) -> dict[str, Any]:
    """Package version, the gradebench and working-directory commits, Python, platform, CPU count,
    NumPy, torch's device and thread count (``git_commit``, deprecated, is left to its default: null)."""
    import numpy as np

    torch_version, device = torch_device(scorer)
    commit, dirty = source_commit()
    return {
        "gradebench_version": __version__,
        "gradebench_commit": commit,
        "gradebench_dirty": dirty,
        "cwd_commit": git_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
        "torch": torch_version,
        "torch_device": device,
        "torch_threads": torch_threads(),
    }
