"""LiPO: DPO equivalence at K=2 against TRL 1.12, the pure parts, a short run, and bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from gradebench.errors import InvalidArgumentError, UnknownNameError  # noqa: E402
from gradebench.experiments.store import read_policy_record  # noqa: E402
from gradebench.rl.lipo import candidate_scores, collate, lipo, lipo_stats  # noqa: E402
from gradebench.rl.policy import sequence_kl, sequence_logps  # noqa: E402
from gradebench.rl.prompts import reference_index  # noqa: E402
from gradebench.rl.runs import HISTORY, POLICY_DIR, RUN_CONFIG, RUN_JSON, read_policy_run  # noqa: E402
from tests.rl.conftest import weights_changed  # noqa: E402


# -- K = 2: gradebench's pairwise logistic loss on the log-ratios is TRL's DPO sigmoid loss ---------------
def _dpo_trainer(tiny_gpt2, demo_benchmark, tmp_path, beta):
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import DPOConfig, DPOTrainer

    from gradebench.benchmark.lists import open_benchmark
    from gradebench.rl.prompts import format_prompt, format_response

    lists = open_benchmark(demo_benchmark).lists("train").head(6)
    best, worst = lists.relevance.argmax(1), lists.relevance.argmin(1)
    rows = range(lists.n_queries)
    data = {"prompt": [format_prompt(q) for q in lists.queries],
            "chosen": [format_response(lists.candidates[i, best[i]]) for i in rows],
            "rejected": [format_response(lists.candidates[i, worst[i]]) for i in rows]}
    tokenizer = AutoTokenizer.from_pretrained(tiny_gpt2)
    policy = AutoModelForCausalLM.from_pretrained(tiny_gpt2)
    ref = AutoModelForCausalLM.from_pretrained(tiny_gpt2)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():  # move the policy away from the reference: non-zero log-ratios
        for p in policy.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=generator))
    args = DPOConfig(output_dir=str(tmp_path / "dpo"), beta=beta, per_device_train_batch_size=6, bf16=False,
                     report_to="none", use_cpu=True, loss_type=["sigmoid"])
    return DPOTrainer(model=policy, ref_model=ref, args=args, train_dataset=Dataset.from_dict(data),
                      processing_class=tokenizer)


@pytest.mark.parametrize("loss", ["ranknet", "bradley_terry", "listmle"])
def test_pairwise_logistic_at_k2_equals_trl_dpo_sigmoid(tiny_gpt2, demo_benchmark, tmp_path, loss):
    from gradebench.losses import get_loss

    beta = 0.1
    trainer = _dpo_trainer(tiny_gpt2, demo_benchmark, tmp_path, beta)
    batch = next(iter(trainer.get_train_dataloader()))
    trainer.model.train()  # DPOConfig(disable_dropout=True): train mode is deterministic
    trl_loss = trainer.compute_loss(trainer.model, batch)  # TRL 1.12 DPOTrainer, loss_type sigmoid
    scores, _ = candidate_scores(trainer.model, trainer.ref_model, batch["input_ids"], batch["attention_mask"],
                                 batch["completion_mask"], beta)
    chosen, rejected = scores.chunk(2)  # TRL stacks [chosen; rejected]
    # TRL's own log-probs of the same batch agree with gradebench's
    with torch.no_grad():
        logits = trainer.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        logps = sequence_logps(logits, batch["input_ids"], batch["completion_mask"])
    assert trainer._metrics["train"]["logps/chosen"][-1] == pytest.approx(float(logps.chunk(2)[0].mean()), rel=1e-5)
    s = torch.stack([chosen, rejected], dim=1)
    y = torch.tensor([[1.0, 0.0]] * len(chosen))
    ours = get_loss(loss)(s, y)
    functional = -torch.nn.functional.logsigmoid(chosen - rejected).mean()  # DPO's formula on beta*log-ratios
    assert float(chosen.abs().max()) > 1e-3  # a real test: the log-ratios are not all zero
    assert float(ours) == pytest.approx(float(trl_loss), rel=1e-5, abs=1e-7)
    assert float(functional) == pytest.approx(float(trl_loss), rel=1e-5, abs=1e-7)
    # and the gradients agree too
    grad_ours = torch.autograd.grad(ours, [p for p in trainer.model.parameters()][0], retain_graph=True)[0]
    grad_trl = torch.autograd.grad(trainer.compute_loss(trainer.model, batch),
                                   [p for p in trainer.model.parameters()][0])[0]
    assert torch.allclose(grad_ours, grad_trl, rtol=1e-4, atol=1e-7)


# -- pure parts ----------------------------------------------------------------------------------------------
def test_sequence_logps_and_kl_closed_form():
    logits = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]]])  # [1, 3, V=2]
    ids = torch.tensor([[0, 1, 1]])
    completion = torch.tensor([[0, 1, 1]])  # tokens 1 and 2 are the completion
    expected = math.log(0.5) + (0.0 - math.log(math.e + 1.0))  # log p(1 | [0, 0]) + log p(1 | [1, 0])
    assert float(sequence_logps(logits, ids, completion)) == pytest.approx(expected)
    assert float(sequence_kl(logits, logits, completion)) == pytest.approx(0.0, abs=1e-7)
    ref = torch.zeros_like(logits)
    p = torch.softmax(logits[0, :2], -1)
    kl = float((p * (p.log() - math.log(0.5))).sum())
    assert float(sequence_kl(logits, ref, completion)) == pytest.approx(kl, rel=1e-6)


def test_reference_index_fair_tier_then_lower_median():
    grades, mask = np.array([2.0, 0.0, 4.0, 1.0, 3.0]), np.ones(5, bool)
    tiers = np.array(["good", "nonsense", "gold", "poor", "fair"], dtype=object)
    assert reference_index(grades, mask, tiers) == 4
    assert reference_index(grades, mask, None) == 0  # median grade 2
    assert reference_index(np.array([3.0, 1.0, 0.0, 2.0]), np.ones(4, bool)) == 1  # lower median of four
    assert reference_index(np.array([5.0, 1.0, 9.0]), np.array([True, True, False])) == 1


def test_lipo_stats_closed_form():
    scores = np.array([[0.3, 0.1, -0.2]])
    grades = np.array([[2.0, 1.0, 0.0]])
    mask = np.ones((1, 3), bool)
    stats = lipo_stats(scores, grades, mask, np.array([1]))
    diffs = [0.2, 0.5, 0.3]
    assert stats["margin"] == pytest.approx(np.mean(diffs))
    assert stats["pair_accuracy"] == 1.0
    assert stats["above_reference"] == 1.0  # the grade-2 candidate beats the reference (grade 1)
    assert stats["reward_mean"] == pytest.approx(scores.mean())
    masked = lipo_stats(scores, grades, np.array([[True, True, False]]), np.array([1]))
    assert masked["margin"] == pytest.approx(0.2)


def test_collate_flattens_real_candidates_row_major():
    examples = [
        {"sequences": [[5, 6, 7], [5, 8]], "starts": [1, 1], "grades": [1.0, 0.0, 0.0], "mask": [True, True, False],
         "reference": 1},
        {"sequences": [[9, 1], [9, 2, 3, 4], [9, 5]], "starts": [1, 1, 1], "grades": [0.0, 2.0, 1.0],
         "mask": [True, True, True], "reference": 2},
    ]
    batch = collate(examples, pad_id=0)
    assert batch["input_ids"].shape == (5, 4)
    assert batch["input_ids"][3].tolist() == [9, 2, 3, 4]
    assert batch["completion_mask"][0].tolist() == [0, 1, 1, 0]
    assert batch["attention_mask"][1].tolist() == [1, 1, 0, 0]
    assert batch["list_mask"].tolist() == [[True, True, False], [True, True, True]]
    assert batch["reference"].tolist() == [1, 2]


# -- a short run -----------------------------------------------------------------------------------------------
def test_lipo_trains_logs_and_records(tiny_gpt2, demo_benchmark, tmp_path):
    out, results = tmp_path / "run", tmp_path / "results"
    result = lipo(tiny_gpt2, demo_benchmark, out=out, steps=4, lr=1e-3, batch_size=4, list_size=3,
                  results_dir=results, seed=1)
    assert result.method == "lipo" and result.n_steps == 4 and not result.cached
    for line in result.history:
        for key in ("loss", "margin", "kl", "reward_mean", "reward_std", "above_reference", "pair_accuracy"):
            assert isinstance(line[key], float) and math.isfinite(line[key]), (key, line)
    assert result.history[0]["kl"] == pytest.approx(0.0, abs=1e-6)  # step 1: policy == reference
    assert result.history[-1]["kl"] > 0
    assert 0.0 <= result.metrics["above_reference"] <= 1.0
    assert weights_changed(tiny_gpt2, out / POLICY_DIR) > 0
    lines = [json.loads(x) for x in (out / HISTORY).read_text().splitlines()]
    assert lines == result.history
    assert (out / RUN_CONFIG).is_file() and (out / RUN_JSON).is_file()
    assert not list(out.glob(".*"))  # no temp folders left
    record = read_policy_record(result.record)
    assert record.kind == "gradebench.policy" and record.method == "lipo" and record.id == result.record_id
    assert record.loss.name == "lambdaloss" and record.reward is None
    assert record.benchmark.reference in ("fair tier", "mixed") and record.n_steps == 4  # K=3 drops some fair ones
    assert read_policy_run(out).to_dict() == result.to_dict()
    import importlib.util

    if importlib.util.find_spec("jsonschema") is not None:  # the generated schema accepts the written record
        import jsonschema

        from gradebench.experiments.policy_record import policy_schema_json

        jsonschema.validate(json.loads(record.path.read_text()), policy_schema_json())
    # the same run again is found, not retrained; the record is rewritten where it is missing
    again = lipo(tiny_gpt2, demo_benchmark, out=out, steps=4, lr=1e-3, batch_size=4, list_size=3,
                 results_dir=tmp_path / "other-results", seed=1)
    assert again.cached and again.run_fingerprint == result.run_fingerprint
    assert read_policy_record(again.record).id == record.id


def test_lipo_trained_policy_loads_as_causal_lm(tiny_gpt2, demo_benchmark, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    result = lipo(tiny_gpt2, demo_benchmark, out=tmp_path / "run", loss="ranknet", list_size=2, steps=1,
                  lr=1e-3, batch_size=2, results_dir=tmp_path / "results")
    model = AutoModelForCausalLM.from_pretrained(result.policy_out)
    tokenizer = AutoTokenizer.from_pretrained(result.policy_out)
    ids = tokenizer("premise: a dog\nExplanation:", return_tensors="pt")["input_ids"]
    assert model(input_ids=ids).logits.shape[-1] == model.config.vocab_size


# -- bad input: one typed error, nothing written --------------------------------------------------------------
def _nothing_written(out, results):
    assert not out.exists() or not any(out.iterdir())
    assert not results.exists() or not any(results.rglob("*.json"))


def test_lipo_refuses_a_non_causal_policy(encoder_folder, demo_benchmark, tmp_path):
    with pytest.raises(InvalidArgumentError, match="not a causal language model"):
        lipo(encoder_folder, demo_benchmark, out=tmp_path / "run", steps=1, results_dir=tmp_path / "res")
    _nothing_written(tmp_path / "run", tmp_path / "res")


def test_lipo_refuses_a_missing_policy(demo_benchmark, tmp_path):
    with pytest.raises(InvalidArgumentError, match="not a folder"):
        lipo(tmp_path / "nope", demo_benchmark, out=tmp_path / "run", steps=1, results_dir=tmp_path / "res")


def test_lipo_refuses_prompts_longer_than_the_context(tiny_gpt2, demo_benchmark, tmp_path):
    template = "{query}" + " filler words" * 200
    with pytest.raises(InvalidArgumentError, match="longer than the policy's context of 256"):
        lipo(tiny_gpt2, demo_benchmark, out=tmp_path / "run", steps=1, prompt_template=template,
             results_dir=tmp_path / "res")
    _nothing_written(tmp_path / "run", tmp_path / "res")


def test_lipo_refuses_bad_losses_and_options(tiny_gpt2, demo_benchmark, tmp_path):
    kw = {"out": tmp_path / "run", "steps": 1, "results_dir": tmp_path / "res"}
    with pytest.raises(UnknownNameError, match="lambdalos"):
        lipo(tiny_gpt2, demo_benchmark, loss="lambdalos", **kw)
    with pytest.raises(InvalidArgumentError, match="no parameter"):
        lipo(tiny_gpt2, demo_benchmark, loss="ranknet", loss_params={"gain": "linear"}, **kw)
    with pytest.raises(InvalidArgumentError):  # sigmoid_ce needs labels in [0, 1]: the grades 0..4 are refused
        lipo(tiny_gpt2, demo_benchmark, loss="sigmoid_ce", **kw)
    with pytest.raises(InvalidArgumentError, match="--list-size"):
        lipo(tiny_gpt2, demo_benchmark, list_size=1, **kw)
    with pytest.raises(InvalidArgumentError, match="--beta"):
        lipo(tiny_gpt2, demo_benchmark, beta=0.0, **kw)
    with pytest.raises(UnknownNameError, match="no split"):
        lipo(tiny_gpt2, demo_benchmark, split="dev", **kw)
    _nothing_written(tmp_path / "run", tmp_path / "res")


def test_lipo_refuses_a_folder_holding_another_run(tiny_gpt2, demo_benchmark, tmp_path):
    from gradebench.errors import RunError

    out = tmp_path / "run"
    out.mkdir()
    (out / "something.txt").write_text("x")
    with pytest.raises(RunError, match="non-empty"):
        lipo(tiny_gpt2, demo_benchmark, out=out, steps=1, results_dir=tmp_path / "res")


def test_an_interrupted_run_starts_over_and_another_config_is_refused(tiny_gpt2, demo_benchmark, tmp_path):
    from gradebench.errors import RunError

    out, results = tmp_path / "run", tmp_path / "results"
    kw = {"out": out, "steps": 1, "batch_size": 2, "lr": 1e-3, "results_dir": results}
    first = lipo(tiny_gpt2, demo_benchmark, **kw)
    (out / RUN_JSON).unlink()  # as if killed before the final file
    (out / ".trainer").mkdir()
    again = lipo(tiny_gpt2, demo_benchmark, **kw)
    assert not again.cached and again.run_fingerprint == first.run_fingerprint
    assert len((out / HISTORY).read_text().splitlines()) == 1  # the old history was dropped, not appended to
    assert not (out / ".trainer").exists()
    (out / RUN_JSON).unlink()
    with pytest.raises(RunError, match="interrupted policy run of another configuration"):
        lipo(tiny_gpt2, demo_benchmark, **{**kw, "steps": 2})
    other = {**kw, "out": tmp_path / "other"}
    lipo(tiny_gpt2, demo_benchmark, **other)
    with pytest.raises(RunError, match="another finished policy run"):
        lipo(tiny_gpt2, demo_benchmark, **{**other, "steps": 2})
    # a finished run of this configuration whose final file lost its record is reported as such, not trusted
    final = json.loads((other["out"] / RUN_JSON).read_text())
    (other["out"] / RUN_JSON).write_text(json.dumps({k: v for k, v in final.items() if k != "record_json"}))
    with pytest.raises(RunError, match="lacks its record"):
        lipo(tiny_gpt2, demo_benchmark, **other)


def test_policy_records_are_queryable_next_to_result_records(tiny_gpt2, demo_benchmark, tmp_path):
    from gradebench.experiments.evaluate import evaluate_scorer
    from gradebench.experiments.query import run_query
    from gradebench.scorers import make_scorer

    results = tmp_path / "results"
    evaluate_scorer(demo_benchmark, make_scorer("bm25"), seed=0, results_dir=results, n_resamples=50)
    result = lipo(tiny_gpt2, demo_benchmark, out=tmp_path / "run", steps=2, lr=1e-3, batch_size=4,
                  results_dir=results, seed=1)
    rows = run_query("SELECT id, method, loss, n_steps, kl FROM policies", results_dir=results).to_dict()["rows"]
    assert len(rows) == 1
    row = rows[0]
    assert (row["id"], row["method"], row["loss"], row["n_steps"]) == (result.record_id, "lipo", "lambdaloss", 2)
    assert row["kl"] == pytest.approx(result.metrics["kl"])
    n = run_query("SELECT count(*) AS n FROM results", results_dir=results).to_dict()["rows"][0]["n"]
    assert n == 1  # policy records are not result records


def test_policy_records_show_on_the_leaderboard(tiny_gpt2, demo_benchmark, tmp_path):
    from gradebench.experiments.evaluate import evaluate_scorer
    from gradebench.experiments.leaderboard import leaderboard
    from gradebench.scorers import make_scorer

    results = tmp_path / "results"
    evaluate_scorer(demo_benchmark, make_scorer("bm25"), seed=0, results_dir=results, n_resamples=50)
    result = lipo(tiny_gpt2, demo_benchmark, out=tmp_path / "run", steps=2, lr=1e-3, batch_size=4,
                  results_dir=results, seed=1)
    board = leaderboard(results)
    (row,) = board.policies
    assert (row["id"], row["method"], row["objective"], row["steps"]) == (result.record_id, "lipo", "lambdaloss", 2)
    assert row["kl"] == pytest.approx(result.metrics["kl"])
    lipo(tiny_gpt2, demo_benchmark, out=tmp_path / "run-k3", steps=2, lr=1e-3, batch_size=4, list_size=3,
         results_dir=results, seed=1)
    assert sorted(p["objective"] for p in leaderboard(results).policies) == ["lambdaloss", "lambdaloss K=3"]
    text = board.to_markdown()
    assert "## Policies" in text and "| lipo |" in text
    assert board.to_dict()["policies"] == board.policies
