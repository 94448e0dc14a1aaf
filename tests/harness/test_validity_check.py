"""``gradebench validity DIR [--run RUN]``: the stored figures, and a trained reader against the shortcuts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from gradebench.experiments import validity
from gradebench.experiments.validity_check import ATTACKER_NAMES, check_validity
from tests.cli.conftest import assert_one_line_error
from tests.conftest import run_printed


@pytest.fixture(scope="module")
def reader_run(demo_reader_run) -> Path:
    return demo_reader_run


@pytest.fixture(scope="module")
def measured_demo(tmp_path_factory) -> Path:
    """The demo benchmark built with its validity figures (MIN_LISTS lowered: it has 5 test lists);
    the same fingerprint as ``demo_benchmark``, so its runs are runs of this one too."""
    from gradebench.experiments.build import build

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(validity, "MIN_LISTS", 2)
        return Path(build("demo", out=tmp_path_factory.mktemp("measured"), progress=False).path)


def test_the_attackers_are_the_stored_figures_on_test_and_the_margin_is_paired(measured_demo, reader_run):
    stored = json.loads((measured_demo / "manifest.json").read_text())["validity"]
    r = check_validity(measured_demo, run=reader_run, n_resamples=200)
    expected = ["query_blind", "label_aware", "bm25"] + (
        ["lexical_ceiling_dense", "lexical_ceiling_strong"] if validity.has_lightgbm() else [])
    assert list(r.attackers) == expected
    for key, f in r.attackers.items():  # the figures' lists, the figures' training: the stored values
        assert f == {"name": ATTACKER_NAMES[key], **stored[key]}, key
    assert r.lists == {"n_queries": 5, "carved": False, "label_aware": True,
                       "lexical_ceilings": validity.has_lightgbm()}
    assert r.reader["scorer"] == "hashed-mlp" and r.reader["run_dir"] == str(reader_run)
    for metric, m in r.margins.items():
        values = {k: f[metric] for k, f in r.attackers.items()}
        assert m["best_attacker_value"] == max(values.values())
        assert m["best_attacker"] == next(k for k in expected if values[k] == m["best_attacker_value"])
        assert m["ci_low"] <= m["value"] <= m["ci_high"] and m["n_queries"] == 5
        assert m["value"] == pytest.approx(r.reader[metric] - m["best_attacker_value"], abs=2e-4)
        assert (m["confidence"], m["n_resamples"]) == (0.95, 200)
    assert r.line.split(":")[0] in ("the reader beats the best shortcut", "solved by a shortcut",
                                    "not shown to need reading")
    assert list(r.tier_pairs) == ["reader", *expected]  # the reader's agreement per tier pair first
    tiers = [t["name"] for t in json.loads((measured_demo / "manifest.json").read_text())["recipe"]["tiers"]]
    assert r.tier_pairs["reader"] and all(set(p.split(">")) <= set(tiers) for p in r.tier_pairs["reader"])
    again = check_validity(measured_demo, run=reader_run, n_resamples=200)
    assert again.to_dict() == r.to_dict()  # the seed comes from the content, not from a global RNG


def test_a_validation_split_is_scored_with_the_same_attackers(demo_benchmark, reader_run):
    r = check_validity(demo_benchmark, run=reader_run, split="validation", n_resamples=100)
    assert r.split == "validation" and r.lists["n_queries"] == 5
    t = check_validity(demo_benchmark, run=reader_run, n_resamples=100)
    assert r.attackers != t.attackers  # other lists


def test_alone_split_measures_the_figures_there_with_the_same_attackers(demo_benchmark, reader_run):
    """``--split validation`` without a reader: the attackers, trained as for the figures, scored on
    validation (nothing stored); the same figures as the reader check's attackers on that split, and
    each one's agreement per tier pair."""
    manifest = (Path(demo_benchmark) / "manifest.json").read_bytes()
    r = check_validity(demo_benchmark, split="validation")
    assert r.split == "validation" and r.reader is None and r.margins == {} and r.commands == {}
    assert r.lists["n_queries"] == 5 and r.lists["mode"] == "fast"  # the stored figures' mode, else fast
    assert r.attackers == check_validity(demo_benchmark, run=reader_run, split="validation",
                                         n_resamples=50).attackers
    full = check_validity(demo_benchmark, split="validation", mode="full")
    assert full.lists["mode"] == "full" and full.attackers["query_blind"] == r.attackers["query_blind"]
    assert (Path(demo_benchmark) / "manifest.json").read_bytes() == manifest  # nothing stored
    tiers = [t["name"] for t in json.loads(manifest)["recipe"]["tiers"]]
    assert list(r.tier_pairs) == list(r.attackers)
    for key, by in r.tier_pairs.items():
        assert all(p.split(">")[0] in tiers and p.split(">")[1] in tiers for p in by)
        assert {p: v["pairs"] for p, v in by.items()} == {p: v["pairs"] for p, v in r.tier_pairs["bm25"].items()}
        assert all(0.0 <= v["agreement"] <= 1.0 and v["pairs"] > 0 for v in by.values())
    assert check_validity(demo_benchmark, split="validation").to_dict() == r.to_dict()


def test_the_mode_reaches_the_strong_ceiling_and_test_alone_trains_nothing(demo_benchmark, monkeypatch):
    if not validity.has_lightgbm():
        pytest.skip("lightgbm is not installed: no strong ceiling")
    seen = []
    real = validity._fit_strong
    monkeypatch.setattr(validity, "_fit_strong", lambda *a: seen.append(a[-1]) or real(*a))
    check_validity(demo_benchmark, split="validation", mode="full")
    check_validity(demo_benchmark, split="validation", mode="fast")
    assert seen == ["full", "fast"]
    monkeypatch.setattr(validity, "attacker_values", lambda *a, **k: pytest.fail("trained on --split test"))
    r = check_validity(demo_benchmark, split="test")
    assert r.attackers == {} and r.lists is None and r.tier_pairs == {}


def test_grade_pairs_pools_each_pair_of_grades_with_ties_as_half():
    from gradebench.benchmark.lists import Lists

    rel = np.array([[2.0, 1.0, 0.0, 0.0], [2.0, 2.0, 1.0, 0.0]])
    mask = np.array([[True, True, True, False], [True, True, True, True]])
    scores = np.array([[0.9, 0.1, 0.5, 9.0], [0.2, 0.7, 0.2, 0.0]])
    lists = Lists("b", "f", "validation", np.array(["q1", "q2"]), np.array(["", ""]),
                  np.full((2, 4), "c"), np.full((2, 4), "t"), rel, rel, mask)
    got = validity.grade_pairs(scores, lists)
    # q1: 2>1 right, 2>0 right, 1>0 wrong (the padded 9.0 is not a candidate);
    # q2: 2>1 tie, right; 2>0 right, right; 1>0 right
    assert got == {"2>1": {"agreement": 0.8333, "pairs": 3}, "2>0": {"agreement": 1.0, "pairs": 3},
                   "1>0": {"agreement": 0.5, "pairs": 2}}
    assert list(got) == ["2>1", "2>0", "1>0"]  # better grade first, then the worse one's best first
    exact = validity.grade_pairs(rel.copy(), lists)  # scores that are the grades: every pair right
    assert {k: v["agreement"] for k, v in exact.items()} == {"2>1": 1.0, "2>0": 1.0, "1>0": 1.0}
    assert {k: v["pairs"] for k, v in exact.items()} == {k: v["pairs"] for k, v in got.items()}


def test_the_outcome_follows_the_leaderboard_rule(demo_benchmark, reader_run, monkeypatch):
    from gradebench.experiments import leaderboard

    seen = []
    real = leaderboard.outcome
    monkeypatch.setattr(leaderboard, "outcome", lambda *a: seen.append(a) or real(*a))
    r = check_validity(demo_benchmark, run=reader_run, n_resamples=100)
    m = r.margins["pairwise_agreement"]
    assert seen == [(m["ci_low"], m["ci_high"], m["best_attacker_value"])]
    assert leaderboard.outcome(0.01, 0.2, 0.8) == leaderboard.READS
    assert leaderboard.outcome(-0.2, -0.01, 0.8) == leaderboard.SOLVED
    assert leaderboard.outcome(-0.1, 0.1, 0.995) == leaderboard.SOLVED
    assert leaderboard.outcome(-0.1, 0.1, 0.8) == leaderboard.NOT_SHOWN


def test_progress_reaches_the_end_in_order(demo_benchmark, reader_run):
    calls = []
    check_validity(demo_benchmark, run=reader_run, n_resamples=50, progress=lambda *a: calls.append(a))
    done = [c[0] for c in calls]
    assert done == sorted(done) and calls[-1] == (calls[-1][1], calls[-1][1], "done")
    assert any("query-blind" in c[2] for c in calls) and any("scoring" in c[2] for c in calls)


def test_cli_json_is_the_api_result_and_the_text_fits_80_columns(cli, monkeypatch, demo_benchmark, reader_run):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = cli("validity", demo_benchmark, "--run", reader_run, "--resamples", "100", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == check_validity(demo_benchmark, run=reader_run, n_resamples=100).to_dict()
    code, out, err = cli("validity", demo_benchmark, "--run", reader_run, "--resamples", "100")
    assert (code, err) == (0, "")
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "reader: hashed-mlp + listnet" in out and "margin over the best attacker on pairwise agreement" in out
    assert "verdict: " in out and "95% paired bootstrap CI over 5 queries" in out
    assert "by tier pair" in out and " reader " in out
    code, out, err = cli("validity", demo_benchmark, "--json")
    assert code == 0 and json.loads(out) == check_validity(demo_benchmark).to_dict()


def test_without_a_run_the_stored_figures_are_shown(cli, monkeypatch, measured_demo):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = cli("validity", measured_demo)
    assert code == 0 and max(len(line) for line in out.splitlines()) <= 80
    stored = json.loads((measured_demo / "manifest.json").read_text())["validity"]
    assert f"{stored['bm25']['pairwise_agreement']:.3f}" in out and "query-blind probe" in out
    assert "--measure" not in out  # current figures
    r = check_validity(measured_demo)
    assert r.figures == stored and r.stale is False and r.reader is None and r.line is None


def test_alone_split_prints_a_table_per_tier_pair_and_json_is_the_api(cli, monkeypatch, demo_benchmark):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = cli("validity", demo_benchmark, "--split", "validation")
    assert (code, err) == (0, "") and max(len(line) for line in out.splitlines()) <= 80
    assert "split validation: 5 lists" in out and "not stored" in out and "by tier pair" in out
    code, out, err = cli("validity", demo_benchmark, "--split", "validation", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == check_validity(demo_benchmark, split="validation").to_dict()


@pytest.mark.parametrize("args, needles", [
    (["--split", "train"], ["--split train", "measure them on a held-out split", "--split validation"]),
    (["--split", "validation", "--measure"], ["--measure and --split validation conflict", " --measure"]),
    (["--split", "train", "--measure"], ["--measure and --split train conflict", " --measure"]),
    (["--validity", "full", "--measure"], ["--measure and --validity conflict", " --measure"]),
    (["--validity", "full"], ["--validity sets how figures are measured", "--split validation --validity full"]),
    (["--split", "test", "--validity", "full"], ["--validity sets how", "--split validation --validity full"]),
    (["--split", "dev"], ["has no split 'dev'", "--split validation"]),
    (["--split", "validation", "--validity", "best"], ["validity mode must be one of fast, full"]),
])
def test_alone_split_bad_input_is_one_line_exit_2(cli, demo_benchmark, args, needles):
    manifest = (Path(demo_benchmark) / "manifest.json").read_bytes()
    code, out, err = cli("validity", demo_benchmark, *args)
    assert (code, out) == (2, "")
    assert_one_line_error(err, *needles)
    assert (Path(demo_benchmark) / "manifest.json").read_bytes() == manifest


def _other_benchmark(demo_benchmark: Path, dest: Path) -> Path:
    """A copy of the demo benchmark that says it is another one (name demo-copy, fingerprint f...f)."""
    shutil.copytree(demo_benchmark, dest)
    manifest = json.loads((dest / "manifest.json").read_text())
    manifest["fingerprint"], manifest["recipe"]["name"] = "f" * 64, "demo-copy"
    (dest / "manifest.json").write_text(json.dumps(manifest))
    return dest


@pytest.mark.parametrize("case", ["other benchmark", "not a benchmark", "no such split", "train split"])
def test_bad_input_is_one_line_exit_2_and_nothing_written(cli, tmp_path, demo_benchmark, reader_run, case):
    args: list = ["validity", demo_benchmark, "--run", reader_run]
    needles: list[str] = []
    if case == "other benchmark":
        other = args[1] = _other_benchmark(demo_benchmark, tmp_path / "other")
        needles = ["trained on demo (", "not on demo-copy (ffffffffffff)", "gradebench validity",
                   f"gradebench train --benchmark {other} --scorer hashed-mlp"]
    elif case == "not a benchmark":
        args[1] = tmp_path
        needles = ["not a complete benchmark folder"]
    elif case == "no such split":
        args += ["--split", "dev"]
        needles = ["has no split 'dev'", "its splits: test, train, validation", "--split test"]
    else:
        args += ["--split", "train"]
        needles = ["--split train", "give --split test"]
    before = sorted(p for p in tmp_path.rglob("*")), sorted(p for p in Path(reader_run).rglob("*"))
    code, out, err = cli(*args)
    assert (code, out) == (2, "")
    assert_one_line_error(err, *needles)
    assert (sorted(p for p in tmp_path.rglob("*")), sorted(p for p in Path(reader_run).rglob("*"))) == before


def test_did_you_mean_names_both_validity_and_validate(cli):
    code, _, err = cli("validty", "x")
    assert code == 2 and "'validity'" in err and "'validate'" in err
    code, _, err = cli("validat", "x")
    assert code == 2 and "did you mean 'validate'" in err.replace("Did you mean", "did you mean")


def _blocks(out: str, after: str) -> list[str]:
    """The indented command blocks printed after the line ``after`` (each may be ``\\``-continued)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(after)) + 1
    blocks, block = [], []
    for line in lines[start:]:
        if not line.startswith("  "):
            break
        block.append(line)
        if not line.endswith("\\"):
            blocks.append("\n".join(block))
            block = []
    return blocks


def test_the_printed_commands_work_as_printed(cli, monkeypatch, tmp_path):
    """A build without figures: the printed --measure command stores them; the printed train and
    check commands train a reader and check it."""
    from gradebench.experiments.build import build

    monkeypatch.setenv("COLUMNS", "80")
    bench = Path(build("demo", out=tmp_path / "out", progress=False, validity=False).path)
    monkeypatch.chdir(tmp_path)
    shown = bench.relative_to(tmp_path)
    code, out, _ = cli("validity", shown)
    assert code == 0 and "no validity figures" in out
    (measure,) = _blocks(out, "measure them:")
    done = run_printed(measure, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "validity" in json.loads((bench / "manifest.json").read_text())
    assert check_validity(shown).stale is False
    code, out, _ = cli("validity", shown)
    assert "--measure" not in out
    commands = _blocks(out, "check a reader")
    assert len(commands) == 2
    done = run_printed("\n".join(commands), tmp_path)
    assert done.returncode == 0, done.stderr
    assert "verdict: " in done.stdout


# -- --record: the reader's scores from an evaluation record's predictions ----------------------------

@pytest.fixture(scope="module")
def reader_records(tmp_path_factory, demo_benchmark, reader_run) -> dict[str, Path]:
    """The reader run's evaluation records of the test and validation splits, predictions beside them."""
    from gradebench.experiments.evaluate import evaluate_scorer
    from gradebench.experiments.runs import load_run

    scorer, info = load_run(reader_run)
    out = tmp_path_factory.mktemp("records")
    return {split: evaluate_scorer(demo_benchmark, scorer, split=split, n_resamples=20, run=info,
                                   results_dir=out).path for split in ("test", "validation", "train")}


def test_a_record_gives_what_its_run_gives(demo_benchmark, reader_run, reader_records):
    by_run = check_validity(demo_benchmark, run=reader_run, n_resamples=200)
    by_record = check_validity(demo_benchmark, record=reader_records["test"], n_resamples=200)
    assert by_record.attackers == by_run.attackers and by_record.lists == by_run.lists
    assert by_record.margins == by_run.margins and by_record.line == by_run.line  # same scores, same seed
    assert by_record.tier_pairs == by_run.tier_pairs
    reader = dict(by_record.reader)
    assert reader.pop("record") == str(reader_records["test"]) and len(reader.pop("record_id")) == 64
    run_reader = dict(by_run.reader)
    assert run_reader.pop("run_dir") == str(reader_run)
    assert reader == run_reader
    other = check_validity(demo_benchmark, record=reader_records["validation"], n_resamples=200)
    assert other.split == "validation"  # the record's split, unless --split says another (refused)
    assert other.margins == check_validity(demo_benchmark, run=reader_run, split="validation",
                                           n_resamples=200).margins


def test_cli_record_json_is_the_api_result(cli, monkeypatch, demo_benchmark, reader_records):
    monkeypatch.setenv("COLUMNS", "80")
    record = reader_records["test"]
    code, out, err = cli("validity", demo_benchmark, "--record", record, "--resamples", "100", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == check_validity(demo_benchmark, record=record, n_resamples=100).to_dict()
    code, out, err = cli("validity", demo_benchmark, "--record", record, "--resamples", "100")
    assert (code, err) == (0, "") and max(len(line) for line in out.splitlines()) <= 80
    assert "reader: hashed-mlp + listnet" in out and "verdict: " in out


@pytest.mark.parametrize("case", ["other benchmark", "other split", "train record", "no predictions",
                                  "scored other lists", "scored twice", "empty scores", "tampered predictions",
                                  "with --run", "with --measure"])
def test_bad_records_are_one_line_exit_2_and_nothing_written(cli, tmp_path, demo_benchmark, reader_run,
                                                             reader_records, case):
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = reader_records["train" if case == "train record" else "test"]
    folder = tmp_path / "records"
    shutil.copytree(src.parent, folder)
    record = folder / src.name
    predictions = record.with_name(record.name.replace(".json", ".predictions.parquet"))
    args: list = ["validity", demo_benchmark, "--record", record]
    if case == "other benchmark":
        args[1] = _other_benchmark(demo_benchmark, tmp_path / "other")
        needles = ["the record is of demo (", "not of demo-copy (ffffffffffff)", "--record"]
    elif case == "other split":
        args += ["--split", "validation"]
        needles = ["the record is of split 'test', not 'validation'", f"--record {record} --split test"]
    elif case == "train record":
        needles = ["the record is of the train split", "gradebench eval --run RUN_DIR --split test",
                   "--record RECORD_JSON"]
    elif case == "no predictions":
        predictions.unlink()
        needles = ["predictions are not here"]
    elif case in ("scored other lists", "scored twice", "empty scores"):
        # a predictions file that passes its digest (updated) but does not score the lists once each
        from gradebench.experiments.tables import predictions_digest

        table = pq.read_table(predictions)
        if case == "scored other lists":
            table = table.slice(1)
            needles = ["the record has no prediction for candidate", "gradebench eval --run"]
        elif case == "scored twice":
            table = pa.concat_tables([table, table.slice(0, 1)])
            needles = ["score 1 (query, candidate) pairs twice"]
        else:
            column = pa.array([None] + table.column("prediction").to_pylist()[1:], pa.float64())
            table = table.set_column(table.schema.get_field_index("prediction"), "prediction", column)
            needles = ["hold 1 empty scores"]
        pq.write_table(table, predictions)
        data = json.loads(record.read_text())
        data["files"]["predictions_sha256"] = predictions_digest(predictions)
        record.write_text(json.dumps(data))
    elif case == "tampered predictions":
        table = pq.read_table(predictions)
        column = table.column("prediction").to_numpy() + 1.0
        pq.write_table(table.set_column(table.schema.get_field_index("prediction"), "prediction",
                                        pa.array(column)), predictions)
        needles = ["predictions"]
    elif case == "with --run":
        args += ["--run", reader_run]
        needles = ["--run and --record conflict"]
    else:
        args += ["--measure"]
        needles = ["--measure and --record conflict"]
    before = sorted((p, p.stat().st_size) for p in tmp_path.rglob("*"))
    code, out, err = cli(*args)
    assert (code, out) == (2, ""), err
    assert_one_line_error(err, *needles)
    assert sorted((p, p.stat().st_size) for p in tmp_path.rglob("*")) == before
