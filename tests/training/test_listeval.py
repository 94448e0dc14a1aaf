"""gradebench.training.listeval / evaluation: arguments, metrics, history records."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from gradebench.errors import UnknownNameError
from gradebench.metrics import MAP, NDCG, MetricSpec, evaluate
from gradebench.scorers import TrainOptions
from gradebench.training.evaluation import (
    VALIDATION_METRICS,
    evaluate_lists,
    json_ready,
    list_metrics,
    metric_key,
    validation_metrics,
)
from gradebench.training.listeval import (
    EpochLogCallback,
    ListEvalMixin,
    accelerator_available,
    read_history,
    training_arguments,
    warmup_steps,
)


def test_arguments_select_on_eval_metric_with_at_sign(tmp_path):
    args = training_arguments(TrainOptions(eval_metric="NDCG@3"), tmp_path, n_train_queries=38, default_lr=1e-3)
    assert args.metric_for_best_model == "eval_ndcg@3"
    assert args.greater_is_better is True and args.load_best_model_at_end is True
    assert args.eval_strategy == "epoch" and args.save_strategy == "epoch" and args.logging_strategy == "epoch"
    assert args.save_total_limit == 2 and args.report_to == [] and args.disable_tqdm is True
    assert args.remove_unused_columns is False and args.dataloader_num_workers == 0


def test_arguments_from_options(tmp_path):
    opts = TrainOptions(epochs=3, batch_queries=8, weight_decay=0.05, max_grad_norm=0.5, seed=7, warmup_ratio=0.1)
    args = training_arguments(opts, tmp_path, n_train_queries=38, default_lr=2e-3)
    assert args.learning_rate == 2e-3  # options.lr None -> the scorer's default
    assert args.per_device_train_batch_size == 8 and args.num_train_epochs == 3
    assert args.weight_decay == 0.05 and args.max_grad_norm == 0.5
    assert args.seed == 7 and args.data_seed == 7
    assert args.warmup_steps == math.ceil(0.1 * 5 * 3)  # ceil(38 / 8) = 5 steps per epoch
    lr = training_arguments(opts.model_copy(update={"lr": 0.5}), tmp_path, n_train_queries=38, default_lr=2e-3)
    assert lr.learning_rate == 0.5


def test_warmup_counts_processes(monkeypatch):
    opts = TrainOptions(epochs=2, batch_queries=10, warmup_ratio=0.5)
    assert warmup_steps(opts, 100) == 10
    assert warmup_steps(opts, 100, processes=2) == 5
    assert warmup_steps(opts.model_copy(update={"warmup_ratio": 0.0}), 100) == 0


def test_arguments_without_validation(tmp_path):
    args = training_arguments(TrainOptions(), tmp_path, n_train_queries=10, default_lr=1e-3, has_validation=False)
    assert args.eval_strategy == "no" and args.load_best_model_at_end is False
    assert args.save_strategy == "epoch"


@pytest.mark.skipif(accelerator_available(), reason="CPU-only behaviour")
def test_cpu_forces_full_precision(tmp_path):
    args = training_arguments(TrainOptions(), tmp_path, n_train_queries=10, default_lr=1e-3, bf16=True)
    assert args.use_cpu is True and args.bf16 is False and args.fp16 is False


def test_overrides_win(tmp_path):
    args = training_arguments(TrainOptions(), tmp_path, n_train_queries=10, default_lr=1e-3, save_total_limit=5)
    assert args.save_total_limit == 5


def test_unknown_eval_metric(tmp_path):
    with pytest.raises(UnknownNameError):
        training_arguments(TrainOptions(eval_metric="ndgc@5"), tmp_path, n_train_queries=10, default_lr=1e-3)


def test_list_metrics_perfect_and_reversed(demo_lists):
    lists = demo_lists["validation"]
    perfect = list_metrics(lists.relevance, lists)
    assert list(perfect) == [m.name for m in VALIDATION_METRICS]
    assert list(perfect) == ["ndcg@3", "ndcg@5", "map", "mrr", "kendall", "spearman", "pairwise_agreement",
                             "separation_ratio"]  # the keys of every committed history.jsonl
    for name in ("ndcg@3", "ndcg@5", "map", "mrr", "kendall", "spearman", "pairwise_agreement"):
        assert perfect[name] == pytest.approx(1.0)
    assert perfect["separation_ratio"] == pytest.approx(1.0)
    reverse = list_metrics(-lists.relevance, lists, eval_metric="ndcg@2")
    assert reverse["pairwise_agreement"] == pytest.approx(0.0)
    assert reverse["kendall"] == pytest.approx(-1.0)
    assert "ndcg@2" in reverse and reverse["ndcg@2"] < 1.0


def test_metric_key_is_canonical():
    assert metric_key("NDCG@5") == "eval_ndcg@5"
    assert metric_key("map") == "eval_map"
    assert metric_key(NDCG(k=5)) == "eval_ndcg@5" and metric_key(MAP(threshold=2), prefix="val") == "val_map[threshold=2]"


def test_validation_metrics_are_specs_and_the_eval_metric_is_added_once():
    assert all(isinstance(m, MetricSpec) for m in VALIDATION_METRICS)
    assert validation_metrics() == VALIDATION_METRICS == validation_metrics("NDCG@5")
    assert validation_metrics(NDCG(k=2)) == (*VALIDATION_METRICS, NDCG(k=2)) == validation_metrics("ndcg@2")
    with pytest.raises(UnknownNameError):
        validation_metrics("ndgc@5")


def test_list_metrics_is_evaluate_on_the_lists(demo_lists):
    """The trainer's numbers are gradebench.metrics.evaluate's, with the lists' relevance and mask."""
    lists = demo_lists["validation"]
    scores = np.random.default_rng(0).standard_normal(lists.relevance.shape)
    direct = evaluate(scores, lists.relevance, list(VALIDATION_METRICS), mask=lists.mask)
    assert list_metrics(scores, lists) == direct.summary()
    assert list_metrics(scores, lists, eval_metric=NDCG(k=5)) == list_metrics(scores, lists, eval_metric="ndcg@5")
    result = evaluate_lists(scores, lists, VALIDATION_METRICS)
    assert result.values(VALIDATION_METRICS) == direct.summary()
    for name, values in direct.per_query.items():
        np.testing.assert_array_equal(result.per_query[name], values)


def test_json_ready_replaces_nan():
    assert json_ready({"a": float("nan"), "b": [1.0, float("inf")], "c": np.float32(0.5)}) == {
        "a": None, "b": [1.0, None], "c": 0.5}


def test_mixin_without_validation_returns_empty():
    class Fake(ListEvalMixin):
        pass

    assert Fake().evaluate() == {}


def test_epoch_log_callback_writes_on_save(tmp_path):
    from transformers import TrainerState, TrainingArguments

    args = TrainingArguments(output_dir=str(tmp_path), report_to=[], use_cpu=True)
    state = TrainerState()
    records: list[dict] = []
    cb = EpochLogCallback(records, tmp_path / "h.jsonl")
    state.epoch, state.global_step = 1.0, 5
    cb.on_log(args, state, None, logs={"loss": 0.7, "learning_rate": 1e-3, "epoch": 1.0})
    cb.on_log(args, state, None, logs={"eval_ndcg@5": 0.9, "eval_kendall": float("nan")})
    assert records == [] and not (tmp_path / "h.jsonl").exists()  # nothing before the checkpoint
    cb.on_save(args, state, None)
    expected = {"epoch": 1, "step": 5, "loss": 0.7, "learning_rate": 1e-3, "eval_ndcg@5": 0.9, "eval_kendall": None}
    assert records == [expected]
    assert [json.loads(line) for line in (tmp_path / "h.jsonl").read_text().splitlines()] == [expected]
    cb.on_log(args, state, None, logs={"train_runtime": 3.0, "train_loss": 0.5})  # end summary: no epoch
    cb.on_train_end(args, state, None)
    assert len(records) == 1


def test_read_history_keeps_last_record_per_epoch_and_skips_torn_line(tmp_path):
    p = tmp_path / "history.jsonl"
    p.write_text('{"epoch": 1, "loss": 2.0}\n{"epoch": 2, "loss": 1.5}\n{"epoch": 2, "loss": 1.4}\n{"epoch": 3, "lo')
    assert read_history(p) == [{"epoch": 1, "loss": 2.0}, {"epoch": 2, "loss": 1.4}]
    assert read_history(tmp_path / "missing.jsonl") == []
