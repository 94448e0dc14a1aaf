"""The mnli builder on the invented MultiNLI fixtures: files, splits, template gold, genre column."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from gradebench.datasets import get_builder
from gradebench.datasets.mnli.builder import MNLIBuilder
from gradebench.datasets.mnli.reader import TXT_HEADER
from gradebench.datasets.tiers.builder import TIERED_COLUMNS
from gradebench.errors import SourceFormatError
from gradebench.recipes.loader import load_recipe, recipe_from_dict, recipe_from_json
from tests.builders._util import run_builder
from tests.conftest import FIXTURES, REPO, shared_data

RELEASE = FIXTURES / "mnli" / "multinli_1.0"


def _builder(**over) -> MNLIBuilder:
    if not over:
        return get_builder("mnli")(load_recipe("mnli"))
    data = load_recipe("mnli").model_dump(mode="json")
    for key, value in over.items():
        if key == "formats":
            data["source"]["formats"] = value
        else:
            data[key] = value
    return MNLIBuilder(recipe_from_dict(data))


def _lists(b: MNLIBuilder, source: Path = RELEASE, limit=None):
    return run_builder(b, source, limit)


def test_recipe_and_registration():
    r = load_recipe("mnli")
    assert r.source.family == "mnli" and r.source.default == "path"
    b = get_builder("mnli")(r)
    assert isinstance(b, MNLIBuilder)
    assert b.tiers() == [("gold", 4), ("good", 3), ("fair", 2), ("poor", 1), ("nonsense", 0)]
    assert all(t.candidates == "template" for t in r.tiers)  # template gold: no human text at all
    assert [c.name for c in MNLIBuilder.columns] == [c.name for c in TIERED_COLUMNS] + ["genre", "annotator_agreement"]
    assert MNLIBuilder.stat_columns == ("annotator_agreement",)


def test_locate_prefers_the_first_allowed_format():
    files = _builder().locate(RELEASE.parent)
    assert [(Path(f.path).name, f.role, f.split) for f in files] == [
        ("multinli_1.0_train.jsonl", "mnli-jsonl:train", "train"),
        ("multinli_1.0_dev_matched.jsonl", "mnli-jsonl:dev_matched", "validation"),
        ("multinli_1.0_dev_mismatched.jsonl", "mnli-jsonl:dev_mismatched", "test"),
    ]
    txt = _builder(formats=["mnli-txt"]).locate(RELEASE)
    assert [f.role for f in txt] == ["mnli-txt:train", "mnli-txt:dev_matched", "mnli-txt:dev_mismatched"]


def test_locate_refuses_a_format_the_recipe_does_not_read(tmp_path):
    (tmp_path / "multinli_1.0_dev_matched.txt").write_text((RELEASE / "multinli_1.0_dev_matched.txt").read_text())
    with pytest.raises(SourceFormatError, match="only mnli-txt files here, but this recipe reads mnli-jsonl"):
        _builder(formats=["mnli-jsonl"]).locate(tmp_path)


def test_selection_counts_and_skips():
    sel, lists = _lists(_builder())
    assert sel.skipped == Counter({"no_gold_label": 2})
    assert Counter(u.split for u in sel.units) == {"train": 6, "validation": 7, "test": 4}
    assert len(lists) == 17
    assert sum(len(gl.candidates) for gl in lists) == 85


def test_lists_carry_genre_and_agreement():
    _, lists = _lists(_builder())
    n_query = sum(c.level == "query" for c in MNLIBuilder.columns)
    n_cand = len(MNLIBuilder.columns) - n_query
    by_src = {}
    for gl in lists:
        assert len(gl.query_extra) == n_query and len(gl.candidate_extra) == n_cand
        by_src[gl.query_extra[3]] = gl
    assert by_src["90004e"].query_extra[-2:] == ("telephone", pytest.approx(0.6))
    assert by_src["80003n"].query_extra[-2:] == ("nineeleven", pytest.approx(0.8))
    assert by_src["70005n"].query_extra[-2:] == ("government", 1.0)
    genres = Counter(gl.query_extra[-2] for gl in lists)
    assert genres == {"fiction": 4, "government": 3, "slate": 1, "telephone": 2, "travel": 3,
                      "letters": 1, "oup": 1, "nineeleven": 1, "verbatim": 1}


def test_every_candidate_is_a_template_and_gold_is_the_specific_one():
    _, lists = _lists(_builder())
    positions = Counter()
    for gl in lists:
        assert sorted(gl.relevance) == [0, 1, 2, 3, 4]
        assert gl.human == [False] * 5
        csrc, tid, origin = gl.candidate_extra
        assert origin == ["template"] * 5 and csrc == [None] * 5
        assert len(set(gl.candidate_ids)) == 5
        assert all(0.0 <= s <= 1.0 for s in gl.scores)
        premise, hypothesis, label = gl.query_extra[:3]
        by_tier = dict(zip(gl.tiers, gl.candidates))
        assert f'"{premise}"' in by_tier["gold"] and f'"{hypothesis}"' in by_tier["gold"]
        assert f'"{hypothesis}"' in by_tier["good"] and premise not in by_tier["good"]
        assert '"' not in by_tier["fair"]
        assert tid[gl.tiers.index("gold")].startswith(f"gold/{label}/")
        assert not tid[gl.tiers.index("poor")].startswith(f"poor/{label}/")  # poor claims a wrong label
        assert gl.query == f"premise: {premise} hypothesis: {hypothesis} label: {label}"
        positions[gl.tiers.index("gold")] += 1
    assert len(positions) > 1  # shuffled: position does not give gold away


def test_jsonl_and_txt_build_the_same_lists():
    a = _lists(_builder())[1]
    b = _lists(_builder(formats=["mnli-txt"]))[1]
    assert a == b


def test_deterministic_and_worker_safe():
    b = _builder()
    sel, lists = _lists(b)
    # a worker rebuilds the builder from the recipe JSON and sees only the units
    worker = get_builder("mnli")(recipe_from_json(b.recipe.model_dump_json()))
    assert worker.make_lists(sel.units) == lists
    assert _lists(_builder())[1] == lists


def test_limit_is_per_split():
    sel, _ = _lists(_builder(), limit=2)
    assert Counter(u.split for u in sel.units) == {"train": 2, "validation": 2, "test": 2}


def test_card_section():
    text = "\n".join(_builder().card_section())
    assert "dev_mismatched -> test" in text and "no candidate is human-written" in text
    assert "| gold | 4 |" in text


def test_tables_accept_the_lists():
    tables = pytest.importorskip("gradebench.benchmark.tables")
    b = _builder()
    sel, lists = _lists(b)
    out = tables.lists_to_tables(MNLIBuilder.columns, lists, [u.split for u in sel.units], MNLIBuilder.stat_columns)
    table = out["validation"][0]
    assert table.num_rows == 35
    assert set(table.column("genre").to_pylist()) == {"fiction", "government", "telephone", "travel"}


def test_real_mnli_text_through_the_builder(tmp_path):
    """ChaosNLI's 1,599 MultiNLI dev-matched items rewritten as multinli_1.0_dev_matched.txt."""
    src = shared_data("chaosnli", "chaosNLI_v1.0", "chaosNLI_mnli_m.jsonl")
    full = {"e": "entailment", "n": "neutral", "c": "contradiction"}
    lines = ["\t".join(TXT_HEADER)]
    for raw in src.read_text(encoding="utf-8").splitlines():
        it = json.loads(raw)
        ex = it["example"]
        lines.append("\t".join([full[it["old_label"]], "( p )", "( h )", "(ROOT p)", "(ROOT h)", ex["premise"],
                                ex["hypothesis"], it["uid"][:-1], it["uid"], "telephone", *it["old_labels"]]))
    (tmp_path / "multinli_1.0_dev_matched.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    sel, lists = _lists(_builder(), tmp_path)
    assert sel.skipped == Counter()
    assert len(lists) == 1599 and sum(len(gl.candidates) for gl in lists) == 7995
    assert Counter(gl.query_extra[2] for gl in lists) == {"entailment": 513, "neutral": 721, "contradiction": 365}
    assert all(gl.query_extra[-1] == pytest.approx(0.6) for gl in lists)
    assert all(gl.split == "validation" for gl in lists)


def test_recipe_file_is_in_the_repo():
    assert (REPO / "recipes" / "mnli.yaml").is_file()


def test_build_end_to_end(tmp_path):
    engine = pytest.importorskip("gradebench.benchmark.engine")
    pq = pytest.importorskip("pyarrow.parquet")
    result = engine.build("mnli", source=RELEASE.parent, out=tmp_path, progress=False, workers=2)
    root = Path(result.path)
    manifest = json.loads((root / "manifest.json").read_text())
    assert manifest["skipped"] == {"no_gold_label": 2}
    assert {s: v["queries"] for s, v in manifest["splits"].items()} == {"train": 6, "validation": 7, "test": 4}
    assert manifest["source_format"] == "mnli-jsonl"
    assert [i["role"] for i in manifest["inputs"]] == ["mnli-jsonl:train", "mnli-jsonl:dev_matched",
                                                       "mnli-jsonl:dev_mismatched"]
    table = pq.read_table(root / manifest["splits"]["test"]["files"][0])
    assert table.column_names[-2:] == ["genre", "annotator_agreement"]
    assert set(table.column("genre").to_pylist()) == {"letters", "oup", "nineeleven", "verbatim"}
    assert set(table.column("origin").to_pylist()) == {"template"}
    # one worker or two (forked workers see only the units): the same rows
    again = engine.build("mnli", source=RELEASE.parent, out=tmp_path / "again", progress=False, workers=1)
    assert again.fingerprint == result.fingerprint
    assert pq.read_table(Path(again.path) / manifest["splits"]["test"]["files"][0]).equals(table)
