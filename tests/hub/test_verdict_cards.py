"""The validity verdict in the cards (issue 30 item 5): the build-time card says that no reader has
been evaluated, with the best shortcut and the command that checks one; the published cards
(``publish``, ``publish-results``) carry the leaderboard's verdict from the records."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from gradebench.benchmark.card import VERDICT_HINT, VERDICT_MARK, with_verdict
from gradebench.experiments import validity
from gradebench.experiments.leaderboard import leaderboard, verdict_texts
from gradebench.experiments.render import verdict_line
from tests.conftest import run_printed


@pytest.fixture(scope="module")
def records(demo_benchmark, demo_reader_run, tmp_path_factory) -> Path:
    """Test-split records of a reader (the hashed-mlp run) and a shortcut (BM25) on the demo."""
    from gradebench.experiments.evaluate import evaluate_scorer
    from gradebench.experiments.runs import load_run
    from gradebench.scorers import make_scorer

    out = tmp_path_factory.mktemp("records")
    scorer, info = load_run(demo_reader_run)
    evaluate_scorer(demo_benchmark, scorer, run=info, results_dir=out, n_resamples=100)
    evaluate_scorer(demo_benchmark, make_scorer("bm25"), results_dir=out, n_resamples=100)
    return out


def _verdict_paragraph(card: str) -> str:
    (line,) = [line for line in card.splitlines() if line.startswith(VERDICT_MARK)]
    return line


def test_the_build_time_card_states_the_best_shortcut_and_that_no_reader_was_evaluated(tmp_path, monkeypatch):
    from gradebench.experiments.build import build

    monkeypatch.setattr(validity, "MIN_LISTS", 2)
    r = build("demo", out=tmp_path, progress=False)
    card = (Path(r.path) / "README.md").read_text()
    paragraph = _verdict_paragraph(card)
    assert paragraph.startswith(f"{VERDICT_MARK} no verdict: no reader evaluated. The best shortcut "
                                "(query-blind probe) orders 100.0% of candidate pairs (pairwise agreement 1.0000)")
    assert f"`{VERDICT_HINT}`" in paragraph
    assert card.index("## Validity: how far shortcuts get") < card.index(paragraph)


def test_a_card_whose_figures_were_skipped_says_so_and_still_points_to_the_check(demo_benchmark):
    card = (demo_benchmark / "README.md").read_text()
    assert "Not measured: fewer than 20 train or test lists." in card
    paragraph = _verdict_paragraph(card)
    assert "no verdict: no reader evaluated." in paragraph and "best shortcut" not in paragraph


def test_the_cards_hint_works_with_its_values_substituted(demo_benchmark, demo_reader_run, tmp_path):
    paragraph = _verdict_paragraph((demo_benchmark / "README.md").read_text())
    (command,) = re.findall(r"`(gradebench validity [^`]+)`", paragraph)
    command = command.replace("BENCHMARK_DIR", shlex.quote(str(demo_benchmark))).replace(
        "RUN_DIR", shlex.quote(str(demo_reader_run)))
    done = run_printed(command, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "verdict: " in done.stdout


def test_with_verdict_replaces_the_paragraph_or_adds_one():
    card = f"# x\n\n{VERDICT_MARK} no verdict: no reader evaluated.\n\n## Source\n"
    assert with_verdict(card, None) == card
    assert with_verdict(card, "readers beat it.") == f"# x\n\n{VERDICT_MARK} readers beat it.\n\n## Source\n"
    assert with_verdict("# y\n\ntext\n", "solved.") == f"# y\n\ntext\n\n{VERDICT_MARK} solved.\n"


def test_verdict_texts_are_the_leaderboards_lines_by_fingerprint(records, demo_benchmark):
    board = leaderboard(records).boards[0]
    texts = verdict_texts(records)
    assert list(texts) == [board.fingerprint]
    line = verdict_line(board)
    assert line.startswith("Verdict (ndcg@5): ") and "Best reader: hashed-mlp + listnet" in line
    assert texts[board.fingerprint] == "from the result records (ndcg@5, test split): " + line.removeprefix(
        "Verdict (ndcg@5): ")


def test_publish_puts_the_records_verdict_in_the_benchmarks_card(cli, records, demo_benchmark, tmp_path,
                                                                  monkeypatch):
    monkeypatch.chdir(tmp_path)  # no default results folder here
    dest = tmp_path / "hub"
    code, out, err = cli("publish", demo_benchmark, "--repo-id", "me/gb", "--dry-run", dest,
                         "--results-dir", records, "--json")
    assert code == 0, err
    (config,) = json.loads(out)["configs"]
    text = verdict_texts(records)[config["fingerprint"]]
    assert config["verdict"] == text
    readme = (dest / "README.md").read_text()
    assert f"{VERDICT_MARK} {text}" in readme and "no verdict: no reader evaluated" not in readme
    # without records the build-time paragraph is published as it is
    plain = tmp_path / "plain"
    code, out, _ = cli("publish", demo_benchmark, "--repo-id", "me/gb", "--dry-run", plain, "--json")
    assert code == 0 and json.loads(out)["configs"][0]["verdict"] is None
    assert _verdict_paragraph((plain / "README.md").read_text()) == _verdict_paragraph(
        (demo_benchmark / "README.md").read_text())
    # the default folder is read where it exists
    default = tmp_path / "gradebench-out" / "results"
    default.parent.mkdir()
    default.symlink_to(records, target_is_directory=True)
    code, out, _ = cli("publish", demo_benchmark, "--repo-id", "me/gb", "--dry-run", tmp_path / "default", "--json")
    assert code == 0 and json.loads(out)["configs"][0]["verdict"] == text
    # a folder given that does not exist is an error, and nothing is written
    code, out, err = cli("publish", demo_benchmark, "--repo-id", "me/gb", "--dry-run", tmp_path / "none",
                         "--results-dir", tmp_path / "missing")
    assert code == 2 and out == "" and err.count("\n") == 1 and "no such results folder" in err
    assert not (tmp_path / "none").exists()


def test_the_results_card_lists_each_benchmarks_verdict(records, tmp_path):
    from gradebench.experiments.results_hub import publish_results

    publish_results(records, repo_id="me/gb-results", dry_run=tmp_path / "hub")
    card = (tmp_path / "hub" / "README.md").read_text()
    board = leaderboard(records).boards[0]
    assert "## Validity verdicts" in card
    assert f"- `demo` (`{board.fingerprint[:12]}`): {verdict_line(board)}" in card
    assert "gradebench leaderboard --results-dir me/gb-results" in card
