"""Provenance never fails and never imports torch."""

from __future__ import annotations

import re
import subprocess
import sys
import types

from gradebench.experiments.environment import environment, git_commit, torch_device
from tests.conftest import REPO


def test_git_commit(tmp_path, monkeypatch):
    assert git_commit(tmp_path) is None  # not a repository
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True)
    if head.returncode == 0:
        assert git_commit(REPO) == head.stdout.strip()
    monkeypatch.setenv("PATH", str(tmp_path))  # no git at all
    assert git_commit(REPO) is None


def test_torch_device_only_if_imported(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert torch_device() == (None, None)
    fake = types.SimpleNamespace(
        __version__="9.9", cuda=types.SimpleNamespace(is_available=lambda: False),
        backends=types.SimpleNamespace(mps=types.SimpleNamespace(is_available=lambda: False)),
    )
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert torch_device() == ("9.9", "cpu")
    assert torch_device(types.SimpleNamespace(device="cuda:1")) == ("9.9", "cuda:1")
    broken = types.SimpleNamespace(__version__="9.9", cuda=types.SimpleNamespace(is_available=lambda: 1 / 0))
    monkeypatch.setitem(sys.modules, "torch", broken)
    assert torch_device() == ("9.9", None)


def test_environment_fields(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    env = environment()
    assert env["torch"] is None and env["cpu_count"] >= 1 and re.match(r"\d+\.\d+", env["python"])
    assert "torch" not in sys.modules
