"""What a leaderboard shows and how it compares systems (shared by the board and its renderings)."""

from __future__ import annotations

#: the scorer whose figure is a board's validity line (it never reads the query)
PROBE = "query-blind"
#: the paired test between each system and the best, and its resamples
TEST = "paired_randomization"
TEST_RESAMPLES = 10_000
#: metrics shown in the Markdown/HTML tables (the sort metric comes first)
SHOWN = ("ndcg@5", "ndcg@10", "map", "mrr", "kendall", "pairwise_agreement", "top1_accuracy", "separation_ratio")
