"""The committed records still load, and render ``leaderboard/LEADERBOARD.md`` and ``LEADERBOARD.html`` byte
for byte: both are written by one command, from the repository root,

    gradebench leaderboard --results-dir leaderboard/results --out leaderboard/LEADERBOARD.md \
        --out leaderboard/LEADERBOARD.html
"""

from __future__ import annotations

import pytest

from tests.conftest import REPO

RESULTS = REPO / "leaderboard" / "results"


COMMAND = ("gradebench leaderboard --results-dir leaderboard/results --out leaderboard/LEADERBOARD.md "
           "--out leaderboard/LEADERBOARD.html")


@pytest.mark.slow
def test_committed_records_render_the_committed_leaderboard(monkeypatch):
    from gradebench.experiments.leaderboard import leaderboard
    from gradebench.experiments.leaderboard_html import html_of

    monkeypatch.chdir(REPO)  # the page names the command that wrote it, with this relative folder
    board = leaderboard("leaderboard/results")
    assert sum(len(b.rows) for b in board.boards) > 0
    hint = f"regenerate both files with `{COMMAND}`"
    assert board.to_markdown() == (REPO / "leaderboard" / "LEADERBOARD.md").read_text(encoding="utf-8"), hint
    page = html_of(board, "leaderboard/results")
    assert page == (REPO / "leaderboard" / "LEADERBOARD.html").read_text(encoding="utf-8"), hint
    # what the page shows of the committed records: a section per benchmark, the list-size curves
    # (worldtree), the transfer matrix (esnli-trained systems) and the per-subset table (dnli-natural)
    assert page.count('<section class="bench"') == len(board.boards)
    worldtree = page[page.index('data-benchmark="worldtree"'):]
    assert 'aria-label="ndcg@5 by list size K"' in worldtree[:worldtree.index("</section>")]
    assert '<section id="transfer">' in page and "hashed-mlp trained on esnli" in page
    natural = page[page.index('data-benchmark="dnli-natural"'):]
    assert "<h3>Per subset" in natural[:natural.index("</section>")]
    assert len(page.encode()) < 2_000_000  # the tree stays small


def test_per_query_arrays_are_the_per_query_table_by_metric():
    from gradebench.experiments.store import list_records, read_per_query, read_per_query_arrays

    for record in list_records(RESULTS)[:5]:
        df = read_per_query(record)
        arrays = read_per_query_arrays(record)
        assert list(arrays) == list(dict.fromkeys(df["metric"].astype(str)))
        for metric, (ids, values) in arrays.items():
            part = df[df["metric"].astype(str) == metric]
            assert ids == part["query_id"].tolist()
            assert values.dtype == "float64"
            assert values.tobytes() == part["value"].to_numpy(dtype="float64").tobytes()
