"""``--help`` at 80 columns shows every flag name in full (issue 15: ``--max-validation-qu…``)."""

from __future__ import annotations

import re

import pytest
import typer

from gradebench.cli.app import app


ROOT = typer.main.get_command(app)


@pytest.mark.parametrize("name", ["gradebench", *sorted(ROOT.commands)])
def test_every_flag_shows_in_full_at_80_columns(cli, monkeypatch, name):
    monkeypatch.setenv("COLUMNS", "80")
    command = ROOT if name == "gradebench" else ROOT.commands[name]
    code, out, _ = cli(*([] if name == "gradebench" else [name]), "--help")
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 80
    flags = [o for p in command.params for o in (*p.opts, *p.secondary_opts) if o.startswith("--")]
    assert flags
    cut = [f for f in flags if not re.search(re.escape(f) + r"(?![\w-])", out)]
    assert cut == [], f"cut at 80 columns: {cut}"
