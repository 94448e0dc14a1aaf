"""Per-phase build timings: on the result, out of its identity, in `--json` only with `--timings`."""

from __future__ import annotations

import json

from gradebench.benchmark.engine import build
from tests.conftest import run_cli

PHASES = {"read", "select", "make_lists", "write", "stats", "digests", "validation", "finish",
          "workers.make_lists", "workers.tables", "workers.stats", "workers.encode", "main.cpu"}


def test_result_carries_phase_timings(tmp_path):
    r = build("demo", out=tmp_path, progress=False, workers=1)
    assert set(r.timings) == PHASES
    assert all(v >= 0 for k, v in r.timings.items() if k != "make_lists")
    assert "timings" not in r.to_dict() and r.to_dict(timings=True)["timings"] == r.timings
    cached = build("demo", out=tmp_path, progress=False)
    assert cached.cached and cached.timings == {}
    assert cached.to_dict() == {**r.to_dict(), "cached": True}


def test_cli_json_has_timings_only_when_asked(tmp_path, capsys):
    code, out, err = run_cli(capsys, "build", "demo", "--out", str(tmp_path), "--json", "--no-validity", "--timings")
    assert code == 0, err
    assert set(json.loads(out)["timings"]) == PHASES
    code, out, err = run_cli(capsys, "build", "demo", "--out", str(tmp_path), "--json", "--no-validity")
    assert code == 0 and "timings" not in json.loads(out)
