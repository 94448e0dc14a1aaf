"""Builds on the real e-SNLI dev split (../shared/data/esnli/eSNLI): counts, pinned records, stats."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from gradebench.experiments.build import build
from tests.conftest import shared_data

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    src = shared_data("esnli", "eSNLI")
    out = tmp_path_factory.mktemp("real")
    return {r: build(r, source=src, out=out, progress=False) for r in ("esnli", "esnli-fixed", "esnli-human")}


def _queries(result):
    rows = pq.read_table([f"{result.path}/{f}" for f in result.files["validation"]]).to_pylist()
    queries: list[list[dict]] = []
    for row in rows:
        if not queries or queries[-1][0]["query_id"] != row["query_id"]:
            queries.append([])
        queries[-1].append(row)
    return queries


def test_counts(real):
    assert real["esnli"].splits == {"validation": {"queries": 9842, "candidates": 49210}}
    assert real["esnli"].skipped == {}
    assert real["esnli-fixed"].splits == real["esnli"].splits
    assert real["esnli-human"].splits == {"validation": {"queries": 8432, "candidates": 42160}}
    assert real["esnli-human"].skipped == {"no_sibling_explanation": 1410}


def test_pinned_fingerprints(real):
    # content hashes of recipe + inputs: any change to construction shows up here
    assert real["esnli"].fingerprint.startswith("2f635f5cc09eda52")
    assert real["esnli-fixed"].fingerprint.startswith("c92f45864e7961cd")
    assert real["esnli-human"].fingerprint.startswith("73e0cb41081a50cc")


@pytest.mark.parametrize(
    ("index", "query_id", "source_id", "label", "gold", "gold_score", "order"),
    [
        (0, "78c680e8085899e0", "s1.dev:1", "neutral", "the to go packages may not be from lunch .", 0.791896,
         ["gold", "good", "poor", "fair", "nonsense"]),
        (9, "ba141c5e732f9cab", "s1.dev:10", "entailment", None, 0.674421,
         ["fair", "nonsense", "poor", "good", "gold"]),
        (-1, "814a46611fca0e5d", "s1.dev:9842", "neutral", None, 0.923268,
         ["poor", "nonsense", "fair", "gold", "good"]),
    ],
)
def test_pinned_records(real, index, query_id, source_id, label, gold, gold_score, order):
    q = _queries(real["esnli"])[index]
    assert q[0]["query_id"] == query_id and q[0]["source_id"] == source_id and q[0]["label"] == label
    assert [c["tier"] for c in q] == order
    g = next(c for c in q if c["tier"] == "gold")
    assert g["score"] == pytest.approx(gold_score, abs=1e-6)
    if gold is not None:
        assert g["candidate"] == gold
    poor = next(c for c in q if c["tier"] == "poor")
    assert poor["template_id"].split("/")[1] != label  # wrong-label template


def test_first_query_scores(real):
    q = _queries(real["esnli"])[0]
    scores = {c["tier"]: round(c["score"], 6) for c in q}
    assert scores == {"gold": 0.791896, "good": 0.933532, "poor": 0.295657, "fair": 0.40125, "nonsense": 0.045113}


def test_stats_against_paper_shape(real):
    a = real["esnli"].stats["all"]
    # overlapping ranges: ambiguity and range in the paper's ballpark (SNLI: 54%, 0.709)
    assert a["ambiguity"] == pytest.approx(0.630969, abs=1e-6)
    assert a["score_range_mean"] == pytest.approx(0.703893, abs=1e-6)
    assert 0.9 < a["tier_ndcg@5"] < 1.0 and 0.9 < a["tier_spearman"] < 1.0
    f = real["esnli-fixed"].stats["all"]
    assert f["ambiguity"] == 0.0 and f["tier_ndcg@3"] == f["tier_ndcg@5"] == f["tier_spearman"] == 1.0
    for name, (lo, hi) in {"gold": (0.8, 1.0), "good": (0.6, 0.8), "nonsense": (0.0, 0.2)}.items():
        t = f["tiers"][name]
        assert lo <= t["score_min"] <= t["score_max"] <= hi


def test_shortcut_probes(real):
    esnli = real["esnli"].stats["all"]["shortcut_probes"]
    human = real["esnli-human"].stats["all"]["shortcut_probes"]
    # the paper's construction: authorship separates gold from every template (4 of 10 pairs)
    assert esnli["human_authorship"] == pytest.approx(0.7)
    # all-human candidates: authorship carries no signal, length next to none
    assert human["human_authorship"] == pytest.approx(0.5)
    assert abs(human["length"] - 0.5) < 0.03
    tiers = real["esnli-human"].stats["all"]["tiers"]
    words = [tiers[t]["words_mean"] for t in ("own", "sibling", "unrelated")]
    assert max(words) - min(words) < 0.5


# sha256[:16] of the Parquet files the pre-builder-engine code (commit 7975714) wrote for the
# resplit builds the leaderboard uses: the engine redesign kept their bytes identical.
PINNED_BYTES = {
    "esnli": ("1d2f086232ae", {"test": "302e3f78bc53ae0a", "train": "daee603104629a11", "validation": "e79df82605d91e45"}),
    "esnli-fixed": ("fb015b3fade3", {"test": "885960e73ac906f7", "train": "e222757b80eaeb81",
                                     "validation": "3d8bb69b03f16ff5"}),
    "esnli-human": ("3b08965c0209", {"test": "c1b42d474b288b9d", "train": "74f658d72de6013c",
                                     "validation": "da749a9032649f90"}),
}


@pytest.mark.parametrize("recipe", sorted(PINNED_BYTES))
def test_resplit_builds_keep_their_bytes(tmp_path, recipe):
    import hashlib
    from pathlib import Path

    fp12, digests = PINNED_BYTES[recipe]
    r = build(recipe, source=shared_data("esnli", "eSNLI"), out=tmp_path, resplit=(80, 10, 10), progress=False,
              validate=False, validity=False)
    assert r.fingerprint[:12] == fp12
    got = {s: hashlib.sha256((Path(r.path) / fs[0]).read_bytes()).hexdigest()[:16] for s, fs in r.files.items()}
    assert got == digests
