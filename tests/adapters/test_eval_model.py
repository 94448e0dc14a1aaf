"""``gradebench eval --model`` and ``gradebench.evaluate_model``: records with provenance, bias controls and
the invariance check; one-line errors with exit 2 for bad input, exit 1 for a failed invariance check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import numpy as np
import pytest

import gradebench
from gradebench.experiments.leaderboard import leaderboard
from gradebench.experiments.store import read_record
from tests.conftest import REPO, one_torch_thread

VOLATILE = ("created_at", "timings", "environment")


def _stable(doc):
    """The record without what varies by run, nor its tables' digests (a record not written has no tables)."""
    out = {k: v for k, v in doc.items() if k not in VOLATILE}
    if "files" in out:
        out["files"] = {k: v for k, v in out["files"].items() if not k.endswith("_sha256")}
    return out


@pytest.fixture()
def threads():
    with one_torch_thread():
        yield


def test_eval_model_json_equals_the_api_and_the_written_record(cli, demo_benchmark, seq_classifier, tmp_path,
                                                                threads):
    res = tmp_path / "res"
    code, out, err = cli("eval", "--benchmark", demo_benchmark, "--model", seq_classifier, "--set", "batch_size=4",
                         "--resamples", 50, "--results-dir", res, "--check-invariance", "--json")
    assert code == 0, err
    printed = json.loads(out)
    assert printed == read_record(res / "demo" / f"{printed['id']}.json").to_dict()
    api = gradebench.evaluate_model(demo_benchmark, seq_classifier, options={"batch_size": 4}, n_resamples=50,
                                    write=False, check_invariance=True)
    assert _stable(printed) == _stable(api.to_dict())
    jsonschema.validate(printed, json.loads((REPO / "schemas" / "result-v1.json").read_text()))
    m = printed["scorer"]["model"]
    assert printed["scorer"]["name"] == "hf-sequence-classifier" and printed["scorer"]["kind"] == "external"
    assert m["adapter"] == "sequence-classifier" and m["source"] == "local" and m["name"] == "seq-classifier"
    assert set(m["files"]) >= {"model.safetensors", "tokenizer.json", "config.json"}
    assert m["dtype"] == "float32" and m["device"] == "cpu" and m["batch_size"] == 4 and m["processes"] == 1
    assert m["options"]["output"] == "logit" and m["trust_remote_code"] is False
    assert "transformers" in m["libraries"]
    inv = printed["invariance"]
    assert inv["passed"] and inv["batch_size"] == 1 and inv["n_candidates"] == 25
    bias = printed["bias"]
    assert bias["metric"] == "pairwise_agreement" and set(bias["baselines"]) == {"length", "overlap", "bm25"}
    assert bias["system"] == pytest.approx(printed["metrics"]["pairwise_agreement"]["value"])


def test_the_record_id_is_the_models_content_not_its_path(demo_benchmark, seq_classifier, tmp_path, threads):
    a = gradebench.evaluate_model(demo_benchmark, seq_classifier, n_resamples=20, results_dir=tmp_path / "r")
    moved = shutil.copytree(seq_classifier, tmp_path / "moved")
    b = gradebench.evaluate_model(demo_benchmark, moved, n_resamples=20, write=False)
    assert a.id == b.id and a.scorer.model.identity == b.scorer.model.identity
    assert a.metrics == b.metrics and a.scorer.model.path != b.scorer.model.path
    weights = moved / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-2] ^= 1  # another model at the same path
    weights.write_bytes(bytes(data))
    c = gradebench.evaluate_model(demo_benchmark, moved, n_resamples=20, write=False)
    assert c.id != b.id and c.scorer.model.digest != b.scorer.model.digest
    d = gradebench.evaluate_model(demo_benchmark, seq_classifier, options={"batch_size": 7}, n_resamples=20,
                                  write=False)
    assert d.id != a.id  # a scoring option is part of the identity
    e = gradebench.evaluate_model(demo_benchmark, seq_classifier, options={"name": "my-rm", "invariance_queries": 2},
                                  n_resamples=20, write=False)
    assert e.id == a.id  # a display name or the check's sample size is not


def test_an_external_model_is_a_leaderboard_system(demo_benchmark, seq_classifier, st_cross_encoder, tmp_path,
                                                   threads):
    from gradebench.experiments.evaluate import evaluate_scorer
    from gradebench.scorers import make_scorer

    res = tmp_path / "res"
    gradebench.evaluate_model(demo_benchmark, seq_classifier, n_resamples=50, results_dir=res,
                              options={"name": "tiny-rm"})
    gradebench.evaluate_model(demo_benchmark, st_cross_encoder, n_resamples=50, results_dir=res)
    evaluate_scorer(demo_benchmark, make_scorer("bm25"), n_resamples=50, results_dir=res)
    board = leaderboard(res).boards[0]
    systems = {r.system for r in board.rows}
    assert systems == {"hf-sequence-classifier[model=tiny-rm]", "hf-cross-encoder[model=cross-encoder]", "bm25"}
    assert all(r.tied_with_best is not None for r in board.rows)  # paired tests against the best


def test_eval_model_prints_provenance_invariance_and_bias(cli, demo_benchmark, seq_classifier, tmp_path, threads):
    code, out, err = cli("eval", "--benchmark", demo_benchmark, "--model", seq_classifier, "--resamples", 20,
                         "--results-dir", tmp_path, "--check-invariance")
    assert code == 0, err
    text = " ".join(out.split())
    assert "hf-sequence-classifier on demo" in text and "(sequence-classifier, float32 on cpu, batch 32)" in text
    assert "invariance: batch size 1 on 25 candidates differs by at most" in text and ": passed" in text
    assert "length pairs: agreement" in text and "baselines (pairwise_agreement): length" in text


def test_a_failed_invariance_check_exits_1_with_the_figure(cli, demo_benchmark, seq_classifier, tmp_path,
                                                          monkeypatch, threads):
    from gradebench.scorers.adapters.sequence_classifier import SequenceClassifierScorer

    plain = SequenceClassifierScorer._forward
    monkeypatch.setattr(SequenceClassifierScorer, "_forward",
                        lambda self, model, batch: plain(self, model, batch) + 0.01 * batch["input_ids"].shape[1])
    code, out, err = cli("eval", "--benchmark", demo_benchmark, "--model", seq_classifier, "--resamples", 20,
                         "--results-dir", tmp_path, "--check-invariance", "--set", "bucket=false", "--json")
    assert code == 1
    record = json.loads(out)
    assert record["invariance"]["passed"] is False
    assert err.startswith("gradebench: error: ") and err.count("\n") == 1
    assert "the invariance check failed: scores at batch size 1 differ by up to" in err
    assert f"{record['invariance']['max_abs_diff']:.3g}" in err
    assert (tmp_path / "demo" / f"{record['id']}.json").is_file()  # the finding is recorded


@pytest.mark.parametrize("setup, args, needle", [
    ("empty", [], "not a model folder (no config.json or modules.json)"),
    ("missing", [], "no such model folder"),
    ("tiny_bert", ["--adapter", "sequence-classifier"], "has no sequence-classification head, so the "
                                                        "sequence-classifier adapter does not fit"),
    ("tiny_bert", [], "cannot tell which adapter fits this model"),
    ("judge_lm", ["--set", "template=TEMPLATE"], "prompt is missing the field {candidate}"),
    ("reward_no_template", ["--adapter", "chat-reward"], "has no chat template"),
    ("seq_classifier", ["--adapter", "bi-encodr"], "unknown adapter 'bi-encodr'; did you mean 'bi-encoder'"),
    ("seq_classifier", ["--set", "dtype=fp8"], "bad config for scorer 'hf-sequence-classifier'"),
    ("remote", [], "maps classes to code in the folder (auto_map)"),
    ("hub", [], "is not a local folder and not in the local Hugging Face cache"),
    ("random-safetensors", [], "model.safetensors: corrupt or truncated weights file (SafetensorError"),
    ("random-bin", [], "pytorch_model.bin: corrupt or truncated weights file (neither a complete zip archive"),
    ("truncated-minilm", ["--adapter", "bi-encoder"], "model.safetensors: corrupt or truncated weights file"),
    # the hint fits the problem (issue 31: it asked for "a local model folder ... or a Hub id")
    ("truncated-minilm", ["--adapter", "bi-encoder"], "(hint: the file is damaged (cut short or overwritten): copy "
                                                      "or save the model into this folder again)"),
])
def test_bad_input_is_one_line_and_exit_2(request, cli, capsys, demo_benchmark, tmp_path, setup, args, needle):
    if setup == "empty":
        model = tmp_path / "empty"
        model.mkdir()
    elif setup == "missing":
        model = tmp_path / "nowhere"
    elif setup == "remote":
        model = shutil.copytree(request.getfixturevalue("seq_classifier"), tmp_path / "remote")
        doc = json.loads((model / "config.json").read_text())
        doc["auto_map"] = {"AutoModel": "x.Y"}
        (model / "config.json").write_text(json.dumps(doc))
    elif setup == "hub":
        model = "gradebench-test/never-downloaded"
    elif setup in ("random-safetensors", "random-bin"):  # a real config.json, damaged weights
        model = shutil.copytree(request.getfixturevalue("seq_classifier"), tmp_path / setup)
        (model / "model.safetensors").unlink()
        name = "model.safetensors" if setup == "random-safetensors" else "pytorch_model.bin"
        (model / name).write_bytes(np.random.default_rng(0).bytes(1000))
    elif setup == "truncated-minilm":  # a download cut in half
        model = shutil.copytree(request.getfixturevalue("minilm"), tmp_path / setup)
        weights = model / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    else:
        model = request.getfixturevalue(setup)
    template = tmp_path / "t.yaml"
    template.write_text("name: t\nprompt: 'Q: {query}'\nscore: {kind: yes-no, positive: ' Yes', negative: ' No'}\n")
    args = [a.replace("TEMPLATE", str(template)) for a in args]
    res = tmp_path / "res"
    capsys.readouterr()  # what building the session's model fixtures printed
    code, out, err = cli("eval", "--benchmark", demo_benchmark, "--model", model, "--results-dir", res, *args)
    assert code == 2 and out == "", err
    assert err.startswith("gradebench: error: ") and needle in err and err.count("\n") == 1
    assert not res.exists() or not any(res.rglob("*.json"))  # nothing written


MODELING = """
from pathlib import Path
from transformers import BertForSequenceClassification

Path("{marker}").write_text("ran")  # evidence that this code ran


class XForSequenceClassification(BertForSequenceClassification):
    pass
"""


def test_code_in_the_folder_runs_only_with_trust_remote_code(cli, capsys, demo_benchmark, seq_classifier, tmp_path,
                                                             threads):
    model = shutil.copytree(seq_classifier, tmp_path / "remote")
    marker = tmp_path / "marker"
    (model / "modeling_x.py").write_text(MODELING.replace("{marker}", str(marker)))
    doc = json.loads((model / "config.json").read_text())
    doc["auto_map"] = {"AutoModelForSequenceClassification": "modeling_x.XForSequenceClassification"}
    (model / "config.json").write_text(json.dumps(doc))
    capsys.readouterr()
    code, out, err = cli("eval", "--benchmark", demo_benchmark, "--model", model, "--resamples", 20,
                         "--results-dir", tmp_path / "res", "--json")
    assert code == 2 and "--trust-remote-code" in err and not marker.exists()
    code, out, err = cli("eval", "--benchmark", demo_benchmark, "--model", model, "--resamples", 20,
                         "--results-dir", tmp_path / "res", "--trust-remote-code", "--json")
    assert code == 0, err
    assert marker.read_text() == "ran"
    m = json.loads(out)["scorer"]["model"]
    assert m["trust_remote_code"] is True and "modeling_x.py" in m["files"]  # the code is hashed too


@pytest.mark.parametrize("args, needle", [
    (["--scorer", "bm25", "--model", "m"], "--scorer and --model conflict"),
    (["--scorer", "bm25", "--adapter", "bi-encoder"], "--adapter applies to --model"),
    (["--scorer", "bm25", "--trust-remote-code"], "--trust-remote-code applies to --model"),
    (["--scorer", "bm25", "--check-invariance"], "--check-invariance applies to external models"),
    (["--run", "/r", "--check-invariance"], "--check-invariance applies to --model"),
])
def test_conflicting_flags_name_each_other(cli, demo_benchmark, tmp_path, args, needle):
    code, out, err = cli("eval", "--benchmark", demo_benchmark, "--results-dir", tmp_path, *args)
    assert code == 2 and out == "" and needle in err and err.count("\n") == 1


def test_model_needs_a_benchmark(cli, seq_classifier, tmp_path):
    code, _, err = cli("eval", "--model", seq_classifier, "--results-dir", tmp_path)
    assert code == 2 and "--model needs --benchmark DIR" in err


def test_every_record_has_bias_controls(demo_benchmark, tmp_path):
    from gradebench.experiments.evaluate import evaluate_scorer
    from gradebench.scorers import make_scorer

    rec = evaluate_scorer(demo_benchmark, make_scorer("overlap"), n_resamples=20, write=False)
    assert rec.bias is not None and rec.invariance is None and rec.scorer.model is None
    assert rec.bias.baselines["overlap"].value == pytest.approx(rec.metrics["pairwise_agreement"].value)
    assert not any(w.startswith("overlap ") for w in rec.bias.warnings)  # not compared with itself


def test_committed_records_without_the_new_fields_still_load():
    from gradebench.experiments.store import list_records

    records = list_records(REPO / "leaderboard" / "results")
    old = [r for r in records if r.bias is None]  # written before bias controls existed
    assert len(old) > 200 and all(r.invariance is None and r.scorer.model is None for r in old)
    assert {r.benchmark.name for r in old} >= {"esnli", "esnli-fixed", "esnli-human", "esnli-contrast"}
    new = [r for r in records if r.bias is not None]
    assert {r.benchmark.name for r in new} >= {"esnli-contrast-v2", "winowhy", "worldtree"}



def test_the_demo_evaluates_one_external_model(demo_benchmark, tmp_path, minilm, threads):
    from gradebench.experiments import demo

    assert demo.external_model() == str(minilm)
    label, record = demo.evaluate_external(demo_benchmark, tmp_path)
    assert label == "all-MiniLM-L6-v2 (bi-encoder)" and record.path.is_file()
    assert record.scorer.name == "hf-bi-encoder" and record.scorer.model.name == "all-MiniLM-L6-v2"
    rows = leaderboard(tmp_path).boards[0].rows
    assert [r.system for r in rows] == ["hf-bi-encoder[model=all-MiniLM-L6-v2]"]


def test_only_the_main_process_writes_and_speaks(cli, demo_benchmark, tmp_path, monkeypatch):
    """Under a distributed launch every process evaluates; rank 0 alone writes the record and prints."""
    monkeypatch.setenv("RANK", "1")
    code, out, err = cli("eval", "--benchmark", demo_benchmark, "--scorer", "bm25", "--resamples", 20,
                         "--results-dir", tmp_path, "--json")
    assert code == 0 and out == "" and not list(tmp_path.rglob("*.json"))
    monkeypatch.setenv("RANK", "0")
    code, out, err = cli("eval", "--benchmark", demo_benchmark, "--scorer", "bm25", "--resamples", 20,
                         "--results-dir", tmp_path, "--json")
    assert code == 0 and json.loads(out)["id"] and len(list(tmp_path.rglob("*.json"))) == 1


def test_a_damaged_hub_download_is_fetched_again():
    from gradebench.scorers.adapters.base import damaged_weights_hint
    from gradebench.scorers.adapters.model_files import ModelFolder

    hub = ModelFolder(id="org/model", path=Path("/cache/snap"), source="hub", revision="0123abcd", name="org/model")
    assert "`hf download org/model --revision 0123abcd --force-download`" in damaged_weights_hint(hub)
