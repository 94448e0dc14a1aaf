"""What the hot paths import: every command starts by importing ``gradebench.cli``, which must not
load numpy or the policy-optimisation methods; the leaderboard reads its records without pandas.
(Import sets, not timings: ``benchmarks/bench_query.py`` and ``bench_leaderboard.py`` time them.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO


def _modules_after(code: str, watched: tuple[str, ...]) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps([m for m in {list(watched)!r} if m in sys.modules]))"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=REPO, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_cli_starts_without_numpy_or_the_policy_methods():
    watched = ("numpy", "pandas", "pyarrow", "torch", "gradebench.rl.grpo", "gradebench.rl.lipo", "gradebench.rl.ppo")
    assert _modules_after("import gradebench.cli", watched) == []


def test_rl_names_still_import():
    assert _modules_after("from gradebench.rl import lipo, LipoOptions, PolicyRecord, read_policy_run",
                          ("gradebench.rl.lipo",)) == ["gradebench.rl.lipo"]


@pytest.mark.slow
def test_the_leaderboard_reads_its_records_without_pandas():
    code = ("from gradebench.experiments.leaderboard import leaderboard\n"
            "leaderboard('leaderboard/results').to_markdown()")
    assert _modules_after(code, ("pandas",)) == []
