"""The build pipeline on the embedded demo: output layout, caching, atomicity, resplit, stats."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from gradebench.benchmark import engine as pipeline
from gradebench.experiments.build import build
from gradebench.benchmark.format import COLUMNS, SCHEMA_VERSION, arrow_schema
from gradebench.datasets.tiers.builder import TIERED_COLUMNS
from gradebench.errors import InvalidArgumentError


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    return build("demo", out=out, progress=False), out


def _table(result, split):
    files = result.files[split]
    return pq.read_table([f"{result.path}/{f}" for f in files])


def test_layout_and_manifest(demo):
    result, out = demo
    assert result.path == str(out / "demo" / result.fingerprint[:12])
    assert len(result.fingerprint) == 64
    assert set(result.splits) <= {"train", "validation", "test"}
    total = sum(s["queries"] for s in result.splits.values())
    assert total == 48  # 50 demo rows, one with label '-', one with an empty explanation
    assert result.skipped == {"empty_explanation": 1, "no_gold_label": 1}
    for split, s in result.splits.items():
        assert s["candidates"] == 5 * s["queries"]
        assert result.files[split] == [f"data/{split}-00000-of-00001.parquet"]
    manifest = json.loads((out / "demo" / result.fingerprint[:12] / "manifest.json").read_text())
    assert manifest["fingerprint"] == result.fingerprint
    assert manifest["stats"] == result.stats
    card = (out / "demo" / result.fingerprint[:12] / "README.md").read_text()
    assert "only as negatives" in card and "wrong-label" in card and "@misc{gradebench" in card


def test_parquet_schema_and_rows(demo):
    result, _ = demo
    t = _table(result, "train")
    assert tuple(t.column_names) == COLUMNS + tuple(c.name for c in TIERED_COLUMNS)
    assert t.schema.equals(arrow_schema(TIERED_COLUMNS), check_metadata=False)
    meta = pq.read_metadata(f"{result.path}/{result.files['train'][0]}").schema.to_arrow_schema().metadata
    assert meta[b"gradebench.fingerprint"].decode() == result.fingerprint
    assert meta[b"gradebench.schema_version"].decode() == str(SCHEMA_VERSION)
    rows = t.to_pylist()
    by_query: dict[str, list[dict]] = {}
    for r in rows:
        by_query.setdefault(r["query_id"], []).append(r)
    for cands in by_query.values():
        assert sorted(c["tier"] for c in cands) == sorted(["gold", "good", "fair", "poor", "nonsense"])
        assert all(0.0 <= c["score"] <= 1.0 for c in cands)
        assert len({c["candidate_id"] for c in cands}) == 5
        gold = next(c for c in cands if c["tier"] == "gold")
        assert gold["origin"] == "human" and gold["template_id"] is None
        poor = next(c for c in cands if c["tier"] == "poor")
        assert poor["origin"] == "template" and poor["template_id"].split("/")[1] != poor["label"]
        assert cands[0]["query"].startswith("premise: ")
    # candidates are not stored in tier order
    assert any(cands[0]["tier"] != "gold" for cands in by_query.values())


def test_second_build_is_cached_noop(demo):
    result, out = demo
    again = build("demo", out=out, progress=False)
    assert again.cached and again.path == result.path and again.fingerprint == result.fingerprint
    assert again.stats == result.stats and again.splits == result.splits


def test_force_rebuilds_identically(demo, tmp_path):
    result, out = demo
    before = {f: open(f"{result.path}/{f}", "rb").read() for f in result.files["train"]}
    again = build("demo", out=out, force=True, progress=False)
    assert not again.cached
    assert {f: open(f"{again.path}/{f}", "rb").read() for f in again.files["train"]} == before


def test_workers_and_batches_do_not_change_bytes(tmp_path, monkeypatch):
    a = build("demo", out=tmp_path / "a", workers=1, progress=False)
    monkeypatch.setattr(pipeline, "BATCH_QUERIES", 7)
    b = build("demo", out=tmp_path / "b", workers=2, progress=False)
    assert a.fingerprint == b.fingerprint and a.stats == b.stats
    # row groups follow batches, so compare the rows, not the bytes, across batch sizes
    for split in a.files:
        assert _table(a, split).equals(_table(b, split))


def test_interrupted_build_leaves_nothing(tmp_path, monkeypatch):
    calls = {"n": 0}
    real = pipeline.BenchmarkWriter.write

    def failing(self, split, table):
        calls["n"] += 1
        if calls["n"] > 1:
            raise KeyboardInterrupt
        return real(self, split, table)

    monkeypatch.setattr(pipeline.BenchmarkWriter, "write", failing)
    with pytest.raises(KeyboardInterrupt):
        build("demo", out=tmp_path, progress=False)
    leftovers = list((tmp_path / "demo").iterdir()) if (tmp_path / "demo").exists() else []
    assert leftovers == []


def test_resplit_is_deterministic_and_overrides(tmp_path):
    a = build("demo", out=tmp_path, resplit=(50, 25, 25), progress=False)
    b = build("demo", out=tmp_path / "again", resplit=(50, 25, 25), progress=False)
    c = build("demo", out=tmp_path, progress=False)
    assert a.fingerprint == b.fingerprint != c.fingerprint
    assert a.splits == b.splits
    assert sum(s["queries"] for s in a.splits.values()) == 48


def test_limit(tmp_path):
    r = build("demo", out=tmp_path, limit=10, progress=False)
    assert sum(s["queries"] for s in r.splits.values()) + sum(r.skipped.values()) == 10
    with pytest.raises(InvalidArgumentError, match="limit must be >= 1"):
        build("demo", out=tmp_path, limit=0)
    with pytest.raises(InvalidArgumentError, match="resplit"):
        build("demo", out=tmp_path, resplit=(50, 50, 50))


def test_stats_shape(demo):
    result, _ = demo
    a = result.stats["all"]
    for key in ("ambiguity", "score_range_mean", "tier_ndcg@3", "tier_ndcg@5", "tier_spearman"):
        assert a[key] is not None
    assert 0 <= a["ambiguity"] <= 1 and 0 < a["tier_ndcg@5"] <= 1
    tiers = a["tiers"]
    assert list(tiers) == ["gold", "good", "fair", "poor", "nonsense"]
    assert tiers["gold"]["human_share"] == 1.0 and tiers["good"]["human_share"] == 0.0
    # authorship alone separates gold from the templates: the probe must see it
    assert a["shortcut_probes"]["human_authorship"] > 0.6
