"""Token ids of a split, tokenized once and batched by tokens: what inference and training share.

**Tokenizing.** Every (query, candidate) pair is encoded as the tokenizer's pair encoding (BERT:
``[CLS] query [SEP] candidate [SEP]``, token types 0/1), truncated ``longest_first`` to
``max_length`` — the encoding ``CrossEncoder.preprocess`` gives. The fast (Rust,
multi-threaded) tokenizer is called once for all pairs without padding, or, where texts repeat
(a list's query is shared by its candidates), once for the distinct texts, each pair then being
assembled by the tokenizer's own post-processing (the same ids); the ids go into one flat array
(:class:`EncodedPairs`). The result is cached in memory, keyed by content: the sha256 of
the tokenizer's serialized state, ``max_length`` and the pairs' texts. A second pass over the
same split (every epoch's validation, the final test scoring, the invariance check) reuses the
ids instead of tokenizing again. :func:`encode_single` does the same for single texts.

**Batching.** A batch holds ``batch_size`` items, or, with a token budget (``max_tokens``; on a
CUDA device :func:`token_budget`), as many items as fit ``rows x width <= max_tokens``
(``width`` the batch's longest item): :func:`cut_batches`.

**Copies.** The flat ids of a split go to the device once (:class:`DeviceTokens`); each batch is
gathered and padded there from an index of its rows, so no padded batch crosses the bus.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: encoded splits kept in memory (least recently used dropped first), and their total tokens at most
CACHE_ENTRIES = 16
CACHE_TOKENS = 64 << 20
#: token budget of one inference batch on a GPU: at most this, and at most a quarter of free memory
MAX_BATCH_TOKENS = 1 << 16
#: rows of one batch at most under a token budget (very short pairs would otherwise make huge batches)
MAX_BATCH_ROWS = 4096


@dataclass(frozen=True)
class EncodedPairs:
    """Token ids of ``n`` pairs, unpadded, stored flat (read-only arrays).

    Attributes:
        ids: ``[total_tokens]`` int64 token ids of every pair, back to back.
        types: ``[total_tokens]`` int64 token type ids, or None when the model takes none.
        starts: ``[n]`` offset of each pair in ``ids``.
        lengths: ``[n]`` number of tokens of each pair.
        pad_id: the padding token id.
    """

    ids: np.ndarray
    types: np.ndarray | None
    starts: np.ndarray
    lengths: np.ndarray
    pad_id: int
    #: the arrays already copied to a device, by device name (see :meth:`on_device`)
    _devices: dict[str, DeviceTokens] = field(default_factory=dict, compare=False, repr=False)

    def __len__(self) -> int:
        return int(self.lengths.shape[0])

    @property
    def n_tokens(self) -> int:
        return int(self.ids.shape[0])

    def order(self, bucket: bool) -> np.ndarray:
        """Pair indices in batching order: longest first (stable) if ``bucket``, else input order."""
        if bucket:
            return np.argsort(-self.lengths, kind="stable")
        return np.arange(len(self))

    def batch(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """``input_ids``/``attention_mask`` (and ``token_type_ids``) of ``rows``, right-padded to their longest."""
        lengths = self.lengths[rows]
        width = int(lengths.max()) if len(rows) else 0
        cols = np.arange(width)
        valid = cols[None, :] < lengths[:, None]
        pos = np.where(valid, self.starts[rows][:, None] + cols[None, :], 0)
        out = {
            "input_ids": np.where(valid, self.ids[pos], self.pad_id),
            "attention_mask": valid.astype(np.int64),
        }
        if self.types is not None:
            out["token_type_ids"] = np.where(valid, self.types[pos], 0)
        return out

    def on_device(self, device: Any) -> DeviceTokens:
        """The arrays on ``device`` (copied on first use, then kept with this object)."""
        key = str(device)
        if key not in self._devices:
            self._devices[key] = DeviceTokens(self, device)
        return self._devices[key]


def host_to_device(a: Any, device: Any, dtype: Any = np.int64) -> Any:
    """A copy of the host array ``a`` (as ``dtype``) as a tensor on ``device``, without waiting for the device.

    On CUDA the copy goes from pinned memory with ``non_blocking=True``: the host goes on while
    the device still runs the work queued before it. A plain ``tensor.to("cuda")`` from pageable
    memory waits for the stream to finish everything queued first, so host work after it (say,
    indexing pairs while the forwards run) would no longer overlap the device. Pinned blocks are
    reused only once their copy has completed (torch's caching host allocator records an event).
    """
    import torch

    t = torch.from_numpy(np.array(a, dtype=dtype))  # a copy: cached arrays are read-only
    device = torch.device(device)
    if device.type == "cuda":
        return t.pin_memory().to(device, non_blocking=True)
    return t if device.type == "cpu" else t.to(device)


class DeviceTokens:
    """The flat arrays of an :class:`EncodedPairs` on one device; batches are gathered and padded there.

    ``batch(rows)`` gives exactly :meth:`EncodedPairs.batch` (same values, int64), as tensors on
    the device; only the row index (``len(rows)`` integers) is copied per batch, and the batch
    width comes from the host-side lengths, so building a batch never waits for the device.
    """

    def __init__(self, encoded: EncodedPairs, device: Any) -> None:
        import torch

        self.encoded = encoded
        self.device = torch.device(device)
        put = self._put
        # one trailing pad entry: padding positions gather it, so no where() on the ids is needed
        self.ids = put(np.append(encoded.ids, encoded.pad_id))
        self.types = None if encoded.types is None else put(np.append(encoded.types, 0))
        self.starts = put(encoded.starts)
        self.lengths = put(encoded.lengths)
        self.pad_pos = int(encoded.ids.shape[0])
        with torch.inference_mode(False):
            self._cols = torch.arange(int(encoded.lengths.max()) if len(encoded) else 0, device=self.device)

    def _put(self, a: np.ndarray) -> Any:
        import torch

        with torch.inference_mode(False):  # plain tensors: a training step may use them too
            return host_to_device(a, self.device)

    def index(self, rows: np.ndarray) -> Any:
        """``rows`` as an index tensor on the device (copy it once, slice it for each batch)."""
        return self._put(rows)

    def batch(self, rows: np.ndarray, index: Any = None) -> dict[str, Any]:
        """The padded batch of ``rows``; ``index``: ``rows`` already on the device (see :meth:`index`)."""
        import torch

        rows = np.asarray(rows, dtype=np.int64)
        width = int(self.encoded.lengths[rows].max()) if len(rows) else 0
        r = self.index(rows) if index is None else index
        cols = self._cols[:width]
        valid = cols[None, :] < self.lengths[r][:, None]
        pos = torch.where(valid, self.starts[r][:, None] + cols[None, :], self.pad_pos)
        out = {"input_ids": self.ids[pos], "attention_mask": valid.long()}
        if self.types is not None:
            out["token_type_ids"] = self.types[pos]
        return out


# -- tokenizing ---------------------------------------------------------------------------------
_CACHE: OrderedDict[tuple[Any, ...], EncodedPairs] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def tokenizer_digest(tokenizer: Any) -> str | None:
    """sha256 of a fast tokenizer's serialized state (vocabulary, added tokens, normalizer, ...), else None.

    Computed on every call (about 3-10 ms for a BERT WordPiece tokenizer), so a tokenizer changed
    in place is never matched with what it encoded before. A scorer computes it once for the
    tokenizer it loaded and passes it as ``tokenizer_key`` (its tokenizer does not change).
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not hasattr(backend, "to_str"):
        return None
    return hashlib.sha256(backend.to_str().encode("utf-8")).hexdigest()


class TokenizerKey:
    """The :func:`tokenizer_digest` of the tokenizer a scorer holds, computed once: the encoding
    cache's key without serializing the tokenizer on every pass (a few ms each, which a GPU pass
    over a few thousand pairs would wait for). Called with another tokenizer object, it digests
    that one. A loaded scorer's tokenizer is not changed in place."""

    def __init__(self) -> None:
        self._memo: tuple[Any, str | None] | None = None  # (tokenizer, its digest)

    def __call__(self, tokenizer: Any) -> str | None:
        memo = self._memo  # read once: another thread may swap in another tokenizer's digest meanwhile
        if memo is None or memo[0] is not tokenizer:
            memo = self._memo = (tokenizer, tokenizer_digest(tokenizer))
        return memo[1]


def _digest(tokenizer: Any, known: str | None) -> str | None:
    """``known`` (a digest the caller computed for this tokenizer), else :func:`tokenizer_digest`."""
    return known if known is not None else tokenizer_digest(tokenizer)


def texts_digest(*columns: Sequence[str]) -> str:
    """sha256 of columns of texts (each column's text lengths, then its UTF-8 bytes: unambiguous)."""
    h = hashlib.sha256()
    for col in columns:
        h.update(len(col).to_bytes(8, "little"))
        h.update(np.fromiter(map(len, col), dtype=np.int64, count=len(col)).tobytes())
        h.update("".join(col).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def cached_encoding(key: tuple[Any, ...] | None, make: Any) -> EncodedPairs:
    """``make()``, or the encoding cached under ``key`` (None: no caching)."""
    if key is None:
        return make()
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    encoded = make()
    for a in (encoded.ids, encoded.types, encoded.starts, encoded.lengths):
        if a is not None:
            a.flags.writeable = False  # shared between passes: nobody may change it
    with _CACHE_LOCK:
        _CACHE[key] = encoded
        total = sum(e.n_tokens for e in _CACHE.values())
        while len(_CACHE) > CACHE_ENTRIES or (total > CACHE_TOKENS and len(_CACHE) > 1):
            _, dropped = _CACHE.popitem(last=False)
            total -= dropped.n_tokens
    return encoded


def clear_cache() -> None:
    """Forget every cached encoding (and the device copies they hold)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def encode_pairs(tokenizer: Any, queries: Sequence[str], candidates: Sequence[str], *, max_length: int,
                 cache: bool = True, tokenizer_key: str | None = None) -> EncodedPairs:
    """Tokenize every ``(query, candidate)`` pair at once (no padding) into an :class:`EncodedPairs`.

    The encoding is the tokenizer's own (as in ``CrossEncoder.preprocess``), truncated
    ``longest_first`` to ``max_length``; token type ids are kept when the tokenizer returns them.
    A fast tokenizer's Rust backend is called directly (``encode_batch_fast``: no offsets, no
    per-pair Python objects from transformers), with truncation set for the call and restored
    afterwards, as transformers itself does on every call; other tokenizers go through
    ``tokenizer(...)``. With ``cache`` (and a fast tokenizer) the result is remembered by content
    (see the module docstring) and the same arrays are returned for the same pairs again.
    ``tokenizer_key`` is the tokenizer's :func:`tokenizer_digest` when the caller holds it already
    (a scorer computes it once for the tokenizer it loaded, :class:`TokenizerKey`); None computes
    it here.
    """
    want_types = "token_type_ids" in getattr(tokenizer, "model_input_names", ("token_type_ids",))
    digest = _digest(tokenizer, tokenizer_key) if cache and len(queries) else None
    key = None if digest is None else ("pairs", digest, int(max_length), want_types,
                                       texts_digest(queries, candidates))
    return cached_encoding(key, lambda: _encode_pairs(tokenizer, queries, candidates, max_length=max_length,
                                                      want_types=want_types))


def _encode_pairs(tokenizer: Any, queries: Sequence[str], candidates: Sequence[str], *, max_length: int,
                  want_types: bool) -> EncodedPairs:
    pad_id = int(tokenizer.pad_token_id)
    if not len(queries):
        return flat_encoding([], None, pad_id)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and hasattr(backend, "encode_batch_fast"):
        ids, types = _encode_rust_pairs(backend, queries, candidates, max_length=max_length, want_types=want_types)
    else:
        enc = tokenizer(list(queries), list(candidates), truncation="longest_first", max_length=max_length,
                        padding=False)
        ids, types = enc["input_ids"], enc.get("token_type_ids")
    return flat_encoding(ids, types, pad_id)


def encode_single(tokenizer: Any, texts: Sequence[str], *, max_length: int, cache: bool = True,
                  tokenizer_key: str | None = None, texts_key: str | None = None) -> EncodedPairs:
    """Single texts as ``SentenceTransformer.preprocess`` encodes them: special tokens added, truncated
    to ``max_length`` by the tokenizer (the closing special token kept), no padding; cached like
    :func:`encode_pairs` (``tokenizer_key`` as there; ``texts_key``: ``texts_digest(texts)`` when
    the caller computed it already, None computes it here)."""
    want_types = "token_type_ids" in getattr(tokenizer, "model_input_names", ("token_type_ids",))
    digest = _digest(tokenizer, tokenizer_key) if cache and len(texts) else None
    key = None if digest is None else ("single", digest, int(max_length), want_types,
                                       texts_key if texts_key is not None else texts_digest(texts))

    def make() -> EncodedPairs:
        pad_id = int(tokenizer.pad_token_id)
        if not len(texts):
            return flat_encoding([], None, pad_id)
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is not None and hasattr(backend, "encode_batch_fast"):
            ids, types = _encode_rust(backend, list(texts), max_length=max_length, want_types=want_types)
        else:
            enc = tokenizer(list(texts), truncation="longest_first", max_length=max_length, padding=False)
            ids, types = enc["input_ids"], enc.get("token_type_ids")
        return flat_encoding(ids, types, pad_id)

    return cached_encoding(key, make)


def flat_encoding(ids: Sequence[Sequence[int]], types: Sequence[Sequence[int]] | None, pad_id: int) -> EncodedPairs:
    """An :class:`EncodedPairs` from per-item token id lists (and token type lists)."""
    lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
    total = int(lengths.sum())
    starts = np.zeros(len(ids), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    flat_ids = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64, count=total)
    flat_types = None
    if types is not None:
        flat_types = np.fromiter(itertools.chain.from_iterable(types), dtype=np.int64, count=total)
    return EncodedPairs(flat_ids, flat_types, starts, lengths, int(pad_id))


@contextlib.contextmanager
def _settings(backend: Any, max_length: int | None) -> Iterator[None]:
    """No padding and truncation ``longest_first`` to ``max_length`` (None: none) for a block; the
    backend's own settings are restored afterwards, as transformers does around each call."""
    truncation, padding = backend.truncation, backend.padding
    try:
        backend.no_padding()
        if max_length is None:
            backend.no_truncation()
        else:
            backend.enable_truncation(max_length, strategy="longest_first")
        yield
    finally:
        if truncation is None:
            backend.no_truncation()
        else:
            backend.enable_truncation(**truncation)
        if padding is not None:
            backend.enable_padding(**padding)


def _encode_rust(backend: Any, inputs: list[Any], *, max_length: int,
                 want_types: bool) -> tuple[list[list[int]], list[list[int]] | None]:
    with _settings(backend, max_length):
        encodings = backend.encode_batch_fast(inputs)
    ids = [e.ids for e in encodings]
    return ids, ([e.type_ids for e in encodings] if want_types else None)


#: below this share of distinct texts among a split's 2 x n texts, pairs are assembled from texts
#: tokenized once each (a list's query is shared by its candidates) instead of tokenized whole
SHARED_TEXTS = 0.75


def _encode_rust_pairs(backend: Any, queries: Sequence[str], candidates: Sequence[str], *, max_length: int,
                       want_types: bool) -> tuple[list[list[int]], list[list[int]] | None]:
    """Pair encodings, each exactly what ``encode_batch_fast`` gives for the pair.

    Where texts repeat (every candidate of a list shares its query), each distinct text is
    tokenized once, untruncated and without special tokens, and each pair is assembled by the
    tokenizer's own ``post_process`` (truncation ``longest_first`` to ``max_length``, then the
    post-processor's special tokens and type ids): the steps ``encode`` runs after tokenizing
    the two sequences, so the ids are the same. Otherwise the pairs are encoded whole.
    """
    n = len(queries)
    texts = list(dict.fromkeys(itertools.chain(queries, candidates)))
    if len(texts) > SHARED_TEXTS * 2 * n:
        return _encode_rust(backend, list(zip(queries, candidates)), max_length=max_length, want_types=want_types)
    with _settings(backend, None):
        singles = backend.encode_batch_fast(texts, add_special_tokens=False)
    with _settings(backend, max_length):
        where = {t: i for i, t in enumerate(texts)}
        post = backend.post_process
        encodings = [post(singles[where[q]], singles[where[c]], True) for q, c in zip(queries, candidates)]
    ids = [e.ids for e in encodings]
    return ids, ([e.type_ids for e in encodings] if want_types else None)


# -- batching -------------------------------------------------------------------------------------
def cut_batches(order: np.ndarray, lengths: np.ndarray, *, batch_size: int,
                max_tokens: int | None = None, max_rows: int = MAX_BATCH_ROWS) -> list[np.ndarray]:
    """``order`` cut into consecutive batches: ``batch_size`` items each, or, with ``max_tokens``,
    as many items as keep ``items x longest item <= max_tokens`` (at least one, at most ``max_rows``)."""
    order = np.asarray(order, dtype=np.int64)
    if max_tokens is None:
        return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    out = []
    i, n = 0, len(order)
    while i < n:
        seg = np.asarray(lengths)[order[i:i + max_rows]]
        widest = np.maximum.accumulate(np.maximum(seg, 1))
        over = widest * np.arange(1, len(seg) + 1) > max_tokens
        k = max(1, int(np.argmax(over)) if over.any() else len(seg))
        out.append(order[i:i + k])
        i += k
    return out


# -- device defaults ---------------------------------------------------------------------------
_BUDGETS: dict[tuple[str, str, bool], int] = {}


def token_budget(model: Any, device: Any, *, training: bool = False) -> int | None:
    """Tokens per batch that fill ``device`` with ``model`` (a model, or its ``config.json`` as a
    dict): None off CUDA (batches keep their size).

    On CUDA: a quarter of the device's free memory (found once per model and device, then
    remembered for the process) divided by an estimate of the activation bytes one token needs
    (inference: one layer's hidden states, feed-forward and attention rows at once; training:
    every layer's, kept for the backward), rounded down to a power of two and capped at
    :data:`MAX_BATCH_TOKENS` (inference) so the batch plan, and so the scores, do not change
    with small differences in free memory.
    """
    import torch

    device = torch.device(device)
    if device.type != "cuda":
        return None
    config = model if isinstance(model, dict) else getattr(model, "config", None)
    if config is None:  # a sentence-transformers model: its first module's transformers model
        with contextlib.suppress(Exception):
            config = model[0].auto_model.config

    def get(name: str, default: Any) -> Any:
        value = config.get(name) if isinstance(config, dict) else getattr(config, name, None)
        return value if isinstance(value, (int, str)) and value else default

    key = (str(get("_name_or_path", "")) + str(get("model_type", "")) + str(get("hidden_size", "")),
           str(device), training)
    if key not in _BUDGETS:
        hidden = int(get("hidden_size", get("n_embd", 1024)))
        inter = int(get("intermediate_size", get("n_inner", 4 * hidden)))
        heads = int(get("num_attention_heads", get("n_head", 16)))
        layers = int(get("num_hidden_layers", get("n_layer", 12)))
        context = 512
        per_layer = 2 * (8 * hidden + 2 * inter) + 4 * heads * context
        per_token = per_layer * (layers if training else 2)
        free, _total = torch.cuda.mem_get_info(device)
        tokens = max(256, int(free // 4 // per_token))
        budget = 1 << (tokens.bit_length() - 1)
        _BUDGETS[key] = budget if training else min(budget, MAX_BATCH_TOKENS)
    return _BUDGETS[key]
