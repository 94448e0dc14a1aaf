"""Provenance never fails and never imports torch; it names gradebench's commit apart from the working directory's."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import types

import pytest

from gradebench.experiments.environment import environment, git_commit, source_commit, torch_device, torch_threads
from tests.conftest import REPO

_GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false",
        "-c", "init.defaultBranch=main"]


def _head(path) -> str | None:
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


def _repo(path, *, add: bool = True) -> str:
    """A git repository at ``path`` with one commit (of everything in it when ``add``)."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run([*_GIT, "init", "-q"], cwd=path, check=True)
    if add:
        subprocess.run([*_GIT, "add", "-A"], cwd=path, check=True)
    subprocess.run([*_GIT, "commit", "-q", "--allow-empty", "-m", "x"], cwd=path, check=True)
    return _head(path)


def _copy_package(dest):
    """A copy of the gradebench package (its .py files) at ``dest/gradebench``: what a wheel installs."""
    shutil.copytree(REPO / "gradebench", dest / "gradebench",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest / "gradebench"


@pytest.fixture(autouse=True)
def _no_repo_above(tmp_path, monkeypatch):
    """git never looks above the test's temp dir (a temp dir inside someone's repository)."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.delenv("GIT_DIR", raising=False)


def test_git_commit(tmp_path, monkeypatch):
    assert git_commit(tmp_path) is None  # not a repository
    head = _head(REPO)
    if head is not None:
        assert git_commit(REPO) == head
    monkeypatch.setenv("PATH", str(tmp_path))  # no git at all
    assert git_commit(REPO) is None
    assert source_commit() == (None, None)


def test_source_commit_of_this_checkout():
    head = _head(REPO)
    if head is None:
        pytest.skip("the tests do not run from a git checkout")
    commit, dirty = source_commit()
    assert commit == head and isinstance(dirty, bool)


def test_wheel_like_install_has_no_source_commit(tmp_path):
    pkg = _copy_package(tmp_path / "site-packages")
    assert source_commit(pkg) == (None, None)


def test_untracked_copy_inside_a_repository_has_no_source_commit(tmp_path):
    """A virtual environment inside the user's project: the project's commit is not gradebench's."""
    project = tmp_path / "project"
    _repo(project)
    pkg = _copy_package(project / ".venv" / "site-packages")
    assert source_commit(pkg) == (None, None)


def test_checkout_commit_and_dirty(tmp_path):
    pkg = _copy_package(tmp_path / "checkout")
    sha = _repo(tmp_path / "checkout")
    assert source_commit(pkg) == (sha, False)
    (tmp_path / "checkout" / "notes.txt").write_text("untracked outside the package: clean\n")
    assert source_commit(pkg) == (sha, False)
    (pkg / "extra.py").write_text("# an untracked module in the package is imported: dirty\n")
    assert source_commit(pkg) == (sha, True)
    (pkg / "extra.py").unlink()
    (pkg / "__init__.py").write_text((pkg / "__init__.py").read_text() + "\n# edited\n")
    assert source_commit(pkg) == (sha, True)


def test_git_dir_does_not_redirect_the_source_commit(tmp_path, monkeypatch):
    pkg = _copy_package(tmp_path / "checkout")
    sha = _repo(tmp_path / "checkout")
    other = _repo(tmp_path / "other")
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "other" / ".git"))
    assert source_commit(pkg)[0] == sha != other


_PROBE = ("import json; from gradebench.experiments.environment import environment; "
          "e = environment(); print(json.dumps({k: e[k] for k in ('gradebench_commit', 'cwd_commit')}))")


def _probe(cwd, pythonpath) -> dict:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    out = subprocess.run([sys.executable, "-c", _PROBE], cwd=cwd, env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_run_from_another_repository_names_both_commits(tmp_path):
    """Run from the user's own project: cwd_commit is the project's, gradebench_commit the source's."""
    project = tmp_path / "project"
    sha = _repo(project)
    assert _probe(project, REPO) == {"gradebench_commit": _head(REPO), "cwd_commit": sha}
    wheel = tmp_path / "site-packages"
    _copy_package(wheel)
    assert _probe(project, wheel) == {"gradebench_commit": None, "cwd_commit": sha}


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


def test_torch_threads_only_if_imported(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert torch_threads() is None
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(get_num_threads=lambda: 3))
    assert torch_threads() == 3
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace())
    assert torch_threads() is None


def test_environment_fields(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    env = environment()
    assert env["torch"] is None and env["cpu_count"] >= 1 and re.match(r"\d+\.\d+", env["python"])
    assert env["torch_threads"] is None and "git_commit" not in env
    assert "torch" not in sys.modules
