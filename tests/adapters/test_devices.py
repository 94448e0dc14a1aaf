"""A device that is not there is one line naming it and what is available, exit 2, on the model adapters
and the cross-encoder scorer (issue 28, item 4)."""

from __future__ import annotations

import pytest

from gradebench.errors import InvalidArgumentError
from gradebench.scorers._devices import available_devices, check_device


def _past_the_gpus() -> str:
    import torch

    return f"cuda:{torch.cuda.device_count() + 7}"


@pytest.mark.parametrize("device, needle", [
    ("tpu", "is not a torch device"),
    ("CUDA", "is not a torch device"),
    ("cuda:x", "is not a torch device"),
    ("", "is not a torch device"),
    ("meta", "holds no weights"),
    ("cpu:3", "one CPU device"),
    ("hpu", "no usable hpu device"),
    ("past the GPUs", "is not available"),
])
def test_devices_that_are_not_there_are_named(device, needle):
    device = _past_the_gpus() if device == "past the GPUs" else device
    with pytest.raises(InvalidArgumentError, match=needle) as e:
        check_device(device)
    assert e.value.key == "device" and f"device {device!r}" in str(e.value)
    assert f"available: {', '.join(available_devices())}" in str(e.value)


def test_cuda_without_cuda_and_mps_without_metal(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.setattr(torch.version, "hip", None)
    for device in ("cuda", "cuda:7"):
        with pytest.raises(InvalidArgumentError) as e:
            check_device(device)
        assert str(e.value).startswith(f"key 'device': device {device!r} is not available (this torch has no CUDA; "
                                       "available: cpu)")
    monkeypatch.setattr(torch.version, "cuda", "12.4")
    with pytest.raises(InvalidArgumentError, match="no CUDA device is visible"):
        check_device("cuda")
    with pytest.raises(InvalidArgumentError, match="Metal"):
        check_device("mps")
    assert check_device("cpu") == "cpu" and check_device("cpu:0") == "cpu:0"


def test_a_cuda_index_is_checked_against_the_visible_gpus(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert [check_device(d) for d in ("cuda", "cuda:0", "cuda:1")] == ["cuda", "cuda:0", "cuda:1"]
    with pytest.raises(InvalidArgumentError, match=r"2 CUDA devices visible, numbered from 0; available: cpu, "
                                                   r"cuda:0, cuda:1"):
        check_device("cuda:2")


def test_a_launch_rank_past_the_gpus_is_named(monkeypatch):
    import torch

    from gradebench.scorers import make_scorer

    for key, value in {"WORLD_SIZE": "8", "RANK": "5", "LOCAL_RANK": "5"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with pytest.raises(InvalidArgumentError, match="device 'cuda:5' is not available"):
        make_scorer("hf-sequence-classifier", {"model": "unused"}).device  # noqa: B018


@pytest.mark.parametrize("device", ["cuda", "past the GPUs", "tpu", "meta"])
@pytest.mark.parametrize("how", ["--model", "cross-encoder scorer"])
def test_eval_names_the_device_in_one_line(cli, capsys, demo_benchmark, seq_classifier, tiny_bert, tmp_path,
                                           device, how):
    import torch

    if device == "cuda" and torch.cuda.is_available():
        device = _past_the_gpus()
    device = _past_the_gpus() if device == "past the GPUs" else device
    args = (["--model", seq_classifier] if how == "--model" else
            ["--scorer", "cross-encoder", "--set", f"model={tiny_bert}"])
    capsys.readouterr()
    code, out, err = cli("eval", "--benchmark", demo_benchmark, *args, "--set", f"device={device}",
                         "--resamples", 20, "--results-dir", tmp_path / "res", "--json")
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert f"key 'device': device {device!r} " in err and "available: cpu" in err
    assert not (tmp_path / "res").exists() or not any((tmp_path / "res").rglob("*.json"))
