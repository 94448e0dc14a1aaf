"""CLI: --json equals the API result; typed errors become one line and exit code 2."""

from __future__ import annotations

import json

import pytest

from gradebench.benchmark.info import info
from gradebench.cli import parse_resplit
from gradebench.errors import InvalidArgumentError
from gradebench.experiments.build import build
from gradebench.recipes.catalog import list_recipes
from tests.conftest import FIXTURES, run_cli


def test_build_json_equals_api(tmp_path, capsys):
    code, out, err = run_cli(capsys, "build", "demo", "--out", str(tmp_path), "--json")
    assert code == 0, err
    printed = json.loads(out)
    api = build("demo", out=tmp_path, progress=False)  # cached now
    expected = api.to_dict()
    assert printed.pop("cached") is False and expected.pop("cached") is True
    assert printed == expected
    assert set(printed) >= {"recipe", "fingerprint", "path", "splits", "skipped", "stats"}


def test_info_and_list_json_equal_api(tmp_path, capsys):
    r = build("demo", out=tmp_path, progress=False)
    code, out, _ = run_cli(capsys, "info", r.path, "--json")
    assert code == 0 and json.loads(out) == info(r.path)
    code, out, _ = run_cli(capsys, "list", "--json")
    assert code == 0 and json.loads(out) == list_recipes()


def test_human_output_mentions_path(tmp_path, capsys):
    code, out, _ = run_cli(capsys, "build", "demo", "--out", str(tmp_path))
    assert code == 0 and "demo" in out and str(tmp_path) in out.replace("\n", "")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["build", "esnl"], "unknown recipe 'esnl'; did you mean 'esnli'"),
        (["build", "demo", "--resplit", "80/10"], "--resplit '80/10'"),
        (["build", "demo", "--limit", "0"], "limit must be >= 1"),
        (["info", "/nonexistent/bench"], "no such benchmark folder"),
        (["build", "demo", "--source", "/nonexistent/data"], "/nonexistent/data"),
    ],
)
def test_errors_are_one_line_exit_2(tmp_path, capsys, args, needle):
    code, out, err = run_cli(capsys, *args, "--out", str(tmp_path)) if args[0] == "build" else run_cli(capsys, *args)
    assert code == 2
    assert needle in err
    assert err.count("\n") == 1 and err.startswith("gradebench: error: ")
    assert not (tmp_path / "demo").exists() or not any((tmp_path / "demo").iterdir())


def test_info_on_incomplete_folder(tmp_path, capsys):
    (tmp_path / "half").mkdir()
    code, _, err = run_cli(capsys, "info", str(tmp_path / "half"))
    assert code == 2 and "no manifest.json" in err


def test_unknown_option_exit_2(capsys):
    code, _, err = run_cli(capsys, "build", "demo", "--bogus")
    assert code == 2 and "bogus" in err


def test_parse_resplit():
    assert parse_resplit("80/10/10") == (80, 10, 10)
    for bad in ("80/10", "a/b/c", "50/50/50", "-10/60/50"):
        with pytest.raises(InvalidArgumentError):
            parse_resplit(bad)


BAD = FIXTURES / "esnli" / "bad"


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        ("truncated_row.csv", "esnli_dev.csv:4:"),
        ("unterminated_quote.csv", "esnli_dev.csv:4:"),
        ("not_utf8.csv", "esnli_dev.csv:3:"),
        ("wrong_header.csv", "esnli_dev.csv:1:"),
        ("misaligned", "labels.dev:5:"),
        ("missing.csv", "not found"),
    ],
)
def test_bad_sources_exit_2_and_write_nothing(tmp_path, capsys, source, needle):
    src = BAD / source
    if src.suffix == ".csv" and src.exists():  # the split comes from the file name
        (tmp_path / "src").mkdir()
        src = tmp_path / "src" / "esnli_dev.csv"
        src.write_bytes((BAD / source).read_bytes())
    out_dir = tmp_path / "out"
    code, out, err = run_cli(capsys, "build", "esnli", "--source", str(src), "--out", str(out_dir))
    assert code == 2, err
    assert needle in err and "hint:" in err and err.count("\n") == 1
    assert out == ""
    assert not out_dir.exists() or not any(out_dir.rglob("*")), "nothing may be written for a bad source"


def test_good_fixture_csv_release_builds(tmp_path):
    r = build("esnli", source=FIXTURES / "esnli" / "csv", out=tmp_path, progress=False)
    assert set(r.splits) == {"train", "validation", "test"}
    assert r.skipped  # the fixture has a '-' label, an empty explanation and an empty premise
    assert sum(s["candidates"] for s in r.splits.values()) == 5 * sum(s["queries"] for s in r.splits.values())


def test_map_option_names_nli_table_columns(tmp_path, capsys):
    import json as _json

    from gradebench.cli.main import main
    from tests.conftest import FIXTURES

    src = FIXTURES / "nli_table" / "folder"
    args = ["build", "nli-table", "--source", str(src), "--out", str(tmp_path), "--json"]
    assert main(args) == 2  # the fixture's columns are not the recipe's default names
    err = capsys.readouterr().err
    assert "has no column 'premise'" in err and "--map premise=COLUMN" in err
    code = main([*args, "--map", "premise=sentence1,hypothesis=sentence2", "--map", "label=gold,id=pair_id"])
    result = _json.loads(capsys.readouterr().out)
    assert code == 0 and sum(s["queries"] for s in result["splits"].values()) > 0
    assert main([*args, "--map", "premise"]) == 2
    assert "is not ROLE=COLUMN" in capsys.readouterr().err
    assert main([*args, "--map", "premis=sentence1"]) == 2
    assert "premis" in capsys.readouterr().err


@pytest.fixture()
def two_builds(tmp_path):
    """A recipe folder with two builds (the same build twice, the second under another fingerprint name)."""
    import shutil
    from pathlib import Path

    first = Path(build("demo", out=tmp_path / "out", progress=False, validity=False).path)
    shutil.copytree(first, first.parent / "0123456789ab")
    (first.parent / "fedcba987654").mkdir()  # an interrupted build: no manifest, not listed
    return first.parent, sorted(["0123456789ab", first.name])


@pytest.mark.parametrize("command", [["info"], ["validate"], ["eval", "--scorer", "bm25", "--benchmark"]])
def test_a_recipe_folder_lists_its_builds(two_builds, capsys, command):
    folder, names = two_builds
    code, out, err = run_cli(capsys, *command, str(folder))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"it holds 2 builds: {names[0]}, {names[1]}; pass one of them" in err, err
    assert f"(hint: e.g. {folder / names[0]})" in err and "interrupted" not in err
    code, _, err = run_cli(capsys, *command, str(folder.parent))  # the output root
    assert code == 2 and f"holds 2 builds: demo/{names[0]}, demo/{names[1]}" in err, err


def test_a_single_build_or_a_truly_incomplete_folder_keeps_its_message(two_builds, capsys):
    folder, names = two_builds
    code, out, _ = run_cli(capsys, "info", str(folder / names[1]))
    assert code == 0 and "demo v1" in out
    code, _, err = run_cli(capsys, "info", str(folder / "fedcba987654"))
    assert code == 2 and "no manifest.json" in err


def test_the_python_api_takes_resplit_as_the_command_line_writes_it(tmp_path):
    a = build("demo", out=tmp_path, resplit="50/25/25", progress=False, validity=False)
    b = build("demo", out=tmp_path / "b", resplit=(50, 25, 25), progress=False, validity=False)
    c = build("demo", out=tmp_path / "c", resplit=[50, 25, 25], progress=False, validity=False)
    assert a.fingerprint == b.fingerprint == c.fingerprint and a.splits == b.splits
    for bad in ("80/10", "a/b/c", "80/10/10/0", (50, 50, 50)):
        with pytest.raises(InvalidArgumentError) as e:
            build("demo", out=tmp_path / "bad", resplit=bad)
        assert "a tuple such as (80, 10, 10)" in str(e.value) and "--resplit" not in str(e.value)
    assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize("resplit", [None, "80/10/10"])
def test_an_empty_split_is_said_at_build_and_eval_time(tmp_path, capsys, monkeypatch, resplit):
    """Issue 31: a small source that fills only train (no split in the file's name; or a resplit of too
    few lists) -- the build says which splits are empty and prints a command that scores the one there
    is (run here as printed); eval of the default --split test names the splits there are."""
    from tests.conftest import run_printed

    monkeypatch.setenv("COLUMNS", "80")
    src = tmp_path / "src"
    src.mkdir()
    lines = (FIXTURES / "esnli" / "csv" / "esnli_dev.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    (src / "sample.csv").write_text("".join(lines[:3]), encoding="utf-8")  # the header and two pairs: train
    code, out, err = run_cli(capsys, "build", "esnli", "--source", src, "--out", tmp_path / "out", "--no-validity",
                             *(["--resplit", resplit] if resplit else []))
    assert code == 0, err
    bench = json.loads(run_cli(capsys, "build", "esnli", "--source", src, "--out", tmp_path / "out",
                               "--no-validity", *(["--resplit", resplit] if resplit else []), "--json")[1])
    assert set(bench["splits"]) == {"train"}
    empty = "splits validation and test are" if resplit else "split test is"
    assert " ".join(err.split()).startswith(f"gradebench: warning: {empty} empty: the source gave 2 lists, all in "
                                            "train.")
    # within 80 columns, but for a line holding one word longer than that (pytest's temporary path)
    assert all(len(line) <= 80 or len(line.removesuffix(" \\").split()) == 1 for line in err.splitlines())
    command = err[err.index("\n  gradebench eval") + 1:].rstrip("\n")
    done = run_printed(command, cwd=tmp_path)
    assert done.returncode == 0 and "bm25" in done.stdout, done.stderr
    code, _, err = run_cli(capsys, "eval", "--benchmark", bench["path"], "--scorer", "bm25",
                           "--results-dir", tmp_path / "res")
    assert code == 2 and "has no split 'test' (hint: its splits: train; score one with --split train)" in err
