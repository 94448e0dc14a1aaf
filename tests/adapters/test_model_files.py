"""Model folders: located (local or from the Hub cache), hashed, refused when they would run code,
and matched to the adapter their configs call for."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from gradebench.errors import GradebenchError, InvalidArgumentError, SourceNotFoundError
from gradebench.scorers.adapters import ADAPTERS, adapter_of, make_model_scorer, scorer_name
from gradebench.scorers.adapters.model_files import (
    RemoteCodeError,
    check_adapter_fits,
    check_no_remote_code,
    detect_adapter,
    locate_model,
    model_files,
)


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _edit_json(path: Path, **changes) -> None:
    doc = json.loads(path.read_text())
    doc.update(changes)
    path.write_text(json.dumps(doc))


def test_every_adapter_is_a_registered_external_scorer():
    from gradebench.scorers import get_scorer_class

    for adapter, name in ADAPTERS.items():
        cls = get_scorer_class(name)
        assert cls.adapter == adapter and cls.kind == "external" and not cls.trainable
    with pytest.raises(InvalidArgumentError, match="unknown adapter 'bi-encodr'; did you mean 'bi-encoder'"):
        scorer_name("bi-encodr")


def test_detects_the_adapter_from_the_configs(seq_classifier, nli_classifier, st_cross_encoder, judge_lm,
                                              chat_reward, reward_no_template, minilm, tiny_bert):
    expected = {seq_classifier: "sequence-classifier", nli_classifier: "sequence-classifier",
                st_cross_encoder: "cross-encoder", judge_lm: "llm-judge", chat_reward: "chat-reward",
                reward_no_template: "sequence-classifier", minilm: "bi-encoder"}
    for path, adapter in expected.items():
        assert detect_adapter(locate_model(path))[0] == adapter, path
        assert adapter_of(path) == adapter
    with pytest.raises(InvalidArgumentError, match=r"cannot tell which adapter fits this model \(architectures: BertModel"):
        detect_adapter(locate_model(tiny_bert))


@pytest.mark.parametrize("adapter, fixture, needle", [
    ("sequence-classifier", "tiny_bert", "has no sequence-classification head"),
    ("chat-reward", "minilm", "has no sequence-classification head"),
    ("cross-encoder", "tiny_bert", "has no cross-encoder scoring head"),
    ("bi-encoder", "st_cross_encoder", "is a cross-encoder"),
    ("bi-encoder", "judge_lm", "language-modelling head"),
    ("llm-judge", "seq_classifier", "is not a causal language model"),
])
def test_an_adapter_that_does_not_fit_the_head_is_refused(request, adapter, fixture, needle):
    folder = locate_model(request.getfixturevalue(fixture))
    with pytest.raises(InvalidArgumentError, match=needle) as err:
        check_adapter_fits(adapter, folder)
    assert err.value.key == "adapter" and "\n" not in err.value.one_line()


def test_a_bare_encoder_fits_the_bi_encoder(tiny_bert):
    check_adapter_fits("bi-encoder", locate_model(tiny_bert))  # mean pooling, as sentence-transformers reads it


def test_not_a_model(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidArgumentError, match=r"not a model folder \(no config.json or modules.json\)"):
        locate_model(tmp_path / "empty")
    with pytest.raises(SourceNotFoundError, match="no such model folder"):
        locate_model(tmp_path / "missing")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(InvalidArgumentError, match="a file, not a folder"):
        locate_model(tmp_path / "file.txt")
    (tmp_path / "noweights").mkdir()
    (tmp_path / "noweights" / "config.json").write_text("{}")
    with pytest.raises(InvalidArgumentError, match="no weight file"):
        model_files(locate_model(tmp_path / "noweights"))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{not json")
    with pytest.raises(InvalidArgumentError, match="config.json is not valid JSON"):
        locate_model(tmp_path / "broken").config


def test_files_are_hashed_by_content_and_role(seq_classifier, tmp_path):
    folder = locate_model(seq_classifier)
    files = model_files(folder)
    assert files["roles"]["model.safetensors"] == "weights" and files["roles"]["tokenizer.json"] == "tokenizer"
    assert files["roles"]["config.json"] == "config"
    assert set(files["files"]) == set(files["roles"])
    copy = _copy(seq_classifier, tmp_path / "elsewhere")
    (copy / "README.md").write_text("notes a loader never reads")
    (copy / "onnx").mkdir()
    (copy / "onnx" / "model.bin").write_bytes(b"an export a torch loader never reads")
    assert model_files(locate_model(copy)) == files  # where it lies and unread files do not count
    weights = copy / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    changed = model_files(locate_model(copy))
    assert changed["weights_sha256"] != files["weights_sha256"] and changed["digest"] != files["digest"]
    assert changed["tokenizer_sha256"] == files["tokenizer_sha256"]


def test_remote_code_is_refused_unless_trusted(seq_classifier, minilm, tmp_path):
    copy = _copy(seq_classifier, tmp_path / "remote")
    _edit_json(copy / "config.json", auto_map={"AutoModelForSequenceClassification": "modeling_x.XForSeq"})
    folder = locate_model(copy)
    with pytest.raises(RemoteCodeError, match=r"config.json maps classes to code in the folder \(auto_map\)") as err:
        check_no_remote_code(folder, trust_remote_code=False)
    assert "--trust-remote-code" in err.value.one_line()
    assert check_no_remote_code(folder, trust_remote_code=True)
    with pytest.raises(RemoteCodeError):
        make_model_scorer(copy, "sequence-classifier")
    st = _copy(minilm, tmp_path / "st-remote")
    modules = json.loads((st / "modules.json").read_text())
    modules[1]["type"] = "custom_pooling.MyPooling"
    (st / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(RemoteCodeError, match="not part of sentence-transformers"):
        check_no_remote_code(locate_model(st), trust_remote_code=False)


def _fake_hub_cache(home: Path, repo_id: str, model: Path, commit: str = "a" * 40) -> Path:
    repo = home / "hub" / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / commit
    shutil.copytree(model, snapshot)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    return snapshot


def test_hub_ids_resolve_from_the_local_cache_offline(seq_classifier, tmp_path, monkeypatch):
    home = tmp_path / "hf"
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(home / "hub"))  # read at its import
    snapshot = _fake_hub_cache(home, "gradebench-test/tiny-rm", seq_classifier)
    folder = locate_model("gradebench-test/tiny-rm")
    assert folder.source == "hub" and folder.revision == "a" * 40 and folder.name == "gradebench-test/tiny-rm"
    assert folder.path == snapshot
    scorer = make_model_scorer("gradebench-test/tiny-rm")
    prov = scorer.provenance()
    assert prov["source"] == "hub" and prov["revision"] == "a" * 40 and prov["id"] == "gradebench-test/tiny-rm"
    with pytest.raises(SourceNotFoundError) as err:
        locate_model("gradebench-test/not-downloaded")
    line = err.value.one_line()
    assert "not in the local Hugging Face cache (HF_HUB_OFFLINE=1" in line and "hf download" in line
    assert "\n" not in line


def test_a_revision_needs_a_hub_id(seq_classifier):
    with pytest.raises(InvalidArgumentError, match="revision='main' applies to Hub ids"):
        locate_model(seq_classifier, revision="main")


def test_the_model_is_given_once(seq_classifier):
    with pytest.raises(GradebenchError, match="not as the option 'model'"):
        make_model_scorer(seq_classifier, options={"model": "x"})


def test_only_the_weight_files_a_loader_reads_are_checked(tmp_path):
    """A ``.bin`` beside ``*.safetensors`` is never read (transformers prefers safetensors); one alone is."""
    from safetensors.numpy import save_file

    from gradebench.scorers._weight_files import check_weight_folder

    save_file({"w": np.zeros((2, 2), dtype=np.float32)}, str(tmp_path / "model.safetensors"))
    (tmp_path / "pytorch_model.bin").write_bytes(b"not a torch file")
    check_weight_folder(tmp_path, error=InvalidArgumentError, hint="h", loaded_only=True)
    with pytest.raises(InvalidArgumentError, match="corrupt or truncated"):
        check_weight_folder(tmp_path, error=InvalidArgumentError, hint="h")
    (tmp_path / "2_Dense").mkdir()
    (tmp_path / "2_Dense" / "pytorch_model.bin").write_bytes(b"not a torch file")
    with pytest.raises(InvalidArgumentError, match="corrupt or truncated") as e:
        check_weight_folder(tmp_path, error=InvalidArgumentError, hint="h", loaded_only=True)
    assert e.value.path == str(tmp_path / "2_Dense" / "pytorch_model.bin")
