"""The committed records still load, and render ``leaderboard/LEADERBOARD.md`` byte for byte."""

from __future__ import annotations

import pytest

from tests.conftest import REPO

RESULTS = REPO / "leaderboard" / "results"


@pytest.mark.slow
def test_committed_records_render_the_committed_leaderboard():
    from gradebench.experiments.leaderboard import leaderboard

    board = leaderboard(RESULTS)
    assert sum(len(b.rows) for b in board.boards) > 0
    assert board.to_markdown() == (REPO / "leaderboard" / "LEADERBOARD.md").read_text(encoding="utf-8")


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
