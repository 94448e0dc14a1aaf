"""Error paths (typed, one line, exit 2, nothing half-written) and the CLI's --json = API result."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gradebench.errors import InvalidArgumentError, RunError, UnknownNameError
from gradebench.reward import REWARD_FILE, RewardError, export_reward, load, reward_report
from tests.cli.conftest import assert_one_line_error


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _edit_json(path: Path, **changes) -> None:
    obj = json.loads(path.read_text())
    obj.update(changes)
    path.write_text(json.dumps(obj))


def _nothing_written(out: Path) -> None:
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}")]


def test_incomplete_run_is_refused(hashed_run, tmp_path, cli):
    run = _copy(hashed_run, tmp_path / "run")
    (run / "run.json").unlink()
    with pytest.raises(RunError, match="did not finish"):
        export_reward(run, out=tmp_path / "out")
    code, out, err = cli("export-reward", run, "--out", tmp_path / "out")
    assert code == 2 and out == ""
    assert_one_line_error(err, "not a finished run", "--resume")
    _nothing_written(tmp_path / "out")


def test_run_without_model_and_untrained_scorer_are_refused(hashed_run, tmp_path, cli):
    run = _copy(hashed_run, tmp_path / "nomodel")
    shutil.rmtree(run / "model")
    with pytest.raises(RewardError, match="no model/ folder"):
        export_reward(run, out=tmp_path / "out")
    baseline = _copy(hashed_run, tmp_path / "baseline")
    _edit_json(baseline / "run.json", scorer="length", config={"prefer": "longer"})
    with pytest.raises(RewardError, match="untrained and has no model to export"):
        export_reward(baseline, out=tmp_path / "out")
    code, _, err = cli("export-reward", baseline, "--out", tmp_path / "out")
    assert code == 2
    assert_one_line_error(err, "untrained", "hint:")
    _nothing_written(tmp_path / "out")
    with pytest.raises(RewardError, match="not trained"):
        load(baseline)


def test_reward_folder_of_another_schema_version(hashed_reward, demo_benchmark, tmp_path, cli):
    old = _copy(hashed_reward, tmp_path / "old")
    _edit_json(old / REWARD_FILE, schema_version=99, gradebench_version="9.9.9")
    with pytest.raises(RewardError, match="schema v99 is not supported"):
        load(old)
    code, out, err = cli("reward-report", old, "--benchmark", demo_benchmark, "--json")
    assert code == 2 and out == ""
    assert_one_line_error(err, "schema v99", "export the run again")


def test_broken_reward_folders(hashed_reward, tmp_path):
    gone = _copy(hashed_reward, tmp_path / "gone")
    shutil.rmtree(gone / "scorer")
    with pytest.raises(RewardError, match="model folder 'scorer' is missing"):
        load(gone)
    bad = _copy(hashed_reward, tmp_path / "bad")
    (bad / REWARD_FILE).write_text("{not json")
    with pytest.raises(RewardError, match="not valid JSON"):
        load(bad)
    (tmp_path / "empty").mkdir()
    with pytest.raises(RewardError, match="neither a reward folder"):
        load(tmp_path / "empty")
    with pytest.raises(RewardError, match="no such reward or run folder"):
        load(tmp_path / "missing")


def test_output_folder_guards(hashed_run, tmp_path):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(RewardError, match="non-empty folder"):
        export_reward(hashed_run, out=busy)
    (tmp_path / "file").write_text("x")
    with pytest.raises((RewardError, InvalidArgumentError), match="file"):
        export_reward(hashed_run, out=tmp_path / "file")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert not export_reward(hashed_run, out=empty, results_dir=tmp_path).cached  # an empty folder is fine
    assert (empty / REWARD_FILE).is_file()


def test_argument_conflicts(hashed_run, tmp_path, cli):
    with pytest.raises(InvalidArgumentError, match="one of them"):
        export_reward(out=tmp_path / "x")
    with pytest.raises(InvalidArgumentError, match="one of them"):
        export_reward(hashed_run, best="ndcg@5", benchmark="demo", out=tmp_path / "x")
    with pytest.raises(InvalidArgumentError, match="--best needs --benchmark"):
        export_reward(best="ndcg@5", out=tmp_path / "x")
    with pytest.raises(InvalidArgumentError, match="--benchmark goes with --best"):
        export_reward(hashed_run, benchmark="demo", out=tmp_path / "x")
    code, _, err = cli("export-reward", "--out", tmp_path / "x")
    assert code == 2
    assert_one_line_error(err, "--best")


def test_a_failure_while_writing_leaves_nothing(hashed_run, tmp_path, monkeypatch):
    import gradebench.reward.export as ex

    def boom(path, obj):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(ex, "_write_json", boom)
    with pytest.raises(OSError):
        export_reward(hashed_run, out=tmp_path / "out", results_dir=tmp_path)
    _nothing_written(tmp_path / "out")


def test_best_errors(hashed_run, demo_benchmark, tmp_path):
    from gradebench.experiments.evaluate import evaluate_scorer
    from gradebench.scorers import make_scorer

    results = tmp_path / "results"
    with pytest.raises(RewardError, match="no test result records"):
        export_reward(best="ndcg@5", benchmark="demo", results_dir=results, out=tmp_path / "x")
    evaluate_scorer(demo_benchmark, make_scorer("length"), results_dir=results, n_resamples=20)
    with pytest.raises(RewardError, match="comes from a run trained on it"):
        export_reward(best="ndcg@5", benchmark="demo", results_dir=results, out=tmp_path / "x")
    with pytest.raises(UnknownNameError, match="did you mean 'ndcg@5'"):
        export_reward(best="ndcg@6", benchmark="demo", results_dir=results, out=tmp_path / "x")
    from gradebench.experiments.runs import load_run

    moved = _copy(hashed_run, tmp_path / "moved")
    scorer, info = load_run(moved)
    evaluate_scorer(demo_benchmark, scorer, run=info, results_dir=results, n_resamples=20)
    shutil.rmtree(moved)
    with pytest.raises(RewardError, match="points to a run folder that exists"):
        export_reward(best="ndcg@5", benchmark="demo", results_dir=results, out=tmp_path / "x")
    _nothing_written(tmp_path / "x")


def test_cli_json_equals_the_api(hashed_run, hashed_reward, demo_benchmark, tmp_path, cli):
    code, out, err = cli("export-reward", hashed_run, "--out", tmp_path / "r", "--results-dir", tmp_path, "--json")
    assert code == 0, err
    api = export_reward(hashed_run, out=tmp_path / "r", results_dir=tmp_path)  # now cached
    assert json.loads(out) == {**api.to_dict(), "cached": False}
    code, out, err = cli("reward-report", hashed_reward, "--benchmark", demo_benchmark, "--split", "validation",
                         "--json")
    assert code == 0, err
    assert json.loads(out) == json.loads(json.dumps(
        reward_report(hashed_reward, benchmark=demo_benchmark, split="validation").to_dict()))
    code, out, err = cli("reward-report", hashed_reward, "--benchmark", demo_benchmark)
    assert code == 0 and "verdict" in out and "advantage_snr" in out
    # the table style of the other commands (gradebench.cli.app.table: a rule under the header, no boxes)
    assert not set("│┃┏┡└╇") & set(out) and "─" in out


def test_report_errors(hashed_reward, demo_benchmark, tmp_path, cli):
    code, _, err = cli("reward-report", hashed_reward, "--benchmark", demo_benchmark, "--split", "dev")
    assert code == 2
    assert_one_line_error(err, "no split 'dev'")
    code, _, err = cli("reward-report", tmp_path / "nope", "--benchmark", demo_benchmark)
    assert code == 2
    assert_one_line_error(err, "no such reward or run folder")
