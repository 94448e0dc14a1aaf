"""The reproduction report (``gradebench report``): every verdict branch on tiny synthetic records,
the figures it recomputes from predictions, determinism, and the command (``--json`` equals the
API, ``--out`` atomic, one-line errors, 80 columns)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from gradebench.errors import InvalidArgumentError, RecordError
from gradebench.experiments.reproduction import markdown, reproduction_report
from gradebench.experiments.reproduction.claims_losses import separation_rows, separation_statistic
from gradebench.experiments.reproduction.claims_tasks import accuracy_statistic, chaosnli_values, segment_rows
from gradebench.experiments.reproduction.data import Dense, Evidence, dense_predictions
from gradebench.experiments.reproduction.model import Figure, Step
from gradebench.experiments.reproduction.rules import adjust, decide
from tests.conftest import run_cli
from tests.results.reproduction_records import PAPER_TIERS, good_share, make_bench, ranked, write

N = 40  # queries per synthetic benchmark: enough for significance, small enough to be quick


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """Records for every claim, built so that each verdict branch shows up somewhere."""
    root = tmp_path_factory.mktemp("repro")
    res = root / "results"
    # esnli (the paper's tiers): quality falls along the paper's order -> Table 3 contradicted
    rel = np.tile(np.arange(4, -1, -1.0), (N, 1))
    esnli = make_bench(root, "esnli", rel, tiers=PAPER_TIERS)
    for loss, share in (("mse", 1.0), ("bradley_terry", 0.75), ("ranknet", 0.5), ("approxndcg", 0.25),
                        ("listnet", 0.0)):
        for seed in (42, 7):
            write(res, esnli, ranked(rel, good_share(N, share)), loss=loss, seed=seed)
    # list size on esnli: lambdaloss's advantage over ranknet grows with K -> reproduced
    for k, share in ((2, 0.25), (3, 0.5), (4, 0.9)):
        write(res, esnli, ranked(rel, good_share(N, 0.25)), loss="ranknet", seed=42, list_size=k)
        write(res, esnli, ranked(rel, good_share(N, share)), loss="lambdaloss", seed=42, list_size=k)
    # winowhy: grades 0-5, 4 Valid + 4 Invalid + 2 Undecided per list; train prior 1/2 (manifest);
    # rankers perfect, sigmoid_ce says Invalid everywhere -> rank->class reproduced
    wrel = np.tile(np.array([5, 5, 4, 4, 3, 2, 1, 1, 0, 0.0]), (N, 1))
    winowhy = make_bench(root, "winowhy", wrel, train_grades={0: 50, 1: 50, 2: 20, 3: 20, 4: 60, 5: 40})
    for loss in ("ranknet", "margin", "listnet"):
        write(res, winowhy, ranked(wrel, good_share(N, 1.0)), loss=loss)
    write(res, winowhy, np.full(wrel.shape, -1.0), loss="sigmoid_ce")
    # anli: every family scores the same -> L2R2 inconclusive; a zero-shot esnli run transfers -> reproduced
    arel = np.tile(np.array([1, 0.0]), (N, 1))
    anli = make_bench(root, "anli", arel)
    same = ranked(arel, good_share(N, 0.6))
    for loss in ("mse", "ranknet", "listnet"):
        write(res, anli, same, loss=loss)
    write(res, anli, ranked(arel, good_share(N, 1.0)), loss="listnet", trained_on=esnli)
    # chaosnli-snli: hashed-mlp + listnet scores = log(vote shares): JSD 0 -> reproduced
    shares = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7], [0.45, 0.35, 0.2]])[np.arange(N) % 4]
    crel = np.argsort(np.argsort(shares, axis=1), axis=1).astype(float)
    chaos = make_bench(root, "chaosnli-snli", crel, score=shares)
    write(res, chaos, np.log(shares), loss="listnet")
    # worldtree: 4 gold facts (roles 3, 3, 2, 1) and 8 negatives, ranked perfectly by an untrained scorer
    trel = np.tile(np.array([3, 3, 2, 1] + [0] * 8, dtype=float), (20, 1))
    write(res, make_bench(root, "worldtree", trel), ranked(trel, good_share(20, 1.0)), scorer="oracle")
    return res


@pytest.fixture(scope="module")
def report(full):
    return reproduction_report(full)


def _claim(report, cid):
    return next(c for c in report.claims if c.id == cid)


def test_every_claim_is_reported_in_order(report):
    assert [c.id for c in report.claims] == ["000-table3", "000-families", "000-zero-shot", "000-table7",
                                             "001-worldtree", "002-rank-to-class", "003-l2r2", "004-list-size",
                                             "chaosnli"]
    assert sum(report.counts.values()) == 9
    json.dumps(report.to_dict(), allow_nan=False)  # no NaN anywhere


def test_contradicted_when_a_step_goes_the_other_way(report):
    c = _claim(report, "000-table3")
    assert c.verdict == "contradicted"
    ndcg = [s for s in c.steps if s.part == "hashed-mlp" and s.metric == "ndcg@5"]
    assert len(ndcg) == 4 and all(s.outcome == "opposite" and s.difference < 0 for s in ndcg)
    assert all(s.seeds == (7, 42) and s.n_queries == N for s in ndcg)
    # the cross-encoder has no records: its steps are listed, not tested, and do not decide
    assert all(s.outcome == "not tested" for s in c.steps if s.part == "cross-encoder")
    # paper figures beside ours, ours from the records
    table = c.tables[0]
    mse = next(r for r in table.rows if r[0] == "mse")
    assert mse[1] == 0.789 and mse[2].value == pytest.approx(1.0) and mse[7] == 2


def test_reproduced_when_every_step_is_significant_as_claimed(report):
    c = _claim(report, "004-list-size")
    assert c.verdict == "reproduced"
    assert [s.outcome for s in c.steps] == ["as claimed", "as claimed"]
    assert [r[0] for r in c.tables[0].rows] == ["K=2", "K=3", "K=4"]
    assert c.steps[0].p_adjusted >= c.steps[0].p_value


def test_inconclusive_when_no_difference_either_way(report):
    c = _claim(report, "003-l2r2")
    assert c.verdict == "inconclusive"
    assert [s.outcome for s in c.steps] == ["not significant", "not significant"]
    assert all(s.difference == pytest.approx(0.0) for s in c.steps)


def test_not_testable_claims_name_what_is_missing(report):
    ppo = _claim(report, "000-table7")
    assert ppo.verdict == "not testable" and "No policy records" in ppo.reason and "gradebench grpo" in ppo.reason
    wt = _claim(report, "001-worldtree")
    assert wt.verdict == "not testable" and "expert" in wt.reason and not wt.steps


def test_families_contrast_tiers_with_natural_grades(report):
    c = _claim(report, "000-families")
    tested = {s.part: s.outcome for s in c.steps if s.outcome != "not tested"}
    # on esnli pairwise (bradley_terry, ranknet: 0.75, 0.5) beats listwise (approxndcg, listnet: 0.25, 0)
    assert tested["esnli (tiers)"] == "opposite" and tested["winowhy (natural)"] == "not significant"
    assert c.verdict == "contradicted"
    assert any(s.outcome == "not tested" and s.part.startswith("dnli") for s in c.steps)


def test_zero_shot_transfer(report):
    c = _claim(report, "000-zero-shot")
    tested = [s for s in c.steps if s.outcome != "not tested"]
    assert [s.part for s in tested] == ["anli"] and tested[0].above == "hashed-mlp + listnet (trained on esnli)"
    assert tested[0].difference == pytest.approx(1.0)  # tau = 1 on every two-hypothesis list
    assert c.verdict == "reproduced" and "Not tested (no transfer records): " in c.reason
    untested = next(s for s in c.steps if s.part == "winowhy")
    assert "--zero-shot" in untested.note and "gradebench-out/runs/esnli/hashed-mlp/listnet42" in untested.note


def test_rank_to_class_uses_the_train_prior(report):
    c = _claim(report, "002-rank-to-class")
    assert c.verdict == "reproduced"
    assert len(c.steps) == 6 and all(s.outcome == "as claimed" for s in c.steps)
    rows = {r[0]: r for r in c.tables[0].rows}
    assert rows["hashed-mlp + ranknet"][1] == "segments (p = 0.500)"  # (60 + 40) / (50 + 50 + 60 + 40)
    assert rows["hashed-mlp + ranknet"][2].value == pytest.approx(1.0)
    assert rows["hashed-mlp + sigmoid_ce"][2].value == pytest.approx(0.5)  # Undecided left out: 4 of 8 right


def test_rank_to_class_without_the_manifest_is_not_testable(full, tmp_path):
    import shutil

    copy = tmp_path / "results"
    shutil.copytree(full, copy)
    for p in (copy / "winowhy").glob("*.json"):  # point the records at a folder without a manifest
        doc = json.loads(p.read_text())
        doc["benchmark"]["path"] = str(tmp_path / "nowhere")
        p.write_text(json.dumps(doc))
    c = _claim(reproduction_report(copy), "002-rank-to-class")
    assert c.verdict == "not testable" and "manifest" in c.steps[0].note


def _copy_pointing_away(full, tmp_path):
    """A copy of the records whose winowhy records point at a folder without a manifest, and that manifest."""
    import shutil

    copy = tmp_path / "results"
    shutil.copytree(full, copy)
    manifest = None
    for p in (copy / "winowhy").glob("*.json"):
        doc = json.loads(p.read_text())
        manifest = manifest or json.loads((Path(doc["benchmark"]["path"]) / "manifest.json").read_text())
        doc["benchmark"]["path"] = str(tmp_path / "nowhere")
        p.write_text(json.dumps(doc))
    return copy, manifest


def _put(manifest, build_dir):
    folder = build_dir / "winowhy" / manifest["fingerprint"][:12]
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_the_report_is_the_same_wherever_the_manifest_was_found(full, report, tmp_path):
    """Found under --build-dir or at the record's path (fingerprint checked in both): the same bytes,
    and --build-dir's spelling appears nowhere."""
    copy, manifest = _copy_pointing_away(full, tmp_path)
    build = tmp_path / "some-build-dir"
    _put(manifest, build)
    moved = markdown(reproduction_report(copy, build_dir=build))
    assert moved.split("\n", 3)[3] == markdown(report).split("\n", 3)[3]  # all but the --results-dir line
    assert "some-build-dir" not in moved and str(tmp_path) not in moved.split("\n", 3)[3]
    # found nowhere: the not-tested note does not print --build-dir either
    absent = [markdown(reproduction_report(copy, build_dir=tmp_path / d)) for d in ("a", "b")]
    assert absent[0] == absent[1] and "under the build folder" in absent[0]


def test_the_build_dir_is_tried_before_the_records_path(full, tmp_path):
    manifest = json.loads((next(Path(json.loads(p.read_text())["benchmark"]["path"])
                                for p in (full / "winowhy").glob("*.json")) / "manifest.json").read_text())
    manifest["stats"]["train"]["grades"] = {"0": {"candidates": 30}, "5": {"candidates": 10}}  # prior 1/4
    _put(manifest, tmp_path / "build")
    c = _claim(reproduction_report(full, build_dir=tmp_path / "build"), "002-rank-to-class")
    assert {r[1] for r in c.tables[0].rows if r[0] == "hashed-mlp + ranknet"} == {"segments (p = 0.250)"}
    wrong = dict(manifest, fingerprint="0" * 64)  # another benchmark's manifest at that place: skipped
    (tmp_path / "build" / "winowhy" / manifest["fingerprint"][:12] / "manifest.json").write_text(json.dumps(wrong))
    c = _claim(reproduction_report(full, build_dir=tmp_path / "build"), "002-rank-to-class")
    assert {r[1] for r in c.tables[0].rows if r[0] == "hashed-mlp + ranknet"} == {"segments (p = 0.500)"}


def test_chaosnli_reaches_the_reference(report):
    c = _claim(report, "chaosnli")
    snli = [s for s in c.steps if s.part == "chaosnli-snli"]
    assert [s.outcome for s in snli] == ["as claimed"] * 3
    assert snli[0].relation == "hashed-mlp + listnet below the reference 0.221"
    assert c.verdict == "reproduced"  # chaosnli-mnli has no records: not tested, not deciding


def test_worldtree_figures(report):
    c = _claim(report, "001-worldtree")
    ranking, whole = c.tables[1], c.tables[2]
    row = ranking.rows[0]
    assert row[0] == "oracle" and [f.value for f in row[2:]] == pytest.approx([1.0, 1.0, 1.0, 1.0])
    rel, comp, f1 = (f.value for f in whole.rows[0][1:])
    assert (rel, comp, f1) == pytest.approx((0.5, 1.0, 2 / 3))  # top 8 holds the 4 gold facts


def test_empty_folder_makes_every_claim_not_testable(tmp_path):
    r = reproduction_report(tmp_path)
    assert r.n_records == 0 and r.counts["not testable"] == 9


def test_one_kind_of_benchmark_is_not_enough_for_the_contrast(tmp_path):
    root, res = tmp_path, tmp_path / "results"
    rel = np.tile(np.arange(4, -1, -1.0), (N, 1))
    esnli = make_bench(root, "esnli", rel, tiers=PAPER_TIERS)
    write(res, esnli, ranked(rel, good_share(N, 0.5)), loss="ranknet")
    write(res, esnli, ranked(rel, good_share(N, 1.0), scale=3.0), loss="listnet")
    r = reproduction_report(res)
    fam = _claim(r, "000-families")
    assert fam.verdict == "not testable" and "contrasts tiered with natural-grade" in fam.reason
    t3 = _claim(r, "000-table3")  # ranknet < listnet on both metrics; the other losses not tested
    assert t3.verdict == "reproduced"
    assert [s.outcome for s in t3.steps if s.p_value is not None] == ["as claimed", "as claimed"]


def test_report_is_deterministic_and_has_no_timestamp(full, report):
    again = reproduction_report(full)
    assert markdown(again) == markdown(report)
    assert again.to_dict() == report.to_dict()
    text = markdown(report)
    assert "created" not in text and not re.search(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d", text)  # no timestamp


def test_errors(tmp_path):
    with pytest.raises(RecordError, match="no such results folder"):
        reproduction_report(tmp_path / "missing")
    with pytest.raises(InvalidArgumentError, match="alpha"):
        reproduction_report(tmp_path, alpha=1.5)


# -- the rules ---------------------------------------------------------------------------------------
def _step(diff, p):
    return Step(part="x", metric="m", above="a", below="b", above_value=None, below_value=None, difference=diff,
                n_queries=10, seeds=(1,), test="t", p_value=p)


@pytest.mark.parametrize("steps, verdict", [
    ([_step(0.1, 0.001), _step(0.2, 0.001)], "reproduced"),
    ([_step(0.1, 0.001), _step(-0.2, 0.001)], "contradicted"),
    ([_step(0.1, 0.001), _step(0.2, 0.4)], "inconclusive"),
    ([_step(0.1, 0.01), _step(0.2, 0.04)], "reproduced"),  # Holm: 0.02 and 0.04
    ([_step(0.1, 0.03), _step(0.2, 0.03)], "inconclusive"),  # Holm: both 0.06
    ([_step(0.1, 0.001), _step(None, None)], "reproduced"),  # an untested step does not decide
    ([_step(None, None)], "not testable"),
    ([], "not testable"),
])
def test_decide(steps, verdict):
    assert decide(adjust(steps, 0.05)) == verdict


# -- figures recomputed from predictions ---------------------------------------------------------------
def test_separation_statistic_is_the_records_ratio(full):
    ev = Evidence(full)
    for s in ev.find("esnli")[:3]:
        for r in s.records:
            ids, stored = ev.figures(r, "separation")  # written by eval, sums rounded to float32
            dense = dense_predictions(r.predictions_path)
            assert ids == list(dense.query_ids)
            exact = separation_rows(dense)
            assert stored == pytest.approx(exact, rel=1e-6)
            for rows in (exact, stored):
                assert separation_statistic(rows[None, :, None, :])[0] == pytest.approx(
                    r.metrics["separation_ratio"].value, rel=1e-6)


def test_chaosnli_values_match_scipy():
    from scipy.spatial.distance import jensenshannon
    from scipy.stats import entropy

    rng = np.random.default_rng(0)
    h = rng.dirichlet([1, 1, 1], size=6)
    z = rng.normal(size=(6, 3))
    d = Dense(np.arange(6).astype(object), z, np.zeros((6, 3)), h, np.ones((6, 3), bool))
    vals = chaosnli_values(d)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    assert vals[:, 0] == pytest.approx([jensenshannon(a, b) for a, b in zip(h, p)])
    assert vals[:, 1] == pytest.approx([entropy(a, b) for a, b in zip(h, p)])
    assert vals[:, 2] == pytest.approx((h.argmax(axis=1) == z.argmax(axis=1)).astype(float))


def test_segment_rule_rounds_the_prior_times_the_labelled_count():
    rel = np.array([[5, 4, 0, 1, 3, 5.0]])  # grade 3 is Undecided: 5 labelled, 3 of them Valid
    pred = np.array([[0.9, 0.1, 0.8, 0.2, 5.0, 0.7]])
    d = Dense(np.array(["q"], dtype=object), pred, rel, rel / 5, np.ones_like(rel, bool))
    tp, fp, fn, tn = segment_rows(0.5)(d)[0]  # m = round(0.5 * 5) = 3: items 0 (0.9), 2 (0.8), 5 (0.7)
    assert (tp, fp, fn, tn) == (2, 1, 1, 1)
    assert accuracy_statistic(segment_rows(0.5)(d)[None, :, None, :])[0] == pytest.approx(3 / 5)


# -- the command ---------------------------------------------------------------------------------------
def test_cli_json_equals_the_api(full, report, capsys):
    code, out, err = run_cli(capsys, "report", "--results-dir", full, "--json")
    assert code == 0, err
    assert json.loads(out) == json.loads(json.dumps(report.to_dict()))


def test_cli_out_writes_the_markdown_atomically(full, report, tmp_path, capsys, monkeypatch):
    target = tmp_path / "REPRODUCTION.md"
    renames = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (renames.append((str(src), str(dst))), real(src, dst)))
    code, out, err = run_cli(capsys, "report", "--results-dir", full, "--out", target)
    assert code == 0, err
    assert target.read_text(encoding="utf-8") == markdown(report)
    assert renames and renames[-1][1] == str(target) and renames[-1][0] != str(target)
    assert out.startswith(f"wrote {target}: 9 claims (") and out.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["REPRODUCTION.md"]  # no temp file left
    code, md, _ = run_cli(capsys, "report", "--results-dir", full, "--format", "md")
    assert code == 0 and md == target.read_text(encoding="utf-8")


def test_cli_html_is_the_apis_page(full, report, tmp_path, capsys):
    from gradebench.experiments.reproduction import html

    code, page, err = run_cli(capsys, "report", "--results-dir", full, "--format", "html")
    assert code == 0, err
    assert page == html(report) == html(reproduction_report(full))  # deterministic
    target = tmp_path / "REPRODUCTION.html"
    code, out, err = run_cli(capsys, "report", "--results-dir", full, "--out", target)  # the format from the name
    assert code == 0 and out.startswith(f"wrote {target}: 9 claims (")
    assert target.read_text(encoding="utf-8") == page
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"(src|href)=\"?(https?:)?//|url\(|@import", page)  # nothing from the network
    # the verdicts table links every claim to its section, where its evidence is
    for i, c in enumerate(report.claims, 1):
        assert f'<a href="#claim-{i}">' in page and f'<section class="claim" id="claim-{i}">' in page
        assert f'<span class="badge b-{c.verdict.replace(" ", "-")}">' in page
    assert page.count('<svg class="iv"') == sum(
        isinstance(x, Figure) and x.value is not None for c in report.claims for t in c.tables for r in t.rows for x in r)


def test_cli_text_fits_80_columns(full, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run_cli(capsys, "report", "--results-dir", full)
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "Verdict: CONTRADICTED." in out and "1.000 [1.000, 1.000]" in out


@pytest.mark.parametrize("args, needles", [
    (["--results-dir", "{missing}"], ["no such results folder", "--results-dir"]),
    (["--json", "--format", "md"], ["--json conflicts with --format md"]),
    (["--out", "{out}", "--format", "text"], ["--out conflicts with --format text"]),
    (["--format", "pdf"], ["unknown --format 'pdf'"]),
    (["--format", "md", "--out", "{out_html}"], ["--format md conflicts with --out", ".html"]),
    (["--out", "{missing}/r.html"], ["no such folder", "mkdir -p"]),
])
def test_cli_errors_are_one_line(tmp_path, capsys, args, needles):
    args = [a.format(missing=tmp_path / "missing", out=tmp_path / "r.md", out_html=tmp_path / "r.html") for a in args]
    if "--results-dir" not in args:
        args += ["--results-dir", str(tmp_path)]
    code, out, err = run_cli(capsys, "report", *args)
    assert code == 2 and out == ""
    assert err.startswith("gradebench: error: ") and err.count("\n") == 1
    for needle in needles:
        assert needle in err
