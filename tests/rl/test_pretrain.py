"""``gradebench pretrain-policy``: a tiny GPT-2 from scratch that GRPO loads; deterministic, resumable,
one-line errors."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

from gradebench.errors import InvalidArgumentError  # noqa: E402
from gradebench.rl.pretrain import (  # noqa: E402
    CHECKPOINT_DIR,
    POLICY_DIR,
    RUN_CONFIG,
    RUN_JSON,
    TOKENIZER_DIR,
    corpus_examples,
    pretrain_policy,
    read_pretrain_run,
)
from tests.cli.conftest import assert_one_line_error  # noqa: E402
from tests.conftest import one_torch_thread  # noqa: E402
from tests.harness._kill import digests, killed_at, names  # noqa: E402

#: seconds on the demo benchmark (38 train queries)
TINY = {"steps": 4, "batch_size": 4, "layers": 1, "dim": 16, "heads": 2, "vocab_size": 300, "context": 256,
        "save_steps": 2, "warmup_steps": 1, "seed": 3}


def _pretrain(bench, out, **kwargs):
    with one_torch_thread():
        return pretrain_policy(bench, out=out, **{**TINY, **kwargs})


@pytest.fixture(scope="module")
def straight(demo_benchmark, tmp_path_factory):
    """An uninterrupted run: ``(folder, result)``."""
    out = tmp_path_factory.mktemp("pretrain") / "run"
    return out, _pretrain(demo_benchmark, out)


def test_the_corpus_is_each_prompt_and_its_best_candidate(demo_lists):
    import numpy as np

    lists = demo_lists["train"]
    examples = corpus_examples(lists, "{query}\nExplanation:")
    assert len(examples) == lists.n_queries
    for q in (0, 9, lists.n_queries - 1):
        best = lists.candidates[q, int(np.argmax(np.where(lists.mask[q], lists.relevance[q], -np.inf)))]
        assert examples[q].prompt == f"{lists.queries[q]}\nExplanation:"
        assert examples[q].response == " " + str(best).strip()


def test_a_pretrained_policy_loads_and_is_the_same_bytes_twice(straight, demo_benchmark, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gradebench.rl.policy import check_policy, folder_fingerprint

    out, result = straight
    assert sorted(n for n in names(out) if "/" not in n) == sorted(
        [CHECKPOINT_DIR, POLICY_DIR, RUN_CONFIG, RUN_JSON, TOKENIZER_DIR])
    assert result.n_steps == 4 and result.corpus["examples"] == 38 and result.corpus["skipped_too_long"] == 0
    assert result.model["layers"] == 1 and result.model["vocab_size"] == 300
    assert result.validation["queries"] == 5 and result.validation["perplexity"] > 1
    assert len(result.samples) == 3 and all(isinstance(s["greedy"], str) for s in result.samples)
    # a causal LM folder with its tokenizer; the run folder itself is accepted as --policy
    model = AutoModelForCausalLM.from_pretrained(out / POLICY_DIR)
    tokenizer = AutoTokenizer.from_pretrained(out / POLICY_DIR)
    assert model.config.n_layer == 1 and tokenizer.eos_token == "<|endoftext|>" and tokenizer.pad_token == "<pad>"
    info = check_policy(out)
    assert info.path == str((out / POLICY_DIR).resolve()) and info.context == 256
    assert info.fingerprint == folder_fingerprint(out / POLICY_DIR) == result.policy_fingerprint
    # deterministic: another folder, the same weights and tokenizer, byte for byte
    again = _pretrain(demo_benchmark, tmp_path / "again")
    assert digests(tmp_path / "again" / POLICY_DIR) == digests(out / POLICY_DIR)
    assert again.history == result.history and again.run_fingerprint == result.run_fingerprint
    # another seed: other weights
    other = _pretrain(demo_benchmark, tmp_path / "other", seed=4)
    assert other.policy_fingerprint != result.policy_fingerprint


def test_the_same_command_finds_the_finished_run(straight, demo_benchmark):
    out, result = straight
    again = _pretrain(demo_benchmark, out)
    assert again.cached and not result.cached
    assert {**again.to_dict(), "cached": False} == result.to_dict()
    assert read_pretrain_run(out).policy_fingerprint == result.policy_fingerprint


@pytest.mark.parametrize("point", [
    "output-saved:1",  # the tokenizer saved into its temp folder, not yet renamed
    "checkpoint-saved:1",  # step 2's checkpoint complete
    "checkpoint-saving:2",  # step 4's checkpoint half-written
    "output-saved:2",  # the policy saved into its temp folder, not yet renamed
])
def test_a_killed_run_is_continued_to_the_same_weights(point, straight, demo_benchmark, tmp_path, monkeypatch):
    out = tmp_path / "run"
    killed_at(monkeypatch, point, [out], lambda: _pretrain(demo_benchmark, out))
    assert (out / RUN_CONFIG).is_file() and not (out / RUN_JSON).exists()
    assert (out / TOKENIZER_DIR).is_dir() == (point != "output-saved:1")
    again = _pretrain(demo_benchmark, out)
    if point == "checkpoint-saved:1":
        assert again.resumed_from == 2  # continued from the complete checkpoint of step 2
    ref_dir, ref = straight
    assert digests(out / POLICY_DIR) == digests(ref_dir / POLICY_DIR)
    assert again.history == ref.history
    assert not [n for n in names(out) if ".incomplete-" in n]


def test_grpo_trains_the_pretrained_policy(straight, demo_benchmark, tmp_path, length_reward):
    from gradebench.rl.grpo import grpo

    out, pre = straight
    with one_torch_thread():
        result = grpo(out, length_reward, demo_benchmark, out=tmp_path / "grpo", steps=1, num_generations=2,
                      max_completion_length=8, lr=1e-3, results_dir=tmp_path / "res")
    assert result.policy["path"] == pre.policy_out and result.policy["fingerprint"] == pre.policy_fingerprint
    assert result.n_steps == 1


def test_cli_json_equals_the_api(cli, straight, demo_benchmark):
    out, result = straight
    flags = [x for k, v in TINY.items() for x in (f"--{k.replace('_', '-')}", str(v))]
    code, stdout, err = cli("pretrain-policy", "--benchmark", demo_benchmark, "--out", out, *flags, "--json")
    assert code == 0, err
    shown = json.loads(stdout)
    assert shown.pop("cached") is True
    assert shown == {k: v for k, v in result.to_dict().items() if k != "cached"}


@pytest.mark.parametrize(("args", "needles"), [
    (["--dim", "30", "--heads", "4"], ["--dim 30 is not a multiple of --heads 4"]),
    (["--vocab-size", "10"], ["--vocab-size must be an integer >= 300, got 10"]),
    (["--steps", "0"], ["--steps must be an integer >= 1"]),
    (["--loss-on", "prompt"], ["--loss-on must be 'response' or 'all'"]),
    (["--split", "nope"], ["no split 'nope'"]),
    (["--context", "16"], ["every example is longer than --context 16"]),
])
def test_bad_options_are_one_line(cli, demo_benchmark, tmp_path, args, needles):
    out = tmp_path / "run"
    code, stdout, err = cli("pretrain-policy", "--benchmark", demo_benchmark, "--out", out, *args)
    assert code == 2 and stdout == ""
    assert_one_line_error(err, *needles)
    assert not out.exists()  # nothing left behind


def test_bad_folders_are_one_line(cli, demo_benchmark, tmp_path):
    code, _, err = cli("pretrain-policy", "--benchmark", tmp_path / "missing", "--out", tmp_path / "run")
    assert code == 2
    assert_one_line_error(err, "missing")
    (tmp_path / "file").write_text("x")
    code, _, err = cli("pretrain-policy", "--benchmark", demo_benchmark, "--out", tmp_path / "file")
    assert code == 2
    assert_one_line_error(err, "--out is a file")


def test_options_reject_a_bad_value_in_the_api(demo_benchmark, tmp_path):
    with pytest.raises(InvalidArgumentError, match="--dropout must be"):
        pretrain_policy(demo_benchmark, out=tmp_path / "run", dropout=1.5)
    with pytest.raises(InvalidArgumentError, match="has no option 'layer'"):
        pretrain_policy(demo_benchmark, out=tmp_path / "run", layer=2)
