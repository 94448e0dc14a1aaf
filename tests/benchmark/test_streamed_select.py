"""Selection streamed into the build (issue 29): the same queries, skips, bytes and stats as the
selected list, and the stats' per-query part computed batch by batch equals the whole's."""

from __future__ import annotations

import numpy as np
import pytest

from gradebench.benchmark import engine as pipeline
from gradebench.benchmark.summary import RowFeatures, query_figures, query_stats, shortcut_probes
from gradebench.datasets import get_builder
from gradebench.datasets.records import NLIExample
from gradebench.datasets.tiers import select as tiers_select
from gradebench.experiments.build import build
from gradebench.recipes import load_recipe


def _ex(split: str, row: int, sid: str, p: str, h: str, label: str, e: str = "because") -> NLIExample:
    return NLIExample(split=split, row=row, source_id=sid, premise=p, hypothesis=h, label=label,
                      explanations=(e, "", ""))


def _tricky() -> dict[str, list[NLIExample]]:
    """Every skip reason of the filter, in two splits (a source id taken in one is seen in the other)."""
    a = [
        _ex("test", 0, "1", "A man runs .", "A person runs .", "entailment"),
        _ex("test", 1, "2", "A man runs .", "A person sleeps .", "-"),  # no_gold_label
        _ex("test", 2, "3", "A man runs .", "A dog runs .", "maybe"),  # unknown_label
        _ex("test", 3, "4", " ", "A dog runs .", "neutral"),  # empty_premise
        _ex("test", 4, "5", "A man runs .", "A cat runs .", "neutral", e=" "),  # empty_explanation
        _ex("test", 5, "6", "A man runs .", "A person runs .", "entailment"),  # duplicate_row
        _ex("test", 6, "1", "A man walks .", "A person runs .", "neutral"),  # conflicting_source_id
        _ex("test", 7, "1", "A man runs .", "A person runs .", "entailment", e="other"),  # duplicate_query
        _ex("test", 8, "7", "Two kids play .", "Kids play .", "entailment"),
        _ex("test", 9, "10", "A man runs .", "A person runs .", "entailment"),  # duplicate_row, first of id 10
        _ex("test", 10, "10", "A man jogs .", "A person jogs .", "entailment"),  # so conflicting_source_id
        # texts holding the separator the stream's digests join with: told apart all the same
        _ex("test", 11, "11", "A\x1fman sits .", "He sits .", "entailment"),
        _ex("test", 12, "11", "A", "man sits .\x1fHe sits .", "entailment"),  # conflicting_source_id
        _ex("test", 13, "12", "A man sits .", "He sits .", "entailment", e="x\x1fy"),
        _ex("test", 14, "13", "A man sits .", "He sits .", "entailment", e="x"),  # not a repeated row
        _ex("test", 15, "11", "A\x1fman sits .", "He sits .", "entailment", e="y"),  # duplicate_query
    ]
    b = [
        _ex("train", 0, "1", "A man runs .", "A person runs .", "entailment"),  # duplicate_query (other split)
        _ex("train", 1, "7", "Two kids play .", "Nobody plays .", "contradiction"),  # conflicting_source_id
        _ex("train", 2, "8", "Two kids play .", "Kids play .", "entailment"),
        _ex("train", 3, "9", "A woman sings .", "Someone sings .", "entailment"),
    ]
    return {"test": a, "train": b}


@pytest.mark.parametrize("consume", [False, True])
@pytest.mark.parametrize("limit", [None, 1, 3, 6, 8, 10, 12])
def test_the_stream_gives_the_two_passes_selection(limit, consume):
    recipe = load_recipe("esnli")
    examples = _tricky()
    queries, skipped = tiers_select.stream(recipe, examples, limit=limit, consume=consume)
    got = list(queries)
    want = tiers_select._two_passes(recipe, _tricky(), limit)
    assert got == want.queries and skipped == want.skipped
    read = {split: rows[:limit] for split, rows in examples.items()}
    assert all((ex is None) is consume for rows in read.values() for ex in rows)  # what was read is freed
    if limit is None:
        assert set(skipped) == {"no_gold_label", "unknown_label", "empty_premise", "empty_explanation",
                                "duplicate_row", "conflicting_source_id", "duplicate_query"}
        assert [q.split for q in got] == ["test"] * 5 + ["train"] * 2


def _same_texts_other_explanations() -> dict[str, list[NLIExample]]:
    """A repeated row that is the first of its source id, then a row with the same texts and an
    explanation holding the digests' separator: not a conflict (the texts are the same)."""
    return {"test": [
        _ex("test", 0, "A", "A man runs .", "A person runs .", "entailment", "because"),
        _ex("test", 1, "X", "A man runs .", "A person runs .", "entailment", "because"),
        _ex("test", 2, "X", "A man runs .", "A person runs .", "entailment", "be\x1fcause"),
        _ex("test", 3, "A", "A man runs .", "A person runs .", "entailment", "be\x1fcause"),
        _ex("test", 4, "Y", "A man runs .", "A person runs .", "entailment", "lone \ud800 surrogate"),
    ]}


def test_the_stream_tells_texts_apart_by_the_texts_alone():
    recipe = load_recipe("esnli")
    queries, skipped = tiers_select.stream(recipe, _same_texts_other_explanations())
    want = tiers_select._two_passes(recipe, _same_texts_other_explanations(), None)
    assert list(queries) == want.queries and skipped == want.skipped
    assert [q.example.row for q in want.queries] == [0, 2, 4] and dict(want.skipped) == {"duplicate_row": 2}


@pytest.mark.parametrize("name,streams", [
    ("esnli", True), ("demo", True), ("mnli", True),
    ("esnli-human", False),  # sibling and unrelated tiers borrow from the split
    ("esnli-contrast-v2", False),  # negation flips are balanced over the split
    ("esnli-contrast-v3", False),  # the adversarial step needs every list
    ("esnli-contrast-v4", False),
    ("dnli", False),  # its own select
])
def test_a_builder_streams_only_where_no_step_needs_every_example(name, streams):
    recipe = load_recipe(name)
    builder = get_builder(recipe.source.family)(recipe)
    assert (builder.select_stream({}, limit=None) is not None) is streams


@pytest.mark.parametrize("workers", [1, 2])
def test_a_streamed_build_writes_the_selected_lists_bytes(tmp_path, monkeypatch, workers):
    monkeypatch.setattr(pipeline, "BATCH_QUERIES", 7)  # several batches from the 50 demo rows
    streamed = build("demo", out=tmp_path / "s", workers=workers, progress=False, validate=False)
    assert "select" in streamed.timings
    builder_cls = get_builder("esnli")
    monkeypatch.setattr(builder_cls, "select_stream", lambda self, records, *, limit: None)
    listed = build("demo", out=tmp_path / "l", workers=workers, progress=False, validate=False)
    assert streamed.fingerprint == listed.fingerprint
    assert (streamed.splits, streamed.skipped, streamed.stats) == (listed.splits, listed.skipped, listed.stats)
    for split, files in streamed.files.items():
        for f in files:
            assert (tmp_path / "s" / "demo" / streamed.fingerprint[:12] / f).read_bytes() == \
                (tmp_path / "l" / "demo" / listed.fingerprint[:12] / f).read_bytes()


def _features(rng, n_queries: int, longest: int, unknown_authors: bool) -> dict:
    counts = rng.integers(1, longest + 1, n_queries)
    n = int(counts.sum())
    return dict(counts=counts, scores=np.round(rng.random(n), int(rng.choice([1, 3, 8]))),
                relevance=rng.integers(0, int(rng.choice([1, 2, 5])), n), tiers=[None] * n,
                human=rng.integers(-1 if unknown_authors else 0, 2, n), n_words=rng.integers(1, 30, n),
                overlap=np.round(rng.random(n), 2))


def _part(kw: dict, a: int, b: int) -> RowFeatures:
    starts = np.concatenate([[0], np.cumsum(kw["counts"])])
    ra, rb = int(starts[a]), int(starts[b])
    part = RowFeatures.from_rows(counts=kw["counts"][a:b], scores=kw["scores"][ra:rb],
                                 relevance=kw["relevance"][ra:rb], tiers=kw["tiers"][ra:rb], human=kw["human"][ra:rb],
                                 n_words=kw["n_words"][ra:rb], overlap=kw["overlap"][ra:rb])
    part.figures = query_figures(part)  # what a build worker does for its batch
    return part


def _ulps(a: float | None, b: float | None) -> float:
    if a is None or b is None:
        return 0.0 if a is b else float("inf")
    return abs(a - b) / np.spacing(max(abs(a), abs(b), 1e-300))


@pytest.mark.parametrize("seed", range(40))
def test_stats_from_per_batch_figures_equal_the_whole_splits(seed):
    """Batches of other widths (list sizes up to 33, so numpy's 8-way summation is in play), ties,
    undefined values and unknown authors: the figures merged from the batches give the same stats.
    Unrounded, every figure is the same bits but NDCG, whose sums run over a length the whole
    block sets (its widest tie group): within a few ulps there."""
    rng = np.random.default_rng(seed)
    n_queries = int(rng.integers(2, 300))
    kw = _features(rng, n_queries, int(rng.choice([1, 2, 5, 9, 12, 33])), unknown_authors=seed % 4 == 0)
    cuts = sorted(set(rng.integers(1, n_queries, int(rng.integers(1, 6))).tolist()))
    bounds = [0, *cuts, n_queries]
    merged = RowFeatures.concat([_part(kw, a, b) for a, b in zip(bounds[:-1], bounds[1:])])
    whole = RowFeatures.from_rows(**kw)
    assert merged.figures is not None and whole.figures is None
    exact = {}

    def unrounded(stats_of, f):
        import gradebench.benchmark.summary as summary

        saved = summary._round
        summary._round = lambda x: None if x is None or not np.isfinite(x) else float(x)
        try:
            return stats_of(f)
        finally:
            summary._round = saved

    for stats_of in (query_stats, shortcut_probes):
        got, want = unrounded(stats_of, merged), unrounded(stats_of, whole)
        for key in want:
            if key.startswith("tier_ndcg"):
                assert _ulps(got[key], want[key]) <= 4, (key, got[key], want[key])
            else:
                exact[key] = got[key] == want[key]
        assert stats_of(merged) == stats_of(whole)
    assert all(exact.values()), exact
    if seed % 4 == 0 and (kw["human"] < 0).any():
        assert "human_authorship" not in shortcut_probes(merged)


def test_ndcg_from_another_block_is_within_an_ulp_and_the_rounded_stats_agree():
    """A short tied list batched apart from a 33-candidate all-tied one (found by a review): the
    short list's NDCG in the block of the long one runs over a longer sum."""
    short_scores = [0.3, 0.3, 0.7, 0.3, 0.1, 0.7, 0.7, 0.1]
    short_relevance = [1, 4, 0, 2, 2, 3, 0, 1]
    rng = np.random.default_rng(15)
    long_relevance = rng.integers(0, 5, 33)
    kw = dict(counts=np.array([8, 33]), scores=np.array(short_scores + [0.5] * 33),
              relevance=np.array(short_relevance + long_relevance.tolist()), tiers=[None] * 41,
              human=np.ones(41, dtype=int), n_words=np.full(41, 3), overlap=np.full(41, 0.5))
    merged = RowFeatures.concat([_part(kw, 0, 1), _part(kw, 1, 2)])
    whole = RowFeatures.from_rows(**kw)
    assert query_stats(merged) == query_stats(whole)
    for key in ("tier_ndcg@3", "tier_ndcg@5"):
        a, b = merged.figures[key], query_figures(whole)[key]
        assert all(_ulps(x, y) <= 1 for x, y in zip(a.tolist(), b.tolist()))


def _masked_stats(tiers: list, f: RowFeatures, names: list) -> tuple[dict, dict]:
    """The per-tier and per-grade stats as the build computed them before tiers were codes: one
    boolean mask over a column of names per tier, and over the grades per grade."""
    from gradebench.benchmark.summary import _round

    out = {}
    for name, relevance in tiers:
        sel = np.asarray(names, dtype=object) == name
        if not sel.any():
            out[name] = {"candidates": 0}
            continue
        s = f.score[sel]
        out[name] = {"candidates": int(sel.sum()), "relevance": relevance, "score_mean": _round(s.mean()),
                     "score_min": _round(s.min()), "score_max": _round(s.max()),
                     "words_mean": _round(f.n_words[sel].mean()), "query_overlap_mean": _round(f.overlap[sel].mean()),
                     "human_share": _round((f.human[sel] == 1).mean()) if (f.human[sel] >= 0).all() else None}
    grades = {}
    for g in np.unique(f.relevance).tolist():
        sel = f.relevance == g
        grades[str(g)] = {"candidates": int(sel.sum()), "score_mean": _round(f.score[sel].mean()),
                          "words_mean": _round(f.n_words[sel].mean()),
                          "query_overlap_mean": _round(f.overlap[sel].mean())}
    return out, grades


@pytest.mark.parametrize("seed", range(12))
def test_tier_codes_merge_across_batches_and_give_the_masked_stats(seed):
    """Rows' tiers travel as codes into each batch's own names (first seen first, -1 for none):
    batches that met the tiers in other orders, or not all of them, merge into the whole's
    names, and the per-tier and per-grade stats are those one mask a tier gave, bit for bit."""
    from gradebench.benchmark.summary import grade_stats, tier_stats

    rng = np.random.default_rng(seed)
    n_queries = int(rng.integers(2, 200))
    kw = _features(rng, n_queries, int(rng.choice([1, 5, 12])), unknown_authors=seed % 3 == 0)
    pool = ["gold", "good", "fair", None, "poor"]
    kw["tiers"] = [pool[i] for i in rng.integers(0, 5 if seed % 2 else 3, len(kw["scores"]))]
    cuts = sorted(set(rng.integers(1, n_queries, int(rng.integers(1, 6))).tolist()))
    bounds = [0, *cuts, n_queries]
    merged = RowFeatures.concat([_part(kw, a, b) for a, b in zip(bounds[:-1], bounds[1:])])
    whole = RowFeatures.from_rows(**kw)
    names_of = lambda f: [f.tier_names[c] if c >= 0 else None for c in f.tier.tolist()]  # noqa: E731
    assert names_of(merged) == names_of(whole) == kw["tiers"]
    tiers = [("gold", 4), ("good", 3), ("fair", 2), ("poor", 1), ("absent", 0)]
    want_tiers, want_grades = _masked_stats(tiers, whole, kw["tiers"])
    for f in (merged, whole):
        assert tier_stats(tiers, f) == want_tiers
        assert grade_stats(f)["grades"] == want_grades


@pytest.mark.parametrize("low, high, dtype", [(-1, 5, np.int32), (0, 5, np.int16), (-128, 128, np.int32),
                                              (0, 40_000, np.int64), (-3, 3, np.int8)])
def test_groups_are_the_rows_a_mask_selects_whatever_the_keys_width(low, high, dtype):
    """A stats group is the rows ``key == k`` selects, in their order: keys that fit a byte are
    sorted as bytes (a radix sort), wider ones as they are, with the same groups either way."""
    from gradebench.benchmark.summary import _groups

    rng = np.random.default_rng(high)
    key = rng.integers(low, high + 1, 5_000).astype(dtype)
    values = rng.random(5_000)
    slices, (grouped,) = _groups(key, values)
    assert sorted(slices) == sorted(set(key.tolist()))
    for k, sel in slices.items():
        assert grouped[sel].tolist() == values[key == k].tolist()
