"""A scorer whose describe() names its weights (the cross-encoder) yields a valid record."""

from __future__ import annotations

import json

import jsonschema

from gradebench.experiments.evaluate import evaluate_scorer
from gradebench.scorers.baselines import OverlapScorer
from tests.conftest import REPO


class _WithWeights(OverlapScorer):
    name = "overlap"

    def describe(self):
        return {**super().describe(), "model_path": "/models/minilm"}


def test_record_keeps_model_path(demo_benchmark, tmp_path):
    rec = evaluate_scorer(demo_benchmark, _WithWeights(), results_dir=tmp_path, n_resamples=20)
    doc = json.loads(rec.path.read_text()) if hasattr(rec.path, "read_text") else json.loads(open(rec.path).read())
    assert doc["scorer"]["model_path"] == "/models/minilm"
    schema = json.loads((REPO / "schemas" / "result-v1.json").read_text())
    jsonschema.validate(doc, schema)
