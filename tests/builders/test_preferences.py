"""The ``preferences`` builder (recipe preference-pairs): TRL and RewardBench layouts, text and chat, --map."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import gradebench
from gradebench.cli.build_cmds import parse_map
from gradebench.datasets import get_builder
from gradebench.datasets.base import GradedList
from gradebench.datasets.preferences.builder import PreferencesBuilder
from gradebench.errors import RecipeError, SourceFormatError
from gradebench.hashing import short_id
from gradebench.recipes.loader import load_recipe, recipe_from_json, with_overrides
from tests.conftest import FIXTURES

FIX = FIXTURES / "preferences"


def _builder(tmp_path: Path | None = None, maps: list[str] | None = None, **keys) -> PreferencesBuilder:
    r = load_recipe("preference-pairs")
    if keys:
        assert tmp_path is not None
        p = tmp_path / "variant.yaml"
        p.write_text(json.dumps({"extends": "preference-pairs", "name": "prefs-variant", **keys}), encoding="utf-8")
        r = load_recipe(p)
    if maps:
        r = with_overrides(r, parse_map(maps))  # what `gradebench build --map` does
    return get_builder("preferences")(r)


def _lists(b: PreferencesBuilder, source: Path) -> tuple[list[GradedList], Counter]:
    sel = b.select(b.read(b.locate(source)), limit=None)
    return b.make_lists(sel.units), sel.skipped


def _by(lst: GradedList, name: str) -> str:
    """The candidate text whose preference is ``name`` (chosen/rejected)."""
    return lst.candidates[lst.candidate_extra[0].index(name)]


# --------------------------------------------------------------------------- recipe


def test_recipe_and_builder_metadata():
    r = load_recipe("preference-pairs")
    assert r.source.family == "preferences" and r.source.default == "path"
    assert r.source.formats == ["preferences-csv", "preferences-jsonl", "preferences-parquet"]
    assert r.messages == "auto" and r.columns.prompt == "prompt" and r.columns.split is None
    b = get_builder("preferences")(r)
    assert b.tiers() is None and b.redistributable() is False
    assert [c.name for c in b.columns] == ["subset", "source_id", "prompt_messages", "preference", "model",
                                           "source_score", "candidate_messages"]
    assert "chosen (1) above rejected (0)" in b.summary


def test_a_known_release_is_named_by_variant(tmp_path):
    b = _builder(tmp_path, source={"variant": "rewardbench"})
    terms = b.recipe.source.license_terms
    assert terms.hub == ["odc-by", "other"] and terms.redistributable is True
    assert "lambert2024rewardbench" in b.recipe.source.citation


@pytest.mark.parametrize(("keys", "match"), [
    ({"columns": {"chosen": "rejected"}}, "column 'rejected' is mapped to both chosen and rejected"),
    ({"columns": {"subset": ""}}, "columns.subset is empty"),
    ({"columns": {"answer": "x"}}, "answer"),
    ({"messages": "markdown"}, "messages"),
])
def test_bad_recipe_keys(tmp_path, keys, match):
    with pytest.raises(RecipeError, match=match):
        _builder(tmp_path, **keys)


# --------------------------------------------------------------------------- the TRL layout


def test_trl_folder_of_three_formats():
    b = _builder()
    assert [(f.role, f.split) for f in b.locate(FIX / "trl")] == [
        ("preferences-csv:prefs_test.csv:test", "test"),
        ("preferences-jsonl:prefs_train.jsonl:train", "train"),
        ("preferences-parquet:prefs_validation.parquet:validation", "validation"),
    ]
    lists, skipped = _lists(b, FIX / "trl")
    assert skipped == Counter({"tie": 1, "empty_rejected": 1, "identical_responses": 1, "empty_prompt": 1,
                               "duplicate_pair": 1, "prompt_mismatch": 1})
    assert Counter(gl.split for gl in lists) == {"train": 5, "validation": 4, "test": 4}
    for gl in lists:
        assert sorted(gl.relevance) == [0, 1] and sorted(gl.scores) == [0.0, 1.0]
        assert gl.scores == [float(x) for x in gl.relevance]
        assert sorted(gl.candidate_extra[0]) == ["chosen", "rejected"]
        assert [gl.relevance[i] for i in range(2)] == [int(p == "chosen") for p in gl.candidate_extra[0]]
    assert len({gl.query_id for gl in lists}) == len(lists)


def test_trl_standard_text():
    lists, _ = _lists(_builder(), FIX / "trl" / "prefs_train.jsonl")
    first = lists[0]
    assert first.query == "What is the capital of France?"
    assert _by(first, "chosen") == "The capital of France is Paris."
    assert first.query_extra == (None, "prefs_train.jsonl:1", None)  # no subset, file:line, plain text
    # one prompt with two different pairs gives two lists (the exact repeat on line 9 is a duplicate_pair)
    france = [gl for gl in lists if gl.query == "What is the capital of France?"]
    assert len(france) == 2 and france[0].query_id != france[1].query_id
    spider = next(gl for gl in lists if "spider" in gl.query)
    assert sorted(zip(spider.candidate_extra[0], spider.candidate_extra[2])) == [("chosen", 9.0), ("rejected", 3.5)]


def test_csv_quoting_and_a_chat_field():
    lists, skipped = _lists(_builder(), FIX / "trl" / "prefs_test.csv")
    assert skipped == Counter()
    haiku = lists[0]
    assert haiku.query == "Write a haiku about rain, please."
    assert _by(haiku, "chosen").startswith("Soft rain on the roof,\ngutters hum")
    assert haiku.query_extra[1] == "prefs_test.csv:2"
    assert _by(lists[2], "chosen") == '"Hello, nice to meet you."'
    chat = lists[3]
    assert chat.query == "system: You are terse.\n\nuser: Define entropy."
    assert json.loads(chat.query_extra[2]) == [{"role": "system", "content": "You are terse."},
                                               {"role": "user", "content": "Define entropy."}]
    assert _by(chat, "chosen") == "A measure of uncertainty."
    i = chat.candidate_extra[0].index("chosen")
    assert json.loads(chat.candidate_extra[3][i]) == [{"role": "assistant", "content": "A measure of uncertainty."}]


def test_conversational_parquet_equals_its_jsonl():
    """prefs_validation.parquet was written by pyarrow from conversational.jsonl (pa.Table.from_pylist)."""
    rows = [json.loads(line) for line in (FIX / "conversational.jsonl").read_text(encoding="utf-8").splitlines()]
    assert pq.read_table(FIX / "trl" / "prefs_validation.parquet").to_pylist() == rows
    from_parquet, skipped = _lists(_builder(), FIX / "trl" / "prefs_validation.parquet")
    from_jsonl, _ = _lists(_builder(), FIX / "conversational.jsonl")
    assert skipped == Counter({"prompt_mismatch": 1})  # row 5: the rejected "reply" is a user turn
    assert [gl.query_id for gl in from_parquet] == [gl.query_id for gl in from_jsonl]  # ids from content only
    assert [gl.candidates for gl in from_parquet] == [gl.candidates for gl in from_jsonl]
    assert from_parquet[0].query_extra[1] == "prefs_validation.parquet:1"
    multi = from_parquet[2]
    assert multi.query == ("user: Hi!\n\nassistant: Hello! How can I help?\n\n"
                           "user: What's the boiling point of water at sea level?")
    # row 4 repeats the prompt inside chosen/rejected: it is removed from the candidates
    spell = from_parquet[3]
    assert spell.query == "Spell 'cat' backwards." and sorted(spell.candidates) == ["act", "tac"]


def test_implicit_prompt_conversations():
    lists, skipped = _lists(_builder(), FIX / "implicit.jsonl")
    assert skipped == Counter({"prompt_mismatch": 1, "no_prompt": 1})
    planet, fruit, water = lists
    assert planet.query == "What is the largest planet?"
    assert _by(planet, "chosen") == "Jupiter is the largest planet in the Solar System."
    assert fruit.query == "user: Tell me a fruit.\n\nassistant: Apple.\n\nuser: Another one, yellow this time."
    assert sorted(fruit.candidates) == ["Banana.", "Cucumber."]
    assert water.query == "Is water wet?" and _by(water, "rejected") == "No."  # ShareGPT from/value


def test_plain_text_without_a_prompt_column_is_an_error(tmp_path):
    p = tmp_path / "noprompt.jsonl"
    p.write_text('{"chosen": "a", "rejected": "b"}\n', encoding="utf-8")
    with pytest.raises(SourceFormatError, match="has no prompt column .* hold plain text") as e:
        _lists(_builder(), p)
    assert e.value.line == 1 and e.value.path == str(p)


# --------------------------------------------------------------------------- RewardBench layout, --map


def test_rewardbench_layout_keeps_subset_models_and_ids():
    lists, skipped = _lists(_builder(), FIX / "rewardbench.jsonl")
    assert skipped == Counter({"empty_rejected": 1})
    assert [gl.query_extra[0] for gl in lists] == ["alpacaeval-easy", "refusals-dangerous", "hep-python", "math-prm",
                                                   "alpacaeval-easy"]
    assert [gl.query_extra[1] for gl in lists] == ["0", "1", "2", "3", "4"]
    code = lists[2]
    assert _by(code, "chosen") == "def square(x):\n    return x * x"
    models = dict(zip(code.candidate_extra[0], code.candidate_extra[1]))
    assert models == {"chosen": "human", "rejected": "human"}
    assert dict(zip(lists[0].candidate_extra[0], lists[0].candidate_extra[1])) == {
        "chosen": "GPT4-Turbo", "rejected": "Llama-2-7b-chat"}


def test_map_renames_columns(tmp_path):
    rows = [json.loads(line) for line in (FIX / "rewardbench.jsonl").read_text(encoding="utf-8").splitlines()]
    renamed = [{"question": r["prompt"], "good": r["chosen"], "bad": r["rejected"], "meta": {"category": r["subset"]}}
               for r in rows]
    p = tmp_path / "mine.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in renamed), encoding="utf-8")
    b = _builder(maps=["prompt=question,chosen=good", "rejected=bad,subset=meta.category"])
    lists, _ = _lists(b, p)
    original, _ = _lists(_builder(), FIX / "rewardbench.jsonl")
    assert [gl.query_id for gl in lists] == [gl.query_id for gl in original]  # same content, same ids
    assert [gl.query_extra[0] for gl in lists] == [gl.query_extra[0] for gl in original]


def test_a_mapped_optional_column_must_exist(tmp_path, capsys):
    from gradebench.cli.main import main

    out = tmp_path / "out"
    code = main(["build", "preference-pairs", "--source", str(FIX / "rewardbench.jsonl"), "--out", str(out),
                 "--map", "subset=categroy"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "rewardbench.jsonl:1: has no column 'categroy' (mapped as subset)" in err and "--map subset=" in err
    assert not [p for p in out.rglob("*") if p.is_file()]


def test_messages_text_keeps_json_as_text(tmp_path):
    lists, _ = _lists(_builder(tmp_path, messages="text"), FIX / "trl" / "prefs_test.csv")
    assert lists[3].query.startswith('[{"role": "system"') and lists[3].query_extra[2] is None
    with pytest.raises(SourceFormatError, match="holds a list, but the recipe reads plain text") as e:
        _lists(_builder(tmp_path, messages="text"), FIX / "conversational.jsonl")
    assert e.value.line == 1


@pytest.mark.parametrize(("line", "match"), [
    ('{"prompt": "p", "chosen": "a"}', "has no column 'rejected' \\(mapped as rejected\\)"),
    ('{"prompt": "p", "chosen": [{"content": "a"}], "rejected": "b"}', "message 1 has no 'role'"),
    ('{"prompt": "p", "chosen": "a", "rejected": "b", "score_chosen": "high"}', "'high', expected a number"),
    ('{"prompt": "p", "chosen": "a", "rejected": "b", "subset": ["x"]}', "\\(subset\\) holds a list"),
    ('{"prompt": "p", "chosen": "a", "rejected": "b"', "malformed JSON"),
])
def test_a_bad_line_is_one_error_naming_file_and_line(tmp_path, capsys, line, match):
    from gradebench.cli.main import main

    p = tmp_path / "prefs.jsonl"
    p.write_text('{"prompt": "fine", "chosen": "a", "rejected": "b"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(SourceFormatError, match=match) as e:
        _lists(_builder(), p)
    assert e.value.line == 2 and e.value.path == str(p)
    code = main(["build", "preference-pairs", "--source", str(p), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and f"{p}:2:" in err
    assert not [q for q in (tmp_path / "out").rglob("*") if q.is_file()]


def test_parquet_errors_name_the_row(tmp_path):
    p = tmp_path / "prefs.parquet"
    pq.write_table(pa.table({"prompt": ["p1", "p2"], "chosen": ["a", "b"], "rejected": ["c", "d"],
                             "score_chosen": ["1", "x"]}), p)
    with pytest.raises(SourceFormatError, match="is 'x', expected a number .*\\(row 2\\)") as e:
        _lists(_builder(), p)
    assert e.value.path == str(p) and e.value.line is None


# --------------------------------------------------------------------------- ids and determinism


def test_ids_come_from_content(tmp_path):
    lists, _ = _lists(_builder(), FIX / "rewardbench.jsonl")
    first = lists[0]
    good, bad = _by(first, "chosen"), _by(first, "rejected")
    want = short_id("query", "alpacaeval-easy", first.query, "", good, "", bad, "")
    assert first.query_id == want and len(want) == 16
    assert set(first.candidate_ids) == {short_id("candidate", want, good, ""), short_id("candidate", want, bad, "")}
    # the same rows in another order, file name and format: the same lists
    rows = [json.loads(line) for line in (FIX / "rewardbench.jsonl").read_text(encoding="utf-8").splitlines()]
    pq.write_table(pa.Table.from_pylist(rows[::-1]), tmp_path / "other.parquet")
    again, _ = _lists(_builder(), tmp_path / "other.parquet")
    assert sorted((gl.query_id, tuple(gl.candidate_ids), tuple(gl.candidates)) for gl in again) == sorted(
        (gl.query_id, tuple(gl.candidate_ids), tuple(gl.candidates)) for gl in lists)


def test_worker_copy_of_the_recipe_builds_the_same_lists():
    b = _builder()
    sel = b.select(b.read(b.locate(FIX / "trl")), limit=None)
    worker = get_builder("preferences")(recipe_from_json(b.recipe.model_dump_json()))
    assert worker.make_lists(sel.units) == b.make_lists(sel.units)


def test_limit_reads_at_most_n_rows_per_split():
    b = _builder()
    sel = b.select(b.read(b.locate(FIX / "trl")), limit=2)
    assert Counter(u.split for u in sel.units) == {"train": 2, "validation": 2, "test": 2}


# --------------------------------------------------------------------------- end to end


def _many_pairs(path: Path, n: int = 60) -> None:
    rows = []
    for k in range(n):
        rows.append({
            "prompt": f"Question {k}: what is {k} plus {k}?",
            "chosen": f"{k} plus {k} is {2 * k}.",
            "rejected": f"{k} plus {k} is {2 * k + 1}, I think.",
            "subset": ["math", "arithmetic"][k % 2],
        })
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_build_end_to_end_with_validity_figures(tmp_path):
    src = tmp_path / "pairs.jsonl"
    _many_pairs(src)
    r = gradebench.build("preference-pairs", source=src, out=tmp_path / "out", progress=False)
    manifest = json.loads((Path(r.path) / "manifest.json").read_text())
    assert manifest["builder"] == {"name": "preferences", "version": 1}
    assert r.splits == {"test": {"queries": 60, "candidates": 120}} and r.skipped == {}
    assert r.validation["success"]
    table = pq.read_table([str(Path(r.path) / f) for fs in r.files.values() for f in fs])
    rows = table.to_pylist()
    assert Counter(row["subset"] for row in rows) == {"math": 60, "arithmetic": 60}
    assert all(row["relevance"] == (row["preference"] == "chosen") for row in rows)
    assert set(r.stats["all"]["shortcut_probes"]) >= {"length", "query_overlap"}
    v = r.validity
    assert v["carved"] is True and "skipped" not in v
    assert 0.0 <= v["query_blind"]["pairwise_agreement"] <= 1.0 and "bm25" in v and "lexical_ceiling_dense" in v and "lexical_ceiling_strong" in v
    card = (Path(r.path) / "README.md").read_text()
    assert "Pairwise preferences" in card and "Not redistributable" in card


def test_cli_build_with_map(tmp_path, capsys):
    from gradebench.cli.main import main

    src = tmp_path / "mine.csv"
    src.write_text("question,good,bad,category\nWhat is 1+1?,2,3,math\n\"Say hi, please.\",Hi!,No.,chat\n",
                   encoding="utf-8")
    code = main(["build", "preference-pairs", "--source", str(src), "--out", str(tmp_path / "out"), "--json",
                 "--no-validity", "--map", "prompt=question,chosen=good,rejected=bad,subset=category"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["splits"] == {"test": {"queries": 2, "candidates": 4}}
    table = pq.read_table(Path(out["path"]) / out["files"]["test"][0])
    assert sorted(set(table.column("subset").to_pylist())) == ["chat", "math"]
    manifest = json.loads((Path(out["path"]) / "manifest.json").read_text())
    assert manifest["recipe"]["columns"]["prompt"] == "question"  # the mapping is part of the fingerprint
