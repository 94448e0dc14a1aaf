"""LiPO with a held-out judge (``gradebench lipo --judge``): before/after figures, held-out pair accuracy."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from gradebench.errors import InvalidArgumentError  # noqa: E402
from gradebench.experiments.store import read_policy_record  # noqa: E402
from gradebench.rl.lipo import JUDGE_SAMPLING, heldout_pair_accuracy, lipo  # noqa: E402
from tests.cli.conftest import assert_one_line_error  # noqa: E402
from tests.conftest import one_torch_thread  # noqa: E402

FIGURES = {"judge_mean", "judge_above_reference", "judge_above_best", "reward_mean", "best_f1", "distinct_2",
           "mean_words", "empty_share", "n_completions", "judge_by_query", "examples", "pair_accuracy",
           "pair_accuracy_by_query"}


def _lipo(policy, bench, out, results, **kwargs):
    with one_torch_thread():
        return lipo(policy, bench, out=out, steps=2, batch_size=2, lr=1e-2, list_size=3, results_dir=results,
                    seed=3, **kwargs)


@pytest.fixture(scope="module")
def judged(tiny_gpt2, demo_benchmark, exported_reward, tmp_path_factory):
    root = tmp_path_factory.mktemp("lipo-judged")
    return root, _lipo(tiny_gpt2, demo_benchmark, root / "run", root / "res", judge=exported_reward,
                       judge_queries=3, judge_samples=2)


def test_a_judged_lipo_run_records_the_judge(judged, exported_reward):
    _, result = judged
    j = result.judge
    assert j["source"] == str(exported_reward.resolve()) and j["scorer"] == "hashed-mlp + listnet"
    assert (j["split"], j["n_queries"], j["samples"]) == ("validation", 3, 2)
    assert j["anchors"]["reward_by_grade"] is None and j["anchors"]["judge_by_grade"]
    for side in ("before", "after"):
        figures = j[side]
        assert set(figures) == FIGURES and figures["n_completions"] == 6 and figures["reward_mean"] is None
        assert len(figures["judge_by_query"]) == 3 and len(figures["pair_accuracy_by_query"]) == 3
        assert 0.0 <= figures["pair_accuracy"] <= 1.0
    # before training the log-ratio is 0: every pair is a tie
    assert j["before"]["pair_accuracy"] == 0.5
    assert "judge_s" in result.timings and result.signal is None
    record = read_policy_record(result.record)
    assert record.schema_version == 2 and record.judge.after == j["after"] and record.loss.name == "lambdaloss"


def test_the_judge_and_its_sampling_are_part_of_the_fingerprint(judged, tiny_gpt2, demo_benchmark, tmp_path):
    _, result = judged
    plain = _lipo(tiny_gpt2, demo_benchmark, tmp_path / "run", tmp_path / "res")
    assert plain.judge is None and plain.run_fingerprint != result.run_fingerprint
    assert JUDGE_SAMPLING == {"max_new_tokens": 32, "temperature": 0.7}


def test_heldout_pair_accuracy_counts_pairs_and_ties(tiny_gpt2):
    """Scores from a model against itself tie everywhere (0.5); a list with one grade has no pair (None)."""
    from gradebench.rl.judging import HeldOut
    from gradebench.rl.policy import load_policy, load_tokenizer

    model, tokenizer = load_policy(tiny_gpt2), load_tokenizer(tiny_gpt2)
    held = HeldOut(split="validation", query_ids=["a", "b"], queries=["q1", "q2"], prompts=["q1\nA:", "q2\nA:"],
                   candidates=[["x", "y", "z"], ["u", "v"]], grades=[[2.0, 1.0, 1.0], [1.0, 1.0]],
                   reference=[1, 0], best=[0, 0])
    out = heldout_pair_accuracy(model, model, tokenizer, held, beta=0.1)
    assert out == {"pair_accuracy": 0.5, "pair_accuracy_by_query": [0.5, None]}


def test_lipo_judge_flags_fail_in_one_line(cli, tiny_gpt2, demo_benchmark, tmp_path):
    common = ["--policy", tiny_gpt2, "--benchmark", demo_benchmark, "--out", tmp_path / "run", "--steps", "1",
              "--results-dir", tmp_path / "res"]
    code, _, err = cli("lipo", *common, "--judge", tmp_path, "--judge-queries", "0")
    assert code == 2
    assert_one_line_error(err, "--judge-queries must be an integer >= 1")
    with pytest.raises(InvalidArgumentError, match="--judge-samples"):
        _lipo(tiny_gpt2, demo_benchmark, tmp_path / "r2", tmp_path / "res", judge=tmp_path, judge_samples=0)
