"""Cross-encoder runs as rewards: the standard head exports as a Hugging Face sequence-classification
folder; the paper head goes through the gradebench path (and says so)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gradebench.experiments.runs import load_run
from gradebench.benchmark.lists import open_benchmark
from gradebench.reward import REWARD_FILE, export_reward, load, reward_report
from gradebench.reward.meta import FORMAT_GRADEBENCH, FORMAT_HF

torch = pytest.importorskip("torch")
pytest.importorskip("sentence_transformers")


@pytest.fixture(scope="module")
def ce_reward(ce_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("ce-reward") / "reward"
    export_reward(ce_run, out=out, results_dir=tmp_path_factory.mktemp("none"))
    return out


def test_standard_head_loads_with_auto_model_for_sequence_classification(ce_reward, ce_run, demo_benchmark):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    meta = json.loads((ce_reward / REWARD_FILE).read_text())
    assert meta["format"] == FORMAT_HF and meta["model_dir"] == "." and meta["notes"] == []
    assert meta["scorer"]["config"]["device"] is None  # the run trained on "cpu"; a reward loads anywhere
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in ce_reward.iterdir()}
    hf = AutoModelForSequenceClassification.from_pretrained(ce_reward).eval()
    tok = AutoTokenizer.from_pretrained(ce_reward)
    assert hf.config.num_labels == 1
    lists = open_benchmark(demo_benchmark).lists("test")
    q, c = lists.pairs()
    with torch.no_grad():
        batch = tok(q, c, padding=True, truncation="longest_first", max_length=96, return_tensors="pt")
        logits = hf(**batch).logits[:, 0].double().numpy()
    reward = load(ce_reward)
    got = np.array(reward(prompts=q, completions=[[{"role": "assistant", "content": x}] for x in c]))
    np.testing.assert_allclose(got, logits, atol=1e-5)
    scorer, _ = load_run(ce_run)
    np.testing.assert_allclose(got, scorer.score(lists)[lists.mask], atol=1e-5)
    assert reward(q, c) == reward(q, c)  # deterministic


def test_paper_head_is_exported_through_the_gradebench_path(ce_paper_run, demo_benchmark, tmp_path):
    res = export_reward(ce_paper_run, out=tmp_path / "paper", results_dir=tmp_path)
    assert res.format == FORMAT_GRADEBENCH and res.model_dir == "scorer"
    assert len(res.notes) == 1 and "AutoModelForSequenceClassification" in res.notes[0]
    assert (tmp_path / "paper" / "scorer" / "modules.json").is_file()
    lists = open_benchmark(demo_benchmark).lists("test")
    q, c = lists.pairs()
    scorer, _ = load_run(ce_paper_run)
    np.testing.assert_allclose(load(tmp_path / "paper")(q, c), scorer.score(lists)[lists.mask], atol=1e-5)


def test_report_on_the_cross_encoder(ce_reward, demo_benchmark):
    rep = reward_report(ce_reward, benchmark=demo_benchmark, split="validation")
    assert rep.scorer == "cross-encoder" and rep.loss == "listnet"
    assert rep.verdict in ("yes", "moderate", "weak", "no") and rep.paper_verdict in ("yes", "moderate", "weak", "no")
    assert 0.0 <= rep.figures["ndcg@5"] <= 1.0


def test_device_override(ce_reward):
    reward = load(ce_reward, device="cpu")
    assert str(reward.scorer.model.device) == "cpu"
