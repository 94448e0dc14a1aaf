"""Learned validity figures: recorded in every manifest and card, deterministic, and the warning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gradebench.experiments import validity
from gradebench.experiments.build import build
from gradebench.cli.main import main
from tests.conftest import FIXTURES, shared_data


def test_demo_figures_are_recorded_and_deterministic(tmp_path, monkeypatch):
    monkeypatch.setattr(validity, "MIN_LISTS", 2)
    a = build("demo", out=tmp_path / "a", progress=False)
    b = build("demo", out=tmp_path / "b", progress=False)
    assert a.validity == b.validity
    v = a.validity
    assert v["carved"] is False and v["train_lists"] == a.splits["train"]["queries"]
    for name in ("query_blind", "bm25", "lexical_ceiling"):
        assert 0.0 <= v[name]["pairwise_agreement"] <= 1.0 and 0.0 <= v[name]["ndcg@5"] <= 1.0
    assert json.loads((Path(a.path) / "manifest.json").read_text())["validity"] == v
    assert "## Validity: how far shortcuts get" in (Path(a.path) / "README.md").read_text()


def test_benchmark_without_train_split_is_carved(tmp_path, monkeypatch):
    monkeypatch.setattr(validity, "MIN_LISTS", 1)
    r = build("winowhy", source=FIXTURES / "winowhy", out=tmp_path, progress=False)
    assert set(r.splits) == {"test"}
    assert r.validity["carved"] is True


def test_too_few_lists_give_no_figures(tmp_path):
    r = build("winowhy", source=FIXTURES / "winowhy", out=tmp_path, progress=False)
    assert "skipped" in r.validity and "query_blind" not in r.validity


def test_no_validity_option(tmp_path, monkeypatch):
    monkeypatch.setattr(validity, "MIN_LISTS", 2)
    plain = build("demo", out=tmp_path, progress=False, validity=False)
    assert plain.validity is None
    card = Path(plain.path) / "README.md"
    assert "## Validity" not in card.read_text()
    data = {p.name: p.read_bytes() for p in (Path(plain.path) / "data").iterdir()}
    # asked for later, the figures are added to the cached build (card and manifest), data untouched
    later = build("demo", out=tmp_path, progress=False)
    assert later.cached and later.path == plain.path and later.fingerprint == plain.fingerprint
    assert later.validity == build("demo", out=tmp_path / "fresh", progress=False).validity
    assert "## Validity" in card.read_text()
    assert json.loads((Path(plain.path) / "manifest.json").read_text())["validity"] == later.validity
    assert {p.name: p.read_bytes() for p in (Path(plain.path) / "data").iterdir()} == data


def test_warning_threshold():
    assert validity.warning(None) is None
    assert validity.warning({"query_blind": {"pairwise_agreement": 0.6}}) is None
    assert "0.950" in validity.warning({"query_blind": {"pairwise_agreement": 0.95}})


def _figs(qb: float, bm25: float, ceiling: float | None) -> dict:
    out = {"query_blind": {"pairwise_agreement": qb}, "bm25": {"pairwise_agreement": bm25}}
    out["lexical_ceiling"] = None if ceiling is None else {"pairwise_agreement": ceiling}
    return out


def test_card_reads_the_figures_in_words():
    from gradebench.benchmark.card import validity_reading

    shortcut = validity_reading(_figs(1.0, 0.7, 0.8))
    assert shortcut[0].startswith("- **Warning:**") and "100.0%" in shortcut[0]
    blind = validity_reading(_figs(0.5, 0.95, 0.6))
    assert "at chance" in blind[0]
    assert "(BM25) orders 95.0%" in blind[1] and "barely separates" in blind[1]  # the best lexical ranker is named
    room = validity_reading(_figs(0.58, 0.66, 0.72))
    assert "below the warning level" in room[0]
    assert "(LambdaMART) orders 72.0%" in room[1] and "the 28.0% of pairs" in room[1]
    assert "(BM25) orders 66.0%" in validity_reading(_figs(0.58, 0.66, None))[1]  # no lightgbm: BM25 alone
    assert "leaves nothing" in validity_reading(_figs(1.0, 0.8, 1.0))[1]


def test_card_notes_reach_the_card_but_not_the_fingerprint(tmp_path, monkeypatch):
    from gradebench.recipes.loader import load_recipe

    monkeypatch.setattr(validity, "MIN_LISTS", 2)
    plain = build("demo", out=tmp_path / "a", progress=False)
    recipe = load_recipe("demo").model_copy(update={"card_notes": "What the figures mean for the demo."})
    noted = build(recipe, out=tmp_path / "b", progress=False)
    assert noted.fingerprint == plain.fingerprint
    card = (Path(noted.path) / "README.md").read_text()
    assert "What these figures show:" in card and "What the figures mean for the demo." in card
    assert "What the figures mean" not in (Path(plain.path) / "README.md").read_text()
    # editing the notes finds the folder cached, and its card and manifest are brought up to date
    again = build(recipe.model_copy(update={"card_notes": "Revised."}), out=tmp_path / "b", progress=False)
    assert again.cached and again.path == noted.path
    assert "Revised." in (Path(noted.path) / "README.md").read_text()
    assert json.loads((Path(noted.path) / "manifest.json").read_text())["recipe"]["card_notes"] == "Revised."
    assert not list(Path(noted.path).glob(".*.tmp"))
    data = sorted(p.name for p in (Path(plain.path) / "data").iterdir())
    for name in data:  # same data bytes
        assert (Path(plain.path) / "data" / name).read_bytes() == (Path(noted.path) / "data" / name).read_bytes()


@pytest.mark.integration
def test_real_esnli_warns_and_esnli_human_is_harder(tmp_path, capsys):
    source = shared_data("esnli", "eSNLI")
    code = main(["build", "esnli", "--source", str(source), "--resplit", "80/10/10", "--out", str(tmp_path), "--json"])
    out, err = capsys.readouterr()
    assert code == 0
    v = json.loads(out)["validity"]
    assert v["query_blind"]["pairwise_agreement"] > 0.95  # the templates give the grades away
    assert "gradebench: warning: a query-blind probe" in err
    human = build("esnli-human", source=source, resplit=(80, 10, 10), out=tmp_path, progress=False).validity
    assert human["query_blind"]["pairwise_agreement"] < 0.7
    assert human["bm25"]["pairwise_agreement"] > human["query_blind"]["pairwise_agreement"]


def test_figures_are_the_validity_specs_through_the_one_evaluation_path(demo_lists_for_validity):
    from gradebench.metrics import NDCG, PairwiseAgreement
    from gradebench.training.evaluation import evaluate_lists

    lists = demo_lists_for_validity
    assert validity.VALIDITY_METRICS == (PairwiseAgreement(), NDCG(k=5))
    scores = -lists.relevance + 0.1 * lists.score  # a wrong ranking with a little signal
    figures = validity._figures(scores, lists)
    result = evaluate_lists(scores, lists, validity.VALIDITY_METRICS)
    assert list(figures) == ["pairwise_agreement", "ndcg@5"]  # the manifest keys of every shipped build
    assert figures == {k: round(v, 4) for k, v in result.values(validity.VALIDITY_METRICS).items()}


@pytest.fixture()
def demo_lists_for_validity(tmp_path):
    from gradebench.benchmark.lists import open_benchmark

    return open_benchmark(build("demo", out=tmp_path, progress=False, validity=False).path).lists("test")
