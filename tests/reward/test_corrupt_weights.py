"""Every weights loader turns a truncated or damaged file into one line naming the file (issue 16.6).

safetensors, torch and tokenizers raise their own exception types with no file name
(``SafetensorError``, ``UnpicklingError``, a bare ``Exception`` from a tokenizer), which the CLI
reported as ``internal error``. The weight files are now checked before a library reads them
(:mod:`gradebench.scorers._weight_files`), and what a loader still raises is worded in one line.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gradebench.errors import GradebenchError, InvalidArgumentError
from tests.cli.conftest import assert_one_line_error


def _truncate(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def _copy(run: Path, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(run, out)
    return out


@pytest.fixture(scope="module")
def probe_run(demo_benchmark, tmp_path_factory) -> Path:
    from gradebench.experiments.train import train

    out = tmp_path_factory.mktemp("probe") / "run"
    train(demo_benchmark, "query-blind", config={"dim": 2**10}, out=out)
    return out


@pytest.mark.parametrize("keep", [0.0, 0.01, 0.5, 0.999])
def test_eval_of_truncated_hashed_weights_is_one_line(hashed_run, tmp_path, cli, keep):
    run = _copy(hashed_run, tmp_path)
    weights = run / "model" / "model.safetensors"
    _truncate(weights, keep)
    code, out, err = cli("eval", "--run", run, "--results-dir", tmp_path / "res")
    assert code == 2 and out == ""
    assert_one_line_error(err, str(weights), "corrupt or truncated weights file")
    assert "internal error" not in err and not (tmp_path / "res").exists()


def test_eval_of_truncated_probe_weights_is_one_line(probe_run, tmp_path, cli):
    run = _copy(probe_run, tmp_path)
    weights = run / "model" / "weights.safetensors"
    _truncate(weights)
    code, out, err = cli("eval", "--run", run, "--results-dir", tmp_path / "res")
    assert code == 2 and out == ""
    assert_one_line_error(err, str(weights), "corrupt or truncated weights file")


def test_reward_load_names_the_truncated_file(hashed_reward, tmp_path):
    from gradebench.reward import load

    reward = tmp_path / "reward"
    shutil.copytree(hashed_reward, reward)
    weights = reward / "scorer" / "model.safetensors"
    _truncate(weights)
    with pytest.raises(InvalidArgumentError, match="corrupt or truncated weights file") as e:
        load(reward)
    assert e.value.path == str(weights)


def test_eval_of_a_truncated_cross_encoder_is_one_line(ce_run, tmp_path, cli):
    run = _copy(ce_run, tmp_path)
    weights = run / "model" / "model.safetensors"
    _truncate(weights)
    code, out, err = cli("eval", "--run", run, "--results-dir", tmp_path / "res")
    assert code == 2 and out == ""
    assert_one_line_error(err, str(weights), "corrupt or truncated weights file")


def test_a_damaged_cross_encoder_tokenizer_is_one_line(ce_run, tmp_path, cli):
    run = _copy(ce_run, tmp_path)
    (run / "model" / "tokenizer.json").write_text('{"version": "1.0", "trunc')
    code, out, err = cli("eval", "--run", run, "--results-dir", tmp_path / "res")
    assert code == 2 and out == ""
    # the tokenizer files are read before the model is loaded (gradebench.scorers._tokenizer_files): the
    # line names the damaged file itself
    assert_one_line_error(err, str(run / "model" / "tokenizer.json"), "save it again")
    assert "internal error" not in err


def test_a_damaged_base_model_is_one_line(tiny_bert, demo_lists, tmp_path):
    from gradebench.scorers import make_scorer

    base = tmp_path / "base"
    shutil.copytree(tiny_bert, base)
    _truncate(base / "model.safetensors")
    scorer = make_scorer("cross-encoder", {"model": str(base), "device": "cpu", "max_length": 32})
    with pytest.raises(InvalidArgumentError, match="corrupt or truncated weights file") as e:
        scorer.score(demo_lists["test"])
    assert e.value.path == str(base / "model.safetensors")


def test_the_check_reads_torch_zips_and_names_the_bad_member(tmp_path):
    import torch

    from gradebench.scorers._weight_files import check_weight_file

    good = tmp_path / "pytorch_model.bin"
    torch.save({"w": torch.arange(64, dtype=torch.float32)}, good)
    check_weight_file(good, error=InvalidArgumentError, hint="h")
    data = bytearray(good.read_bytes())
    flipped = tmp_path / "flipped.bin"
    data[data.index(torch.arange(64, dtype=torch.float32).numpy().tobytes()) + 100] ^= 0xFF  # the tensor's bytes
    flipped.write_bytes(bytes(data))
    with pytest.raises(InvalidArgumentError, match="fails its CRC check") as e:
        check_weight_file(flipped, error=InvalidArgumentError, hint="h")
    assert e.value.path == str(flipped)
    truncated = good.read_bytes()[:-30]  # the zip's central directory is gone
    for name, data in (("empty.bin", b""), ("short.safetensors", b"\x08\x00"), ("garbage.pt", b"PK\x03\x04junk"),
                       ("truncated.bin", truncated)):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(GradebenchError) as e:
            check_weight_file(tmp_path / name, error=InvalidArgumentError, hint="h")
        assert e.value.path == str(tmp_path / name)
