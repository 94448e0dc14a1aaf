"""Tiny offline transformer checkpoints for the tests, built from nothing in a temp dir.

* :func:`build_tiny_bert`: a ``tokenizers`` WordPiece tokenizer whose vocabulary is counted
  from the given texts (BERT normalizer and special tokens, ``[CLS] A [SEP] B [SEP]`` pair
  template with token types 0/1), wrapped as a ``PreTrainedTokenizerFast``, and a randomly
  initialised ``BertModel`` (hidden 32, 2 layers, 2 heads, intermediate 64): a plain encoder
  folder like a pretrained checkpoint, so a scorer must add and initialise its own head.
* :func:`build_tiny_gpt2`: a byte-level BPE tokenizer trained on the texts (400 tokens,
  ``<|endoftext|>`` as BOS/EOS, ``<pad>`` as padding) and a randomly initialised
  ``GPT2LMHeadModel`` (``n_layer=2, n_embd=32, n_head=2``, 256 positions).

Both are saved with ``save_pretrained`` and are the same in every session (seeded weights,
deterministic vocabulary). :func:`demo_texts` gives the texts the fixtures use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

TINY_BERT = {
    "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
    "max_position_embeddings": 128,
}
TINY_GPT2 = {"n_layer": 2, "n_embd": 32, "n_head": 2, "n_positions": 256}


def demo_texts(benchmark: Path) -> list[str]:
    """Every query and valid candidate of a benchmark folder, split by split (queries first)."""
    from gradebench.benchmark.lists import open_benchmark

    bench = open_benchmark(benchmark)
    texts: list[str] = []
    for split in bench.splits:
        lists = bench.lists(split)
        texts += [str(q) for q in lists.queries] + [str(c) for c in lists.candidates[lists.mask]]
    return texts


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


def _save_seeded(out: Path, model_class: Any, config: Any, tokenizer: Any, seed: int) -> Path:
    """Initialise ``model_class(config)`` under ``seed`` (global RNG untouched), save it and ``tokenizer``."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = model_class(config)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def build_tiny_bert(out: Path, texts: list[str], *, seed: int = 0) -> Path:
    """Write a tiny random BERT encoder + WordPiece tokenizer for ``texts`` into ``out``; returns ``out``."""
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
    return _save_seeded(out, BertModel, config, fast, seed)


def build_tiny_gpt2(out: Path, texts: list[str], *, seed: int = 0) -> Path:
    """Write a tiny random GPT-2 + byte-level BPE tokenizer for ``texts`` into ``out``; returns ``out``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>", "<pad>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                   unk_token="<|endoftext|>", pad_token="<pad>",
                                   model_max_length=TINY_GPT2["n_positions"])
    config = GPT2Config(vocab_size=tok.get_vocab_size(), bos_token_id=fast.bos_token_id,
                        eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id, **TINY_GPT2)
    return _save_seeded(out, GPT2LMHeadModel, config, fast, seed)
