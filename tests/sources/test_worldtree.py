"""The WorldTree reader: tables, questions, ratings JSON, locating a release, errors, real-data counts.

Real-data tests pin ids, counts, fact texts (CC BY-SA 4.0) and sha256 digests of question texts:
the question texts themselves are under the AI2 Mercury licence ("Do not distribute") and must
not be copied into the repository.
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections import Counter

import pytest

from gradebench.datasets.worldtree.reader import (
    Fact,
    RatedFact,
    build_tablestore,
    find_release,
    join_ratings,
    read_questions,
    read_ratings,
    read_table,
    read_tablestore,
    split_choices,
)
from gradebench.errors import SourceFormatError, SourceNotFoundError
from gradebench.hashing import sha256_hex
from tests.conftest import FIXTURES, shared_data
from tests.input_files import write_file

FIX = FIXTURES / "worldtree"
DATA = FIX / "data"
TABLES = DATA / "tables"
HEADER = (
    "QuestionID\toriginalQuestionID\ttotalPossiblePoint\tAnswerKey\tisMultipleChoiceQuestion\tincludesDiagram\t"
    "examName\tschoolGrade\tsubject\tcategory\tyear\ttopic\texplanation\tquestion\tflags\tarcset"
)


def _row(qid: str = "Q1", key: str = "A", expl: str = "k001|CENTRAL", question: str = "Why? (A) yes (B) no") -> str:
    return "\t".join([qid, "1", "1", key, "1", "0", "Exam", "5", "", "Train", "2020", "T", expl, question, "SUCCESS", "Easy"])


# --------------------------------------------------------------------------- tables


def test_table_rows_render_non_skip_cells():
    rows = read_table(TABLES / "KINDOF.tsv")
    assert [f.uid for f in rows] == ["k001", "k002", "k003", "k004", "k005", "k005", "k006", "k007", "x001", "k008"]
    assert rows[0] == Fact("k001", "KINDOF", "copper is a kind of metal", False, 2)
    assert rows[1].text == "a kettle is a kind of container"
    assert rows[3] == Fact("k004", "KINDOF", "brass is a kind of metal", True, 5)  # [SKIP] DEP set


def test_short_row_is_padded():
    """A row one field short (the trailing empty cell missing) reads like the others (SUBDIVISION-COUNTRY quirk)."""
    k007 = next(f for f in read_table(TABLES / "KINDOF.tsv") if f.uid == "k007")
    assert k007 == Fact("k007", "KINDOF", "a lamp is a kind of light source", False, 9)


def test_unnamed_column_is_text_and_comments_are_not():
    """DURING quirk: an unnamed header cell in the middle holds words; [SKIP] COMMENTS never does."""
    rows = {f.uid: f.text for f in read_table(TABLES / "CAUSE.tsv")}
    assert rows["c001"] == "heating often causes melting"
    assert rows["c005"] == "the sun causes ice to melt"
    assert rows["c006"] == "cold air causes frost"  # "check wording" is a comment


def test_whitespace_is_normalised():
    p005 = next(f for f in read_table(TABLES / "PROPS.tsv") if f.uid == "p005")
    assert p005.text == "Copper is a good conductor of heat"


def test_tablestore_dedupes_by_uid():
    store = read_tablestore(sorted(TABLES.glob("*.tsv")))
    assert len(store.facts) == 21
    # within a table the first row wins; a current row beats a deprecated one wherever it is
    assert store.facts["k005"].text == "ice is a kind of solid"
    assert store.facts["x001"] == Fact("x001", "PROPS", "water vapor is invisible", False, 3)
    assert store.duplicates == (("k005", "KINDOF:6", "KINDOF:7"), ("x001", "PROPS:3", "KINDOF:10"))
    assert store.tables() == ["CAUSE", "KINDOF", "PROPS"]
    assert list(store.facts)[:2] == ["c001", "c002"]  # table, then line order


def test_tablestore_order_does_not_depend_on_input_order():
    rows = [Fact("u1", "B", "b one", False, 2), Fact("u1", "A", "a one", False, 5), Fact("u2", "A", "a two", True, 2),
            Fact("u2", "A", "a two again", True, 3)]
    for perm in (rows, rows[::-1]):
        store = build_tablestore(perm)
        assert store.facts["u1"].table == "A"
        assert store.facts["u2"].line == 2  # both deprecated: the first
        assert list(store.facts) == ["u2", "u1"]


@pytest.mark.parametrize(
    "content, line, message",
    [
        ("A\tB\t\n\tx\t\n", 1, "no '[SKIP] UID' column"),
        ("A\t[SKIP] UID\t\nx\tu1\t\textra\n", 2, "row has 4 fields but the header has 3"),
        ("A\t[SKIP] UID\t\nx\t \t\n", 2, "empty [SKIP] UID"),
        ("A\t[SKIP] DEP\t[SKIP] UID\t\n \tgone\tu1\t\n", 2, "row u1 has no fact text"),
        ("", 1, "is empty"),
        (b"A\t[SKIP] UID\t\nx\tu1\t\n\xff\tu2\t\n", 3, "not valid UTF-8: byte 0xff"),
        (b"A\t[SKIP] UID\t\nx\0\tu1\t\n", 2, "binary file"),
        (gzip.compress(b"A\t[SKIP] UID\t\n", mtime=0), 1, "is a gzip file"),
    ],
)
def test_bad_tables(tmp_path, content, line, message):
    p = write_file(tmp_path / "T.tsv", content)
    with pytest.raises(SourceFormatError) as e:
        read_table(p)
    assert e.value.path == str(p) and e.value.line == line
    assert message in e.value.message and e.value.hint


def test_long_row_with_empty_extra_cells_is_fine(tmp_path):
    p = write_file(tmp_path / "T.tsv", "A\t[SKIP] UID\t\nx\tu1\t\t\t\n")
    assert read_table(p) == [Fact("u1", "T", "x", False, 2)]


def test_missing_table_file(tmp_path):
    with pytest.raises(SourceNotFoundError):
        read_table(tmp_path / "nope.tsv")


# --------------------------------------------------------------------------- questions


def test_questions_train():
    qs = read_questions(DATA / "questions.train.tsv", "train")
    assert [q.qid for q in qs] == [f"FX_TRAIN_{i}" for i in range(1, 9)]
    assert [q.row for q in qs] == list(range(8))
    q1 = qs[0]
    assert (q1.split, q1.line, q1.answer_key, q1.answer) == ("train", 2, "B", "copper")
    assert q1.stem == "Which material is best for a cooking pot?"
    assert q1.choices == (("A", "wool"), ("B", "copper"), ("C", "glass"), ("D", "paper"))
    assert q1.choices_text == "(A) wool (B) copper (C) glass (D) paper"
    assert q1.explanation == (("k001", "CENTRAL"), ("p001", "GROUNDING"), ("k002", "LEXGLUE"), ("c003", "NEG"), ("k006", "NE"))
    assert (q1.topic, q1.flags, q1.ratings) == ("MAT_PROPERTIES", "SUCCESS", None)


def test_numeric_answer_keys():
    q2 = read_questions(DATA / "questions.train.tsv", "train")[1]
    assert q2.answer_key == "2" and q2.answer == "steam forms"
    assert [label for label, _ in q2.choices] == ["1", "2", "3", "4"]
    assert q2.topic == "MAT_COS, MAT_CHANGES"


def test_reader_keeps_what_the_builder_skips():
    qs = {q.qid: q for q in read_questions(DATA / "questions.train.tsv", "train")}
    assert qs["FX_TRAIN_3"].explanation == () and qs["FX_TRAIN_3"].flags == "EMPTY HELP READY"
    assert ("k005", "MAYBE") in qs["FX_TRAIN_4"].explanation
    assert qs["FX_TRAIN_6"].answer_key == "E" and qs["FX_TRAIN_6"].answer is None
    assert len(qs["FX_TRAIN_7"].choices) == 3 and qs["FX_TRAIN_7"].answer == "the sun"
    assert len(qs["FX_TRAIN_8"].choices) == 5 and qs["FX_TRAIN_8"].answer == "rain"


def test_bom_and_crlf():
    raw = (DATA / "questions.dev.tsv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and b"\r\n" in raw
    qs = read_questions(DATA / "questions.dev.tsv", "validation")
    assert [q.qid for q in qs] == ["FX_DEV_1", "FX_DEV_2", "FX_DEV_3"]
    assert qs[0].flags == "SUCCESS" and qs[2].explanation == (("p002", "CENTRAL"),)
    assert qs[2].stem == "Which material lets the Sun’s light pass through at 20 °C?"  # non-ASCII text


@pytest.mark.parametrize(
    "question, expected",
    [
        ("Why? (A) yes (B) no", ("Why?", (("A", "yes"), ("B", "no")))),
        ("Pick (1) one (2) two (3) three", ("Pick", (("1", "one"), ("2", "two"), ("3", "three")))),
        # a mark inside the stem that the options do not continue is part of the stem
        ("In figure (A) what is shown? (A) a dog (B) a cat", ("In figure (A) what is shown?", (("A", "a dog"), ("B", "a cat")))),
        ("Stem (B) x (A) y (B) z", ("Stem (B) x", (("A", "y"), ("B", "z")))),
        ("No options here", None),
        ("Only one (A) option", None),
        ("Gap (A) one (C) three", None),
        ("Empty (A) (B) two", None),
    ],
)
def test_split_choices(question, expected):
    assert split_choices(question) == expected


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("QuestionID\tAnswerKey\tquestion\n", 1, "no column 'explanation'"),
        (HEADER + "\n" + _row() + "\textra\n", 2, "row has 17 fields but the header has 16"),
        (HEADER + "\n" + _row() + "\n" + _row()[:30] + "\n", 3, "row has"),
        (HEADER + "\n" + _row(qid=" ") + "\n", 2, "empty QuestionID"),
        (HEADER + "\n" + _row(expl="k001") + "\n", 2, "'k001' is not UID|ROLE"),
        (HEADER + "\n" + _row(expl="k001|CENTRAL k002|") + "\n", 2, "'k002|' is not UID|ROLE"),
        (HEADER + "\n" + _row(expl="|CENTRAL") + "\n", 2, "not UID|ROLE"),
        (HEADER + "\n" + _row(expl="a|b|c") + "\n", 2, "not UID|ROLE"),
        ("\n", 1, "is empty"),
    ],
)
def test_bad_questions(tmp_path, text, line, message):
    p = write_file(tmp_path / "questions.train.tsv", text)
    with pytest.raises(SourceFormatError) as e:
        read_questions(p, "train")
    assert (e.value.path, e.value.line) == (str(p), line)
    assert message in e.value.message and e.value.hint


def test_questions_not_utf8_names_line(tmp_path):
    p = write_file(tmp_path / "q.tsv", (HEADER + "\n" + _row() + "\n").encode() + b"Q2\t\xe9\n")
    with pytest.raises(SourceFormatError, match="not valid UTF-8") as e:
        read_questions(p, "train")
    assert e.value.line == 3


# --------------------------------------------------------------------------- ratings


def test_ratings_dev():
    rs = read_ratings(DATA / "wt-expert-ratings.dev.json", "validation")
    assert [(r.qid, r.line) for r in rs] == [("FX_DEV_1", 4), ("FX_DEV_2", 50), ("FX_DEV_9", 68)]
    d1 = rs[0]
    assert (d1.stem, d1.answer, d1.topic, d1.choices, d1.answer_key, d1.explanation) == (
        "Why does a lake have waves on a windy day?", "wind causes waves", "EARTH_WEATHER", (), None, None)
    assert d1.ratings == (
        RatedFact("c004", "wind causes waves on a lake", 6, True, "CENTRAL"),
        RatedFact("p004", "a lake is a large body of water", 4, True, "GROUNDING"),  # relevance "4"
        RatedFact("c003", "friction causes heat", 0, False, None),  # isGoldWT21 "0", goldRole ""
        RatedFact("ext-0001", "waves carry energy across water", 2, False, None),
        RatedFact("c004", "wind causes waves on a lake", 1, True, "CENTRAL"),  # repeated: the reader keeps it
    )
    assert rs[1].ratings[0].is_gold is True  # isGoldWT21 1
    d9 = rs[2]
    assert d9.stem == "Which material keeps hands warm?"  # trailing space stripped
    assert d9.topic == "MAT_PROPERTIES, ENERGY_HEAT"
    assert [(f.is_gold, f.role) for f in d9.ratings] == [(True, "CENTRAL"), (False, None)]  # true/false, null


def test_ratings_test_file_keeps_repeats_and_empty_documents():
    rs = read_ratings(DATA / "wt-expert-ratings.test.json", "test")
    assert [r.qid for r in rs] == ["FX_TEST_1", "FX_TEST_2", "FX_TEST_1"]
    assert all(r.ratings == () for r in rs)
    assert rs[2].line == rs[0].line == 4  # a repeated qid points at its first occurrence


def test_join_ratings():
    qs = read_questions(DATA / "questions.dev.tsv", "validation")
    rs = read_ratings(DATA / "wt-expert-ratings.dev.json", "validation")
    joined = join_ratings(qs, rs + [rs[0]])
    assert [(q.qid, q.row) for q in joined] == [
        ("FX_DEV_1", 0), ("FX_DEV_2", 1), ("FX_DEV_3", 2), ("FX_DEV_9", 3), ("FX_DEV_1", 4)]
    d1 = joined[0]
    assert d1.choices and d1.answer_key == "B" and d1.explanation == (("c004", "CENTRAL"), ("p004", "GROUNDING"))
    assert d1.ratings == rs[0].ratings and d1.path.endswith("questions.dev.tsv")
    assert joined[2].ratings is None  # FX_DEV_3 has no ratings
    assert joined[4].ratings == rs[0].ratings and joined[4].explanation is None  # the repeat stays a JSON record


def _problem(**over) -> dict:
    p = {"qid": "Q1", "questionText": "Why?", "answerText": "yes", "qClass": ["T"],
         "documents": [{"uuid": "u1", "docText": "t", "relevance": 1, "isGoldWT21": "1", "goldRole": "CENTRAL"}]}
    p.update(over)
    return p


def _doc(**over) -> dict:
    d = {"uuid": "u1", "docText": "t", "relevance": 1, "isGoldWT21": "1", "goldRole": "CENTRAL"}
    d.update(over)
    return d


@pytest.mark.parametrize(
    "data, message",
    [
        ([], "no 'rankingProblems' list"),
        ({"problems": []}, "no 'rankingProblems' list"),
        ({"rankingProblems": {}}, "no 'rankingProblems' list"),
        ({"rankingProblems": [3]}, "rankingProblems[0] is a int"),
        ({"rankingProblems": [_problem(qid=None)]}, "has no string 'qid'"),
        ({"rankingProblems": [_problem(questionText=None)]}, "(Q1) has no string 'questionText'"),
        ({"rankingProblems": [_problem(answerText=3)]}, "has no string 'answerText'"),
        ({"rankingProblems": [_problem(qClass="T")]}, "'qClass' that is not a list of strings"),
        ({"rankingProblems": [_problem(documents={})]}, "'documents' that is not a list"),
        ({"rankingProblems": [_problem(documents=["u1"])]}, "documents[0] is a str"),
        ({"rankingProblems": [_problem(documents=[_doc(uuid=7)])]}, "documents[0] has no string 'uuid'"),
        ({"rankingProblems": [_problem(documents=[_doc(relevance=-1)])]}, "'relevance' -1"),
        ({"rankingProblems": [_problem(documents=[_doc(relevance=2.5)])]}, "'relevance' 2.5"),
        ({"rankingProblems": [_problem(documents=[_doc(relevance=True)])]}, "'relevance' True"),
        ({"rankingProblems": [_problem(documents=[_doc(relevance="high")])]}, "'relevance' 'high'"),
        ({"rankingProblems": [_problem(documents=[_doc(docText=None)])]}, "non-string 'docText'"),
        ({"rankingProblems": [_problem(documents=[_doc(isGoldWT21="yes")])]}, "'isGoldWT21' 'yes'"),
        ({"rankingProblems": [_problem(documents=[_doc(goldRole=3)])]}, "non-string 'goldRole'"),
    ],
)
def test_bad_ratings(tmp_path, data, message):
    p = write_file(tmp_path / "wt-expert-ratings.dev.json", json.dumps(data, indent=2))
    with pytest.raises(SourceFormatError) as e:
        read_ratings(p, "validation")
    assert e.value.path == str(p) and message in e.value.message and e.value.hint
    problems = data.get("rankingProblems") if isinstance(data, dict) else None
    if isinstance(problems, list) and isinstance(problems[0], dict) and problems[0].get("qid") == "Q1":
        assert e.value.line == 4  # the line of the problem's "qid"


def test_ratings_invalid_json_names_line(tmp_path):
    p = write_file(tmp_path / "r.json", '{\n  "rankingProblems": [\n    {"qid": "Q1",}\n  ]\n}\n')
    with pytest.raises(SourceFormatError, match="not valid JSON") as e:
        read_ratings(p, "test")
    assert e.value.line == 3


def test_ratings_float_relevance_that_is_whole_is_accepted(tmp_path):
    p = write_file(tmp_path / "r.json", json.dumps({"rankingProblems": [_problem(documents=[_doc(relevance=3.0)])]}))
    assert read_ratings(p, "test")[0].ratings[0].relevance == 3


# --------------------------------------------------------------------------- locating


def test_find_release_folder_or_parent():
    for src in (FIX, DATA):
        rel = find_release(src)
        assert rel.root == DATA
        assert [p.name for p in rel.tables] == ["CAUSE.tsv", "KINDOF.tsv", "PROPS.tsv"]
        assert {s: p.name for s, p in rel.questions.items()} == {
            "train": "questions.train.tsv", "validation": "questions.dev.tsv"}
        assert {s: p.name for s, p in rel.ratings.items()} == {
            "validation": "wt-expert-ratings.dev.json", "test": "wt-expert-ratings.test.json"}


def test_find_release_eval_period_layout(tmp_path):
    shutil.copytree(DATA, tmp_path / "data-evalperiod")
    assert find_release(tmp_path).root == tmp_path / "data-evalperiod"
    shutil.copytree(DATA, tmp_path / "data")
    with pytest.raises(SourceFormatError, match="two WorldTree releases"):
        find_release(tmp_path)


def test_find_release_errors(tmp_path):
    with pytest.raises(SourceNotFoundError):
        find_release(tmp_path / "missing")
    with pytest.raises(SourceFormatError, match="not a file"):
        find_release(DATA / "questions.train.tsv")
    with pytest.raises(SourceFormatError, match="no WorldTree release here"):
        find_release(tmp_path)
    write_file(tmp_path / "a" / "questions.train.tsv", HEADER + "\n")
    with pytest.raises(SourceFormatError, match="no tablestore"):
        find_release(tmp_path / "a")
    write_file(tmp_path / "b" / "tables" / "X.tsv", "A\t[SKIP] UID\t\n")
    with pytest.raises(SourceFormatError, match="no questions"):
        find_release(tmp_path / "b")


# --------------------------------------------------------------------------- real data

REAL = ("worldtree", "data")


@pytest.fixture(scope="module")
def real_store():
    return read_tablestore(sorted(shared_data(*REAL, "tables").glob("*.tsv")))


@pytest.mark.integration
def test_real_release_files():
    rel = find_release(shared_data("worldtree"))
    assert rel.root.name == "data" and len(rel.tables) == 81
    assert sorted(rel.questions) == ["train", "validation"] and sorted(rel.ratings) == ["test"]


@pytest.mark.integration
def test_real_tablestore(real_store):
    rows = [f for p in sorted(shared_data(*REAL, "tables").glob("*.tsv")) for f in read_table(p)]
    assert len(rows) == 9727
    assert len(real_store.facts) == 9720
    assert len(real_store.tables()) == 81
    assert sum(f.deprecated for f in real_store.facts.values()) == 691  # 694 rows minus 3 deprecated duplicates
    assert Counter(f.table for f in real_store.facts.values()).most_common(2) == [("KINDOF", 2135), ("SYNONYMY", 1231)]
    assert real_store.duplicates == (
        ("5095-dfd3-1847-a4a0", "COUPLEDRELATIONSHIP:166", "COUPLEDRELATIONSHIP:167"),
        ("2a93-fc4e-e52c-6897", "KINDOF:250", "KINDOF:251"),
        ("9b87-dd15-0cc5-32aa", "OPPOSITES:42", "OPPOSITES:43"),
        ("5689-a3ff-212f-560a", "OPPOSITES:45", "OPPOSITES:46"),
        ("9bf8-7511-a722-e068", "CONTAINS:22", "PROP-ENVIRONMENTATTRIB:2"),
        ("b69d-9d08-0ad6-3023", "UNIT:19", "UNIT:20"),
        ("a93e-05d1-02c8-7f9f", "VEHICLE:12", "VEHICLE:11"),  # the deprecated first row loses
    )
    facts = real_store.facts
    assert facts["dd38-58f9-345e-8dc4"] == Fact("dd38-58f9-345e-8dc4", "KINDOF", "ability is a kind of characteristic", False, 2)
    # the one-field-short row, and a row of the table with an unnamed text column
    assert facts["be77-688f-2811-7d8f"].text == "Al aska is a state located in the United States of America"
    assert facts["c4a6-7148-fa68-c5d0"].text == "getting ready for bed generally occurs during the night"
    assert facts["a93e-05d1-02c8-7f9f"].text == "DNA are a vehicle for passing genes from parent to offspring"
    assert facts["1980-256d-b685-846c"].text == "sound is a kind of energy"


@pytest.mark.integration
def test_real_questions(real_store):
    train = read_questions(shared_data(*REAL, "questions.train.tsv"), "train")
    dev = read_questions(shared_data(*REAL, "questions.dev.tsv"), "validation")
    assert (len(train), len(dev)) == (2207, 496)
    for qs, roles, numeric in (
        (train, {"CENTRAL": 5627, "GROUNDING": 3403, "LEXGLUE": 3092, "BACKGROUND": 255, "ROLE": 228, "NEG": 73, "NE": 17}, 89),
        (dev, {"CENTRAL": 1225, "GROUNDING": 817, "LEXGLUE": 624, "BACKGROUND": 58, "ROLE": 54, "NE": 20, "NEG": 3}, 25),
    ):
        assert Counter(role for q in qs for _, role in q.explanation) == roles
        assert sum(q.answer_key.isdigit() for q in qs) == numeric
        assert all(q.answer for q in qs)  # every key names an option
        assert all(uid in real_store.facts for q in qs for uid, _ in q.explanation)
    assert Counter(len(q.choices) for q in train) == {4: 2199, 3: 5, 5: 3}
    assert [q.qid for q in train if not q.explanation] == ["Mercury_7221305"]
    empty = next(q for q in train if q.qid == "Mercury_7221305")
    assert (empty.line, empty.flags) == (1796, "EMPTY HELP READY")
    # positions 0, 9 and last; question texts are pinned by digest only (Mercury licence)
    assert [train[i].qid for i in (0, 9, -1)] == ["NAEP_2005_4_S13+13", "AKDE&ED_2012_4_22", "Mercury_7064278"]
    assert [dev[i].qid for i in (0, 9, -1)] == ["MDSA_2009_5_16", "Mercury_177818", "NYSEDREGENTS_2014_8_8"]
    q0 = train[0]
    assert (q0.answer_key, q0.topic, q0.explanation[0]) == ("B", "CEL_APPARENTMOTION", ("73fa-1e22-26a8-1a7c", "CENTRAL"))
    assert sha256_hex(q0.stem)[:16] == "428e6f07bdb91427"
    assert sha256_hex(q0.answer)[:16] == "548f2db22cf15294"
    numeric = next(q for q in train if q.qid == "NYSEDREGENTS_2009_8_3")
    assert (numeric.answer_key, [c for c, _ in numeric.choices]) == ("3", ["1", "2", "3", "4"])


@pytest.mark.integration
def test_real_test_ratings():
    rs = read_ratings(shared_data(*REAL, "wt-expert-ratings.test.json"), "test")
    assert len(rs) == 1670 and len({r.qid for r in rs}) == 1664
    assert all(r.ratings == () for r in rs)
    repeated = sorted(q for q, n in Counter(r.qid for r in rs).items() if n > 1)
    assert repeated == ["Mercury_184170", "Mercury_415686", "Mercury_7030555", "Mercury_7212993",
                        "TIMSS_2003_8_pg48", "VASoL_2009_5_28"]
    assert (rs[0].qid, rs[0].line, rs[0].topic) == ("Mercury_SC_LBS10619", 4, "CEL_APPARENTMOTION")
    assert (rs[-1].qid, rs[-1].line) == ("Mercury_SC_408251", 17018)
