"""The `adversarial:` recipe key (issue 30): distractors chosen and easy candidates dropped against
linear lexical attackers trained on partitions of the train lists; report, determinism, bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gradebench.recipes import load_recipe
from tests.conftest import run_cli, shared_data

ADV = """extends: esnli-contrast-v2
name: adv-test
version: 1
description: a small adversarial build
adversarial:
  attackers:
    - {name: blind, features: [words, label_words]}
    - {name: overlap, features: [overlap, length, negation]}
  partitions: 4
  rounds: 2
  target: 0.51
  pool: 6
  replace: [sibling, unrelated]
  drop: [unrelated, flipped]
"""
LIMIT = 1500


def _recipe(tmp_path: Path, text: str = ADV, name: str = "adv.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_attacker_learns_a_separable_order():
    from gradebench.datasets.tiers.attackers import Featurizer, fit_pairwise, matrix, pair_rows

    f = Featurizer(["overlap"], 8)
    hyp = "a dog runs in the park".split()
    rows, grades = [], []
    for k in range(6):  # the better candidate repeats the hypothesis, the worse one does not
        rows += [f.row(["x"], hyp, "entailment", f"the dog runs {k}"), f.row(["x"], hyp, "entailment", f"cats sleep {k}")]
        grades.append(np.array([1, 0]))
    x = matrix(rows, f.dim)
    hi, lo = pair_rows(grades, [0, 2, 4, 6, 8, 10])
    w = fit_pairwise(x, hi, lo, 1.0)
    s = x @ w
    assert (s[hi] > s[lo]).all()


def test_label_overlap_lets_a_linear_attacker_weigh_overlap_per_label():
    """Overlap with the hypothesis makes the better candidate under one label and the worse one under
    the other: no single weight on overlap orders both, the label-crossed overlap does."""
    from gradebench.datasets.tiers.attackers import Featurizer, fit_pairwise, matrix, pair_rows

    hyp = "a dog runs in the park".split()
    for groups, separable in ((["overlap"], False), (["overlap", "label_overlap"], True)):
        f = Featurizer(groups, 8)
        rows, grades = [], []
        for k in range(6):
            label = "entailment" if k % 2 else "contradiction"
            close, far = f.row(["x"], hyp, label, f"the dog runs {k}"), f.row(["x"], hyp, label, f"cats sleep {k}")
            rows += [close, far] if label == "entailment" else [far, close]
            grades.append(np.array([1, 0]))
        x = matrix(rows, f.dim)
        hi, lo = pair_rows(grades, [0, 2, 4, 6, 8, 10])
        s = x @ fit_pairwise(x, hi, lo, 1e-3)
        assert bool((s[hi] > s[lo]).all()) is separable, groups


def test_adversarial_key_stays_out_of_other_dumps():
    for name in ("esnli-contrast", "esnli-contrast-v2"):
        assert "adversarial" not in load_recipe(name).model_dump(mode="json")


@pytest.mark.parametrize(("change", "needle"), [
    ("  target: 0.51\n", "  target: 0.4\n"),
    ("  pool: 6\n", "  pool: 1\n"),
    ("  replace: [sibling, unrelated]\n", "  replace: [flipped]\n"),
    ("  pool: 6\n", "  pool: 6\n  list_tau: 0.4\n"),
])
def test_bad_adversarial_keys_fail_in_one_line(tmp_path, capsys, change, needle):
    p = _recipe(tmp_path, ADV.replace(change, needle))
    code, out, err = run_cli(capsys, "build", p, "--source", tmp_path, "--out", tmp_path / "out")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "adversarial" in err and str(p) in err
    assert not (tmp_path / "out").exists()


def test_adversarial_needs_a_borrowing_tier(tmp_path, capsys):
    text = ADV.replace("extends: esnli-contrast-v2", "extends: esnli").replace(
        "  replace: [sibling, unrelated]\n  drop: [unrelated, flipped]\n", "  drop: [poor]\n")
    p = _recipe(tmp_path, text)
    code, _, err = run_cli(capsys, "build", p, "--source", tmp_path, "--out", tmp_path / "out")
    assert code == 2 and "borrows explanations" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.integration
def test_too_few_train_lists_writes_nothing(tmp_path, capsys):
    p = _recipe(tmp_path, ADV.replace("partitions: 4", "partitions: 64"))
    code, _, err = run_cli(capsys, "build", p, "--source", shared_data("esnli", "eSNLI"), "--limit", 80,
                           "--out", tmp_path / "out", "--no-validity")
    assert code == 2 and "adversarial.partitions" in err and len(err.strip().splitlines()) == 1
    assert not any((tmp_path / "out").rglob("*.parquet"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from gradebench.benchmark.engine import build

    tmp = tmp_path_factory.mktemp("adv")
    p = _recipe(tmp)
    src = shared_data("esnli", "eSNLI")
    one = build(p, source=src, out=tmp / "w1", limit=LIMIT, workers=1, progress=False, validate=False)
    two = build(p, source=src, out=tmp / "w2", limit=LIMIT, workers=2, progress=False, validate=False)
    plain = build(_recipe(tmp, ADV.split("adversarial:")[0], "plain.yaml"), source=src, out=tmp / "p", limit=LIMIT,
                  workers=1, progress=False, validate=False)
    return one, two, plain


@pytest.mark.integration
def test_adversarial_build_is_deterministic_and_fingerprinted(built):
    import json

    one, two, plain = built
    assert one.fingerprint == two.fingerprint != plain.fingerprint
    m1 = json.loads((Path(one.path) / "manifest.json").read_text())
    m2 = json.loads((Path(two.path) / "manifest.json").read_text())
    assert m1["file_digests"] == m2["file_digests"] and m1["adversarial"] == m2["adversarial"]
    assert "adversarial" in m1["recipe"]


@pytest.mark.integration
def test_adversarial_report_and_effect(built):
    import json

    import pyarrow.parquet as pq

    one, _, plain = built
    m = json.loads((Path(one.path) / "manifest.json").read_text())
    rep = m["adversarial"]
    first = rep["rounds"][0]
    assert first["replaced"]["sibling"] > 0 and first["replaced"]["unrelated"] > 0
    assert set(first["before"]["attackers"]) == {"train", "validation", "test"}
    assert {"own>sibling", "own>unrelated"} <= set(first["before"]["tier_pairs"])
    for name in ("blind", "overlap"):  # the filter's own attackers order the filtered train lists worse
        assert first["after"]["attackers"]["train"][name] < first["before"]["attackers"]["train"][name]
    assert sum(rep["lists_out"].values()) <= sum(rep["lists_in"].values())
    assert rep["lists_out"] == {s: v["queries"] for s, v in m["splits"].items()}
    # unrelated texts are still lent once per split, and the candidates differ from the plain build's
    for split, files in one.files.items():
        t = pq.read_table([f"{one.path}/{f}" for f in files], columns=["tier", "candidate"]).to_pylist()
        unrelated = [r["candidate"] for r in t if r["tier"] == "unrelated"]
        assert len(unrelated) == len(set(unrelated))
    card = (Path(one.path) / "README.md").read_text()
    assert "## Adversarial filter" in card and "own>unrelated" in card


def test_choose_default_stays_out_of_the_dump():
    """``choose`` came after v3's first builds: left at ``hardest`` it is not in the resolved recipe."""
    from gradebench.datasets.tiers.spec import AdversarialSpec

    spec = {"attackers": [{"name": "a", "features": ["overlap"]}], "replace": ["sibling"]}
    assert "choose" not in AdversarialSpec(**spec).model_dump(mode="json")
    assert AdversarialSpec(**spec, choose="chance").model_dump(mode="json")["choose"] == "chance"


@pytest.mark.integration
def test_chance_replacements_leave_pairs_nearer_chance(tmp_path, built):
    """``choose: chance`` swaps in the alternatives ordered nearest chance: after replacing, the
    pooled members' agreement on the replaced tiers' pairs is nearer 0.5 than with ``hardest``
    (which pushes them below it: an inverted order a model trained on the filtered lists learns)."""
    import json

    from gradebench.benchmark.engine import build

    one = built[0]
    p = _recipe(tmp_path, ADV.replace("  drop: [unrelated, flipped]\n", "  drop: [unrelated, flipped]\n  choose: chance\n"))
    chance = build(p, source=shared_data("esnli", "eSNLI"), out=tmp_path / "c", limit=LIMIT, workers=1,
                   progress=False, validate=False)
    assert chance.fingerprint != one.fingerprint

    def distance(result) -> float:
        rep = json.loads((Path(result.path) / "manifest.json").read_text())["adversarial"]
        pairs = rep["rounds"][0]["after_replace"]["tier_pairs"]
        return float(np.mean([abs(v - 0.5) for k, v in pairs.items() if "sibling" in k or "unrelated" in k]))

    assert distance(chance) < distance(one)


def test_length_match_default_stays_out_of_the_dump_and_is_checked():
    """``length_match`` came after v3: left unset it is not in the resolved recipe (v3's fingerprint
    stays); a negative value is refused."""
    from pydantic import ValidationError

    from gradebench.datasets.tiers.spec import AdversarialSpec

    spec = {"attackers": [{"name": "a", "features": ["overlap"]}], "replace": ["sibling"]}
    assert "length_match" not in AdversarialSpec(**spec).model_dump(mode="json")
    assert AdversarialSpec(**spec, length_match=2).model_dump(mode="json")["length_match"] == 2
    with pytest.raises(ValidationError):
        AdversarialSpec(**spec, length_match=-1)
    assert "length_match" not in load_recipe("esnli-contrast-v3").model_dump(mode="json")["adversarial"]


@pytest.mark.integration
def test_length_matched_replacements_track_the_own_explanations_length(tmp_path, built):
    """With ``length_match: 1`` every replaced sibling/unrelated candidate is within one word of its
    list's own explanation (a candidate the filter did not replace may not be); without it, many
    are further away."""
    import json

    import pyarrow.parquet as pq

    from gradebench.benchmark.engine import build
    from gradebench.words import words

    one = built[0]
    p = _recipe(tmp_path, ADV.replace("  pool: 6\n", "  pool: 6\n  length_match: 1\n"))
    matched = build(p, source=shared_data("esnli", "eSNLI"), out=tmp_path / "m", limit=LIMIT, workers=1,
                    progress=False, validate=False)
    assert matched.fingerprint != one.fingerprint
    assert json.loads((Path(matched.path) / "manifest.json").read_text())["recipe"]["adversarial"]["length_match"] == 1

    def gaps(result, plain_rows: set | None = None) -> list[int]:
        out = []
        for files in result.files.values():
            rows = pq.read_table([f"{result.path}/{f}" for f in files],
                                 columns=["query_id", "tier", "candidate"]).to_pylist()
            own = {r["query_id"]: len(words(r["candidate"])) for r in rows if r["tier"] == "own"}
            out += [abs(len(words(r["candidate"])) - own[r["query_id"]]) for r in rows
                    if r["tier"] in ("sibling", "unrelated") and r["query_id"] in own
                    and (plain_rows is None or (r["query_id"], r["candidate"]) not in plain_rows)]
        return out

    def rows_of(result) -> set:
        return {(r["query_id"], r["candidate"]) for files in result.files.values()
                for r in pq.read_table([f"{result.path}/{f}" for f in files],
                                       columns=["query_id", "candidate"]).to_pylist()}

    plain = built[2]
    replaced = gaps(matched, rows_of(plain))  # the candidates the filter put in
    assert replaced and max(replaced) <= 1
    assert max(gaps(one, rows_of(plain))) > 1  # without length_match, replacements of any length


@pytest.mark.integration
def test_own_explanation_chosen_among_the_pairs_annotators(tmp_path, built):
    """``replace: [own, ...]``: a list's own explanation is the one of its pair's (up to three)
    explanations the members order worst; a list whose flipped candidate was made from its own
    explanation keeps that one; without ``own`` in ``replace`` the own tier is unchanged."""
    import json

    import pyarrow.parquet as pq

    from gradebench.benchmark.engine import build
    from gradebench.datasets.esnli.reader import parse_esnli_preprocessed

    src = shared_data("esnli", "eSNLI")
    p = _recipe(tmp_path, ADV.replace("  replace: [sibling, unrelated]\n", "  replace: [own, sibling, unrelated]\n"))
    chosen = build(p, source=src, out=tmp_path / "o", limit=LIMIT, workers=1, progress=False, validate=False)
    report = json.loads((Path(chosen.path) / "manifest.json").read_text())["adversarial"]
    assert report["rounds"][0]["replaced"]["own"] > 0
    examples = {e.source_id: e for rows in parse_esnli_preprocessed(src).values() for e in rows}

    def lists(result) -> dict[str, dict[str, list[str]]]:
        out: dict[str, dict[str, list[str]]] = {}
        for files in result.files.values():
            for r in pq.read_table([f"{result.path}/{f}" for f in files],
                                   columns=["source_id", "tier", "candidate"]).to_pylist():
                out.setdefault(r["source_id"], {}).setdefault(r["tier"], []).append(r["candidate"])
        return out

    new, old = lists(chosen), lists(built[0])
    changed = 0
    for sid, tiers in new.items():
        [own] = tiers["own"]
        mine = [x.strip() for x in examples[sid].explanations]
        assert own in mine
        assert own not in [c for t, cs in tiers.items() if t != "own" for c in cs]
        if tiers.get("flipped"):  # tied to the text its flip was made from
            assert sid not in old or own == old[sid]["own"][0]
        elif sid in old and own != old[sid]["own"][0]:
            changed += 1
    assert changed > 0
    plain = lists(built[2])  # without `own` in `replace`, each list keeps the own text selection gave it
    assert all(tiers["own"] == plain[sid]["own"] for sid, tiers in old.items())


def _own_choice_setup(choose: str = "hardest"):
    """A v3 recipe choosing its own tier, one list of three annotators' explanations, and a stub
    ensemble whose scores are fixed per text."""
    from gradebench.datasets.records import NLIExample
    from gradebench.datasets.tiers import adversarial as A
    from gradebench.datasets.tiers.candidates import Query
    from gradebench.datasets.tiers.spec import TieredSection

    dump = load_recipe("esnli-contrast-v3").model_dump(mode="json")
    d = {k: dump[k] for k in TieredSection.model_fields if k in dump}
    d["adversarial"].update(replace=["own", "sibling", "unrelated"], choose=choose)
    recipe = TieredSection.model_validate(d)
    ex = NLIExample("test", 0, "p1", "a dog runs .", "an animal moves .", "entailment",
                    ("first text .", "second text .", "third text ."))
    q = Query(ex, "q1", "test", {"sibling": (("a sibling .", "p2"),), "unrelated": (("far away .", "p3"),),
                                 "flipped": ()})
    lst = A._List(q, "test", dict(q.borrowed), ["a", "dog", "runs"], ["an", "animal", "moves"])
    lst.borrowed["own"] = (("first text .", "p1"),)
    pools = {("q1", "own"): [(t, "p1") for t in ex.explanations]}

    class Stub:  # [attackers, members, texts]: the better of a pair scores higher when ordered right
        values = {"first text .": 5.0, "second text .": -5.0, "third text .": 1.0}

        def scores(self, _lst, texts):
            return np.array([[[self.values.get(t, 1.0) for t in texts]]])

    grade = {t.name: t.relevance for t in recipe.tiers}
    return A, recipe, recipe.adversarial, Stub(), lst, grade, pools


@pytest.mark.parametrize(("choose", "chosen"), [("hardest", "second text ."), ("chance", "third text .")])
def test_own_explanation_is_the_annotators_one_the_members_order_worst(choose, chosen):
    """Own first: the annotator's text ordered below every other candidate is the hardest; the one
    tied with them is nearest chance. While the list holds a flipped candidate made from its own
    explanation, the own one stays."""
    from collections import Counter

    A, recipe, adv, stub, lst, grade, pools = _own_choice_setup(choose)
    assert A._replace(adv, stub, lst, recipe, grade, "own", 0, pools, Counter())
    assert lst.borrowed["own"] == ((chosen, "p1"),)
    A, recipe, adv, stub, lst, grade, pools = _own_choice_setup(choose)
    lst.borrowed["flipped"] = (("first text is not .", "p1"),)
    assert not A._replace(adv, stub, lst, recipe, grade, "own", 0, pools, Counter())
    assert lst.borrowed["own"] == (("first text .", "p1"),)


def test_own_tier_must_come_first_in_replace():
    from pydantic import ValidationError

    from gradebench.datasets.tiers.spec import TieredSection

    dump = load_recipe("esnli-contrast-v3").model_dump(mode="json")
    d = {k: dump[k] for k in TieredSection.model_fields if k in dump}
    d["adversarial"]["replace"] = ["sibling", "own"]
    with pytest.raises(ValidationError, match="list it first"):
        TieredSection.model_validate(d)
    d["adversarial"]["replace"] = ["own", "sibling"]
    TieredSection.model_validate(d)


def test_length_match_needs_an_own_explanation_tier():
    """Without a tier of the pair's own explanation there is no length to match: refused."""
    from pydantic import ValidationError

    from gradebench.datasets.tiers.spec import TieredSection

    dump = load_recipe("esnli-contrast-v3").model_dump(mode="json")
    d = {k: dump[k] for k in TieredSection.model_fields if k in dump}
    d["adversarial"]["length_match"] = 1
    TieredSection.model_validate(d)  # with the own tier: fine
    d["tiers"] = [t for t in d["tiers"] if t["candidates"] != "explanation"]
    with pytest.raises(ValidationError, match="length_match needs a tier of the pair's own explanation"):
        TieredSection.model_validate(d)


def test_list_tau_default_stays_out_of_the_dump_and_is_checked():
    """``list_tau`` came after v3: left unset it is not in the resolved recipe (v3's fingerprint
    stays); a share at or under chance is refused."""
    from pydantic import ValidationError

    from gradebench.datasets.tiers.spec import AdversarialSpec

    spec = {"attackers": [{"name": "a", "features": ["overlap"]}], "replace": ["sibling"]}
    assert "list_tau" not in AdversarialSpec(**spec).model_dump(mode="json")
    assert AdversarialSpec(**spec, list_tau=0.7).model_dump(mode="json")["list_tau"] == 0.7
    for bad in (0.5, 0.2, 1.5):
        with pytest.raises(ValidationError):
            AdversarialSpec(**spec, list_tau=bad)
    assert "list_tau" not in load_recipe("esnli-contrast-v3").model_dump(mode="json")["adversarial"]


@pytest.mark.integration
def test_list_tau_drops_the_lists_the_members_order_right(tmp_path, built):
    """With ``list_tau`` the first round trains and replaces as without it (same state after
    replacing), then also drops every list whose pooled right-vote share reaches ``list_tau``:
    more lists go, and the lists kept are ordered worse by the members."""
    import json

    from gradebench.benchmark.engine import build

    one = built[0]
    p = _recipe(tmp_path, ADV.replace("  rounds: 2\n", "  rounds: 1\n").replace("  pool: 6\n", "  pool: 6\n  list_tau: 0.6\n"))
    q = _recipe(tmp_path, ADV.replace("  rounds: 2\n", "  rounds: 1\n"), "plain1.yaml")
    src = shared_data("esnli", "eSNLI")
    filtered = build(p, source=src, out=tmp_path / "l", limit=LIMIT, workers=1, progress=False, validate=False)
    base = build(q, source=src, out=tmp_path / "b", limit=LIMIT, workers=1, progress=False, validate=False)
    assert filtered.fingerprint not in (one.fingerprint, base.fingerprint)
    f_rep, b_rep = (json.loads((Path(r.path) / "manifest.json").read_text())["adversarial"] for r in (filtered, base))
    assert f_rep["settings"]["list_tau"] == 0.6 and "list_tau" not in b_rep["settings"]
    f1, b1 = f_rep["rounds"][0], b_rep["rounds"][0]
    assert f1["after_replace"] == b1["after_replace"] and f1["replaced"] == b1["replaced"]
    assert sum(f1["dropped_lists"].values()) > sum(b1["dropped_lists"].values())
    assert "easy_lists" not in b1 and 0 < sum(f1["easy_lists"].values()) <= sum(f1["dropped_lists"].values())
    assert "(by list_tau: " in (Path(filtered.path) / "README.md").read_text()
    assert sum(f_rep["lists_out"].values()) < sum(b_rep["lists_out"].values())
    for name in ("blind", "overlap"):
        assert f1["after"]["attackers"]["train"][name] < b1["after"]["attackers"]["train"][name]


def test_mirror_default_stays_out_of_the_dump_and_is_checked():
    """``mirror`` came after v3: left unset it is not in the resolved recipe; with it, a mirrored tier
    may not be dropped or chosen as a sibling, and length_match does not apply."""
    from gradebench.datasets.tiers.spec import AdversarialSpec

    spec = {"attackers": [{"name": "a", "features": ["overlap"]}], "replace": ["own"]}
    assert "mirror" not in AdversarialSpec(**spec).model_dump(mode="json")
    assert AdversarialSpec(**spec, mirror=True).model_dump(mode="json")["mirror"] is True
    assert "mirror" not in load_recipe("esnli-contrast-v3").model_dump(mode="json")["adversarial"]
    v4 = load_recipe("esnli-contrast-v4").model_dump(mode="json")
    v3 = load_recipe("esnli-contrast-v3").model_dump(mode="json")
    assert v4["adversarial"]["mirror"] is True and v4["seed_namespace"] == v3["seed_namespace"]
    assert v4["tiers"] == v3["tiers"] and v4["adversarial"]["attackers"] == v3["adversarial"]["attackers"]


@pytest.mark.parametrize(("change", "needle"), [
    ("  replace: [sibling, unrelated]\n", "  replace: [own, sibling, unrelated]\n  mirror: true\n"),
    ("  replace: [sibling, unrelated]\n", "  replace: [own, unrelated]\n  mirror: true\n"),
    ("  replace: [sibling, unrelated]\n  drop: [unrelated, flipped]\n",
     "  replace: [own, unrelated]\n  drop: [flipped]\n  mirror: true\n  length_match: 2\n"),
])
def test_bad_mirror_keys_fail_in_one_line(tmp_path, capsys, change, needle):
    p = _recipe(tmp_path, ADV.replace(change, needle))
    code, out, err = run_cli(capsys, "build", p, "--source", tmp_path, "--out", tmp_path / "out")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "mirror" in err and str(p) in err
    assert not (tmp_path / "out").exists()


MIRROR = ADV.replace("  replace: [sibling, unrelated]\n  drop: [unrelated, flipped]\n",
                     "  replace: [own, unrelated]\n  drop: [flipped]\n  mirror: true\n  list_tau: 0.65\n")


@pytest.mark.integration
def test_mirror_lends_own_explanations_both_ways(tmp_path):
    """``mirror``: every sibling and unrelated candidate is the own explanation of another list of its
    split (a sibling one of the same premise, its label other, the link mutual; an unrelated one of
    another premise, its label the same, lent once), so a scorer that reads only the candidate (any
    score of the text) orders the own > sibling pairs exactly at chance; lists dropped by list_tau take
    their own explanations back; the same bytes with 1 and 2 workers."""
    import json
    import zlib

    import pyarrow.parquet as pq

    from gradebench.benchmark.engine import build
    from gradebench.datasets.esnli.reader import parse_esnli_preprocessed
    from gradebench.datasets.tiers.candidates import premise_key

    src = shared_data("esnli", "eSNLI")
    p = _recipe(tmp_path, MIRROR)
    one = build(p, source=src, out=tmp_path / "w1", limit=LIMIT, workers=1, progress=False, validate=False)
    two = build(p, source=src, out=tmp_path / "w2", limit=LIMIT, workers=2, progress=False, validate=False)
    assert one.fingerprint == two.fingerprint
    report = json.loads((Path(one.path) / "manifest.json").read_text())["adversarial"]
    assert report["settings"]["mirror"] is True and report["settings"]["list_tau"] == 0.65
    r1 = report["rounds"][0]
    assert r1["replaced"]["sibling"] > 0 and r1["replaced"]["unrelated"] > 0 and sum(r1["easy_lists"].values()) > 0
    assert "lent to" in (Path(one.path) / "README.md").read_text()
    examples = {e.source_id: e for rows in parse_esnli_preprocessed(src).values() for e in rows}
    checked = 0
    for split, files in one.files.items():
        lists: dict[str, dict[str, list[str]]] = {}
        for r in pq.read_table([f"{one.path}/{f}" for f in files], columns=["source_id", "tier", "candidate"]).to_pylist():
            lists.setdefault(r["source_id"], {}).setdefault(r["tier"], []).append(r["candidate"])
        owner = {}
        for sid, tiers in lists.items():
            assert tiers["own"][0] not in owner
            owner[tiers["own"][0]] = sid
        lent = []
        right = pairs = 0.0
        for sid, tiers in lists.items():
            ex = examples[sid]
            for text in tiers.get("sibling", []):
                other = examples[owner[text]]  # another list's own explanation ...
                assert owner[text] != sid and premise_key(other.premise) == premise_key(ex.premise)
                assert other.label != ex.label and tiers["own"][0] in lists[owner[text]]["sibling"]  # ... both ways
                a, b = (zlib.crc32(x.encode()) for x in (tiers["own"][0], text))
                right += (a > b) + 0.5 * (a == b)
                pairs += 1
            for text in tiers.get("unrelated", []):
                other = examples[owner[text]]
                assert premise_key(other.premise) != premise_key(ex.premise) and other.label == ex.label
                lent.append(text)
        assert len(lent) == len(set(lent))
        if pairs:
            assert right == pairs / 2
            checked += 1
    assert checked == 3
