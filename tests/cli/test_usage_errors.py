"""Click/typer usage errors become one line, ``gradebench: error: <what> (hint: run '... --help')``, exit 2."""

from __future__ import annotations

import pytest

from gradebench._version import __version__
from tests.cli.conftest import assert_one_line_error, run_module


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["build", "demo", "--limit", "ten"], ["'--limit'", "(hint: run 'gradebench build --help')"]),
        (["build", "demo", "--bogus"], ["no such option: --bogus", "(hint: run 'gradebench build --help')"]),
        (["build"], ["missing argument", "(hint: run 'gradebench build --help')"]),
        (["build", "demo", "--resplit"], ["--resplit", "requires an argument", "gradebench build --help"]),
        (["build", "demo", "extra"], ["unexpected extra argument", "gradebench build --help"]),
        (["bild", "demo"], ["no such command 'bild'", "did you mean 'build'", "(hint: run 'gradebench --help')"]),
        (["frobnicate"], ["no such command 'frobnicate'", "(hint: run 'gradebench --help')"]),
        (["--bogus", "list"], ["no such option: --bogus", "(hint: run 'gradebench --help')"]),
        (["info"], ["missing argument", "(hint: run 'gradebench info --help')"]),
        (["--debug"], ["missing command", "(hint: run 'gradebench --help')"]),
    ],
)
def test_usage_errors_are_one_line_exit_2(cli, args, needles):
    code, out, err = cli(*args)
    assert code == 2
    assert out == ""
    assert_one_line_error(err.replace("Did you mean", "did you mean"), *needles)


def test_usage_error_with_debug_is_still_one_line(cli):
    code, _, err = cli("--debug", "build", "demo", "--limit", "ten")
    assert code == 2
    assert_one_line_error(err, "'--limit'")


def test_usage_error_as_subprocess():
    p = run_module("build", "demo", "--limit", "ten")
    assert p.returncode == 2
    assert_one_line_error(p.stderr, "'--limit'", "gradebench build --help")


def test_version(cli):
    code, out, err = cli("--version")
    assert (code, out, err) == (0, f"gradebench {__version__}\n", "")
    p = run_module("--version")
    assert (p.returncode, p.stdout) == (0, f"gradebench {__version__}\n")


def test_help_exits_0(cli):
    code, out, _ = cli("--help")
    assert code == 0 and "build" in out and "--version" in out
    code, out, _ = cli("build", "--help")
    assert code == 0 and "--out" in out
