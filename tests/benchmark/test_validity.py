"""Learned validity figures: recorded in every manifest and card, deterministic, and the warning."""

from __future__ import annotations

import json
import re
from contextlib import nullcontext
from pathlib import Path

import pytest

from gradebench.cli.main import main
from gradebench.experiments import validity
from gradebench.experiments.build import build
from tests.conftest import FIXTURES, shared_data


def test_demo_figures_are_recorded_and_deterministic(tmp_path, monkeypatch):
    monkeypatch.setattr(validity, "MIN_LISTS", 2)
    a = build("demo", out=tmp_path / "a", progress=False)
    b = build("demo", out=tmp_path / "b", progress=False)
    assert a.validity == b.validity
    v = a.validity
    assert v["carved"] is False and v["train_lists"] == a.splits["train"]["queries"]
    assert (v["version"], v["mode"], v["query_label"]) == (validity.VALIDITY_VERSION, "fast", "label")
    for name in ("query_blind", "label_aware", "bm25", "lexical_ceiling_dense", "lexical_ceiling_strong"):
        assert 0.0 <= v[name]["pairwise_agreement"] <= 1.0 and 0.0 <= v[name]["ndcg@5"] <= 1.0
    assert "lexical_ceiling" not in v  # renamed lexical_ceiling_dense in figures version 2
    assert json.loads((Path(a.path) / "manifest.json").read_text())["validity"] == v
    assert "## Validity: how far shortcuts get" in (Path(a.path) / "README.md").read_text()


def test_benchmark_without_train_split_is_carved(tmp_path, monkeypatch):
    monkeypatch.setattr(validity, "MIN_LISTS", 1)
    r = build("winowhy", source=FIXTURES / "winowhy", out=tmp_path, progress=False)
    assert set(r.splits) == {"test"}
    assert r.validity["carved"] is True
    # winowhy's queries carry no label: no label-aware probe, and the figures say why
    assert r.validity["query_label"] is None and r.validity["label_aware"] is None
    assert r.validity["label_aware_skipped"] == "the queries carry no label"
    assert "No label-aware probe: the queries carry no label." in (Path(r.path) / "README.md").read_text()


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
    fresh = build("demo", out=tmp_path / "fresh", progress=False)  # figures measured while it is validated
    assert later.validity == fresh.validity
    assert "## Validity" in card.read_text()
    # the two routes end in the same folder: manifest and card too
    assert json.loads((Path(fresh.path) / "manifest.json").read_text()) == json.loads(
        (Path(plain.path) / "manifest.json").read_text())
    assert (Path(fresh.path) / "README.md").read_text() == card.read_text()
    assert json.loads((Path(plain.path) / "manifest.json").read_text())["validity"] == later.validity
    assert {p.name: p.read_bytes() for p in (Path(plain.path) / "data").iterdir()} == data


def test_figures_are_measured_while_validating_and_stopped_by_a_failed_validation(tmp_path, monkeypatch):
    """With validation on, the figures start before it (the engine's alongside hook) and are in the
    folder when it is finished; a failed validation leaves the block, which stops their work."""
    from gradebench.benchmark import validate as validate_mod
    from gradebench.errors import BenchmarkError
    from gradebench.experiments import build as build_mod

    events = []
    real_measuring, real_validate = build_mod._measuring, validate_mod.validate_folder

    def measuring(folder, manifest, mode):
        events.append(("start", (Path(folder) / "manifest.json").exists()))
        cm = real_measuring(folder, manifest, mode)

        class Spy:
            def __enter__(self):
                return cm.__enter__()

            def __exit__(self, *exc):
                events.append(("stop", exc[0].__name__ if exc[0] else None))
                return cm.__exit__(*exc)

        return Spy()

    def validating(folder, **kw):
        events.append(("validate",))
        return real_validate(folder, **kw)

    monkeypatch.setattr(validity, "MIN_LISTS", 2)
    monkeypatch.setattr(build_mod, "_measuring", measuring)
    monkeypatch.setattr(validate_mod, "validate_folder", validating)
    monkeypatch.setattr(build_mod, "add_validity", lambda *a, **k: pytest.fail("measured after the build"))
    r = build("demo", out=tmp_path / "ok", progress=False, resplit=(50, 0, 50))
    assert events == [("start", False), ("validate",), ("stop", None)]  # before the folder was finished
    assert json.loads((Path(r.path) / "manifest.json").read_text())["validity"] == r.validity
    assert r.timings["validity"] >= 0

    events.clear()

    class Failed:
        success = False

        def summary(self):
            return {}

        def first_failure(self):
            return "a check"

    monkeypatch.setattr(validate_mod, "validate_folder", lambda folder, **kw: Failed())
    with pytest.raises(BenchmarkError, match="fails validation"):
        build("demo", out=tmp_path / "bad", progress=False, resplit=(50, 0, 50))
    assert events == [("start", False), ("stop", "BenchmarkError")]
    assert not list((tmp_path / "bad").glob("demo/*/manifest.json"))


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
    assert v["label_aware"]["pairwise_agreement"] > 0.95 and v["lexical_ceiling_strong"]["pairwise_agreement"] > 0.95
    assert "gradebench: warning: a query-blind probe" in err and err.count("gradebench: warning: ") == 3
    human = build("esnli-human", source=source, resplit=(80, 10, 10), out=tmp_path, progress=False).validity
    assert human["query_blind"]["pairwise_agreement"] < 0.7
    assert human["bm25"]["pairwise_agreement"] > human["query_blind"]["pairwise_agreement"]
    # the word model beats the 14 dense features: the dense ceiling understated what words give away
    assert human["lexical_ceiling_strong"]["pairwise_agreement"] > human["lexical_ceiling_dense"]["pairwise_agreement"]
    assert human["lexical_ceiling_strong_setup"]["train_lists"] > validity.MAX_TRAIN


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


# -- the figures of issue 18: label-aware probe, strong lexical ceiling ------------------------------------


def _figures_of(tmp_path, kind: str, **kw) -> dict:
    from tests.shortcut_fixtures import write_shortcut_benchmark

    files = write_shortcut_benchmark(tmp_path / kind, kind)
    return validity.validity_figures(tmp_path / kind, files, benchmark=kind, fingerprint="0" * 64, **kw)


def _pa(figures: dict) -> dict[str, float]:
    return {k: v["pairwise_agreement"] for k, v in figures.items() if isinstance(v, dict) and "pairwise_agreement" in v}


def test_grades_that_follow_the_label_give_a_high_label_aware_figure(tmp_path):
    pa = _pa(_figures_of(tmp_path, "label_cross", query_label="label"))
    assert pa["query_blind"] < 0.6  # each marker is graded high under one label, low under the other
    assert pa["label_aware"] > 0.95  # the label x candidate-word cross is the whole grade
    assert pa["lexical_ceiling_dense"] < 0.6  # 14 dense features know neither words nor the label
    assert pa["lexical_ceiling_strong"] > 0.95  # its label x word crosses do
    assert len(validity.warning_lines(_figures_of(tmp_path, "label_cross", query_label="label"))) == 2


def test_grades_that_need_the_query_give_a_low_label_aware_figure(tmp_path):
    figures = _figures_of(tmp_path, "needs_query", query_label="label")
    pa = _pa(figures)
    assert pa["query_blind"] < 0.6 and pa["label_aware"] < 0.6  # neither the text nor the label helps
    assert pa["bm25"] > 0.85 and pa["lexical_ceiling_strong"] > 0.85  # matching the query does
    assert validity.warning_lines(figures) == [validity.warning_lines(figures)[0]]  # the strong ceiling alone
    assert validity.warning_lines(figures)[0].startswith("a word model")


def test_without_a_label_column_the_label_aware_probe_is_skipped_and_says_why(tmp_path):
    none = _figures_of(tmp_path, "label_cross", query_label=None)
    assert none["label_aware"] is None and none["label_aware_skipped"] == "the queries carry no label"
    assert none["lexical_ceiling_strong_setup"]["label_crosses"] is False
    missing = _figures_of(tmp_path, "label_cross", query_label="gold_label")
    assert missing["label_aware"] is None and missing["query_label"] is None
    assert missing["label_aware_skipped"] == "the data files have no 'gold_label' column"


def test_strong_ceiling_is_tuned_on_a_carve_of_train_never_test(tmp_path, monkeypatch):
    seen: list = []
    from gradebench.scorers.lexical_gbdt import GRID, LexicalGBDT

    original = LexicalGBDT._fit

    def spy(self, job):
        seen.append((set(job.train.query_ids), set(job.validation.query_ids), self.config.tune))
        return original(self, job)

    monkeypatch.setattr(LexicalGBDT, "_fit", spy)
    # the spy sees the fit only in this process (a worker fits it otherwise: test_background_call.py)
    monkeypatch.setattr("gradebench.benchmark.workers.start_method", lambda: None)
    fast = _figures_of(tmp_path, "needs_query", query_label="label")
    full = _figures_of(tmp_path, "needs_query", query_label="label", mode="full")
    (fit_q, tune_q, tuned_fast), (_, _, tuned_full) = seen
    test_q = {f"q{q:04d}" for q in range(80, 120)}
    assert not (fit_q | tune_q) & test_q and not fit_q & tune_q and len(fit_q | tune_q) == 80
    assert (tuned_fast, tuned_full) == (False, True) and (fast["mode"], full["mode"]) == ("fast", "full")
    setup = full["lexical_ceiling_strong_setup"]
    assert (setup["train_lists"], setup["tune_lists"]) == (len(fit_q), len(tune_q))
    assert (setup["num_leaves"], setup["min_child_samples"]) in GRID


def test_bad_mode_is_one_line(tmp_path):
    from gradebench.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="validity mode must be one of fast, full, got 'quick'"):
        _figures_of(tmp_path, "needs_query", mode="quick")
    with pytest.raises(InvalidArgumentError, match="validity must be True, False, 'fast' or 'full'"):
        build("demo", out=tmp_path / "never", progress=False, validity="quick")
    assert not (tmp_path / "never").exists()  # refused before anything is written


def test_figures_are_the_same_in_another_process(tmp_path):
    import os
    import subprocess
    import sys

    from tests.conftest import REPO
    from tests.shortcut_fixtures import write_shortcut_benchmark

    files = write_shortcut_benchmark(tmp_path / "b", "label_cross")
    here = validity.validity_figures(tmp_path / "b", files, benchmark="x", fingerprint="0" * 64, query_label="label")
    code = (
        "import json, sys; from pathlib import Path; from gradebench.experiments.validity import validity_figures; "
        f"print(json.dumps(validity_figures(Path({str(tmp_path / 'b')!r}), {files!r}, benchmark='x', "
        "fingerprint='0' * 64, query_label='label')))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env, check=True)
    assert json.loads(done.stdout) == here


def test_warnings_name_each_shortcut():
    figs = {"query_blind": {"pairwise_agreement": 0.5}, "label_aware": {"pairwise_agreement": 0.65},
            "lexical_ceiling_strong": {"pairwise_agreement": 0.85}}
    assert validity.warning_lines(figs) == []  # at the thresholds: no warning
    figs["label_aware"] = {"pairwise_agreement": 0.734}
    figs["lexical_ceiling_strong"] = {"pairwise_agreement": 0.891}
    lines = validity.warning_lines(figs)
    assert len(lines) == 2 and "0.734 (> 0.65)" in lines[0] and "query's label" in lines[0]
    assert "0.891 (> 0.85)" in lines[1]
    assert validity.warning(figs) == lines[0]
    # version-1 figures (lexical_ceiling, no label-aware probe) are read too
    assert validity.warning_lines({"query_blind": {"pairwise_agreement": 0.9},
                                   "lexical_ceiling": {"pairwise_agreement": 0.99}})[0].startswith("a query-blind")


def test_cli_prints_every_warning(tmp_path, capsys, monkeypatch):
    from gradebench.experiments import build as build_mod
    from tests.conftest import run_cli

    figs = {"query_blind": {"pairwise_agreement": 0.7, "ndcg@5": 0.9},
            "label_aware": {"pairwise_agreement": 0.8, "ndcg@5": 0.9},
            "bm25": {"pairwise_agreement": 0.6, "ndcg@5": 0.8},
            "lexical_ceiling_dense": {"pairwise_agreement": 0.7, "ndcg@5": 0.9},
            "lexical_ceiling_strong": {"pairwise_agreement": 0.9, "ndcg@5": 0.95}}
    figs.update(version=validity.VALIDITY_VERSION, mode="fast", carved=False, train_lists=20, test_lists=20,
                query_label="label", warn_query_blind=validity.WARN_QUERY_BLIND,
                warn_label_aware=validity.WARN_LABEL_AWARE, warn_lexical_ceiling_strong=validity.WARN_LEXICAL_STRONG,
                lexical_ceiling_strong_setup={"train_lists": 17, "tune_lists": 3})
    # measured while the build is validated (the engine's alongside hook), or after it
    monkeypatch.setattr(build_mod, "_measuring", lambda folder, manifest, mode: nullcontext(lambda: {"validity": figs}))
    monkeypatch.setattr(build_mod, "add_validity", lambda folder, mode="fast": figs)
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run_cli(capsys, "build", "demo", "--out", tmp_path, "--timings")
    assert code == 0
    assert err.count("gradebench: warning: ") == 3
    assert max(map(len, err.splitlines())) <= 80  # wrapped to the terminal (issue 31: 225 columns)
    assert max(map(len, out.splitlines())) <= 80  # the --timings line too (was 190)
    assert "timings (s): read " in out
    flat = " ".join(out.split())  # rich wraps at the terminal width
    assert "label-aware 0.800" in flat and "lexical ceiling (strong) 0.900" in flat
    # the same build again is cached: the figures are shown, the warnings are not repeated
    code, again, err = run_cli(capsys, "build", "demo", "--out", tmp_path, "--timings")
    assert code == 0 and " cached at " in again and "lexical ceiling (strong) 0.900" in " ".join(again.split())
    assert err == "" and "timings (s): none, the build was cached" in again
    # the shortcut probes are listed in one order, fresh or cached
    fresh, cached = (re.search(r"shortcut probes \(0.5 = no signal\): ([a-z_ 0-9.,]+)", " ".join(text.split()))[1]
                     for text in (out, again))
    assert fresh == cached and fresh.startswith("length ") and "human_authorship" in fresh


def test_cli_validity_switch(tmp_path, capsys, monkeypatch):
    from tests.conftest import run_cli

    monkeypatch.setattr(validity, "MIN_LISTS", 2)
    code, out, _ = run_cli(capsys, "build", "demo", "--out", tmp_path, "--validity", "full", "--json")
    assert code == 0 and json.loads(out)["validity"]["mode"] == "full"
    code, out, _ = run_cli(capsys, "build", "demo", "--out", tmp_path / "off", "--no-validity", "--json")
    assert code == 0 and json.loads(out)["validity"] is None
    code, out, err = run_cli(capsys, "build", "demo", "--out", tmp_path / "bad", "--validity", "quick")
    assert code == 2 and "validity mode must be one of fast, full" in err and len(err.strip().splitlines()) == 1
    code, out, err = run_cli(capsys, "build", "demo", "--out", tmp_path / "bad", "--validity", "full", "--no-validity")
    assert code == 2 and "--no-validity conflicts with --validity full" in err
    assert not (tmp_path / "bad").exists()


def _v1(figures: dict) -> dict:
    """``figures`` as figures version 1 wrote them: no version/mode/label keys, ``lexical_ceiling``."""
    keep = ("carved", "train_lists", "test_lists", "warn_query_blind", "query_blind", "bm25")
    return {**{k: figures[k] for k in keep}, "lexical_ceiling": figures["lexical_ceiling_dense"]}


def test_old_manifests_render_and_cached_folders_get_current_figures(tmp_path, monkeypatch):
    from gradebench.benchmark.engine import builder_of, update_manifest
    from gradebench.benchmark.manifest import read_manifest

    monkeypatch.setattr(validity, "MIN_LISTS", 2)
    first = build("demo", out=tmp_path, progress=False)
    folder = Path(first.path)
    data = {p.name: p.read_bytes() for p in (folder / "data").iterdir()}
    old = _v1(first.validity)
    update_manifest(folder, builder_of(read_manifest(folder)), {"validity": old})  # a folder built before v2
    card = (folder / "README.md").read_text()
    assert f"| lexical ceiling, dense (LambdaMART) | 14 lexical features | {old['lexical_ceiling']['pairwise_agreement']:.4f}" in card
    assert "label-aware" not in card and "strong" not in card
    # the next build finds the figures stale and measures them again: data untouched
    again = build("demo", out=tmp_path, progress=False)
    assert again.cached and again.validity == first.validity
    assert read_manifest(folder)["validity"] == first.validity
    assert {p.name: p.read_bytes() for p in (folder / "data").iterdir()} == data
    assert "lexical ceiling, strong (LightGBM)" in (folder / "README.md").read_text()
    # full figures replace fast ones when asked for, and a later default build keeps them
    full = build("demo", out=tmp_path, progress=False, validity="full")
    assert full.validity["mode"] == "full" and read_manifest(folder)["validity"]["mode"] == "full"
    assert build("demo", out=tmp_path, progress=False).validity == full.validity


def test_card_reads_the_new_figures_in_words():
    from gradebench.benchmark.card import validity_reading

    figs = {**_figs(0.47, 0.67, 0.72), "lexical_ceiling_dense": {"pairwise_agreement": 0.72}}
    del figs["lexical_ceiling"]
    figs["label_aware"] = {"pairwise_agreement": 0.734}
    figs["lexical_ceiling_strong"] = {"pairwise_agreement": 0.891}
    lines = validity_reading(figs)
    assert "at chance" in lines[0]
    assert lines[1].startswith("- **Warning:** a probe that knows only the query's label") and "73.4%" in lines[1]
    assert lines[2].startswith("- **Warning:** word matching alone (LightGBM on lexical and word features) orders 89.1%")
    figs["label_aware"], figs["lexical_ceiling_strong"] = {"pairwise_agreement": 0.52}, {"pairwise_agreement": 0.78}
    lines = validity_reading(figs)
    assert "label-aware blind probe is at chance" in lines[1] and not lines[2].startswith("- **Warning")
    figs["label_aware"] = {"pairwise_agreement": 0.6}
    assert "below the warning level" in validity_reading(figs)[1]


def test_readme_validity_table_reads_both_figure_versions(tmp_path, monkeypatch):
    from gradebench import docs

    fig = {"pairwise_agreement": 0.7, "ndcg@5": 0.9}
    v2 = {"version": 2, "query_label": "label", "warn_query_blind": 0.6, "warn_label_aware": 0.65,
          "warn_lexical_ceiling_strong": 0.85, "query_blind": {**fig, "pairwise_agreement": 0.466},
          "label_aware": {**fig, "pairwise_agreement": 0.734}, "bm25": fig, "lexical_ceiling_dense": fig,
          "lexical_ceiling_strong": {**fig, "pairwise_agreement": 0.891},
          "lexical_ceiling_strong_setup": {"train_lists": 5718, "tune_lists": 1065}}
    v1 = {"warn_query_blind": 0.6, "query_blind": fig, "bm25": fig, "lexical_ceiling": {**fig, "pairwise_agreement": 0.8}}
    stats = tmp_path / "stats.json"
    stats.write_text(json.dumps({"recipes": [
        {"recipe": "new", "validity": v2, "seconds_validity": 12.39, "cpu_seconds_validity": 8.98},
        {"recipe": "old", "validity": v1}, {"recipe": "absent", "skipped": "no file here"},
    ]}))
    monkeypatch.setattr(docs, "STATS_FILE", stats)
    rows = docs.validity_table().splitlines()
    assert rows[2] == ("| `new` | label | 0.466 | 0.734 | 0.700 | 0.700 | 0.891 | 5,718 + 1,065 | label-aware, strong "
                       "| 12.4 (9.0) |")
    assert rows[3] == "| `old` | – | 0.700 | – | 0.700 | 0.800 | – | – | query-blind | – |"
    assert rows[4] == "| `absent` | – | – | – | – | – | – | – | – | – (no file here) |"
    assert "<!-- BEGIN validity -->" in (Path(docs.__file__).resolve().parents[1] / "README.md").read_text()


@pytest.mark.parametrize("resplit", [(50, 0, 50), (60, 20, 20), None])
@pytest.mark.parametrize("quotas", [(3, 2), (7, 5), (10_000, 10_000)])
def test_streamed_lists_are_the_first_lists_of_a_whole_read(tmp_path, resplit, quotas):
    """The figures read only the first lists of each side; they must be those of reading everything.

    The reference reads every row, carves the sides the way the figures always have (the split
    column, or a 50/50 hash of the query id when train or test is missing) and takes the first
    lists; batches of 2 queries and shards of 7 rows give several files and row groups per side.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from gradebench.benchmark import engine, writer
    from gradebench.benchmark.lists import lists_from_table
    from gradebench.benchmark.splits import resplit_of

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(writer, "SHARD_ROWS", 7)
        mp.setattr(engine, "BATCH_QUERIES", 2)
        r = build("demo", out=tmp_path, resplit=resplit, progress=False, validate=False, validity=False, workers=1)
    files = [f for v in r.files.values() for f in v]
    paths = [str(Path(r.path) / f) for f in files]
    assert len(files) > 3
    columns = ["query_id", "query", "candidate_id", "candidate", "relevance", "score", "split"]
    train, test, carved, count = validity._split_lists(paths, columns, "demo", r.fingerprint,
                                                       {"train": quotas[0], "test": quotas[1]})
    table = pq.read_table(paths, columns=columns)
    splits = set(table.column("split").to_pylist())
    assert carved == (not {"train", "test"} <= splits)
    if carved:
        table = table.set_column(6, "split", pa.array([resplit_of(q, (50, 0, 50)) for q in
                                                       table.column("query_id").to_pylist()], pa.string()))
    for side, got, quota in (("train", train, quotas[0]), ("test", test, quotas[1])):
        whole = lists_from_table(table.filter(pc.equal(table.column("split"), side)), split=side).head(quota)
        assert got.query_ids.tolist() == whole.query_ids.tolist()
        assert got.n_queries == count[side] == min(quota, whole.n_queries)
        for name in ("candidates", "relevance", "score", "mask"):
            a, b = getattr(got, name, None), getattr(whole, name, None)
            assert a is not None and (a == b).all(), name
