"""The ``chaosnli`` builder: recipe keys, locate, vote-share grades, skips, ids, real-data counts."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from gradebench.datasets import get_builder
from gradebench.datasets.base import GradedList
from gradebench.datasets.chaosnli.builder import ChaosNLIBuilder
from gradebench.datasets.common import dense_rank
from gradebench.errors import RecipeError, SourceFormatError, SourceNotFoundError
from gradebench.hashing import key_digest, short_id
from gradebench.recipes.loader import load_recipe
from gradebench.words import words
from tests.builders._util import lists_and_skips, variant_builder
from tests.conftest import FIXTURES, shared_data
from tests.input_files import write_jsonl

FIX = FIXTURES / "chaosnli"
SNLI = FIX / "chaosNLI_v1.0" / "chaosNLI_snli.jsonl"


def _builder(tmp_path: Path | None = None, base: str = "chaosnli-snli", **keys) -> ChaosNLIBuilder:
    """The builder of a shipped recipe, or of a recipe extending it with ``keys``."""
    return variant_builder(tmp_path, base, keys, name="chaosnli-variant")


def _lists(b: ChaosNLIBuilder, source: Path = FIX, limit: int | None = None) -> tuple[list[GradedList], Counter]:
    return lists_and_skips(b, source, limit)


def _by_label(gl: GradedList) -> dict[str, tuple[str, float, int, int]]:
    """label -> (candidate text, score, relevance, votes)."""
    labels, votes = gl.candidate_extra
    rows = zip(labels, gl.candidates, gl.scores, gl.relevance, votes, strict=True)
    return {lab: (t, s, r, v) for lab, t, s, r, v in rows}


# --------------------------------------------------------------------------- recipes


def test_recipes_load_and_use_this_builder():
    for name, subset in (("chaosnli-snli", "snli"), ("chaosnli-mnli", "mnli")):
        r = load_recipe(name)
        assert r.source.family == "chaosnli" and r.subset == subset
        assert r.source.formats == ["chaosnli-jsonl"]
        assert "CC BY-NC 4.0" in r.source.license and "nie2020chaosnli" in r.source.citation
        assert r.relevance == "rank"
        assert get_builder(r.source.family) is ChaosNLIBuilder
        v = r.verbalisations
        assert {len(words(t)) for t in (v.entailment, v.neutral, v.contradiction)} == {16}  # no length cue
    assert ChaosNLIBuilder.stat_columns == ("entropy",)
    assert "entropy" in [c.name for c in ChaosNLIBuilder.columns if c.level == "query"]


@pytest.mark.parametrize(
    ("keys", "words"),
    [
        ({"subset": "alphanli"}, "subset"),
        ({"query_template": "premise: {premise} label: {label}"}, "placeholder {label} is not allowed"),
        ({"verbalisations": {"entailment": "Same.", "neutral": "Same.", "contradiction": "No."}}, "must differ"),
        ({"verbalisations": {"contradiction": "   "}}, "a verbalisation is blank"),
        ({"verbalisations": {"contradiction": ""}}, "verbalisations.contradiction"),
        ({"relevance": "percent"}, "relevance"),
        ({"labels": ["e", "n", "c"]}, "unknown key 'labels'"),
    ],
)
def test_bad_recipe_keys(tmp_path, keys, words):
    with pytest.raises(RecipeError) as e:
        _builder(tmp_path, **keys)
    assert words in str(e.value)


# --------------------------------------------------------------------------- locate


def test_locate_folder_release_folder_and_file(tmp_path):
    b = _builder()
    want = [("chaosnli-jsonl:snli:test", "test")]
    for src in (FIX, FIX / "chaosNLI_v1.0", SNLI):
        files = b.locate(src)
        assert [(f.role, f.split) for f in files] == want
        assert Path(files[0].path).resolve() == SNLI.resolve()
    other = tmp_path / "my-copy.jsonl"  # a file given directly is taken as the recipe's subset
    shutil.copy(SNLI, other)
    assert b.locate(other)[0].role == "chaosnli-jsonl:snli:test"
    mnli = _builder(base="chaosnli-mnli").locate(FIX)
    assert [(Path(f.path).name, f.role) for f in mnli] == [("chaosNLI_mnli_m.jsonl", "chaosnli-jsonl:mnli:test")]


def test_locate_errors(tmp_path):
    b = _builder()
    with pytest.raises(SourceNotFoundError):
        b.locate(tmp_path / "missing")
    with pytest.raises(SourceFormatError, match="no chaosNLI_snli.jsonl here") as e:
        b.locate(tmp_path)
    assert "chaosNLI_v1.0" in e.value.hint
    with pytest.raises(SourceFormatError, match="is ChaosNLI's mnli subset") as e:
        b.locate(FIX / "chaosNLI_v1.0" / "chaosNLI_mnli_m.jsonl")
    assert "chaosnli-snli" in e.value.message
    with pytest.raises(SourceFormatError, match="alphanli subset"):
        b.locate(FIX / "chaosNLI_v1.0" / "chaosNLI_alphanli.jsonl")


# --------------------------------------------------------------------------- lists


def test_vote_share_grades_rank_relevance():
    lists, skipped = _lists(_builder())
    assert skipped == Counter()
    assert len(lists) == 4
    by = [_by_label(gl) for gl in lists]
    assert {k: v[1:] for k, v in by[0].items()} == {
        "entailment": (0.3, 1, 30), "neutral": (0.7, 2, 70), "contradiction": (0.0, 0, 0)
    }
    assert {k: v[1:] for k, v in by[1].items()} == {  # a majority tie: both top labels share a grade
        "entailment": (0.45, 1, 45), "neutral": (0.1, 0, 10), "contradiction": (0.45, 1, 45)
    }
    assert {k: v[1:] for k, v in by[2].items()} == {  # all 100 votes on one label
        "entailment": (1.0, 1, 100), "neutral": (0.0, 0, 0), "contradiction": (0.0, 0, 0)
    }
    r = load_recipe("chaosnli-snli")
    for gl in lists:
        assert gl.split == "test" and gl.tiers is None and gl.human == [False] * 3
        assert sorted(gl.candidates) == sorted(
            [r.verbalisations.entailment, r.verbalisations.neutral, r.verbalisations.contradiction]
        )
        assert sum(gl.scores) == pytest.approx(1.0)
        assert all(0.0 <= s <= 1.0 for s in gl.scores)
        assert len(set(gl.relevance)) >= 2


def test_votes_relevance_mode(tmp_path):
    lists, _ = _lists(_builder(tmp_path, relevance="votes"))
    by = _by_label(lists[3])
    assert {k: (v[2], v[3]) for k, v in by.items()} == {"entailment": (20, 20), "neutral": (45, 45),
                                                       "contradiction": (35, 35)}


def test_query_and_columns():
    b = _builder()
    gl = _lists(b)[0][1]
    assert gl.query == "premise: Two men carry a canoe down to the river. hypothesis: The men are sleeping in a tent."
    premise, hypothesis, uid, row, majority, tie, old, old_labels, entropy = gl.query_extra
    assert (uid, row, majority, tie, old) == ("1000000002.jpg#1r1c", 1, "contradiction", True, "contradiction")
    assert old_labels == ["contradiction", "contradiction", "neutral", "neutral", "contradiction"]
    assert entropy == pytest.approx(1.3689955935892815)
    assert premise == "Two men carry a canoe down to the river."
    assert len(gl.query_extra) == sum(c.level == "query" for c in b.columns)
    assert len(gl.candidate_extra) == sum(c.level == "candidate" for c in b.columns)
    assert "canoe" in gl.vocab and "premise" not in gl.vocab
    first = _lists(b)[0][2]
    assert first.query_extra[7] == ["entailment", "entailment", "entailment", "neutral"]  # 4 original labels


def test_ids_are_content_derived_and_order_is_a_content_hash():
    b = _builder()
    lists, _ = _lists(b)
    gl = lists[0]
    assert gl.query_id == short_id("query", "1000000001.jpg#0r1n", "A girl in a red coat feeds ducks at a frozen pond.",
                                   "The girl is at a park.")
    labels = gl.candidate_extra[0]
    assert gl.candidate_ids == [short_id("candidate", gl.query_id, lab) for lab in labels]
    ns = b.recipe.seed_namespace
    digests = [key_digest(ns, "candidate", gl.query_id, c) for c in gl.candidate_ids]
    assert digests == sorted(digests)
    all_ids = [c for g in lists for c in g.candidate_ids]
    assert len(set(all_ids)) == len(all_ids)
    assert len({g.query_id for g in lists}) == 4
    # deterministic
    assert _lists(_builder())[0] == lists


def test_no_shuffle_keeps_e_n_c_order(tmp_path):
    lists, _ = _lists(_builder(tmp_path, shuffle_candidates=False))
    assert all(gl.candidate_extra[0] == ["entailment", "neutral", "contradiction"] for gl in lists)


def test_shuffled_order_does_not_follow_grade():
    lists, _ = _lists(_builder(), FIX)
    lists += _lists(_builder(base="chaosnli-mnli"), FIX)[0]
    first_is_best = [gl.relevance[0] == max(gl.relevance) for gl in lists]
    assert not all(first_is_best)


def test_limit():
    lists, _ = _lists(_builder(), limit=2)
    assert [gl.query_extra[2] for gl in lists] == ["1000000001.jpg#0r1n", "1000000002.jpg#1r1c"]


def _row(name: str, counts: tuple[int, int, int], **over) -> dict:
    labels = ("e", "n", "c")
    total = sum(counts) or 1
    row = {
        "uid": name,
        "label_counter": {lab: c for lab, c in zip(labels, counts, strict=True) if c},
        "majority_label": labels[counts.index(max(counts))],
        "label_dist": [c / total for c in counts],
        "label_count": list(counts),
        "entropy": 1.0,
        "example": {"uid": name, "premise": "A cat sleeps on a mat.", "hypothesis": f"Hypothesis {name}.",
                    "source": "snli_agree_3"},
        "old_label": "n",
        "old_labels": ["neutral"] * 5,
    }
    for k, v in over.items():
        if k in ("premise", "hypothesis"):
            row["example"][k] = v
        else:
            row[k] = v
    return row


def test_skip_reasons(tmp_path):
    rows = [
        _row("ok", (50, 30, 20)),
        _row("dup", (50, 30, 20)),
        _row("dup", (50, 30, 20)),
        _row("unknown", (50, 30, 20), old_label="neutral"),
        _row("inconsistent", (50, 30, 20), label_counter={"e": 50, "n": 30}),
        _row("dist", (50, 30, 20), label_dist=[0.2, 0.3, 0.5]),
        _row("mismatch", (50, 30, 20), uid="other"),
        _row("novotes", (0, 0, 0)),
        _row("tie", (33, 33, 33)),
        _row("blank-premise", (50, 30, 20), premise="  "),
        _row("blank-hypothesis", (50, 30, 20), hypothesis=""),
    ]
    lists, skipped = _lists(_builder(), write_jsonl(tmp_path / "chaosNLI_snli.jsonl", rows))
    assert [gl.query_extra[2] for gl in lists] == ["ok", "dup"]
    assert skipped == Counter(
        duplicate_query=1, unknown_label=1, inconsistent_votes=2, uid_mismatch=1, no_votes=1, single_grade=1,
        empty_premise=1, empty_hypothesis=1,
    )


def test_dense_rank():
    assert dense_rank([30, 70, 0]) == [1, 2, 0]
    assert dense_rank([45, 10, 45]) == [1, 0, 1]
    assert dense_rank([5, 5, 5]) == [0, 0, 0]


def test_card_and_license():
    b = _builder()
    card = "\n".join(b.card_section())
    assert "vote share" in card and "dense rank" in card and "CC BY-NC 4.0" in card
    assert b.redistributable() is True


# --------------------------------------------------------------------------- engine


def test_builds_end_to_end(tmp_path):
    from gradebench.experiments.build import build

    res = build("chaosnli-snli", source=FIX, out=tmp_path, progress=False)
    assert res.splits == {"test": {"queries": 4, "candidates": 12}}
    assert res.stats["test"]["entropy_mean"] == pytest.approx(
        (0.8812908992306927 + 1.3689955935892815 + 0.0 + 1.5128876215181604) / 4, abs=1e-6
    )
    import pyarrow.parquet as pq

    t = pq.read_table(Path(res.path) / res.files["test"][0])
    assert t.column_names[-4:] == ["old_labels", "entropy", "candidate_label", "votes"]
    assert sorted(t.column("votes").to_pylist()) == sorted([30, 70, 0, 45, 10, 45, 100, 0, 0, 20, 45, 35])


# --------------------------------------------------------------------------- real data


@pytest.mark.integration
@pytest.mark.parametrize(
    ("recipe", "n", "patterns", "first_uid"),
    [
        ("chaosnli-snli", 1514, {(0, 1, 2): 1464, (0, 0, 1): 36, (0, 1, 1): 14}, "2407214681.jpg#0r1n"),
        ("chaosnli-mnli", 1599, {(0, 1, 2): 1571, (0, 0, 1): 14, (0, 1, 1): 14}, "50830c"),
    ],
)
def test_real_data(recipe, n, patterns, first_uid):
    src = shared_data("chaosnli")
    b = _builder(base=recipe)
    lists, skipped = _lists(b, src)
    assert skipped == Counter()
    assert len(lists) == n
    assert all(len(gl.candidates) == 3 for gl in lists)
    assert Counter(tuple(sorted(gl.relevance)) for gl in lists) == patterns
    assert sum(gl.query_extra[5] for gl in lists) == 14  # majority ties
    assert lists[0].query_extra[2] == first_uid
    assert len({gl.query_id for gl in lists}) == n


@pytest.mark.integration
def test_real_snli_first_record():
    lists, _ = _lists(_builder(), shared_data("chaosnli"))
    by = _by_label(lists[0])
    assert {k: v[1:] for k, v in by.items()} == {
        "entailment": (0.3, 1, 30), "neutral": (0.7, 2, 70), "contradiction": (0.0, 0, 0)
    }
    assert lists[0].query_extra[4:7] == ("neutral", False, "neutral")
    # 16 pairs got all 100 votes on one label; they still form lists (grades 1, 0, 0)
    assert sum(max(gl.scores) == 1.0 for gl in lists) == 16
