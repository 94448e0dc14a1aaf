"""``gradebench lipo | grpo | ppo``: --json equals the API result, exported rewards serve, bad input is one line."""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

from tests.cli.conftest import assert_one_line_error  # noqa: E402
from tests.rl.conftest import weights_changed  # noqa: E402


def _api_again(result: dict, fn, *args, **kwargs) -> dict:
    """The API's answer for the same run: found (cached), otherwise the same object."""
    again = fn(*args, **kwargs).to_dict()
    assert again.pop("cached") is True
    assert result.pop("cached") is False
    return again


def test_lipo_json_equals_api(cli, tiny_gpt2, demo_benchmark, tmp_path):
    from gradebench.rl import lipo

    out, results = tmp_path / "run", tmp_path / "results"
    code, stdout, err = cli("lipo", "--policy", tiny_gpt2, "--benchmark", demo_benchmark, "--out", out,
                            "--loss", "ranknet", "--list-size", "2", "--steps", "2", "--lr", "1e-3",
                            "--batch-size", "2", "--results-dir", results, "--json")
    assert code == 0, err
    result = json.loads(stdout)  # stdout is exactly the JSON: the trainers' prints went elsewhere
    again = _api_again(result, lipo, tiny_gpt2, demo_benchmark, out=out, loss="ranknet", list_size=2, steps=2,
                       lr=1e-3, batch_size=2, results_dir=results)
    assert again == result
    assert result["loss"] == {"name": "ranknet", "params": {}} and result["n_steps"] == 2


def test_grpo_and_ppo_with_an_exported_reward(cli, tiny_gpt2, demo_benchmark, exported_reward, tmp_path):
    from gradebench.experiments.store import list_policy_records
    from gradebench.rl import grpo, ppo

    results = tmp_path / "results"
    common = ["--policy", tiny_gpt2, "--reward", exported_reward, "--benchmark", demo_benchmark, "--steps", "2",
              "--lr", "1e-3", "--max-completion-length", "8", "--results-dir", results, "--json"]
    code, stdout, err = cli("grpo", *common, "--out", tmp_path / "grpo", "--num-generations", "2")
    assert code == 0, err
    g = json.loads(stdout)
    assert _api_again(g, grpo, tiny_gpt2, exported_reward, demo_benchmark, out=tmp_path / "grpo", steps=2,
                      lr=1e-3, max_completion_length=8, num_generations=2, results_dir=results) == g
    code, stdout, err = cli("ppo", *common, "--out", tmp_path / "ppo", "--batch-size", "2", "--ppo-epochs", "1")
    assert code == 0, err
    p = json.loads(stdout)
    assert _api_again(p, ppo, tiny_gpt2, exported_reward, demo_benchmark, out=tmp_path / "ppo", steps=2, lr=1e-3,
                      max_completion_length=8, batch_size=2, ppo_epochs=1, results_dir=results) == p
    for result in (g, p):
        assert result["reward"]["normalize"] is True and result["reward"]["fingerprint"]
        for line in result["history"]:
            assert math.isfinite(line["reward_mean"]) and math.isfinite(line["kl"])
        assert weights_changed(tiny_gpt2, tmp_path / result["method"] / "policy") > 0
    assert sorted(r.method for r in list_policy_records(results)) == ["grpo", "ppo"]
    # the scorer records' store does not see policy records
    from gradebench.experiments.store import list_records

    assert list_records(results) == []


def test_human_output(cli, tiny_gpt2, demo_benchmark, tmp_path):
    code, stdout, err = cli("lipo", "--policy", tiny_gpt2, "--benchmark", demo_benchmark, "--out", tmp_path / "r",
                            "--steps", "1", "--batch-size", "2", "--results-dir", tmp_path / "res")
    assert code == 0, err
    assert "lipo policy trained on demo" in stdout and "record:" in stdout


@pytest.mark.parametrize("command", ["lipo", "grpo", "ppo"])
def test_a_non_causal_policy_is_one_line(cli, command, encoder_folder, demo_benchmark, tmp_path):
    args = [command, "--policy", encoder_folder, "--benchmark", demo_benchmark, "--out", tmp_path / "run",
            "--results-dir", tmp_path / "res"]
    if command != "lipo":
        args += ["--reward", tmp_path / "no-reward"]
    code, stdout, err = cli(*args)
    assert code == 2 and stdout == ""
    assert_one_line_error(err, "not a causal language model", "BertModel")
    assert not (tmp_path / "run").exists() and not (tmp_path / "res").exists()


def test_a_reward_of_another_version_is_one_line(cli, tiny_gpt2, demo_benchmark, exported_reward, tmp_path):
    import shutil

    from gradebench.reward import REWARD_FILE

    old = tmp_path / "old-reward"
    shutil.copytree(exported_reward, old)
    meta = json.loads((old / REWARD_FILE).read_text())
    meta["schema_version"] = 999
    (old / REWARD_FILE).write_text(json.dumps(meta))
    code, stdout, err = cli("grpo", "--policy", tiny_gpt2, "--reward", old, "--benchmark", demo_benchmark,
                            "--out", tmp_path / "run", "--results-dir", tmp_path / "res")
    assert code == 2 and stdout == ""
    assert_one_line_error(err, "v999", "export")
    assert not (tmp_path / "run").exists() and not (tmp_path / "res").exists()


def test_prompts_longer_than_the_context_are_one_line(cli, tiny_gpt2, demo_benchmark, exported_reward, tmp_path):
    code, stdout, err = cli("ppo", "--policy", tiny_gpt2, "--reward", exported_reward, "--benchmark",
                            demo_benchmark, "--out", tmp_path / "run", "--results-dir", tmp_path / "res",
                            "--prompt-template", "{query}" + " and more" * 200)
    assert code == 2 and stdout == ""
    assert_one_line_error(err, "longer than the policy's context of 256")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("damage", ["truncated-safetensors", "garbage-bin"])
@pytest.mark.parametrize("command", ["lipo", "grpo", "ppo"])
def test_damaged_policy_weights_are_one_line_naming_the_file(cli, command, damage, tiny_gpt2, demo_benchmark,
                                                             exported_reward, tmp_path):
    """Issue 16.6: truncated policy weights were ``internal error: SafetensorError`` (or
    ``UnpicklingError`` for a damaged ``pytorch_model.bin``), after the run folder was claimed."""
    import shutil

    policy = tmp_path / "policy"
    shutil.copytree(tiny_gpt2, policy)
    weights = policy / "model.safetensors"
    if damage == "truncated-safetensors":
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    else:
        weights.unlink()
        weights = policy / "pytorch_model.bin"
        weights.write_bytes(b"garbage" * 10)
    args = [command, "--policy", policy, "--benchmark", demo_benchmark, "--out", tmp_path / "run",
            "--results-dir", tmp_path / "res", "--steps", "1"]
    if command != "lipo":
        args += ["--reward", exported_reward]
    code, stdout, err = cli(*args)
    assert code == 2 and stdout == ""
    assert_one_line_error(err, str(weights), "corrupt or truncated weights file")
    assert not (tmp_path / "run").exists() and not (tmp_path / "res").exists()


def test_a_policy_that_fails_to_load_is_one_line(tiny_gpt2, tmp_path):
    """What the file check cannot see (weights of another shape) is still one line from load_policy."""
    import shutil

    from safetensors.torch import load_file, save_file

    from gradebench.errors import InvalidArgumentError
    from gradebench.rl.policy import load_policy

    policy = tmp_path / "policy"
    shutil.copytree(tiny_gpt2, policy)
    state = load_file(str(policy / "model.safetensors"))
    name = next(k for k, v in state.items() if v.ndim == 2)
    state[name] = state[name][:1].contiguous()
    save_file(state, str(policy / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(InvalidArgumentError, match="cannot load the policy") as e:
        load_policy(policy)
    assert e.value.path == str(policy)


def test_a_policy_without_weights_is_one_line(cli, tiny_gpt2, demo_benchmark, tmp_path):
    import shutil

    policy = tmp_path / "policy"
    shutil.copytree(tiny_gpt2, policy)
    (policy / "model.safetensors").unlink()
    code, stdout, err = cli("lipo", "--policy", policy, "--benchmark", demo_benchmark, "--out", tmp_path / "run",
                            "--results-dir", tmp_path / "res")
    assert code == 2 and stdout == ""
    assert_one_line_error(err, str(policy), "no weights file")
    assert not (tmp_path / "run").exists()
