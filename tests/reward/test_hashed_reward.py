"""export_reward / load / reward_report end to end on a tiny hashed-mlp run (demo benchmark)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gradebench.experiments.runs import load_run
from gradebench.benchmark.lists import open_benchmark
from gradebench.reward import REWARD_FILE, export_reward, load, reward_report
from gradebench.reward import fitness as F
from gradebench.reward.meta import FORMAT_GRADEBENCH, REWARD_SCHEMA_VERSION, calibration_stats


def test_export_writes_a_self_contained_folder(hashed_reward, hashed_run, demo_benchmark):
    files = sorted(p.relative_to(hashed_reward).as_posix() for p in hashed_reward.rglob("*"))
    assert files == [REWARD_FILE, "scorer", "scorer/gradebench_scorer.json", "scorer/model.safetensors"]
    assert not [p for p in hashed_reward.parent.iterdir() if p.name.startswith(".")]  # no temp leftovers
    meta = json.loads((hashed_reward / REWARD_FILE).read_text())
    assert meta["schema_version"] == REWARD_SCHEMA_VERSION and meta["kind"] == "gradebench.reward"
    assert meta["format"] == FORMAT_GRADEBENCH and meta["model_dir"] == "scorer"
    assert meta["scorer"]["name"] == "hashed-mlp" and meta["loss"]["name"] == "listnet"
    bench = open_benchmark(demo_benchmark)
    assert meta["benchmark"] == {"name": "demo", "fingerprint": bench.fingerprint, "path": str(bench.path)}
    assert "eval_ndcg@5" in meta["metrics"]["validation"] and meta["metrics"]["records"] == []
    # the calibration is the run's raw scores on the validation split
    scorer, _ = load_run(hashed_run)
    val = bench.lists("validation")
    expected = calibration_stats(scorer.score(val)[val.mask])
    assert meta["calibration"] == {"split": "validation", "n_queries": val.n_queries, **expected}
    assert "created" not in json.dumps(meta)  # no timestamps: the same run exports to the same file


def test_export_again_is_cached_and_deterministic(hashed_run, hashed_reward, tmp_path):
    again = export_reward(hashed_run, out=hashed_reward, results_dir=tmp_path)
    assert again.cached and again.out == str(hashed_reward)
    other = export_reward(hashed_run, out=tmp_path / "b", results_dir=tmp_path / "none")
    assert not other.cached
    for name in (REWARD_FILE, "scorer/model.safetensors"):
        assert (tmp_path / "b" / name).read_bytes() == (hashed_reward / name).read_bytes()


def _calls(lists):
    """TRL-style arguments scoring every candidate of ``lists`` (prompt = query, completion = candidate)."""
    rows, cols = lists.flat_index()
    return [str(lists.queries[r]) for r in rows], [str(lists.candidates[r, c]) for r, c in zip(rows, cols)]


def test_reward_equals_the_scorers_scores(hashed_reward, hashed_run, demo_benchmark):
    lists = open_benchmark(demo_benchmark).lists("test")
    prompts, completions = _calls(lists)
    reward = load(hashed_reward)
    got = reward(prompts=prompts, completions=completions)
    assert isinstance(got, list) and len(got) == len(completions) and all(type(x) is float for x in got)
    scorer, _ = load_run(hashed_run)
    np.testing.assert_allclose(got, scorer.score(lists)[lists.mask], rtol=0, atol=1e-6)
    # a run folder loads as the same reward
    assert load(hashed_run)(prompts=prompts, completions=completions) == got


def test_conversational_inputs_extra_kwargs_batching_and_determinism(hashed_reward, demo_benchmark):
    lists = open_benchmark(demo_benchmark).lists("test")
    prompts, completions = _calls(lists)
    reward = load(hashed_reward)
    plain = reward(prompts, completions)
    conv_prompts = [[{"role": "system", "content": "Explain."}, {"role": "user", "content": p}] for p in prompts]
    conv_completions = [[{"role": "assistant", "content": c}] for c in completions]
    state = object()
    got = reward(prompts=conv_prompts, completions=conv_completions, completion_ids=[[1, 2]] * len(prompts),
                 trainer_state=state, log_extra=print, log_metric=print, label=["x"] * len(prompts))
    assert got == plain
    parts = [[{"role": "assistant", "content": [{"type": "text", "text": c[:3]}, {"type": "text", "text": c[3:]}]}]
             for c in completions]
    assert reward(prompts, parts) == plain
    assert reward(prompts, completions) == plain  # deterministic
    assert load(hashed_reward, batch_size=1)(prompts, completions) == pytest.approx(plain, abs=1e-6)  # float32 batches
    # order does not matter for a pointwise scorer: reversed input, reversed output
    assert reward(prompts[::-1], completions[::-1]) == pytest.approx(plain[::-1], abs=1e-6)
    assert reward([], []) == []


def test_query_column_and_normalisation(hashed_reward, demo_benchmark):
    lists = open_benchmark(demo_benchmark).lists("test")
    prompts, completions = _calls(lists)
    raw = np.array(load(hashed_reward)(prompts, completions))
    by_column = load(hashed_reward, query_column="query")(prompts=["instruction"] * len(prompts),
                                                           completions=completions, query=prompts)
    np.testing.assert_allclose(by_column, raw, atol=1e-9)
    cal = json.loads((hashed_reward / REWARD_FILE).read_text())["calibration"]
    norm = load(hashed_reward, normalize=True)(prompts, completions)
    np.testing.assert_allclose(norm, (raw - cal["mean"]) / cal["std"], atol=1e-9)
    # a run folder computes the same calibration when asked to normalise
    from gradebench.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="query_column"):
        load(hashed_reward, query_column="query")(prompts, completions)
    with pytest.raises(InvalidArgumentError, match="prompts but"):
        load(hashed_reward)(prompts[:2], completions[:3])
    with pytest.raises(InvalidArgumentError, match="string or a list of messages"):
        load(hashed_reward)(prompts[:1], [42])


def test_run_folder_normalises_with_the_same_calibration(hashed_reward, hashed_run, demo_benchmark):
    lists = open_benchmark(demo_benchmark).lists("test")
    prompts, completions = _calls(lists)
    from_run = load(hashed_run, normalize=True)
    exported = load(hashed_reward, normalize=True)
    np.testing.assert_allclose(from_run(prompts, completions), exported(prompts, completions), atol=1e-9)
    assert from_run.calibration == json.loads((hashed_reward / REWARD_FILE).read_text())["calibration"]
    # the identity of a reward: the same run and calibration give the same fingerprint, normalising changes it
    assert from_run.fingerprint == exported.fingerprint != load(hashed_reward).fingerprint


def test_report_matches_the_fitness_functions(hashed_reward, hashed_run, demo_benchmark):
    rep = reward_report(hashed_reward, benchmark=demo_benchmark, split="test")
    scorer, _ = load_run(hashed_run)
    lists = open_benchmark(demo_benchmark).lists("test")
    s = scorer.score(lists)
    f = rep.figures
    snr = F.advantage_snr(s, lists.relevance, lists.mask)
    assert f["advantage_snr"] == pytest.approx(snr.snr) and f["inverted_adjacent_grades"] == snr.n_inverted
    assert f["separation_ratio"] == pytest.approx(F.separation(s, lists.relevance, lists.mask))
    assert f["grade_eta2"] == pytest.approx(F.grade_eta2(s, lists.relevance, lists.mask))
    assert f["score_range"] == pytest.approx(float(s[lists.mask].max() - s[lists.mask].min()))
    assert rep.verdict == F.snr_verdict(snr.snr, snr.n_inverted)
    assert rep.paper_verdict == F.paper_verdict(f["separation_ratio"])
    assert rep.benchmark["n_candidates"] == 25 and not rep.zero_shot
    assert [g["grade"] for g in rep.by_grade] == [4.0, 3.0, 2.0, 1.0, 0.0]
    json.dumps(rep.to_dict(), allow_nan=False)
    # a run folder gives the same report
    assert reward_report(hashed_run, benchmark=demo_benchmark).figures == f


def test_best_run_is_picked_from_the_records(hashed_run, demo_benchmark, tmp_path, monkeypatch):
    from gradebench.experiments.train import train
    from gradebench.experiments.evaluate import evaluate_scorer
    from gradebench.scorers import make_scorer
    from tests.reward.conftest import TINY_HASHED

    results = tmp_path / "results"
    other = tmp_path / "other-run"
    train(demo_benchmark, "hashed-mlp", loss="mse", config=TINY_HASHED, options={"epochs": 1}, out=other)
    values = {}
    for run in (hashed_run, other):
        scorer, info = load_run(run)
        rec = evaluate_scorer(demo_benchmark, scorer, run=info, results_dir=results, n_resamples=50)
        values[str(run)] = rec.value("pairwise_agreement")
    evaluate_scorer(demo_benchmark, make_scorer("length"), results_dir=results, n_resamples=50)  # no run: never picked
    winner = max(values, key=lambda k: (values[k], k == str(hashed_run)))
    res = export_reward(best="pairwise_agreement", benchmark="demo", results_dir=results, out=tmp_path / "best")
    assert res.selected_by["metric"] == "pairwise_agreement" and res.run_dir == winner
    assert res.selected_by["record_value"] == pytest.approx(values[winner])
    meta = json.loads((tmp_path / "best" / REWARD_FILE).read_text())
    assert meta["selected_by"] == res.selected_by
    assert [r["split"] for r in meta["metrics"]["records"]] == ["test"]
    assert meta["metrics"]["records"][0]["metrics"]["pairwise_agreement"] == pytest.approx(values[winner])
    # the benchmark folder works as well as its name
    by_dir = export_reward(best="pairwise_agreement", benchmark=str(demo_benchmark), results_dir=results,
                           out=tmp_path / "best2")
    assert by_dir.run_dir == winner
