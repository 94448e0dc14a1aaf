"""The ``anli`` builder: ART + ChaosNLI αNLI, L2R2 merging by observation pair, win-rate grades."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from gradebench.datasets import get_builder
from gradebench.datasets.anli.builder import ANLIBuilder, normalise
from gradebench.datasets.base import GradedList
from gradebench.errors import RecipeError, SourceFormatError, SourceNotFoundError
from gradebench.hashing import key_digest, short_id
from gradebench.recipes.loader import load_recipe
from tests.builders._util import lists_and_skips, variant_builder
from tests.conftest import FIXTURES, shared_data
from tests.input_files import write_jsonl

ART = FIXTURES / "anli"
CHAOS = FIXTURES / "chaosnli" / "chaosNLI_v1.0" / "chaosNLI_alphanli.jsonl"


def _builder(tmp_path: Path | None = None, **keys) -> ANLIBuilder:
    return variant_builder(tmp_path, "anli", keys, name="anli-variant")


_lists = lists_and_skips


def _grades(gl: GradedList) -> dict[str, tuple[float, int, int, float]]:
    """hypothesis -> (score, relevance, comparisons, wins)."""
    comps, wins = gl.candidate_extra
    return {t: (s, r, c, w) for t, s, r, c, w in zip(gl.candidates, gl.scores, gl.relevance, comps, wins, strict=True)}


@pytest.fixture
def both(tmp_path) -> Path:
    """A folder holding the ART fixture release and the ChaosNLI αNLI fixture file."""
    root = tmp_path / "both"
    shutil.copytree(ART, root)
    shutil.copy(CHAOS, root / CHAOS.name)
    return root


# --------------------------------------------------------------------------- recipe


def test_recipe():
    r = load_recipe("anli")
    assert r.source.family == "anli" and get_builder("anli") is ANLIBuilder
    assert r.source.formats == ["art-jsonl", "chaosnli-alphanli-jsonl"]
    assert r.source.default == "path"
    assert "bhagavatula2020abductive" in r.source.citation and "zhu2020l2r2" in r.source.citation
    assert "CC BY-NC 4.0" in r.source.license
    assert ANLIBuilder.stat_columns == ("entropy",)


@pytest.mark.parametrize(
    ("keys", "words"),
    [
        ({"query_template": "{obs1} {hyp1}"}, "placeholder {hyp1} is not allowed"),
        ({"query_template": "{obs1!r} {obs2}"}, "placeholder {obs1} is not allowed"),
        ({"relevance": "votes"}, "unknown key 'relevance'"),
        ({"source": {"formats": ["esnli-csv"]}}, "does not read format"),
    ],
)
def test_bad_recipe_keys(tmp_path, keys, words):
    with pytest.raises(RecipeError) as e:
        _builder(tmp_path, **keys)
    assert words in str(e.value)


# --------------------------------------------------------------------------- locate


def test_locate_art_folder_ignores_unlabelled_test():
    files = _builder().locate(ART)
    assert [(Path(f.path).name, f.role, f.split) for f in files] == [
        ("train.jsonl", "art-jsonl:train.jsonl:train", "train"),
        ("train-labels.lst", "art-jsonl:train-labels.lst:train", "train"),
        ("dev.jsonl", "art-jsonl:dev.jsonl:validation", "validation"),
        ("dev-labels.lst", "art-jsonl:dev-labels.lst:validation", "validation"),
    ]


def test_locate_art_in_subfolder_and_chaos_release_folder(tmp_path):
    shutil.copytree(ART, tmp_path / "anli")
    (tmp_path / "chaosNLI_v1.0").mkdir()
    shutil.copy(CHAOS, tmp_path / "chaosNLI_v1.0" / CHAOS.name)
    roles = [f.role for f in _builder().locate(tmp_path)]
    assert roles == [
        "art-jsonl:train.jsonl:train", "art-jsonl:train-labels.lst:train",
        "art-jsonl:dev.jsonl:validation", "art-jsonl:dev-labels.lst:validation",
        "chaosnli-alphanli-jsonl:alphanli:test",
    ]


def test_locate_single_files():
    b = _builder()
    assert [f.role for f in b.locate(CHAOS)] == ["chaosnli-alphanli-jsonl:alphanli:test"]
    for name in ("dev.jsonl", "dev-labels.lst"):
        assert [Path(f.path).name for f in b.locate(ART / name)] == ["dev.jsonl", "dev-labels.lst"]
    assert [f.split for f in b.locate(ART / "train.jsonl")] == ["train", "train"]


def test_locate_respects_recipe_formats(tmp_path, both):
    art_only = _builder(tmp_path, source={"formats": ["art-jsonl"]})
    assert all(f.role.startswith("art-jsonl:") for f in art_only.locate(both))
    with pytest.raises(SourceFormatError, match="does not read chaosnli-alphanli-jsonl"):
        art_only.locate(CHAOS)
    chaos_only = _builder(tmp_path, source={"formats": ["chaosnli-alphanli-jsonl"]})
    assert [f.split for f in chaos_only.locate(both)] == ["test"]
    with pytest.raises(SourceFormatError, match="does not read art-jsonl"):
        chaos_only.locate(ART / "dev.jsonl")
    with pytest.raises(SourceFormatError, match="ChaosNLI's chaosNLI_alphanli.jsonl"):
        chaos_only.locate(ART)


def test_locate_errors(tmp_path):
    b = _builder()
    with pytest.raises(SourceNotFoundError):
        b.locate(tmp_path / "missing")
    with pytest.raises(SourceFormatError, match="no αNLI files here"):
        b.locate(tmp_path)
    with pytest.raises(SourceFormatError, match="not an αNLI file"):
        b.locate(ART / "test.jsonl")
    with pytest.raises(SourceFormatError, match="not an αNLI file"):
        b.locate(FIXTURES / "chaosnli" / "chaosNLI_v1.0" / "chaosNLI_snli.jsonl")
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    shutil.copy(ART / "dev.jsonl", lonely / "dev.jsonl")
    with pytest.raises(SourceNotFoundError, match="dev-labels.lst is missing") as e:
        b.locate(lonely)
    assert e.value.path == str(lonely / "dev-labels.lst")
    with pytest.raises(SourceNotFoundError, match="dev-labels.lst is missing"):
        b.locate(lonely / "dev.jsonl")


def test_misaligned_labels_is_an_error_naming_both_files(tmp_path):
    root = tmp_path / "art"
    shutil.copytree(ART, root)
    (root / "dev-labels.lst").write_text("1\n", encoding="utf-8")
    b = _builder()
    with pytest.raises(SourceFormatError) as e:
        b.read(b.locate(root))
    assert "dev-labels.lst has 1 label line but dev.jsonl has 2 lines" in e.value.message


# --------------------------------------------------------------------------- ART lists


def test_art_lists_merge_by_observation_pair():
    lists, skipped = _lists(_builder(), ART)
    assert skipped == Counter(unknown_label=1, identical_hypotheses=1, empty_hypothesis=1)
    assert [gl.split for gl in lists] == ["train", "train", "validation", "validation"]
    a = lists[0]
    assert a.query == (
        "observation 1: Kim bought seeds at the market. observation 2: By summer Kim's garden was full of tomatoes."
    )
    # 5 comparisons (one with case/whitespace variants of the observations and a hypothesis) -> 4 hypotheses
    assert _grades(a) == {
        "Kim planted the seeds and watered them daily.": (1.0, 2, 3, 3.0),
        "Kim asked a neighbor how to grow tomatoes.": (pytest.approx(2 / 3), 1, 3, 2.0),
        "Kim threw the seeds away.": (0.0, 0, 2, 0.0),
        "Kim forgot about the seeds in a drawer.": (0.0, 0, 2, 0.0),
    }
    obs1, obs2, source_id, row, n, entropy = a.query_extra
    assert (source_id, row, n, entropy) == ("1f0e0000-0000-4000-8000-000000000001", 0, 5, None)
    assert a.human == [True] * 4 and a.tiers is None
    assert "tomatoes" in a.vocab and "observation" not in a.vocab
    b = lists[1]
    assert _grades(b) == {
        "Omar took a taxi right away.": (0.0, 0, 1, 0.0),
        "Omar waited for the next bus.": (1.0, 1, 1, 1.0),
    }
    assert [gl.query_extra[2] for gl in lists[2:]] == [
        "0a1b2c3d-0000-4000-8000-00000000000a", "0f0e0000-0000-4000-8000-000000000005"
    ]


def test_ids_and_shuffle():
    b = _builder()
    lists, _ = _lists(b, ART)
    a = lists[0]
    assert a.query_id == short_id("query", "1f0e0000-0000-4000-8000-000000000001", "Kim bought seeds at the market.",
                                  "By summer Kim's garden was full of tomatoes.")
    assert a.candidate_ids == [short_id("candidate", a.query_id, normalise(t)) for t in a.candidates]
    digests = [key_digest(b.recipe.seed_namespace, "candidate", a.query_id, c) for c in a.candidate_ids]
    assert digests == sorted(digests)
    assert _lists(_builder(), ART)[0] == lists


def test_no_shuffle_keeps_first_appearance_order(tmp_path):
    lists, _ = _lists(_builder(tmp_path, shuffle_candidates=False), ART)
    assert lists[0].candidates == [
        "Kim planted the seeds and watered them daily.", "Kim threw the seeds away.",
        "Kim forgot about the seeds in a drawer.", "Kim asked a neighbor how to grow tomatoes.",
    ]


def test_limit_counts_instances_per_split():
    lists, skipped = _lists(_builder(), ART, limit=2)
    assert [(gl.split, gl.query_extra[4]) for gl in lists] == [("train", 2), ("validation", 1), ("validation", 1)]
    assert skipped == Counter()


# --------------------------------------------------------------------------- ChaosNLI αNLI


def test_chaosnli_votes_as_soft_win_rate(tmp_path):
    lists, skipped = _lists(_builder(), CHAOS)
    assert skipped == Counter(single_grade=1)  # the 50/50 row
    assert [gl.split for gl in lists] == ["test"] * 3
    assert [gl.query_extra[2] for gl in lists] == [  # both uid forms normalised to '<story_id>-<n>'
        "0a1b2c3d-0000-4000-8000-00000000000a-1",
        "0a1b2c3d-0000-4000-8000-00000000000b-1",
        "0a1b2c3d-0000-4000-8000-00000000000b-2",
    ]
    assert _grades(lists[0]) == {
        "Mia practiced every evening for months.": (0.88, 1, 1, 0.88),
        "Mia sold her violin to a neighbor.": (0.12, 0, 1, 0.12),
    }
    assert _grades(lists[2]) == {
        "Leo's bike was taken by a thief.": (0.27, 0, 1, 0.27),
        "Nobody touched Leo's bike.": (0.73, 1, 1, 0.73),
    }
    assert lists[0].query_extra[5] == pytest.approx(0.5293608652873644)  # entropy


def test_chaosnli_supersedes_art_dev(both):
    lists, skipped = _lists(_builder(), both)
    assert Counter(gl.split for gl in lists) == {"train": 2, "validation": 1, "test": 3}
    assert skipped == Counter(unknown_label=1, identical_hypotheses=1, empty_hypothesis=1, single_grade=1,
                              observations_in_chaosnli_test=1)
    (val,) = [gl for gl in lists if gl.split == "validation"]
    assert val.query_extra[0] == "Raj planned a picnic for Saturday."
    qids = [gl.query_id for gl in lists]
    assert len(set(qids)) == len(qids)


def _alpha_row(name: str, counts=(70, 30), **over) -> dict:
    row = {
        "uid": name,
        "label_counter": {str(i + 1): c for i, c in enumerate(counts) if c},
        "majority_label": 1 if counts[0] >= counts[1] else 2,
        "label_dist": [c / (sum(counts) or 1) for c in counts],
        "label_count": list(counts),
        "entropy": 0.88,
        "example": {"uid": name, "obs1": f"Start {name}.", "obs2": "The end.", "hyp1": "First idea.",
                    "hyp2": "Second idea.", "source": "abdnli_dev"},
        "old_label": 1,
    }
    for k, v in over.items():
        if k in row["example"] and k != "uid":
            row["example"][k] = v
        else:
            row[k] = v
    return row


def test_chaosnli_skip_reasons(tmp_path):
    u = "0b000000-0000-4000-8000-0000000000{:02d}-1".format
    rows = [
        _alpha_row(u(1)),
        _alpha_row("not-a-story-id-1"),
        _alpha_row(u(2), old_label=3),
        _alpha_row(u(3), label_counter={"1": 70}),
        _alpha_row(u(4), uid="0b000000-0000-4000-8000-000000000099-1"),
        _alpha_row(u(5), counts=(0, 0)),
        _alpha_row(u(6), obs2=" "),
        _alpha_row(u(7), hyp1=""),
        _alpha_row(u(8), hyp2="first  IDEA."),
    ]
    lists, skipped = _lists(_builder(), write_jsonl(tmp_path / "chaosNLI_alphanli.jsonl", rows))
    assert [gl.query_extra[2] for gl in lists] == [u(1)]
    assert skipped == Counter(bad_story_id=1, unknown_label=1, inconsistent_votes=1, uid_mismatch=1, no_votes=1,
                              empty_observation=1, empty_hypothesis=1, identical_hypotheses=1)


def test_card_and_redistribution():
    b = _builder()
    card = "\n".join(b.card_section())
    assert "L2R2" in card and "win rate" in card and "dense rank" in card
    assert b.redistributable() is False


# --------------------------------------------------------------------------- engine


def test_builds_end_to_end(tmp_path, both):
    from gradebench.experiments.build import build

    res = build("anli", source=both, out=tmp_path / "out", progress=False)
    assert res.splits == {
        "train": {"queries": 2, "candidates": 6},
        "validation": {"queries": 1, "candidates": 2},
        "test": {"queries": 3, "candidates": 6},
    }
    assert res.skipped["observations_in_chaosnli_test"] == 1
    manifest = json.loads((Path(res.path) / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["redistributable"] is False
    assert {i["role"] for i in manifest["inputs"]} >= {"art-jsonl:train.jsonl:train",
                                                       "chaosnli-alphanli-jsonl:alphanli:test"}


# --------------------------------------------------------------------------- real data


@pytest.mark.integration
def test_real_chaosnli_alphanli():
    src = shared_data("chaosnli")
    b = _builder()
    files = b.locate(src)
    assert [f.role for f in files] == ["chaosnli-alphanli-jsonl:alphanli:test"]
    records = b.read(files)
    assert {k: len(v) for k, v in records.items()} == {"test": 1532}
    sel = b.select(records, limit=None)
    lists = b.make_lists(sel.units)
    assert sel.skipped == Counter(single_grade=8)  # 50/50 ties
    assert len(lists) == 1524
    # every observation pair is distinct (the 97 two-ending stories differ in obs2): no merging
    assert all(len(gl.candidates) == 2 and gl.query_extra[4] == 1 for gl in lists)
    assert all(sorted(gl.relevance) == [0, 1] for gl in lists)
    assert len({gl.query_extra[2] for gl in lists}) == 1524
    # stories: 1,435 in the file, 6 lost every ending to a 50/50 tie
    assert len({gl.query_extra[2][:36] for gl in lists}) == 1429
    assert Counter(round(max(gl.scores), 1) for gl in lists) == {1.0: 660, 0.9: 420, 0.8: 196, 0.6: 113, 0.7: 105,
                                                                 0.5: 30}
    first = lists[0]
    assert first.query_extra[2] == "58090d3f-8a91-4c89-83ef-2b4994de9d24-1"
    assert _grades(first) == {
        "Ron ignores his bosses's orders and called him an idiot.": (0.97, 1, 1, 0.97),
        "Ron's boss called him an idiot.": (0.03, 0, 1, 0.03),
    }
    # the bare-digit uid of the same story's second ending
    second = next(gl for gl in lists if gl.query_extra[3] == 1163)
    assert second.query_extra[2] == "58090d3f-8a91-4c89-83ef-2b4994de9d24-2"
