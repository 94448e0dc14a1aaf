"""A model whose tokenizer files disagree is refused in one line naming the file and the key, before a loader
reads other token ids than the model was trained on (issue 28, item 3)."""

from __future__ import annotations

import json
import shutil

import pytest

from gradebench.errors import InvalidArgumentError
from gradebench.scorers._tokenizer_files import check_tokenizer_files
from tests.conftest import one_torch_thread


def _named(model, out, cls, *, file="tokenizer_config.json"):
    """A copy of ``model`` whose ``file`` names ``cls`` as the tokenizer class."""
    folder = shutil.copytree(model, out)
    path = folder / file
    doc = json.loads(path.read_text())
    if file == "config.json":  # the class is read from config.json only without one in tokenizer_config.json
        tc = json.loads((folder / "tokenizer_config.json").read_text())
        tc.pop("tokenizer_class", None)
        (folder / "tokenizer_config.json").write_text(json.dumps(tc))
    doc["tokenizer_class"] = cls
    path.write_text(json.dumps(doc))
    return folder


@pytest.mark.parametrize("cls, needle", [
    ("GPT2Tokenizer", "'GPT2Tokenizer' (a BPE tokenizer), but tokenizer.json holds a WordPiece tokenizer"),
    ("RobertaTokenizerFast", "but tokenizer.json holds a WordPiece tokenizer"),
    ("XLMRobertaTokenizer", "(a BPE/Unigram tokenizer), but tokenizer.json holds a WordPiece tokenizer"),
    ("Trainer", "transformers' Trainer is not a tokenizer"),
    ("BertModel", "transformers' BertModel is not a tokenizer"),
    ("NoSuchTokenizer", "which transformers"),
    ("os.system", "must be a class name"),
])
@pytest.mark.parametrize("how", ["--model", "cross-encoder scorer"])
def test_eval_refuses_a_tokenizer_class_that_disagrees(cli, capsys, demo_benchmark, seq_classifier, tmp_path, cls,
                                                       needle, how):
    model = _named(seq_classifier, tmp_path / "m", cls)
    args = ["--model", model] if how == "--model" else ["--scorer", "cross-encoder", "--set", f"model={model}"]
    capsys.readouterr()
    code, out, err = cli("eval", "--benchmark", demo_benchmark, *args, "--resamples", 20, "--results-dir",
                         tmp_path / "res", "--json")
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert f"{model / 'tokenizer_config.json'}, key 'tokenizer_class'" in err and needle in err
    assert "hint: set tokenizer_class in tokenizer_config.json" in err


@pytest.mark.parametrize("adapter, fixture, cls, kind", [
    ("sequence-classifier", "seq_classifier", "LlamaTokenizerFast", "WordPiece"),
    ("llm-judge", "judge_lm", "BertTokenizer", "BPE"),
    ("chat-reward", "chat_reward", "DistilBertTokenizerFast", "BPE"),
    ("bi-encoder", "tiny_bert", "T5Tokenizer", "WordPiece"),
])
def test_every_adapter_checks_the_tokenizer(request, tmp_path, adapter, fixture, cls, kind):
    from gradebench.scorers.adapters import make_model_scorer

    model = _named(request.getfixturevalue(fixture), tmp_path / "m", cls)
    with pytest.raises(InvalidArgumentError, match=f"holds a {kind} tokenizer") as e:
        make_model_scorer(model, adapter)
    assert e.value.key == "tokenizer_class" and e.value.path == str(model / "tokenizer_config.json")


def test_the_class_in_config_json_is_checked_too(seq_classifier, tmp_path):
    model = _named(seq_classifier, tmp_path / "m", "GPT2Tokenizer", file="config.json")
    with pytest.raises(InvalidArgumentError, match="holds a WordPiece tokenizer") as e:
        check_tokenizer_files(model)
    assert e.value.path == str(model / "config.json")


@pytest.mark.parametrize("cls", [
    "BertTokenizer", "BertTokenizerFast", "PreTrainedTokenizerFast", "TokenizersBackend",
    "RemBertTokenizer",  # a real tokenizer class outside the table: believed
])
def test_classes_that_read_the_file_are_accepted(seq_classifier, tmp_path, cls):
    check_tokenizer_files(_named(seq_classifier, tmp_path / "m", cls))


def test_the_fixtures_and_a_matching_class_score(demo_benchmark, seq_classifier, judge_lm, tiny_bert, tmp_path):
    import gradebench

    for model in (seq_classifier, judge_lm, tiny_bert):
        check_tokenizer_files(model)
    with one_torch_thread():
        rec = gradebench.evaluate_model(demo_benchmark, _named(seq_classifier, tmp_path / "m", "BertTokenizerFast"),
                                        n_resamples=20, write=False)
    assert rec.metrics["ndcg@5"].value is not None


def test_a_saved_cross_encoder_is_checked_on_load(seq_classifier, tmp_path):
    from gradebench.scorers._ce_model import load_saved_model

    model = _named(seq_classifier, tmp_path / "m", "Trainer")
    with pytest.raises(InvalidArgumentError, match="is not a tokenizer"):
        load_saved_model(model, max_length=32, device="cpu")
