"""``--json`` and ``--debug`` work in any position; a command without ``--json`` says so in one line."""

from __future__ import annotations

import json
from typing import Annotated

import pytest
import typer

from gradebench.cli._argv import normalize, resolve
from gradebench.cli.app import app
from gradebench.errors import InvalidArgumentError
from tests.cli.conftest import assert_one_line_error


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from gradebench.experiments.build import build

    out = tmp_path_factory.mktemp("out")
    return out, build("demo", out=out, progress=False)


@pytest.mark.parametrize(
    "where",
    [
        ["--json", "build", "demo", "--out", "{out}"],
        ["build", "--json", "demo", "--out", "{out}"],
        ["build", "demo", "--json", "--out", "{out}"],
        ["build", "demo", "--out", "{out}", "--json"],
        ["--json", "--debug", "build", "demo", "--out", "{out}"],
        ["build", "--debug", "demo", "--out", "{out}", "--json"],
    ],
)
def test_json_anywhere_equals_api(cli, built, where):
    out, result = built
    code, printed, err = cli(*(a.format(out=out) for a in where))
    assert code == 0, err
    assert json.loads(printed) == result.to_dict() | {"cached": True}


def test_json_anywhere_for_info_and_list(cli, built):
    _, result = built
    a = cli("--json", "info", result.path)
    b = cli("info", result.path, "--json")
    assert a[0] == b[0] == 0 and json.loads(a[1]) == json.loads(b[1])
    assert cli("--json", "list")[1] == cli("list", "--json")[1]


@pytest.mark.parametrize("where", [["--debug", "build"], ["build", "--debug"]])
def test_debug_anywhere_shows_traceback_and_keeps_exit_code(cli, tmp_path, where):
    code, _, err = cli(*where, "demo", "--limit", "0", "--out", str(tmp_path))
    assert code == 2
    assert "Traceback (most recent call last)" in err
    assert err.splitlines()[-1].startswith("gradebench: error: limit must be >= 1")
    code, _, err = cli("build", "demo", "--limit", "0", "--out", str(tmp_path))
    assert code == 2
    assert_one_line_error(err, "limit must be >= 1")


@pytest.fixture
def probe_app(monkeypatch):
    """The real app plus a throwaway ``probe`` command (no --json) that fails on demand."""
    monkeypatch.setattr(app, "registered_commands", list(app.registered_commands))

    @app.command("probe")
    def probe(fail: Annotated[str, typer.Option()] = "none") -> None:
        if fail == "oserror":
            raise PermissionError(13, "Permission denied", "/some/where/file.json")
        if fail == "oserror2":
            raise OSError(18, "Invalid cross-device link", "/a/src", None, "/b/dst")
        if fail == "bug":
            raise ZeroDivisionError("division by zero")
        if fail == "interrupt":
            raise KeyboardInterrupt
        typer.echo("probe ran")

    return app


def test_json_on_a_command_without_json_is_one_line(cli, probe_app):
    code, out, _ = cli("probe")
    assert (code, out) == (0, "probe ran\n")
    for args in (["--json", "probe"], ["probe", "--json"]):
        code, out, err = cli(*args)
        assert code == 2 and out == ""
        assert_one_line_error(err, "'gradebench probe' has no --json output", "hint: drop --json", "build", "list")
    code, out, _ = cli("--json", "probe", "--help")  # asking for help is not an error
    assert code == 0 and "--fail" in out


@pytest.mark.parametrize(
    ("fail", "code", "needles"),
    [
        ("oserror", 2, ["/some/where/file.json: Permission denied", "hint: choose a folder you can write to"]),
        ("oserror2", 2, ["/a/src -> /b/dst: Invalid cross-device link", "hint:"]),
        ("bug", 1, ["internal error: ZeroDivisionError: division by zero", "rerun with --debug"]),
    ],
)
def test_exceptions_in_any_command_are_one_line(cli, probe_app, fail, code, needles):
    got, out, err = cli("probe", "--fail", fail)
    assert got == code and out == ""
    assert_one_line_error(err, *needles)
    got, _, err = cli("probe", "--fail", fail, "--debug")
    assert got == code and "Traceback (most recent call last)" in err
    assert err.splitlines()[-1].startswith("gradebench: error: ")


def test_keyboard_interrupt_in_any_command(cli, probe_app):
    code, out, err = cli("probe", "--fail", "interrupt")
    assert (code, out, err) == (130, "", "gradebench: interrupted; nothing was left half-written\n")


def _toy():
    t = typer.Typer()
    sub = typer.Typer()

    @t.callback()
    def root(debug: bool = typer.Option(False, "--debug")) -> None: ...

    @t.command()
    def a(x: str, as_json: bool = typer.Option(False, "--json")) -> None: ...

    @t.command()
    def b(x: str, debug: bool = typer.Option(False, "--debug")) -> None: ...

    @sub.callback()
    def grp(where: str = typer.Option(".", "--where")) -> None: ...

    @sub.command()
    def c(as_json: bool = typer.Option(False, "--json")) -> None: ...

    t.add_typer(sub, name="g")
    return typer.main.get_command(t)


def test_normalize_moves_flags_to_their_owner():
    root = _toy()
    assert normalize(root, ["--json", "a", "X"]).args == ["a", "--json", "X"]
    assert normalize(root, ["a", "X", "--json", "--debug"]).args == ["--debug", "a", "--json", "X"]
    # a command that declares its own --debug gets it as well as the root
    assert normalize(root, ["b", "X", "--debug"]).args == ["--debug", "b", "--debug", "X"]
    # group options with values are skipped while looking for the command name
    assert normalize(root, ["g", "--where", "c", "c", "--json"]).args == ["g", "--where", "c", "c", "--json"]
    assert normalize(root, ["--json", "g", "--where=c", "c"]).args == ["g", "--where=c", "c", "--json"]
    # after a literal --, nothing is touched
    assert normalize(root, ["a", "--", "--json"]).args == ["a", "--", "--json"]
    # unknown or missing command: --json is dropped so that click reports the real problem
    assert normalize(root, ["zz", "--json"]).args == ["zz"]
    assert normalize(root, ["--json"]).args == []
    with pytest.raises(InvalidArgumentError, match="'gradebench b' has no --json output"):
        normalize(root, ["b", "X", "--json"])
    assert resolve(root, ["g", "c"])[1] == ["g", "c"]
