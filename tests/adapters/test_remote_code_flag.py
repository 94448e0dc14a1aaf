"""Only the command-line flag (or the API's argument) lets code from a model folder run: the key
``trust_remote_code`` in ``--set``, an experiment file or a config dict is refused in one line, and the
folder's code never runs (issue 28, item 1)."""

from __future__ import annotations

import json
import shutil

import pytest

from gradebench.errors import RemoteCodeError
from gradebench.scorers import make_scorer
from gradebench.scorers.adapters import ADAPTER_NAMES, make_model_scorer
from tests.conftest import one_torch_thread

MODELING = """
from pathlib import Path
from transformers import BertForSequenceClassification

Path("{marker}").write_text("ran")  # evidence that this code ran


class XForSequenceClassification(BertForSequenceClassification):
    pass
"""
FIXTURES = {"cross-encoder": "st_cross_encoder", "sequence-classifier": "seq_classifier",
            "chat-reward": "chat_reward", "bi-encoder": "tiny_bert", "llm-judge": "judge_lm"}


def _with_code(model, out, marker):
    """A copy of ``model`` whose config.json maps its classes to code in the folder (the code leaves ``marker``)."""
    folder = shutil.copytree(model, out)
    (folder / "modeling_x.py").write_text(MODELING.replace("{marker}", str(marker)))
    doc = json.loads((folder / "config.json").read_text())
    doc["auto_map"] = {"AutoModelForSequenceClassification": "modeling_x.XForSequenceClassification",
                       "AutoModel": "modeling_x.XForSequenceClassification"}
    (folder / "config.json").write_text(json.dumps(doc))
    return folder


@pytest.mark.parametrize("adapter", ADAPTER_NAMES)
def test_the_key_in_the_options_is_refused_on_every_adapter(request, tmp_path, adapter):
    model = _with_code(request.getfixturevalue(FIXTURES[adapter]), tmp_path / "m", tmp_path / "marker")
    for value in (True, "true", 1):
        with pytest.raises(RemoteCodeError, match="only the command-line flag") as e:
            make_model_scorer(model, adapter, {"trust_remote_code": value})
        assert e.value.key == "trust_remote_code" and "--trust-remote-code" in e.value.hint
        with pytest.raises(RemoteCodeError, match="only the command-line flag"):
            make_scorer(f"hf-{adapter}", {"model": str(model), "trust_remote_code": value})
    with pytest.raises(RemoteCodeError):  # the flag does not make the key acceptable either
        make_model_scorer(model, adapter, {"trust_remote_code": True}, trust_remote_code=True)
    assert not (tmp_path / "marker").exists()


def test_a_config_object_cannot_carry_it_either():
    from pydantic import ValidationError

    from gradebench.scorers.adapters.sequence_classifier import SequenceClassifierConfig

    with pytest.raises(ValidationError, match="only the command-line flag"):
        SequenceClassifierConfig(model="m", trust_remote_code=True)
    assert SequenceClassifierConfig(model="m", trust_remote_code=False).trust_remote_code is False  # the default


def test_the_api_argument_allows_it_and_is_recorded(seq_classifier, tmp_path):
    model = _with_code(seq_classifier, tmp_path / "m", tmp_path / "marker")
    with pytest.raises(RemoteCodeError, match="auto_map"):
        make_model_scorer(model, "sequence-classifier")
    scorer = make_model_scorer(model, "sequence-classifier", trust_remote_code=True)
    assert scorer.config.trust_remote_code is True
    assert scorer.describe()["config"]["trust_remote_code"] is True
    assert scorer.provenance()["trust_remote_code"] is True


def test_eval_set_is_refused_in_one_line_and_no_code_runs(cli, capsys, demo_benchmark, seq_classifier, tmp_path):
    model = _with_code(seq_classifier, tmp_path / "m", tmp_path / "marker")
    capsys.readouterr()
    for args in (["--model", model], ["--scorer", "hf-sequence-classifier", "--set", f"model={model}"]):
        code, out, err = cli("eval", "--benchmark", demo_benchmark, *args, "--set", "trust_remote_code=true",
                             "--resamples", 20, "--results-dir", tmp_path / "res", "--json")
        assert code == 2 and out == "" and err.count("\n") == 1, err
        assert "key 'trust_remote_code'" in err and "--trust-remote-code" in err
    assert not (tmp_path / "marker").exists()


def test_an_experiment_file_cannot_allow_it(cli, capsys, demo_benchmark, seq_classifier, tmp_path):
    model = _with_code(seq_classifier, tmp_path / "m", tmp_path / "marker")
    exp = tmp_path / "exp.yaml"
    exp.write_text(f"name: sent\nbenchmarks:\n  - path: {demo_benchmark}\nscorers:\n"
                   f"  - name: hf-sequence-classifier\n    config: {{model: {model}, trust_remote_code: true}}\n"
                   "seeds: [0]\nsplit: test\nn_resamples: 20\n")
    capsys.readouterr()
    with one_torch_thread():
        code, out, err = cli("sweep", exp, "--results-dir", tmp_path / "res", "--runs-dir", tmp_path / "runs")
    assert code == 2 and err.count("\n") == 1, err
    assert "key 'trust_remote_code'" in err and "--trust-remote-code" in err
    assert not (tmp_path / "marker").exists() and not any((tmp_path).rglob("*.predictions.parquet"))
