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

    monkeypatch.setattr(R, "write_text_atomic", boom)
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
