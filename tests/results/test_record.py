"""Records: JSON Schema, schema file in sync, atomic write order, concurrent writers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import jsonschema
import pytest

from gradebench import paths
from gradebench.experiments import record as R
from gradebench.experiments import store as S
from gradebench.experiments.evaluate import evaluate_scorer
from gradebench.experiments.record import RecordError, read_record, render_schema_json, schema_file
from gradebench.experiments.store import find_record, list_records, read_predictions
from tests.conftest import REPO
from tests.results.conftest import Oracle, Shuffle, fake_run


def _validator():
    schema = json.loads(schema_file(REPO / "schemas").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_schema_file_is_current():
    path = schema_file(REPO / "schemas")
    assert path.read_text(encoding="utf-8") == render_schema_json(), (
        "schemas/result-v1.json is out of date: run `python -m gradebench.experiments.record schemas`"
    )


def test_records_validate_against_schema(demo_bench, tmp_path):
    from gradebench.benchmark.lists import open_benchmark

    validator = _validator()
    fp = open_benchmark(demo_bench).fingerprint
    plain = evaluate_scorer(demo_bench, Oracle(), results_dir=tmp_path, n_resamples=50)
    trained = evaluate_scorer(demo_bench, Shuffle(seed=7), run=fake_run(fp), results_dir=tmp_path, n_resamples=50)
    for rec in (plain, trained):
        doc = json.loads(rec.path.read_text(encoding="utf-8"))
        assert doc == rec.to_dict() and doc["schema_version"] == 1
        validator.validate(doc)
    doc = json.loads(plain.path.read_text(encoding="utf-8"))
    broken = [dict(doc, schema_version=2), dict(doc, extra=1), {k: v for k, v in doc.items() if k != "metrics"},
              dict(doc, id="xyz")]
    for bad in broken:
        assert list(validator.iter_errors(bad)), bad.keys()


def test_read_record_errors(demo_bench, tmp_path):
    rec = evaluate_scorer(demo_bench, Oracle(), results_dir=tmp_path, n_resamples=20)
    doc = json.loads(rec.path.read_text())
    bad = tmp_path / "v2.json"
    bad.write_text(json.dumps(dict(doc, schema_version=2)))
    with pytest.raises(RecordError, match="schema v2 is not supported"):
        read_record(bad)
    bad.write_text("{not json")
    with pytest.raises(RecordError, match="not valid JSON"):
        read_record(bad)
    bad.write_text(json.dumps(dict(doc, seed=-3)))
    with pytest.raises(RecordError, match="invalid result record") as e:
        read_record(bad)
    assert e.value.key == "seed"
    assert find_record(rec.id[:8], results_dir=tmp_path).id == rec.id
    assert find_record(str(rec.path), results_dir=tmp_path).id == rec.id
    with pytest.raises(RecordError, match="no record with id"):
        find_record("abcdef", results_dir=tmp_path)


def test_parquet_is_published_before_json(demo_bench, tmp_path, monkeypatch):
    order = []
    real = os.replace

    def spy(src, dst):
        order.append(os.path.basename(dst))
        return real(src, dst)

    monkeypatch.setattr(paths.os, "replace", spy)  # the atomic writers live in gradebench.paths
    rec = evaluate_scorer(demo_bench, Oracle(), results_dir=tmp_path, n_resamples=20)
    assert order == [f"{rec.id}.predictions.parquet", f"{rec.id}.queries.parquet", f"{rec.id}.json"]


def test_crash_before_json_leaves_no_visible_record(demo_bench, tmp_path, monkeypatch):
    def boom(text, path):
        raise KeyboardInterrupt

    monkeypatch.setattr(S, "write_text_atomic", boom)  # the store writes every record's JSON
    with pytest.raises(KeyboardInterrupt):
        evaluate_scorer(demo_bench, Oracle(), results_dir=tmp_path, n_resamples=20)
    assert list_records(tmp_path) == []  # orphan Parquet files are never listed
    assert not [p for p in (tmp_path / "demo").iterdir() if p.name.endswith(".tmp")]


_WRITER = textwrap.dedent("""
    import sys
    from gradebench.experiments.evaluate import evaluate_scorer
    from gradebench.scorers import make_scorer
    bench, out, worker = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for rep in range(2):
        # a record of its own, and one that every worker writes (same id: a race on one name)
        evaluate_scorer(bench, make_scorer("random", seed=worker * 10 + rep), results_dir=out, n_resamples=50)
        evaluate_scorer(bench, make_scorer("length"), results_dir=out, n_resamples=50)
""")


def test_eight_concurrent_writers(demo_bench, tmp_path):
    out = tmp_path / "results"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(demo_bench), str(out), str(w)], env=env,
                              stderr=subprocess.PIPE, text=True) for w in range(8)]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, errors
    records = list_records(out)
    assert len(records) == 8 * 2 + 1
    assert sorted(r.system_seed for r in records if r.scorer.name == "random") == sorted(
        w * 10 + rep for w in range(8) for rep in range(2))
    validator = _validator()
    for rec in records:
        validator.validate(json.loads(rec.path.read_text(encoding="utf-8")))
        pred = read_predictions(rec)
        assert len(pred) == rec.benchmark.n_candidates and set(pred["record_id"].astype(str)) == {rec.id}
    leftovers = [p.name for p in (out / "demo").iterdir() if p.name.startswith(".")]
    assert leftovers == []
    assert len(list((out / "demo").iterdir())) == 3 * len(records)


# -- one store, records of two kinds side by side ---------------------------------------------------
def _policy_record(rec, run_fingerprint="a" * 64):
    """A policy record on the same benchmark as the evaluation record ``rec`` (no training needed)."""
    from gradebench.experiments.environment import environment
    from gradebench.experiments.policy_record import PolicyRecord, policy_record_id

    return PolicyRecord(
        id=policy_record_id(run_fingerprint), created_at="2025-01-01T00:00:00+00:00", method="lipo",
        benchmark={"name": rec.benchmark.name, "fingerprint": rec.benchmark.fingerprint, "path": rec.benchmark.path,
                   "split": "train", "n_queries": 38, "reference": "fair tier"},
        policy={"path": "/models/tiny", "fingerprint": "b" * 64, "model_type": "gpt2", "context": 256,
                "output_path": "/runs/x/policy"},
        reward=None, loss={"name": "lambdaloss", "params": {}}, options={"steps": 2}, seed=42, n_steps=2, window=10,
        metrics={"loss": 0.5, "reward_mean": None, "reward_std": None, "kl": 0.0, "above_reference": 0.5},
        first_step=None, last_step=None, run={"run_dir": "/runs/x", "run_fingerprint": run_fingerprint},
        timings={"fit_s": 1.0}, environment=environment(),
    )


def test_one_store_lists_each_kind_and_both(demo_bench, tmp_path):
    from gradebench.errors import InvalidArgumentError

    rec = evaluate_scorer(demo_bench, Oracle(), results_dir=tmp_path, n_resamples=20)
    pol = _policy_record(rec)
    path = S.write_record(pol, results_dir=tmp_path)
    assert path == tmp_path / rec.benchmark.name / f"{pol.id}.policy.json" and pol.path == path
    assert [r.id for r in list_records(tmp_path)] == [rec.id]  # evaluation by default, as before
    assert [r.id for r in list_records(tmp_path, kind="policy")] == [pol.id]
    assert [r.id for r in list_records(tmp_path, kind="policy", split="train")] == [pol.id]
    assert list_records(tmp_path, kind="policy", split="test") == []
    both = list_records(tmp_path, kind=None)
    assert [(S.record_kind(r).name, r.id) for r in both] == [("evaluation", rec.id), ("policy", pol.id)]
    assert S.record_files(tmp_path, kind=None) == sorted([rec.path, path])
    assert find_record(pol.id[:8], results_dir=tmp_path, kind="policy").id == pol.id
    with pytest.raises(RecordError, match="no record with id"):
        find_record(pol.id[:8], results_dir=tmp_path)  # the evaluation records only
    assert S.read_record(path, kind=None).to_dict() == pol.to_dict()
    with pytest.raises(RecordError, match=r"not a result record \(it is a policy record\)"):
        read_record(path)
    with pytest.raises(RecordError, match=r"not a policy record \(it is a result record\)"):
        S.read_record(rec.path, kind="policy")
    with pytest.raises(InvalidArgumentError, match="predictions and per-query tables"):
        S.write_record(rec, results_dir=tmp_path / "other")
    with pytest.raises(InvalidArgumentError, match="unknown record kind 'scores'"):
        list_records(tmp_path, kind="scores")


def test_a_record_without_kind_is_an_evaluation_record(demo_bench, tmp_path):
    rec = evaluate_scorer(demo_bench, Oracle(), results_dir=tmp_path, n_resamples=20)
    doc = json.loads(rec.path.read_text())
    assert doc["kind"] == "gradebench.result" and S.kind_of(doc).name == "evaluation"
    no_kind = {k: v for k, v in doc.items() if k != "kind"}
    assert S.kind_of(no_kind).name == "evaluation"
    rec.path.write_text(json.dumps(no_kind))
    again = read_record(rec.path)
    assert again.id == rec.id and again.to_dict() == rec.to_dict()
    rec.path.write_text(json.dumps(dict(doc, kind="gradebench.scores")))
    with pytest.raises(RecordError, match="unknown record kind 'gradebench.scores'") as e:
        S.read_record(rec.path, kind=None)
    assert e.value.key == "kind"


def test_old_record_function_paths_are_the_store_functions():
    from gradebench.experiments import policy_record as P
    from gradebench.rl import list_policy_records, read_policy_record

    assert R.read_record is S.read_record and R.write_record is S.write_record and R.record_dir is S.record_dir
    assert P.read_policy_record is S.read_policy_record is read_policy_record
    assert P.list_policy_records is S.list_policy_records is list_policy_records
    assert P.write_policy_record is S.write_policy_record
    # the path before step 1 of the redesign, in a fresh process (its deprecation warning is test_moved's)
    code = ("import warnings; warnings.simplefilter('ignore')\n"
            "from gradebench.rl.records import list_policy_records, read_policy_record\n"
            "from gradebench.experiments import store\n"
            "assert list_policy_records is store.list_policy_records\n"
            "assert read_policy_record is store.read_policy_record\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert out.stdout == "ok\n"
    with pytest.raises(AttributeError):
        R.no_such_name  # noqa: B018


def test_the_schema_command_in_the_hint_works_as_printed(tmp_path):
    """`python -m gradebench.experiments.record schemas` (the fix the out-of-date message gives) runs."""
    from gradebench.experiments.record import render_schema_json

    proc = subprocess.run([sys.executable, "-m", "gradebench.experiments.record", str(tmp_path)],
                          capture_output=True, text=True, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "result-v1.json").read_text(encoding="utf-8") == render_schema_json()
