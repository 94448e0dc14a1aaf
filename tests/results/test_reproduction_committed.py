"""The committed ``REPRODUCTION.md`` is what ``gradebench report`` writes from the committed records:

    gradebench report --results-dir leaderboard/results --build-dir gradebench-out --out REPRODUCTION.md

The report reads one figure outside the records, WinoWhy's train-split class prior, from the
manifest of the winowhy benchmark under ``--build-dir`` (else at the record's ``benchmark.path``,
an absolute path of the machine that evaluated it). So the test builds that benchmark from the real
data into a temp folder first (skipped without ``../shared/data``), and runs from the repository
root with the same relative ``leaderboard/results``, which the report's first line echoes.
"""

from __future__ import annotations

import difflib

import pytest

from tests.conftest import REPO, shared_data

COMMITTED = REPO / "REPRODUCTION.md"
COMMAND = ("gradebench report --results-dir leaderboard/results --build-dir gradebench-out "
           "--out REPRODUCTION.md")


@pytest.mark.slow
@pytest.mark.integration
def test_committed_reproduction_report_is_the_commands_output(tmp_path_factory, monkeypatch):
    if not COMMITTED.is_file():
        pytest.skip(f"{COMMITTED.name} is not committed yet: write it with `{COMMAND}`")
    import gradebench
    from gradebench.experiments.reproduction import markdown, reproduction_report

    source = shared_data("winowhy")
    build = tmp_path_factory.mktemp("build")
    # the builder's data, manifest and fingerprint; validity=False skips the shortcut probes, which only
    # add figures to the manifest afterwards (the fingerprint and the split statistics are the same)
    gradebench.build("winowhy", source=source, resplit="80/10/10", out=build, validity=False, progress=False)
    monkeypatch.chdir(REPO)
    got = markdown(reproduction_report("leaderboard/results", build_dir=build))
    want = COMMITTED.read_text(encoding="utf-8")
    if got != want:
        diff = "".join(list(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "REPRODUCTION.md",
                                                 "gradebench report"))[:60])
        pytest.fail(f"REPRODUCTION.md differs from the report of the committed records; regenerate it with "
                    f"`{COMMAND}` (after `gradebench build winowhy --source ../shared/data/winowhy --resplit 80/10/10 "
                    f"--out gradebench-out`):\n{diff}")
