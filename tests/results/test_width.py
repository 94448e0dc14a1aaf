"""Human output fits an 80-column terminal: no line longer than 80 characters, no name cut with "…".

Each command runs in-process with ``COLUMNS=80`` (what rich, and so every table, fits to); names
(recipes, scorers, losses, tiers, leaderboard systems) must come out whole: on one line, or, for
a leaderboard system label, wrapped onto continuation lines of its own column and joined back.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradebench.cli import main
from gradebench.experiments.leaderboard import leaderboard
from gradebench.experiments.render import text, text_table, wrap_cell
from tests.results.conftest import Noisy, Oracle, fake_run

WIDTH = 80


@pytest.fixture()
def cli80(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(WIDTH))

    def run(*args):
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        assert code == 0, err
        return out

    return run


def assert_fits(out: str, width: int = WIDTH) -> list[str]:
    lines = out.splitlines()
    too_long = [ln for ln in lines if len(ln) > width]
    assert not too_long, f"{len(too_long)} lines over {width} columns, e.g. {too_long[0]!r}"
    assert "…" not in out, "something was cut"
    return lines


def words(out: str) -> str:
    return " ".join(out.split())


def test_list_fits_on_one_screen_with_whole_names(cli80):
    from gradebench.recipes.catalog import list_recipes

    from gradebench.recipes import recipe_names

    lines = assert_fits(cli80("list"))
    assert len(lines) <= len(recipe_names()) + 5  # a line a recipe, plus the frame (was 351 lines at 80 columns)
    for r in list_recipes():
        assert any(ln.split()[:2] == [r["name"], f"v{r['version']}"] for ln in lines), r["name"]


def test_list_wide_shows_every_field_whole(cli80):
    from gradebench.recipes.catalog import list_recipes

    out = cli80("list", "--wide")
    assert_fits(out)
    flat = words(out)
    for r in list_recipes():
        assert f"{r['name']} v{r['version']}" in out
        for field in (r["description"], r["license"], ", ".join(r["formats"])):
            assert words(field) in flat, (r["name"], field[:40])


def test_build_and_info_fit(cli80, tmp_path):
    out = cli80("build", "demo", "--out", tmp_path, "--no-validity")
    assert_fits(out)
    assert "candidates" in out and "validation" in out  # was "candida…", "validati…"
    path = json.loads(cli80("build", "demo", "--out", tmp_path, "--no-validity", "--json"))["path"]
    out = cli80("info", path)
    lines = assert_fits(out)
    for tier in ("gold", "good", "fair", "poor", "nonsense"):
        assert any(ln.split()[:1] == [tier] for ln in lines), tier
    assert "human" in out and "share" in out


def test_scorers_and_losses_fit_with_whole_names(cli80):
    from gradebench.losses import LOSSES
    from gradebench.scorers import scorer_table

    for command, names in (("scorers", [r["name"] for r in scorer_table()]), ("losses", [n for n, _ in LOSSES.items()])):
        lines = assert_fits(cli80(command))
        for name in names:
            assert any(ln.split()[:1] == [name] for ln in lines), (command, name)


@pytest.fixture()
def long_names(demo_bench, tmp_path):
    """Records whose system labels are far wider than 80 columns (a cross-encoder-like options set)."""
    from gradebench.benchmark.lists import open_benchmark
    from gradebench.experiments.evaluate import evaluate_scorer

    fp = open_benchmark(demo_bench).fingerprint
    res = tmp_path / "res"
    evaluate_scorer(demo_bench, Oracle(), split="test", results_dir=res, n_resamples=20)
    for i, seed in enumerate((1, 2)):
        run = fake_run(fp, seed=seed)
        opts = {**run.options, "batch_queries": 8, "lr": 5e-05, "max_train_queries": 300 + i,
                "max_validation_queries": 150, "patience": 1, "list_size": 5}
        run = replace(run, options=opts, run_fingerprint=f"{i}" * 64)
        evaluate_scorer(demo_bench, Noisy(seed=seed), run=run, split="test", results_dir=res, n_resamples=20)
    return res


def system_cells(lines: list[str]) -> list[str]:
    """The system column of a text leaderboard, continuation lines joined (spaces dropped)."""
    at = lines[1].index("system")
    cells: list[str] = []
    for ln in lines[2:]:
        if not ln.strip():
            break
        if ln[:at].strip():
            cells.append(ln[at:])
        else:
            cells[-1] += ln[at:]
    return ["".join(c.split()) for c in cells]


def test_leaderboard_fits_and_wraps_system_labels_whole(cli80, long_names):
    board = leaderboard(long_names)
    labels = [r.system for r in board.boards[0].rows]
    assert max(len(s) for s in labels) > WIDTH
    out = cli80("leaderboard", "--results-dir", long_names)
    lines = assert_fits(out)
    # each system cell is the label whole, then its training budget and device in brackets
    assert system_cells(lines) == ["".join(f"{r.system} [{r.training}; {r.device}]".split())
                                   for r in board.boards[0].rows]
    md = cli80("leaderboard", "--results-dir", long_names, "--format", "md")
    assert md == board.to_markdown()  # every column, as in LEADERBOARD.md
    wide = cli80("leaderboard", "--results-dir", long_names, "--wide")
    assert all(s in wide for s in labels) and max(map(len, wide.splitlines())) > WIDTH


def test_committed_leaderboard_fits():
    from tests.conftest import REPO

    board = leaderboard(REPO / "leaderboard" / "results")
    assert_fits(text(board, width=WIDTH))
    assert max(map(len, board.to_markdown().splitlines())) > 300  # what used to be printed


def test_eval_and_sweep_output_fit(cli80, demo_bench, tmp_path):
    out = cli80("eval", "--benchmark", demo_bench, "--scorer", "bm25", "--resamples", 20,
                "--results-dir", tmp_path / "res")
    assert_fits(out)
    assert "pairwise_agreement" in out and "query_separation_ratio" in out
    exp = tmp_path / "e.yaml"
    exp.write_text(f"name: t\nbenchmarks: [{{path: {demo_bench}}}]\nscorers: [{{name: overlap}}]\n"
                   "seeds: [0]\nn_resamples: 20\n")
    out = cli80("sweep", exp, "--results-dir", tmp_path / "res", "--runs-dir", tmp_path / "runs")
    assert_fits(out)
    assert "overlap" in out and "evaluated" in out


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab ,{}=_-"), max_size=120), st.integers(1, 40))
def test_wrap_cell_fits_and_cuts_nothing(cell, width):
    lines = wrap_cell(cell, width)
    assert all(len(ln) <= width for ln in lines)
    assert "".join(lines).replace(" ", "") == cell.replace(" ", "")


def test_text_table_wraps_only_the_last_column():
    rows = [["1", "0.500", "a " * 60], ["10", "0.25", "short"]]
    lines = text_table(["#", "value", "name"], rows, width=40, right=(0,))
    assert all(len(ln) <= 40 for ln in lines)
    assert lines[0] == " #  value  name" and lines[-1] == "10  0.25   short"
    assert text_table(["#", "value", "name"], rows, width=None, right=(0,))[1].endswith("a " * 59 + "a")
