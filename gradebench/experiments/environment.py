"""Provenance of a record: package version, git commit, hardware. Never fails, never imports torch."""

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


def git_commit(cwd: str | Path | None = None) -> str | None:
    """``git rev-parse HEAD`` of the working directory, or None (no git, not a repo, timeout...)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=str(cwd or os.getcwd()), capture_output=True, text=True,
            timeout=5, check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and _SHA.match(sha) else None


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
    """Package version, git commit, Python, platform, CPU count, NumPy and torch device."""
    import numpy as np

    torch_version, device = torch_device(scorer)
    return {
        "gradebench_version": __version__,
        "git_commit": git_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
        "torch": torch_version,
        "torch_device": device,
    }
