"""Tokenize once, batch by tokens, copy once: what the GPU paths do, checked on the CPU.

* the encoding cache returns the same arrays for the same content and new ones for anything
  else (tokenizer state, ``max_length``, texts);
* a batch gathered from the copied arrays (:class:`DeviceTokens`) is the numpy batch;
* a token budget cuts batches that fit it and cover every item once;
* every adapter and the cross-encoder scorer give the same scores (within the invariance
  check's float32 tolerance) when batches are cut by tokens, as they are on CUDA;
* the training loss reads pre-tokenized pairs with the same value and gradients.
"""

from __future__ import annotations

import numpy as np
import pytest

from gradebench.scorers import make_scorer
from gradebench.training.tokens import (
    DeviceTokens,
    clear_cache,
    cut_batches,
    encode_pairs,
    encode_single,
    flat_encoding,
    token_budget,
)
from gradebench.scorers.adapters import make_model_scorer
from gradebench.scorers.adapters.base import TOLERANCE
from gradebench.scorers.adapters.runner import run_plan
from tests.conftest import one_torch_thread

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    with one_torch_thread():
        yield


def _tokenizer(path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path))


# -- the encoding cache ---------------------------------------------------------------------------

def test_the_encoding_is_cached_by_content(tiny_bert, test_lists):
    clear_cache()
    q, c = test_lists.pairs()
    tok = _tokenizer(tiny_bert)
    first = encode_pairs(tok, q, c, max_length=32)
    assert encode_pairs(tok, list(q), list(c), max_length=32) is first  # equal texts, other list objects
    assert encode_pairs(_tokenizer(tiny_bert), q, c, max_length=32) is first  # another object, same state
    assert encode_pairs(tok, q, c, max_length=16) is not first
    assert encode_pairs(tok, q[:-1] + [q[-1] + " x"], c, max_length=32) is not first
    # a text moved across the query/candidate boundary is other content
    assert encode_pairs(tok, ["ab", "c"], ["d", "e"], max_length=32) is not encode_pairs(
        tok, ["a", "bc"], ["d", "e"], max_length=32)
    # the cached arrays cannot be changed by a caller
    with pytest.raises(ValueError):
        first.ids[0] = 0
    # a tokenizer whose state changed, even in place, is another key
    tok.backend_tokenizer.add_tokens(["zzzunseen"])
    changed = encode_pairs(tok, q, c, max_length=32)
    assert changed is not first
    # uncached: same values
    fresh = encode_pairs(_tokenizer(tiny_bert), q, c, max_length=32, cache=False)
    assert fresh is not first and np.array_equal(fresh.ids, first.ids) and np.array_equal(fresh.starts, first.starts)


def test_a_known_tokenizer_key_is_the_computed_one(tiny_bert, test_lists, monkeypatch):
    import gradebench.training.tokens as tokens

    clear_cache()
    q, c = test_lists.pairs()
    tok = _tokenizer(tiny_bert)
    first = encode_pairs(tok, q, c, max_length=32)
    calls = []
    real = tokens.tokenizer_digest
    monkeypatch.setattr(tokens, "tokenizer_digest", lambda t: calls.append(t) or real(t))
    key = tokens.TokenizerKey()
    assert key(tok) == real(tok) and key(tok) == real(tok) and len(calls) == 1  # once per tokenizer object
    assert encode_pairs(tok, q, c, max_length=32, tokenizer_key=key(tok)) is first
    assert encode_single(tok, q, max_length=32, tokenizer_key=key(tok)) is encode_single(tok, q, max_length=32)
    other = _tokenizer(tiny_bert)
    assert key(other) == real(tok) and len(calls) == 3  # another object is digested again (same state)


@pytest.mark.parametrize("fixture,adapter", [
    ("seq_classifier", "sequence-classifier"),
    ("st_cross_encoder", "cross-encoder"),
    ("tiny_bert", "bi-encoder"),
])
def test_a_repeated_pass_does_not_digest_the_tokenizer_again(request, test_lists, fixture, adapter, monkeypatch):
    import gradebench.training.tokens as tokens

    calls = []
    real = tokens.tokenizer_digest
    monkeypatch.setattr(tokens, "tokenizer_digest", lambda t: calls.append(t) or real(t))
    scorer = make_model_scorer(request.getfixturevalue(fixture), adapter, {"batch_size": 4})
    first = scorer.score(test_lists)
    once = len(calls)
    assert once >= 1
    again = scorer.score(test_lists)
    assert len(calls) == once and np.array_equal(again, first)


def test_the_cross_encoder_scorer_digests_its_tokenizer_once(tiny_bert, demo_lists, monkeypatch):
    import gradebench.training.tokens as tokens

    calls = []
    real = tokens.tokenizer_digest
    monkeypatch.setattr(tokens, "tokenizer_digest", lambda t: calls.append(t) or real(t))
    lists = demo_lists["test"].head(6)
    scorer = make_scorer("cross-encoder", {"model": str(tiny_bert), "max_length": 32}, seed=3)
    first = scorer.score(lists)
    assert np.array_equal(scorer.score(lists), first) and len(calls) == 1


def test_single_texts_are_encoded_as_the_tokenizer_truncates_them(tiny_bert, test_lists):
    q, _ = test_lists.pairs()
    tok = _tokenizer(tiny_bert)
    long = [t + " " + t + " " + t for t in q]
    enc = encode_single(tok, long, max_length=12)
    want = tok(long, truncation=True, max_length=12)["input_ids"]
    got = [enc.ids[s:s + n].tolist() for s, n in zip(enc.starts, enc.lengths)]
    assert got == want  # the closing [SEP] is kept, as SentenceTransformer.preprocess keeps it


# -- batches on the device --------------------------------------------------------------------------

def test_device_batches_are_the_numpy_batches():
    enc = flat_encoding([[5, 6, 7], [8], [9, 10], [11, 12, 13, 14]], [[0, 0, 1], [0], [0, 1], [0, 0, 1, 1]], 0)
    tokens = DeviceTokens(enc, "cpu")
    for rows in ([0], [3, 1], [2, 0, 3, 1], [1, 1]):
        rows = np.array(rows)
        want = enc.batch(rows)
        got = tokens.batch(rows)
        assert set(got) == set(want)
        for k in want:
            assert got[k].dtype == torch.int64
            assert np.array_equal(got[k].numpy(), want[k]), k
    index = tokens.index(np.array([3, 1, 2]))
    assert np.array_equal(tokens.batch(np.array([1, 2]), index[1:])["input_ids"].numpy(),
                          enc.batch(np.array([1, 2]))["input_ids"])


def test_host_arrays_go_to_cuda_pinned_and_without_waiting(monkeypatch):
    """A plain ``.to("cuda")`` from pageable memory waits for every forward queued before it; the
    helper pins the copy and passes ``non_blocking`` (the CUDA calls are recorded, not made)."""
    from gradebench.training.tokens import host_to_device

    calls = []

    def pin(self):
        calls.append("pin")
        return self

    def to(self, *args, **kwargs):
        calls.append((str(args[0]), kwargs.get("non_blocking", False)))
        return self

    src = np.arange(5, dtype=np.int32)
    src.flags.writeable = False  # as the cached arrays are
    on_cpu = host_to_device(src, "cpu")
    assert on_cpu.dtype == torch.int64 and on_cpu.tolist() == list(range(5))
    on_cpu[0] = 9  # a copy: the source is untouched
    assert src[0] == 0
    monkeypatch.setattr(torch.Tensor, "pin_memory", pin)
    monkeypatch.setattr(torch.Tensor, "to", to)
    host_to_device(src, "cuda:1")
    assert calls == ["pin", ("cuda:1", True)]
    calls.clear()
    host_to_device(src, "cpu")
    assert calls == []


def test_the_bi_encoder_copies_its_indices_without_waiting(tiny_bert, test_lists, monkeypatch):
    """Every host array the bi-encoder's pass sends to the device (the batch order, the pairs'
    indices) goes through ``host_to_device``: on CUDA the indexing after the forwards overlaps
    them, and the copy of the scores is the pass's one wait."""
    import gradebench.scorers.adapters.bi_encoder as bi_mod
    from gradebench.training.tokens import host_to_device

    sent = []
    monkeypatch.setattr(bi_mod, "host_to_device", lambda a, device: sent.append(len(a)) or host_to_device(a, device))
    scorer = make_model_scorer(tiny_bert, "bi-encoder", {"batch_size": 4})
    q, c = test_lists.pairs()
    scorer.score(test_lists)
    n_texts = len(set(q) | set(c))
    assert sorted(sent) == sorted([n_texts, len(q), len(c)])


def test_the_judge_copies_answer_ids_once_and_its_batches_back_at_once(judge_lm, test_lists, monkeypatch):
    """Each batch's answer log-probabilities stay on the device (run_plan copies them back in one
    copy), and the answer ids go to the device once a pass, not once a batch: before, each batch
    copied them with a plain ``.to()`` and its log-probabilities back, two waits a batch on CUDA."""
    import gradebench.scorers.adapters.llm_judge as judge
    from gradebench.training.tokens import host_to_device

    scorer = make_model_scorer(judge_lm, "llm-judge", {"batch_size": 2})
    want = scorer.score(test_lists)
    ids, kinds = [], []
    monkeypatch.setattr(judge, "host_to_device", lambda a, device: ids.append(np.asarray(a)) or host_to_device(a, device))
    real = judge._answer_logprobs
    monkeypatch.setattr(judge, "_answer_logprobs", lambda *a: kinds.append(type(r := real(*a))) or r)
    got = scorer.score(test_lists)
    assert np.array_equal(got, want)
    assert len(ids) == 1 and np.array_equal(ids[0], scorer.model[2])  # once a pass: the template's answer ids
    assert len(kinds) > 1 and set(kinds) == {torch.Tensor}  # every batch (of 2 prompts) left on the device


@pytest.mark.parametrize("max_tokens", [1, 7, 16, 40, 10_000])
def test_a_token_budget_cuts_batches_that_fit_and_cover_everything(max_tokens):
    rng = np.random.default_rng(3)
    lengths = rng.integers(1, 12, size=200)
    for order in (np.argsort(-lengths, kind="stable"), rng.permutation(200)):
        batches = cut_batches(order, lengths, batch_size=32, max_tokens=max_tokens, max_rows=64)
        assert np.array_equal(np.concatenate(batches), order)  # consecutive, in order, each item once
        for b in batches:
            assert len(b) <= 64
            assert len(b) == 1 or len(b) * lengths[b].max() <= max_tokens
            # greedy: one more item would not have fit
        for b, nxt in zip(batches, batches[1:]):
            grown = np.append(b, nxt[0])
            assert len(b) == 64 or len(grown) * lengths[grown].max() > max_tokens
    assert [len(b) for b in cut_batches(np.arange(10), np.ones(10, int), batch_size=4)] == [4, 4, 2]


def test_no_token_budget_off_cuda(tiny_bert):
    assert token_budget({"hidden_size": 32}, "cpu") is None
    assert token_budget({"hidden_size": 32}, "meta") is None


def test_run_plan_copies_device_values_back_once():
    batches = [np.array([4, 0]), np.array([2]), np.array([1, 3])]
    out = run_plan(batches, lambda rows: torch.tensor(rows * 10.0), 5)
    assert out.tolist() == [0.0, 10.0, 20.0, 30.0, 40.0]
    two = run_plan(batches, lambda rows: torch.tensor(np.stack([rows, -rows], 1), dtype=torch.float32), 5)
    assert two[:, 1].tolist() == [0.0, -1.0, -2.0, -3.0, -4.0]


# -- scores do not depend on how batches are cut ---------------------------------------------------

@pytest.mark.parametrize("fixture,adapter", [
    ("seq_classifier", "sequence-classifier"),
    ("st_cross_encoder", "cross-encoder"),
    ("tiny_bert", "bi-encoder"),
    ("chat_reward", "chat-reward"),
])
def test_adapters_score_the_same_when_batches_are_cut_by_tokens(request, test_lists, fixture, adapter, monkeypatch):
    path = request.getfixturevalue(fixture)
    plain = make_model_scorer(path, adapter, {"batch_size": 4}).score(test_lists)
    from gradebench.scorers.adapters.base import ModelScorer

    for budget in (24, 64, 4096):
        monkeypatch.setattr(ModelScorer, "_token_budget", lambda self, b=budget: b)
        scorer = make_model_scorer(path, adapter)
        assert scorer.options()["max_batch_tokens"] == budget  # recorded, so the record id differs
        got = scorer.score(test_lists)
        assert np.abs(got - plain).max() <= TOLERANCE["float32"], budget
        assert np.std(got[test_lists.mask]) > 1e-4
        # batches of one item (the invariance check) are never cut by tokens
        assert scorer.max_batch_tokens(1) is None
        assert scorer.check_invariance(test_lists, got)["passed"]


def test_the_cross_encoder_scores_the_same_when_batches_are_cut_by_tokens(tiny_bert, demo_lists, monkeypatch):
    lists = demo_lists["train"].head(12)
    config = {"model": str(tiny_bert), "max_length": 64}
    plain = make_scorer("cross-encoder", {**config, "batch_size": 5}, seed=3)
    want = plain.score(lists)
    budgeted = make_scorer("cross-encoder", config, seed=3)
    budgeted._model = plain.model
    monkeypatch.setattr(type(budgeted), "max_batch_tokens", lambda self: 48)
    got = budgeted.score(lists)
    assert np.abs(got - want).max() <= TOLERANCE["float32"]
    # an explicit batch_size is kept on every device
    monkeypatch.undo()
    assert make_scorer("cross-encoder", {**config, "batch_size": 5}).max_batch_tokens() is None


# -- training reads pre-tokenized pairs ------------------------------------------------------------

@pytest.mark.parametrize("mini_batch,max_tokens", [(None, None), (3, None), (None, 40)])
def test_the_training_loss_reads_pre_tokenized_pairs(tiny_bert, demo_lists, mini_batch, max_tokens):
    from gradebench.scorers._ce_train import train_pairs
    from gradebench.training.st_loss import GradebenchLoss

    model = make_scorer("cross-encoder", {"model": str(tiny_bert), "max_length": 48}, seed=7).model
    model.eval()
    lists = demo_lists["train"].head(4)
    queries = [str(x) for x in lists.queries]
    docs = [[str(d) for d in lists.candidates[i][lists.mask[i]]] for i in range(lists.n_queries)]
    labels = [torch.tensor(lists.relevance[i][lists.mask[i]]) for i in range(lists.n_queries)]
    pairs = train_pairs(lists)
    assert len(pairs) == len(set(pairs)) and set(pairs) == {(q, d) for q, ds in zip(queries, docs) for d in ds}
    results = []
    for encoded in (False, True):
        loss_fn = GradebenchLoss(model, "listnet", mini_batch_size=mini_batch, max_tokens=max_tokens)
        if encoded:
            enc = encode_pairs(model.tokenizer, [p[0] for p in pairs], [p[1] for p in pairs], max_length=48)
            loss_fn.use_encoded(enc, pairs)
            calls = []
            loss_fn.model.preprocess = lambda *a, **k: calls.append(1)  # must not be needed
        model.zero_grad()
        value = loss_fn([queries, docs], labels)
        value.backward()
        if encoded:
            assert not calls
            del loss_fn.model.preprocess
        results.append((value.item(), model[0].auto_model.classifier.weight.grad.clone()))
    assert results[1][0] == pytest.approx(results[0][0], abs=1e-6)
    torch.testing.assert_close(results[1][1], results[0][1], atol=1e-6, rtol=1e-5)


def test_grades_are_checked_once_before_training(tiny_bert, demo_lists):
    from dataclasses import replace

    from gradebench.errors import InvalidArgumentError
    from gradebench.scorers._ce_train import check_grades
    from gradebench.training.st_loss import GradebenchLoss

    model = make_scorer("cross-encoder", {"model": str(tiny_bert), "max_length": 48}, seed=7).model
    lists = demo_lists["train"].head(4)
    check_grades(GradebenchLoss(model, "listnet"), lists)
    bad = lists.relevance.copy()
    bad[0, 0] = np.inf
    with pytest.raises(InvalidArgumentError, match="not finite"):
        check_grades(GradebenchLoss(model, "listnet"), replace(lists, relevance=bad))


@pytest.mark.parametrize("max_length", [6, 11, 24, 512])
@pytest.mark.parametrize("fixture", ["tiny_bert", "chat_reward"])
def test_pairs_from_shared_texts_are_the_pair_encodings(request, demo_lists, fixture, max_length):
    """Pairs assembled from texts tokenized once (a list's query shared by its candidates) have
    exactly the ids and type ids of encoding each pair whole, truncation included."""
    from gradebench.training import tokens as T

    tok = _tokenizer(request.getfixturevalue(fixture))
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    q, c = demo_lists["train"].pairs()
    q = [x + " " + x for x in q]  # long queries: truncation takes from both sides
    backend = tok.backend_tokenizer
    shared = T._encode_rust_pairs(backend, q, c, max_length=max_length, want_types=True)
    assert len(set(q)) + len(set(c)) <= T.SHARED_TEXTS * 2 * len(q)  # the shared path was taken
    whole = T._encode_rust(backend, list(zip(q, c)), max_length=max_length, want_types=True)
    assert shared == whole
    assert backend.truncation is None and backend.padding is None  # the tokenizer's settings are restored
    # distinct texts everywhere: encoded whole
    distinct = T._encode_rust_pairs(backend, [f"{x} {i}" for i, x in enumerate(q)], [f"{i} {x}" for i, x in enumerate(c)],
                                    max_length=max_length, want_types=False)
    assert distinct[1] is None and len(distinct[0]) == len(q)
