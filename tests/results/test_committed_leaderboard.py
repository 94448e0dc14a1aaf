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
