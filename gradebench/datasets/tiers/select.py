"""Choose the source examples that become queries: filter, id, and assign output splits.

Skipped examples are counted by reason, never raised on:

- ``no_gold_label``: label ``-`` (annotators did not agree)
- ``unknown_label``: a label the recipe does not list
- ``empty_premise`` / ``empty_hypothesis``
- ``empty_explanation``: a tier needs a human explanation the row lacks
- ``no_sibling_explanation``: a sibling tier needs more same-premise rows than exist
- ``no_unrelated_explanation``: the split has too few rows about other premises (for
  ``match: bm25``: too few with another premise and label not yet lent ``count`` times)
- ``duplicate_row``: a row identical to an earlier one of its split (texts, label, explanations)
- ``conflicting_source_id``: a source id (e-SNLI pairID) already taken by a row with other texts
- ``duplicate_query``: the same query id was already taken (same source id and text)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from hashlib import sha256

from gradebench.datasets.records import NLIExample
from gradebench.datasets.tiers.candidates import (
    Pool,
    Query,
    explanation,
    own_explanation_index,
    premise_key,
    sibling_indices,
    unrelated_indices,
)
from gradebench.datasets.tiers.contrast import Bm25Index, balanced_flips, bm25_lend
from gradebench.datasets.tiers.spec import TieredSection, TierSpec
from gradebench.hashing import choice_index, uniform


def query_id(ex: NLIExample) -> str:
    """Content id of a query: sha256 of its source id and texts (independent of the recipe)."""
    # short_id("query", source_id, premise, hypothesis), with the parts joined here (once per pair)
    return sha256(f"query\x1f{ex.source_id}\x1f{ex.premise}\x1f{ex.hypothesis}".encode()).hexdigest()[:16]


@dataclass
class Selection:
    queries: list[Query]
    skipped: Counter


def _own_explanations(recipe: TieredSection) -> tuple[int, ...]:
    """The human explanations the recipe's explanation tiers show (each must be non-empty)."""
    return tuple(t.explanation for t in recipe.tiers if t.candidates == "explanation")


def _skip_reason(ex: NLIExample, labels: frozenset[str], needed: tuple[int, ...]) -> str | None:
    if ex.label not in labels:
        return "no_gold_label" if ex.label.strip() in ("-", "") else "unknown_label"
    if not ex.premise.strip():
        return "empty_premise"
    if not ex.hypothesis.strip():
        return "empty_hypothesis"
    for k in needed:
        if not explanation(ex.explanations, k):
            return "empty_explanation"
    return None


def select(
    recipe: TieredSection,
    examples: Mapping[str, Iterable[NLIExample]],
    *,
    limit: int | None = None,
) -> Selection:
    """Filter ``examples`` (per source split) into queries with ids (splits are the source's)."""
    streamed = stream(recipe, examples, limit=limit)
    if streamed is not None:
        queries, skipped = streamed
        return Selection(list(queries), skipped)
    return _two_passes(recipe, examples, limit)


def _two_passes(recipe: TieredSection, examples: Mapping[str, Iterable[NLIExample]], limit: int | None) -> Selection:
    """Every split's kept examples first (the pools borrowing draws from), then its queries."""
    labels = frozenset(recipe.labels)
    needed = _own_explanations(recipe)
    skipped: Counter = Counter()
    kept: dict[str, list[NLIExample]] = {}
    first_of: dict[str, NLIExample] = {}  # the first kept row of each source id
    seen_rows: set[tuple] = set()
    for split in sorted(examples):
        rows = []
        seen_rows = set()
        for n, ex in enumerate(examples[split]):
            if limit is not None and n >= limit:
                break
            reason = _skip_reason(ex, labels, needed)
            if reason is None:
                row_key = (ex.premise, ex.hypothesis, ex.label, ex.explanations)
                first = first_of.setdefault(ex.source_id, ex)
                if row_key in seen_rows:
                    reason = "duplicate_row"
                elif first.premise != ex.premise or first.hypothesis != ex.hypothesis:
                    reason = "conflicting_source_id"
                else:
                    seen_rows.add(row_key)
            if reason:
                skipped[reason] += 1
            else:
                rows.append(ex)
        kept[split] = rows
    del seen_rows, first_of  # freed before the queries are made

    borrowing = [t for t in recipe.tiers if t.candidates in ("sibling_explanation", "unrelated_explanation")]
    matched = [t.explanation for t in borrowing if t.match == "query_overlap"]
    pools = {split: Pool.from_examples(rows, matched) for split, rows in kept.items()} if borrowing else {}
    per_query = [t for t in borrowing if t.match != "bm25"]
    lent = [t for t in borrowing if t.match == "bm25"]
    flipping = [t for t in recipe.tiers if t.candidates == "negation_flip"]
    ns = recipe.seed_namespace
    own = own_explanation_index(recipe)
    seen: set[str] = set()
    queries: list[Query] = []
    for split in sorted(kept):
        v1_flips = {t.name: _flips(kept[split], t, ns) for t in flipping if not _v2_flip(t)}
        pending: list[tuple[NLIExample, str, dict[str, tuple[tuple[str, str], ...]], int]] = []
        for row, ex in enumerate(kept[split]):
            qid = query_id(ex)
            if qid in seen:
                skipped["duplicate_query"] += 1
                continue
            reason = None
            borrowed: dict[str, tuple[tuple[str, str], ...]] = {}
            for tier in per_query:
                if tier.candidates == "sibling_explanation":
                    found = sibling_indices(pools[split], ex, tier, ns, qid, own)
                    missing = "no_sibling_explanation"
                else:
                    found = unrelated_indices(pools[split], ex, tier, ns, qid, own)
                    missing = "no_unrelated_explanation"
                if len(found) < tier.count:
                    reason = missing
                    break
                pool = pools[split]
                borrowed[tier.name] = tuple(
                    (explanation(pool.explanations[i], tier.explanation), pool.source_ids[i]) for i in found
                )
            if reason:
                skipped[reason] += 1
                continue
            seen.add(qid)
            pending.append((ex, qid, borrowed, row))
        # v2 flips are balanced over the pairs that reach this point (v1's over every kept row)
        v2_flips = {t.name: _flips_v2([p[0] for p in pending], t, ns) for t in flipping if _v2_flip(t)}
        filled: list[tuple[NLIExample, str, dict]] = []
        for n, (ex, qid, borrowed, row) in enumerate(pending):
            short = False
            for tier in flipping:
                if tier.name in v1_flips:
                    found_flip = v1_flips[tier.name].get(row)
                else:
                    found_flip = v2_flips[tier.name].get(n)
                if found_flip is None:
                    borrowed[tier.name] = ()
                    keep = tier.keep_unflipped
                    if keep < 1.0 and uniform(ns, "keep-unflipped", tier.name, qid) >= keep:
                        short = True
                    continue
                k, text = found_flip if isinstance(found_flip, tuple) else (tier.explanation, found_flip)
                borrowed[tier.name] = ((text, ex.source_id),)
                if tier.own_from_flip:
                    for t in recipe.tiers:
                        if t.candidates == "explanation":
                            borrowed[t.name] = ((explanation(ex.explanations, k), ex.source_id),)
            if short:
                skipped["no_negation_flip"] += 1
                continue
            filled.append((ex, qid, borrowed))
        del pending
        for tier in lent:
            filled = _lend_bm25(recipe, kept[split], pools[split], filled, tier, own, skipped)
        queries.extend(Query(ex, qid, split, borrowed) for ex, qid, borrowed in filled)
        del filled
    return Selection(queries, skipped)


def stream(
    recipe: TieredSection,
    examples: Mapping[str, Iterable[NLIExample]],
    *,
    limit: int | None = None,
    consume: bool = False,
) -> tuple[Iterator[Query], Counter] | None:
    """:func:`select` one example at a time, where no tier borrows or flips: ``(queries, skipped)``.

    Without borrowing (sibling, unrelated) and negation flips, whether an example becomes a
    query depends only on the examples before it, so the queries come as the examples are read
    and the build's workers start on the first batches while the rest is selected. The same
    decisions as :func:`select`'s two passes (which uses this where it applies), in the same
    order: the skip reasons, then the repeated row and source id within the examples kept so
    far, then the repeated query id. ``skipped`` is complete once ``queries`` is exhausted.
    None where a tier borrows or flips (those need every example of a split first).

    What is remembered of the examples already seen is a 16-byte digest of each kept row and
    of each source id's texts, not the examples, so with ``consume`` (the build engine, which
    reads the records once) each list slot read is cleared and an example is freed as soon as
    its batch is built.
    """
    if not streams(recipe):
        return None
    skipped: Counter = Counter()
    return _stream(recipe, examples, limit, skipped, consume), skipped


def streams(recipe: TieredSection) -> bool:
    """Whether :func:`stream` applies: no tier borrows from the rest of its split or flips negations."""
    return not any(t.candidates in _NEEDS_SPLIT for t in recipe.tiers)


#: tier kinds whose candidates depend on other examples of the split (chosen after all are seen)
_NEEDS_SPLIT = ("sibling_explanation", "unrelated_explanation", "negation_flip")


def _digests(ex: NLIExample) -> tuple[bytes, bytes]:
    """16 bytes standing for the example's texts (premise, hypothesis), and 16 for its whole row (the
    texts' digest, then label and explanations): the first 16 bytes of sha256 (cheaper in CPython
    than a 16-byte blake2b), each of its two parts written on its own
    (:func:`_joined`), so that equal texts give equal digests whatever the explanations hold."""
    texts = sha256(_joined((ex.premise, ex.hypothesis))).digest()[:16]
    return texts, sha256(texts + _joined((ex.label, *ex.explanations))).digest()[:16]


def _joined(parts: tuple[str, ...]) -> bytes:
    """``parts`` as bytes no other tuple of strings gives: joined by a separator none holds (else
    length-prefixed; a leading letter keeps the two forms apart). Any string encodes, lone
    surrogates included."""
    joined = SEP.join(parts)
    if joined.count(SEP) == len(parts) - 1:
        joined = "s" + joined
    else:
        joined = "l" + "".join(f"{len(p)}:{p}" for p in parts)
    return joined.encode("utf-8", "surrogatepass")


SEP = "\x1f"


def _stream(recipe: TieredSection, examples: Mapping[str, Iterable[NLIExample]], limit: int | None,
            skipped: Counter, consume: bool) -> Iterator[Query]:
    labels = frozenset(recipe.labels)
    needed = _own_explanations(recipe)
    texts_of: dict[str, bytes] = {}  # the texts of the first kept row of each source id
    seen: set[str] = set()
    for split in sorted(examples):
        seen_rows: set[bytes] = set()
        rows = examples[split]
        clear = consume and isinstance(rows, list)
        for n, ex in enumerate(rows):
            if limit is not None and n >= limit:
                break
            if clear:
                rows[n] = None
            reason = _skip_reason(ex, labels, needed)
            if reason is None:
                texts, row_key = _digests(ex)
                first = texts_of.setdefault(ex.source_id, texts)  # a repeated row counts as its id's first too
                if row_key in seen_rows:
                    reason = "duplicate_row"
                elif first != texts:
                    reason = "conflicting_source_id"
                else:
                    seen_rows.add(row_key)
            if reason:
                skipped[reason] += 1
                continue
            qid = query_id(ex)
            if qid in seen:
                skipped["duplicate_query"] += 1
                continue
            seen.add(qid)
            yield Query(ex, qid, split, {})


@dataclass(frozen=True)
class RowKeys:
    """What :func:`stream` decides rows by, found where they are read (:func:`row_keys`), cheap to
    send (strings and concatenated bytes, no objects per row): per row its skip reason or None;
    for the others its source id, and concatenated, 16 bytes for its texts (:func:`_text_key`),
    16 for the whole row (:func:`_row_key`) and its 16-character query id."""

    reasons: list[str | None]
    source_ids: list[str]
    texts: bytes
    rows: bytes
    query_ids: str


def row_keys(recipe: TieredSection, examples: Iterable[NLIExample]) -> RowKeys:
    """The :class:`RowKeys` of ``examples``: the part of :func:`stream`'s decisions a worker can make alone.

    Two hashes a row (three where a text holds the separator; the loop runs once per source row,
    in the workers of a sharded build): the query id's sha256, whose first 16 bytes also stand
    for the texts, and the row's."""
    labels = frozenset(recipe.labels)
    needed = _own_explanations(recipe)
    reasons: list[str | None] = []
    sids, texts, rows, qids = [], [], [], []
    add_reason, add_sid, add_texts, add_row, add_qid = (reasons.append, sids.append, texts.append, rows.append,
                                                        qids.append)
    for ex in examples:
        reason = _skip_reason(ex, labels, needed)
        add_reason(reason)
        if reason is None:
            premise, hypothesis, sid = ex.premise, ex.hypothesis, ex.source_id
            digest = sha256(f"query\x1f{sid}\x1f{premise}\x1f{hypothesis}".encode()).digest()  # as query_id
            add_sid(sid)
            add_texts(_text_key(digest, premise, hypothesis))
            add_row(_row_key(ex))
            add_qid(digest.hex()[:16])
    return RowKeys(reasons, sids, b"".join(texts), b"".join(rows), "".join(qids))


def _text_key(query_digest: bytes, premise: str, hypothesis: str) -> bytes:
    """16 bytes standing for (premise, hypothesis) among the rows of one source id: the first 16
    bytes of the query id's sha256 (``query, source id, premise, hypothesis`` joined by ``\\x1f``:
    with the source id fixed and neither text holding the separator, the texts are read back
    from it unambiguously), or where a text holds it, ``b"l"`` and the first 15 bytes of the
    sha256 of the texts written as :func:`_joined` writes them. Keys of different texts meet
    only by chance, about 2**-120 a pair."""
    if SEP in premise or SEP in hypothesis:
        return b"l" + sha256(_joined((premise, hypothesis))).digest()[:15]
    return query_digest[:16]


def _row_key(ex: NLIExample) -> bytes:
    """16 bytes standing for the whole row (texts, label, explanations): the first 16 bytes of the
    sha256 of :func:`_joined` of its fields (one tuple of strings per row, read back unambiguously)."""
    return sha256(_joined((ex.premise, ex.hypothesis, ex.label, *ex.explanations))).digest()[:16]


class KeyedStream:
    """:func:`stream`'s decisions from :func:`row_keys` found elsewhere, the keys of each split's rows
    given in order (rows of the first ``limit`` of each split, splits in sorted order).

    The same decisions as :func:`_stream` makes, in the same order (``tests/benchmark/
    test_sharded_read.py`` compares them), with rows and texts known by 16 bytes each (sha256's:
    two different ones meet by a chance of about 2**-120 a pair), source ids as they are.
    """

    def __init__(self, skipped: Counter) -> None:
        self.skipped = skipped
        self._texts_of: dict[str, bytes] = {}
        self._seen: set[str] = set()
        self._seen_rows: set[bytes] = set()
        self._split: str | None = None

    def kept(self, split: str, first_row: int, keys: RowKeys) -> list[tuple[int, str]]:
        """``(row, query id)`` of each row of ``keys`` (rows ``first_row``, ``first_row + 1``, ...) kept."""
        if split != self._split:
            self._split, self._seen_rows = split, set()
        skipped, texts_of, seen, seen_rows = self.skipped, self._texts_of, self._seen, self._seen_rows
        sids, texts, rows, qids = keys.source_ids, keys.texts, keys.rows, keys.query_ids
        fresh = self._all_fresh(keys, first_row)
        if fresh is not None:
            return fresh
        out = []
        j = 0  # the row's place among those without a skip reason
        for row, reason in enumerate(keys.reasons, first_row):
            if reason is not None:
                skipped[reason] += 1
                continue
            a, b = 16 * j, 16 * j + 16
            own = texts[a:b]
            row_key = rows[a:b]
            first = texts_of.setdefault(sids[j], own)  # a repeated row counts as its id's first too
            j += 1
            if row_key in seen_rows:
                skipped["duplicate_row"] += 1
                continue
            if first != own:
                skipped["conflicting_source_id"] += 1
                continue
            seen_rows.add(row_key)
            qid = qids[a:b]
            if qid in seen:
                skipped["duplicate_query"] += 1
                continue
            seen.add(qid)
            out.append((row, qid))
        return out

    def _all_fresh(self, keys: RowKeys, first_row: int) -> list[tuple[int, str]] | None:
        """:meth:`kept`'s answer where no row of ``keys`` meets another row: every source id, row key
        and query id is new and none repeats within ``keys`` (a source's usual slice). Then each row
        without a skip reason is kept, whatever the order, so the sets are checked and grown whole
        (in C) rather than row by row. None, and nothing changed, where some row does meet another."""
        sids, n = keys.source_ids, len(keys.source_ids)
        seen_rows, texts_of, seen = self._seen_rows, self._texts_of, self._seen
        row_keys = [keys.rows[a:a + 16] for a in range(0, 16 * n, 16)]
        if not seen_rows.isdisjoint(row_keys) or not texts_of.keys().isdisjoint(sids):
            return None
        qids = [keys.query_ids[a:a + 16] for a in range(0, 16 * n, 16)]
        if not seen.isdisjoint(qids):
            return None
        # every key is new: added, then a repeat within the slice shows as a set grown by less than
        # n (rare: then every key of the slice is taken out again, as none was there before)
        sizes = len(seen_rows) + n, len(texts_of) + n, len(seen) + n
        texts = keys.texts
        seen_rows.update(row_keys)
        texts_of.update(zip(sids, [texts[a:a + 16] for a in range(0, 16 * n, 16)]))
        seen.update(qids)
        if (len(seen_rows), len(texts_of), len(seen)) != sizes:
            seen_rows.difference_update(row_keys)
            for sid in sids:
                texts_of.pop(sid, None)
            seen.difference_update(qids)
            return None
        reasons = keys.reasons
        if n == len(reasons):
            return list(zip(range(first_row, first_row + n), qids))
        skipped = self.skipped
        for reason in reasons:
            if reason is not None:
                skipped[reason] += 1
        rows = [row for row, reason in enumerate(reasons, first_row) if reason is None]
        return list(zip(rows, qids))


def _flips(rows: list[NLIExample], tier: TierSpec, ns: str) -> dict[int, str]:
    """Balanced negation flips of explanation ``tier.explanation`` of a split's rows, by row position."""
    items = [(ex.source_id, explanation(ex.explanations, tier.explanation)) for ex in rows]
    return balanced_flips(items, f"{ns}/{tier.name}")


def _v2_flip(tier: TierSpec) -> bool:
    return (tier.flip_balance != "rule" or bool(tier.flip_explanations) or tier.own_from_flip
            or tier.keep_unflipped != 1.0)


def _flips_v2(rows: list[NLIExample], tier: TierSpec, ns: str) -> dict[int, tuple[int, str]]:
    """Balanced flips of the rows' first flippable explanation among ``tier.flip_explanations``.

    Returns ``{position in rows: (explanation number, flipped text)}``; with ``flip_balance:
    label`` every rule is balanced within each label's rows.
    """
    from gradebench.datasets.tiers.contrast import flippable

    order = tier.flip_explanations or (tier.explanation,)
    items, which, groups = [], [], []
    for ex in rows:
        k = next((k for k in order if flippable(explanation(ex.explanations, k))), order[0])
        items.append((ex.source_id, explanation(ex.explanations, k)))
        which.append(k)
        groups.append(ex.label if tier.flip_balance == "label" else "")
    flips = balanced_flips(items, f"{ns}/{tier.name}", groups=groups)
    return {n: (which[n], text) for n, text in flips.items()}


#: a split with more explanations than this is cut into content-hashed blocks for ``match: bm25``
#: (a query borrows from its own block), so time grows linearly with the split, not squared
BM25_BLOCK = 12_000


def _lend_bm25(
    recipe: TieredSection,
    rows: list[NLIExample],
    pool: Pool,
    pending: list[tuple[NLIExample, str, dict]],
    tier: TierSpec,
    own: int,
    skipped: Counter,
) -> list[tuple[NLIExample, str, dict]]:
    """Fill ``tier`` (``match: bm25``) of one split's pending queries; drop (and count) those left short.

    Documents are the rows' explanation ``tier.explanation``; a query may borrow those of rows
    with another premise and another label (:func:`~.contrast.bm25_lend`, each lent at most
    ``tier.count`` times).
    """
    import numpy as np

    ns = f"{recipe.seed_namespace}/{tier.name}"
    own_tier = next((t.name for t in recipe.tiers if t.candidates == "explanation"), "")
    docs = [explanation(e, tier.explanation) for e in pool.explanations]
    present = [i for i, d in enumerate(docs) if d]
    blocks = -(-len(present) // BM25_BLOCK) or 1

    def block_of(ex: NLIExample) -> int:
        return choice_index(blocks, ns, "bm25-block", ex.source_id, ex.premise, ex.hypothesis) if blocks > 1 else 0

    doc_block = {i: block_of(rows[i]) for i in present}
    ask_block = [block_of(ex) for ex, _, _ in pending]
    picks: dict[str, tuple[int, ...]] = {}
    for block in range(blocks):
        members = [i for i in present if doc_block[i] == block]
        if not members:
            continue
        index = Bm25Index([docs[i] for i in members])
        premise_ids: dict[str, int] = {}
        label_ids: dict[str, int] = {}
        premise_of = np.array([premise_ids.setdefault(pool.premise_keys[i], len(premise_ids)) for i in members])
        label_of = np.array([label_ids.setdefault(pool.labels[i], len(label_ids)) for i in members])
        doc_text = np.array([docs[i] for i in members], dtype=object)
        asks = []
        for (ex, qid, borrowed), b in zip(pending, ask_block):
            if b != block:
                continue
            same_label = label_of == label_ids.get(ex.label, -1)
            eligible = (premise_of != premise_ids.get(premise_key(ex.premise), -1)) & (
                same_label if tier.borrow_label == "same" else ~same_label
            )
            own_text = borrowed[own_tier][0][0] if own_tier in borrowed else explanation(ex.explanations, own)
            if tier.borrow_label == "same":
                eligible &= doc_text != own_text
            text = recipe.query_template.format(premise=ex.premise, hypothesis=ex.hypothesis, label=ex.label)
            asks.append((qid, text, own_text, eligible))
        keys = [(rows[i].source_id, docs[i]) for i in members]
        lent = bm25_lend(index, asks, count=tier.count, cap=tier.count, ns=ns, doc_keys=keys)
        picks.update({qid: tuple(members[d] for d in found) for qid, found in lent.items()})
    kept = []
    for ex, qid, borrowed in pending:
        found = picks.get(qid, ())
        if len(found) < tier.count:
            skipped["no_unrelated_explanation"] += 1
            continue
        borrowed[tier.name] = tuple((docs[i], pool.source_ids[i]) for i in found)
        kept.append((ex, qid, borrowed))
    return kept
