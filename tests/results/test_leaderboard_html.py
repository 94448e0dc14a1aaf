"""The leaderboard's HTML page: self-contained, deterministic, one section per benchmark, and the CLI's
``--format html`` / ``--out`` (the browser checks are in test_leaderboard_browser.py)."""

from __future__ import annotations

import json
import re

import pytest

from gradebench.experiments.evaluate import evaluate_scorer
from gradebench.experiments.htmlpage import data_v, heat_colour, interval_svg, slug, tier_svg
from gradebench.experiments.leaderboard import leaderboard
from gradebench.experiments.leaderboard_html import html_of, leaderboard_html, short_name
from tests.conftest import run_cli
from tests.results.conftest import Noisy, Oracle, QueryBlindFake, Shuffle

NETWORK = re.compile(r"(src|href)=\"?(https?:)?//|url\(|@import|<link ")


@pytest.fixture(scope="module")
def store(demo_bench, tmp_path_factory):
    out = tmp_path_factory.mktemp("lbh")
    for scorer in (Oracle(), Shuffle(seed=1), Shuffle(seed=2), Noisy(seed=5), QueryBlindFake()):
        evaluate_scorer(demo_bench, scorer, split="train", results_dir=out, n_resamples=200)
    return out


def test_page_is_self_contained_deterministic_and_has_a_section_per_benchmark(store):
    lb = leaderboard(store, split="train")
    page = leaderboard_html(store, split="train")
    assert page == html_of(lb, store, split="train")  # the same records give the same bytes
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>\n")
    assert not NETWORK.search(page)
    assert page.count('<section class="bench"') == len(lb.boards) == 1
    board = lb.boards[0]
    assert page.count("<tr data-rank=") == len(board.rows)
    assert f'data-benchmark="{board.benchmark}"' in page
    # the sort metric's CI drawn per row; the best is marked, significance against it shown
    assert page.count('<svg class="iv"') == len(board.rows)
    assert '<tr data-rank="1" data-family="test-oracle" class="best">' in page
    assert page.count('class="num mark mark-best" data-v="0"') == 1 and 'class="num mark mark-worse"' in page
    # the budget opens under the name; predicted scores per grade of each row and of the best + probe
    assert page.count("<details>") == len(board.rows)
    assert page.count("training: untrained; device:") == 2 * len(board.rows)  # the name's tooltip and under it
    assert page.count('aria-label="predicted score by grade"') == len(board.rows) + 2
    # the card: size and grades of the split, and the validity verdict of the probe
    assert "queries," in page and "grades: gold (4) &gt; good (3)" in page
    assert re.search(r'<p class="verdict v-(ok|warn|bad|none)">Benchmark validity: query-blind probe', page)
    assert "--split train --format html" in page


def test_empty_folder_gives_a_page_that_says_so(tmp_path):
    page = leaderboard_html(tmp_path)
    assert "No result records for split test." in page and '<section class="bench"' not in page


def test_short_names_drop_config_and_options():
    from types import SimpleNamespace

    row = SimpleNamespace(system="cross-encoder[max_length=128] + listnet {epochs=2,lr=5e-05} (trained on esnli)",
                          probe=False)
    assert short_name(row) == "cross-encoder + listnet (trained on esnli)"
    assert short_name(SimpleNamespace(system="query-blind + mse[a=[1, 2]]", probe=True)) == "query-blind + mse (probe)"


def test_svg_pieces_are_placed_on_their_axis():
    # axis [0, 1] onto x in [3, 117]: the dot at 0.5 is at 60, the CI from 0.25 to 0.75 spans 31.5 to 88.5
    svg = interval_svg(0.5, 0.25, 0.75, 0.0, 1.0, ref=1.0)
    assert 'cx="60"' in svg and 'x1="31.5" x2="88.5"' in svg and 'x1="117" x2="117"' in svg
    assert interval_svg(None, None, None, 0.0, 1.0) == ""
    tiers = tier_svg([("gold", 1.0, 0.5, 10), ("poor", 0.0, 0.5, 10)])
    assert tiers.count("<circle") == 2 and ">gold<" in tiers and ">-0.5<" in tiers and ">1.5<" in tiers
    assert slug("esnli-contrast v2!") == "esnli-contrast-v2" and data_v(None) == "" and data_v(0.1234567) == "0.123457"
    assert heat_colour(0.0) == "#ffffff" and heat_colour(1.0) == "#2166ac"


# -- the command -------------------------------------------------------------------------------------------------
def test_cli_html_and_out(store, tmp_path, capsys):
    code, page, err = run_cli(capsys, "leaderboard", "--split", "train", "--results-dir", store, "--format", "html")
    assert code == 0, err
    assert page == leaderboard_html(store, split="train")
    md, html = tmp_path / "L.md", tmp_path / "L.html"
    code, out, err = run_cli(capsys, "leaderboard", "--split", "train", "--results-dir", store, "--out", md,
                             "--out", html)
    assert code == 0, err
    assert out == f"wrote {md}\nwrote {html}\n"
    assert html.read_text(encoding="utf-8") == page
    assert md.read_text(encoding="utf-8") == leaderboard(store, split="train").to_markdown()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["L.html", "L.md"]  # no temp file left
    # --format names the format of a file without a known suffix; --json still prints the API's result
    other = tmp_path / "board.page"
    code, out, err = run_cli(capsys, "leaderboard", "--split", "train", "--results-dir", store, "--format", "html",
                             "--out", other)
    assert code == 0 and other.read_text(encoding="utf-8") == page
    code, out, err = run_cli(capsys, "leaderboard", "--split", "train", "--results-dir", store, "--json", "--out",
                             tmp_path / "again.html")
    assert code == 0 and json.loads(out) == leaderboard(store, split="train").to_dict()


@pytest.mark.parametrize("args, needle", [
    (["--format", "md", "--out", "{tmp}/x.html"], "--format md conflicts with --out"),
    (["--out", "{tmp}/x.page"], "cannot tell the format of --out"),
    (["--out", "{tmp}/x.md", "--out", "{tmp}/x.md"], "is given twice"),
    (["--out", "{tmp}/missing/x.html"], "no such folder"),
    (["--wide", "--out", "{tmp}/x.html", "--format", "html"], "--wide conflicts with --format html"),
])
def test_cli_out_errors_write_nothing(store, tmp_path, capsys, args, needle):
    target = tmp_path / "t"
    target.mkdir()
    code, out, err = run_cli(capsys, "leaderboard", "--results-dir", store,
                             *[a.format(tmp=target) for a in args])
    assert code == 2 and out == "" and err.count("\n") == 1 and needle in err
    assert list(target.iterdir()) == []
