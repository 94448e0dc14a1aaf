"""The README's examples, run as printed (issue 31)."""

from __future__ import annotations

from tests.conftest import REPO, run_cli, run_printed


def _readme_line(start: str) -> str:
    lines = [line for line in (REPO / "README.md").read_text(encoding="utf-8").splitlines() if line.startswith(start)]
    assert len(lines) == 1, lines
    return lines[0]


def test_the_query_example_runs_as_printed_and_keeps_benchmarks_apart(demo_benchmark, tmp_path, capsys):
    """`gradebench query` over the default results folder: rows of different benchmarks (and splits)
    do not mix, each row names its benchmark."""
    line = _readme_line('gradebench query "SELECT ')
    results = tmp_path / "gradebench-out" / "results"  # the default --results-dir, from tmp_path
    for split in ("test", "validation"):
        assert run_cli(capsys, "eval", "--benchmark", demo_benchmark, "--scorer", "bm25", "--split", split,
                       "--results-dir", results)[0] == 0
    done = run_printed(line, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    header, _, *rows, count = [row.split() for row in done.stdout.splitlines() if row.strip()]
    assert header == ["benchmark", "split", "scorer", "loss", "ndcg@5"] and count == ["(2", "rows)"]
    assert [r[:2] for r in rows] == [["demo", "test"], ["demo", "validation"]]
