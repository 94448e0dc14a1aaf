"""Fixtures shared by the scorer tests: the demo benchmark and a tiny offline BERT.

The tiny model is built from nothing, offline, in a session temp dir: a ``tokenizers``
WordPiece tokenizer whose vocabulary is counted from the demo benchmark's texts (BERT
normalizer and special tokens, ``[CLS] A [SEP] B [SEP]`` pair template with token types 0/1),
wrapped as a ``PreTrainedTokenizerFast``, and a randomly initialised ``BertModel`` (hidden 32,
2 layers, 2 heads, intermediate 64) saved with ``save_pretrained``: a plain encoder folder like
a pretrained checkpoint, so a scorer must add and initialise its own head. Both are the same
in every session (seeded weights, deterministic vocabulary).
"""

from __future__ import annotations

from pathlib import Path

import pytest

TINY_BERT = {
    "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
    "max_position_embeddings": 128,
}


@pytest.fixture(scope="session")
def demo_benchmark(tmp_path_factory) -> Path:
    """Path of the demo benchmark, built once per session (38/5/5 queries x 5 candidates)."""
    from gradebench.experiments.build import build

    out = tmp_path_factory.mktemp("demo_bench")
    return Path(build("demo", out=out, progress=False).path)


@pytest.fixture(scope="session")
def demo_lists(demo_benchmark):
    """``{split: Lists}`` of the demo benchmark."""
    from gradebench.benchmark.lists import open_benchmark

    bench = open_benchmark(demo_benchmark)
    return {split: bench.lists(split) for split in bench.splits}


def wordpiece_vocab(texts: list[str], *, max_words: int = 500) -> list[str]:
    """A deterministic WordPiece vocabulary counted from ``texts``.

    BERT specials, then every character and its ``##`` continuation (so any word splits into
    known pieces), then the ``max_words`` most frequent words (ties by the word itself), with
    the ``tokenizers`` library's BERT normalizer (lower-casing) and pre-tokenizer. (The
    library's ``WordPieceTrainer`` is not used: its merge ties follow Rust hash-map order,
    which changes from process to process, and with it the model's token ids.)
    """
    from collections import Counter

    from tokenizers import normalizers, pre_tokenizers

    norm, pre = normalizers.BertNormalizer(lowercase=True), pre_tokenizers.BertPreTokenizer()
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(w for w, _ in pre.pre_tokenize_str(norm.normalize_str(text)))
    chars = sorted({ch for w in counts for ch in w})
    words = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if len(w) > 1][:max_words]
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *(f"##{ch}" for ch in chars), *words]


def build_tiny_bert(out: Path, texts: list[str], *, seed: int = 0) -> Path:
    """Write a tiny random BERT encoder + WordPiece tokenizer for ``texts`` into ``out``; returns ``out``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(wordpiece_vocab(texts))}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]", model_max_length=TINY_BERT["max_position_embeddings"],
        model_input_names=["input_ids", "token_type_ids", "attention_mask"],
    )
    config = BertConfig(vocab_size=len(vocab), pad_token_id=vocab["[PAD]"], **TINY_BERT)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = BertModel(config)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    fast.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory, demo_lists) -> Path:
    """Folder of a tiny random BERT encoder with a WordPiece tokenizer trained on the demo texts."""
    texts: list[str] = []
    for lists in demo_lists.values():
        texts += [str(q) for q in lists.queries]
        texts += [str(c) for c in lists.candidates[lists.mask]]
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_bert"), texts)
