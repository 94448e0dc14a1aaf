"""``--help`` says what its help texts say: typer renders them through rich markup, which reads a
bracketed word such as ``[ray]`` as a style tag and drops it (``gradebench build --help`` showed
"(pip install 'gradebench')"). Bracketed words are escaped with :func:`gradebench.cli.app.pip_extra`."""

from __future__ import annotations

import os
import subprocess
import sys

import typer

from gradebench.cli.app import app
from tests.conftest import REPO

ROOT = typer.main.get_command(app)


def _help_texts(command, path=("gradebench",)):
    """``(where, text)`` of every text typer renders in ``command``'s help and its subcommands'."""
    yield " ".join(path), command.help or ""
    yield " ".join(path) + " (epilog)", command.epilog or ""
    for param in command.params:
        yield f"{' '.join(path)} {param.name}", getattr(param, "help", None) or ""
        if isinstance(getattr(param, "show_default", None), str):
            yield f"{' '.join(path)} {param.name} (default)", param.show_default
    for name, sub in getattr(command, "commands", {}).items():
        yield from _help_texts(sub, (*path, name))


def test_no_help_text_loses_words_to_rich_markup():
    from rich.text import Text

    eaten = [(where, text) for where, text in _help_texts(ROOT)
             if Text.from_markup(text).plain != text.replace("\\[", "[")]
    assert eaten == []


def test_build_help_shows_the_pip_extra_literally(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # wide: the words are not wrapped apart
    code, out, _ = cli("build", "--help")
    assert code == 0
    assert "pip install 'gradebench[ray]'" in out and "\\[" not in out


def test_plain_help_has_no_escape():
    """Where typer prints click's plain help (``TYPER_USE_RICH=0``), the bracket is left bare."""
    env = {**os.environ, "TYPER_USE_RICH": "0", "COLUMNS": "250", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "gradebench", "build", "--help"], capture_output=True,
                          text=True, env=env, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert "pip install 'gradebench[ray]'" in done.stdout and "\\[" not in done.stdout
