"""Turn selected queries into graded candidate rows (pure given the build context).

Every random choice (template variant, claimed wrong label, sibling/unrelated pick, base
score, candidate order) is derived from sha256 of the recipe's seed namespace and content
(:mod:`gradebench.hashing`), so a row depends only on its own query and the recipe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from hashlib import sha256

import numpy as np
import pyarrow as pa

from gradebench.datasets.base import GradedColumns
from gradebench.datasets.common import percent_format
from gradebench.datasets.records import NLIExample
from gradebench.datasets.tiers.fill import Part, Template
from gradebench.datasets.tiers.scoring import Adjuster, base_score, words
from gradebench.datasets.tiers.spec import TieredSection, TierSpec
from gradebench.hashing import UNIT, choice_index, key_digest


@dataclass(frozen=True, slots=True)
class Query:
    """A source example accepted for the benchmark: a self-contained unit of work.

    ``split`` is the example's source split. ``borrowed`` maps each sibling/unrelated tier to
    the ``(explanation, source_id)`` of the pool rows chosen for it, and each negation_flip
    tier to ``((flipped text, own source_id),)`` or ``()`` (found once, during selection,
    balanced over the split), so building the candidates needs nothing but the query itself.
    The own-explanation tier is there only where its text is not the recipe's ``explanation``
    index: the one a flip was made from (``own_from_flip``), or the one the adversarial step chose.
    """

    example: NLIExample
    query_id: str
    split: str
    borrowed: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Pool:
    """The accepted examples of one source split, for tiers that borrow other rows' explanations."""

    premise_keys: tuple[str, ...]
    labels: tuple[str, ...]
    explanations: tuple[tuple[str, ...], ...]
    source_ids: tuple[str, ...]
    by_premise: dict[str, tuple[int, ...]]
    #: explanation index -> (word set, word count) per row, for lexically matched draws
    tokens: dict[int, tuple[tuple[frozenset[str], int], ...]]

    @classmethod
    def from_examples(cls, examples: Sequence[NLIExample], matched: Sequence[int] = ()) -> Pool:
        keys = tuple(premise_key(e.premise) for e in examples)
        groups: dict[str, list[int]] = {}
        for i, k in enumerate(keys):
            groups.setdefault(k, []).append(i)
        tokens = {}
        for k in sorted(set(matched)):
            rows = []
            for e in examples:
                w = words(explanation(e.explanations, k))
                rows.append((frozenset(w), len(w)))
            tokens[k] = tuple(rows)
        return cls(
            premise_keys=keys,
            labels=tuple(e.label for e in examples),
            explanations=tuple(e.explanations for e in examples),
            source_ids=tuple(e.source_id for e in examples),
            by_premise={k: tuple(v) for k, v in groups.items()},
            tokens=tokens,
        )


def premise_key(premise: str) -> str:
    """Premises are grouped on their word tokens, so tokenization/case differences do not split a group."""
    return " ".join(words(premise))


def own_explanation_index(recipe: TieredSection) -> int:
    """Which human explanation the recipe treats as the pair's own (its explanation tier's)."""
    return next((t.explanation for t in recipe.tiers if t.candidates == "explanation"), 1)


def explanation(ex_expl: tuple[str, ...], k: int) -> str:
    return ex_expl[k - 1].strip() if len(ex_expl) >= k else ""


def sibling_indices(
    pool: Pool, ex: NLIExample, tier: TierSpec, ns: str, query_id: str, own: int = 1
) -> list[int]:
    """Rows with the same premise, a different hypothesis and label, and a non-empty explanation.

    With ``tier.borrow_label == "same"``: the same label instead, and an explanation other than
    the pair's own explanation ``own``. Returns ``tier.count`` of them in a content-seeded
    order, or fewer if not enough exist.
    """
    key = premise_key(ex.premise)
    same = tier.borrow_label == "same"
    own_text = explanation(ex.explanations, own)
    options = [
        i
        for i in pool.by_premise.get(key, ())
        if (pool.labels[i] == ex.label) == same
        and pool.source_ids[i] != ex.source_id
        and explanation(pool.explanations[i], tier.explanation)
        and not (same and explanation(pool.explanations[i], tier.explanation) == own_text)
    ]
    options.sort(key=lambda i: key_digest(ns, "sibling", query_id, pool.source_ids[i]))
    return options[: tier.count]


def unrelated_indices(
    pool: Pool, ex: NLIExample, tier: TierSpec, ns: str, query_id: str, own: int = 1
) -> list[int]:
    """Rows about another premise with a non-empty explanation, picked by content-seeded probing.

    With ``tier.match == "query_overlap"``, ``tier.match_pool`` rows are drawn and the
    ``tier.count`` most like the pair's own explanation ``own`` are kept, by the distance
    ``3 |overlap - own_overlap| + |words - own_words| / max(own_words, 1)`` (query word
    overlap and length both matched, so neither gives the tier away; ties by draw order).
    """
    n = len(pool.premise_keys)
    key = premise_key(ex.premise)
    chosen: list[int] = []
    if n == 0:
        return chosen
    want = tier.count if tier.match == "none" else max(tier.count, tier.match_pool)
    start = choice_index(n, ns, "unrelated", query_id, tier.name)
    for step in range(n):
        i = (start + step * 7919) % n if n % 7919 else (start + step) % n
        if pool.premise_keys[i] != key and explanation(pool.explanations[i], tier.explanation):
            chosen.append(i)
            if len(chosen) == want:
                break
    if tier.match == "query_overlap" and len(chosen) > tier.count:
        vocab = frozenset(words(ex.premise)) | frozenset(words(ex.hypothesis))
        own_words = words(explanation(ex.explanations, own))
        target = len(vocab.intersection(own_words)) / len(vocab) if vocab else 0.0
        length = max(len(own_words), 1)
        toks = pool.tokens[tier.explanation]
        gap = [
            3.0 * abs((len(vocab & toks[i][0]) / len(vocab) if vocab else 0.0) - target)
            + abs(toks[i][1] - length) / length
            for i in chosen
        ]
        order = sorted(range(len(chosen)), key=lambda j: (gap[j], j))
        chosen = [chosen[j] for j in order[: tier.count]]
    return chosen


class CandidateBuilder:
    """Builds the candidate rows of queries for one recipe.

    The recipe's templates are parsed once (:class:`~.fill.Template`); a template that quotes the
    premise or hypothesis gets its words from theirs (:mod:`.fill`), any other filled text
    from a cache, so no candidate but a human one is tokenized from scratch.
    """

    def __init__(self, recipe: TieredSection) -> None:
        self.recipe = recipe
        self.ns = recipe.seed_namespace
        adj = recipe.scoring.adjustments
        self.adjuster = Adjuster.from_spec(adj) if adj is not None else None
        self.max_relevance = max(t.relevance for t in recipe.tiers) or 1
        self._templates = {
            t.name: {key: [Template(text) for text in texts] for key, texts in t.templates.items()}
            for t in recipe.tiers
        }
        self._parts: dict[str, Part] = {}
        self._ids: dict[tuple[str, str, int], str] = {}
        #: what a candidate is per (tier, key, template index, label, claimed label): :meth:`_entry`
        self._entries: dict[tuple[str, str, int, str, str], tuple] = {}
        #: a number for each (key, label, claimed label) a batch's template tiers met
        self._codes: dict[tuple[str, str, str], int] = {}
        #: the labels other than each label, in recipe order (what a wrong-label tier claims)
        self._wrong: dict[str, list[str]] = {}

    # -- candidate texts -------------------------------------------------------------------
    def texts(self, q: Query, tier: TierSpec) -> list[tuple[str, str | None, str | None, str]]:
        """(text, template_id, candidate_source_id, origin) for each candidate of ``tier``.

        ``origin`` is ``human`` for a person's text, ``template`` for a filled template, and
        ``edited`` for a negation flip (a person's text with one negation added or removed).
        A ``negation_flip`` tier gives no candidate when the explanation has no balanced flip.
        The texts are those :meth:`candidate_columns` makes (one path).
        """
        rows = _Rows()
        self._tier_rows(rows, 0, tier, [q], _BatchQueries.of([q], self._adjusting()))
        return list(zip(rows.texts, rows.template_ids, rows.sources, [rows.origin[i] for i in rows.tier]))

    def _part(self, text: str) -> Part:
        p = self._parts.get(text)
        if p is None:
            p = self._parts[text] = Part.of(text)
        return p

    def _template_id(self, tier: str, key: str, index: int) -> str:
        """``tier/key/index``, made once per template."""
        k = (tier, key, index)
        tid = self._ids.get(k)
        if tid is None:
            tid = self._ids[k] = f"{tier}/{key}/{index}"
        return tid

    # -- rows --------------------------------------------------------------------------------
    def rows(self, q: Query) -> list[tuple]:
        """Candidate rows of one query, in output order (see :meth:`rows_and_vocab`)."""
        return self.rows_and_vocab(q)[0]

    def rows_and_vocab(self, q: Query) -> tuple[list[tuple], frozenset[str]]:
        """Candidate rows of one query, in output order, and the query's words (premise and hypothesis).

        Row layout: (candidate_id, candidate, score, relevance, tier, candidate_source_id,
        template_id, origin, n_words, query_overlap); the last two feed the build stats.
        One sha256 per candidate, over (seed namespace, query id, tier, slot, text), gives its
        base-score draw (bytes 0-7), its id (bytes 8-15) and its sort key (bytes 16-23): with
        ``shuffle_candidates`` rows are ordered by that key, so position never reveals the tier.
        The rows are :meth:`candidate_columns` of the query alone, so there is one scoring path.
        """
        c = self.candidate_columns([q])
        ex = q.example
        vocab = frozenset(words(ex.premise.strip())) | frozenset(words(ex.hypothesis.strip()))
        rows = list(zip(c.ids.to_pylist(), c.texts, c.scores.tolist(), c.relevance.tolist(), c.tiers,
                        c.sources, c.template_ids, c.origins, c.n_words.tolist(), c.overlap.tolist()))
        return rows, vocab

    def append_batch(self, units: Sequence[Query], out: GradedColumns, query_texts: Sequence[str],
                     query_values: Sequence[tuple]) -> None:
        """Add the queries of a batch (their texts and query-level column values) and their rows to ``out``.

        ``out`` must be empty: its candidate columns become the batch's arrays.
        """
        if out.candidates:
            raise ValueError("append_batch fills an empty GradedColumns")
        c = self.candidate_columns(units)
        out.query_ids.extend(q.query_id for q in units)
        out.queries.extend(query_texts)
        out.counts.extend(c.counts)
        for col, values in zip(out.query_extra, zip(*query_values) if query_values else ()):
            col.extend(values)
        out.candidate_ids = c.ids
        out.candidates = c.texts
        out.scores = c.scores
        out.relevance = c.relevance
        out.tiers = c.tiers
        out.candidate_extra = [c.sources, c.template_ids, c.origins]
        out.human = c.human
        out.n_words = c.n_words
        out.overlap = c.overlap

    def candidate_columns(self, units: Sequence[Query]) -> CandidateColumns:
        """The candidate rows of a batch of queries in columns, each query's rows in output order.

        Built a tier at a time over the whole batch (the same rows as :meth:`texts` gives query by
        query; ``tests/benchmark/test_scoring.py`` checks it against the scalar Algorithm 1). Per
        candidate, in Python: its text and its sha256; for a person's text also its words' count,
        overlap with the query and Algorithm 1's query-independent flags (a template tier finds
        those per distinct template, see :meth:`_template_rows`). Then for the whole batch at
        once, in numpy: base draws, adjustments and clipping (the same float
        operations in the same order as :class:`.scoring.Adjuster`, so the same bits), ids, and
        the order of each query's rows.
        """
        recipe = self.recipe
        batch = _BatchQueries.of(units, self._adjusting())
        rows = _Rows()
        for t_i, tier in enumerate(recipe.tiers):
            self._tier_rows(rows, t_i, tier, units, batch)
        # key_digest(ns, "candidate", query id, tier, slot, text): the parts joined by \x1f
        ns = self.ns
        names = [t.name for t in recipe.tiers]
        query_ids = [q.query_id for q in units]
        digests = [sha256(f"{ns}\x1fcandidate\x1f{query_ids[qi]}\x1f{names[ti]}\x1f{slot}\x1f{text}".encode()).digest()
                   for qi, ti, slot, text in zip(rows.query, rows.tier, rows.slot, rows.texts)]
        return self._finish_columns(digests, rows, len(units))

    def _adjusting(self) -> Adjuster | None:
        """Algorithm 1's adjustments, when the recipe scores by Algorithm 1."""
        return self.adjuster if self.recipe.scoring.mode == "algorithm1" else None

    def _tier_rows(self, rows: _Rows, t_i: int, tier: TierSpec, units: Sequence[Query], batch: _BatchQueries) -> None:
        """Add the candidates of ``tier`` (the ``t_i``-th) for every query of the batch to ``rows``."""
        if tier.candidates == "template":
            self._template_rows(rows, t_i, tier, units, batch)
        else:
            self._text_rows(rows, t_i, tier, units, batch)

    def _text_rows(self, rows: _Rows, t_i: int, tier: TierSpec, units: Sequence[Query], batch: _BatchQueries) -> None:
        """A tier of people's texts: the pair's own explanation, or the rows selection borrowed for it."""
        name, k = tier.name, tier.explanation
        own = tier.candidates == "explanation"
        found: list[tuple[int, int, str, str | None]] = []
        for qi, q in enumerate(units):
            borrowed = q.borrowed.get(name)
            if borrowed is None and own:
                found.append((qi, 0, explanation(q.example.explanations, k), q.example.source_id))
            else:
                found.extend((qi, slot, text, src) for slot, (text, src) in enumerate(q.borrowed[name]))
        rows.add_texts(t_i, name, "edited" if tier.candidates == "negation_flip" else "human", found, batch)

    def _template_rows(self, rows: _Rows, t_i: int, tier: TierSpec, units: Sequence[Query],
                       batch: _BatchQueries) -> None:
        """A template tier: each query's variants (content-seeded), in columns over the batch.

        The batch's candidates meet a few (template, label, claimed label) only, each resolved once
        per builder (:meth:`_entry`); per candidate there is then a literal's text, or a bound
        template's text formatted, or a template filled and tokenized, plus for a literal its
        overlap with the query's words. A literal's and a bound template's counts and flags are
        numpy over the batch; a filled one's are found per candidate, as a person's text's are
        (``tests/benchmark/test_fill.py`` compares bound rows with filled ones, and
        ``test_scoring.py`` the rows with the scalar Algorithm 1)."""
        labels, adj = batch.labels, batch.adjuster
        ns = self.ns
        name = tier.name
        templates = self._templates[name]
        if tier.label == "any":
            keys = ["*"] * len(units)
            claimed = labels
        elif tier.label == "wrong":
            wrongs = []
            for label in labels:
                wrong = self._wrong.get(label)
                if wrong is None:
                    wrong = self._wrong[label] = [lab for lab in self.recipe.labels if lab != label]
                wrongs.append(wrong)
            picks = _picks([len(w) for w in wrongs], [f"{ns}\x1fclaim\x1f{q.query_id}\x1f{name}" for q in units])
            claimed = [w[i] for w, i in zip(wrongs, picks)]
            keys = claimed
        else:
            keys = claimed = labels
        starts = _picks([len(templates[key]) for key in keys],
                        [f"{ns}\x1ftemplate\x1f{q.query_id}\x1f{name}" for q in units])
        count = tier.count
        n_q = len(units)
        if not n_q or count < 1:
            return
        # each candidate's query, slot and template (query-major, as the rows of one query come)
        query = np.repeat(np.arange(n_q), count)
        slot = np.tile(np.arange(count), n_q)
        n_options = np.asarray([len(templates[key]) for key in keys], dtype=np.int64)
        j = (np.asarray(starts, dtype=np.int64)[query] + slot) % n_options[query]
        # the few distinct (template, label, claimed label) of the batch, each resolved once
        codes = self._codes
        per_query = np.asarray([codes.setdefault(k, len(codes)) for k in zip(keys, labels, claimed)], dtype=np.int64)
        combo = per_query[query] * int(n_options.max()) + j
        _, first, which = np.unique(combo, return_index=True, return_inverse=True)
        which = which.reshape(-1)
        entries = []
        for c in first.tolist():
            qi = int(query[c])
            entries.append(self._entry(name, keys[qi], int(j[c]), labels[qi], claimed[qi]))
        kind = np.asarray([e[0] for e in entries], dtype=np.int8)[which]
        n = query.shape[0]
        picked = which.tolist()
        texts = [entries[e][1] for e in picked]  # a literal's text; the others' set below
        template_ids = [entries[e][2] for e in picked]
        n_words = np.zeros(n, dtype=np.int64)
        bits = np.zeros(n, dtype=np.int64)
        overlap = np.zeros(n, dtype=np.float64)
        vocabs = batch.vocabs
        lit = np.flatnonzero(kind == _LITERAL)
        if lit.size:
            e_lit = which[lit]
            n_words[lit] = np.asarray([e[3] if e[0] == _LITERAL else 0 for e in entries], dtype=np.int64)[e_lit]
            bits[lit] = np.asarray([e[5] if e[0] == _LITERAL else 0 for e in entries], dtype=np.int64)[e_lit]
            sets = [e[4] if e[0] == _LITERAL else None for e in entries]
            overlap[lit] = [(len(vocabs[qi] & sets[e]) / len(vocabs[qi]) if vocabs[qi] else 0.0)
                            for qi, e in zip(query[lit].tolist(), e_lit.tolist())]
        bound = np.flatnonzero(kind == _BOUND)
        if bound.size:  # its words are the literals' and the query's: no tokenizing, no set
            e_b, q_b = which[bound], query[bound]
            figures = np.asarray([e[3:7] if e[0] == _BOUND else (0, 0, 0, 0) for e in entries], dtype=np.int64)
            n_b = (figures[e_b, 0] + figures[e_b, 2] * batch.premise_words[q_b]
                   + figures[e_b, 3] * batch.hypothesis_words[q_b])
            n_words[bound] = n_b
            if adj is not None:  # a union's flags: the rest's and the query's words' or-ed (Adjuster.tier_rule)
                keep, shorter = adj.tier_rule(name)
                bits[bound] = (figures[e_b, 1] | batch.vocab_bits[q_b]) & (keep & ~4) | np.where(n_b < shorter, 4, 0)
            overlap[bound] = np.where(batch.vocab_sizes[q_b] > 0, 1.0, 0.0)
            premises, hypotheses = batch.premises, batch.hypotheses
            for c, e, qi in zip(bound.tolist(), e_b.tolist(), q_b.tolist()):
                texts[c] = entries[e][1](premises[qi].text, hypotheses[qi].text)
        part = self._part
        for c in np.flatnonzero(kind == _FILLED).tolist():  # a quoting template whose words must be found
            qi = int(query[c])
            template = entries[which[c]][3]
            values = {"label": part(labels[qi]), "claimed_label": part(claimed[qi]),
                      "premise": batch.premises[qi], "hypothesis": batch.hypotheses[qi]}
            texts[c], composed = template.fill(values)
            word_set = frozenset(composed)
            n_words[c] = len(composed)
            bits[c] = adj.flag_bits(word_set, len(composed), batch.label_words[qi], name) if adj is not None else 0
            overlap[c] = len(vocabs[qi] & word_set) / len(vocabs[qi]) if vocabs[qi] else 0.0
        rows.add_columns(t_i, query.tolist(), slot.tolist(), texts, template_ids, n_words.tolist(), overlap.tolist(),
                         bits.tolist())

    def _entry(self, name: str, key: str, j: int, label: str, said: str) -> tuple:
        """What a candidate of template ``j`` of ``templates[key]`` in tier ``name`` is, for a query of
        true label ``label`` that claims ``said``, found once per builder: ``(_LITERAL, text,
        template id, word count, word set, flag bits)`` for a template quoting neither text,
        ``(_BOUND, renderer, template id, rest's word count, rest's flag bits, times the
        premise is quoted, times the hypothesis is)`` where :meth:`_bind` applies, else
        ``(_FILLED, None, template id, template)``: filled and tokenized per query."""
        cache_key = (name, key, j, label, said)
        entry = self._entries.get(cache_key)
        if entry is not None:
            return entry
        template = self._templates[name][key][j]
        tid = self._template_id(name, key, j)
        if not template.quotes:
            values = {"label": self._part(label), "claimed_label": self._part(said)}
            text = "".join(p.text if isinstance(p, Part) else values[p].text for p in template.pieces)
            entry = (_LITERAL, text, tid) + self._static_figures(name, label, text)
        else:
            bound = self._bind(template, cache_key)
            entry = (_BOUND, bound[0], tid, bound[2], bound[3], bound[4], bound[5]) if bound else (
                _FILLED, None, tid, template)
        self._entries[cache_key] = entry
        return entry

    def _bind(self, template: Template, cache_key: tuple[str, str, int, str, str]) -> tuple:
        """A template that quotes both the premise and the hypothesis, bound to a label and a claimed
        label, where its words are its pieces' words in turn (:attr:`~.fill.Template.concat`): its
        text from the two texts (:func:`_renderer`), the template id, the word count and Algorithm 1's flags
        of the rest, and how often each text is quoted. A query's filled text then has the words
        of this rest and of the query (its word set holds the query's, so its overlap is 1), and
        its flags are the union's (or-ed, :meth:`~.scoring.Adjuster.tier_rule`); the same figures as
        :meth:`~.fill.Template.fill` gives (``tests/benchmark/test_fill.py`` compares them).
        An empty tuple where that does not hold (the query's words are then found by filling)."""
        name, key, j, label, said = cache_key
        if not template.concat or not {"premise", "hypothesis"} <= template.fields:
            return ()
        values = {"label": self._part(label), "claimed_label": self._part(said)}
        static = [w for p in template.pieces if p not in _QUOTED
                  for w in (p if isinstance(p, Part) else values[p]).words]
        adj = self.adjuster
        bits = 0 if adj is None else adj.flag_bits(frozenset(static), len(static), adj.label_words.get(label, ()), name)
        return (_renderer(template.pieces, values), self._template_id(name, key, j), len(static), bits,
                template.pieces.count("premise"), template.pieces.count("hypothesis"))

    def _finish_columns(self, digests: list[bytes], rows: _Rows, n_queries: int) -> CandidateColumns:
        """Scores, ids and the output order of the rows :meth:`candidate_columns` collected a tier at a time."""
        recipe = self.recipe
        tiers = recipe.tiers
        n = len(rows.texts)
        t_i = np.asarray(rows.tier, dtype=np.intp)
        query = np.asarray(rows.query, dtype=np.intp)
        rel = np.asarray([t.relevance for t in tiers], dtype=np.int64)[t_i]
        digest = np.frombuffer(b"".join(digests), dtype=np.uint8).reshape(n, 32)
        key = digest.view(">u8")  # 4 big-endian words a row: draw, id, sort key, unused
        mode = recipe.scoring.mode
        overlap = np.asarray(rows.overlap, dtype=np.float64)
        if mode == "grade":
            score = rel / self.max_relevance
        else:
            lo = np.asarray([t.score_range[0] for t in tiers], dtype=np.float64)[t_i]
            hi = np.asarray([t.score_range[1] for t in tiers], dtype=np.float64)[t_i]
            u = (key[:, 0] >> np.uint64(11)).astype(np.float64) * UNIT  # uniform_from_digest, per row
            score = base_score(u, lo, hi)
            if mode == "algorithm1" and self.adjuster is not None:
                score = self.adjuster.adjust_all(score, np.asarray(rows.bits, dtype=np.int8), overlap)
        # rows came a tier at a time; a stable sort on the query puts each query's rows in tier
        # and slot order, and with shuffle_candidates its rows are then ordered by their sort key
        order = np.argsort(query, kind="stable")
        if recipe.shuffle_candidates and n:
            order = order[np.lexsort((key[order, 2], query[order]))]
        hex_id = np.ascontiguousarray(_HEX[digest[order, 8:16]]).view("S16").reshape(n)
        ids = pa.StringArray.from_buffers(n, pa.py_buffer(np.arange(0, 16 * n + 1, 16, dtype=np.int32)),
                                          pa.py_buffer(hex_id.tobytes()))
        names = [t.name for t in tiers]
        pick = order.tolist()
        texts, sources, template_ids = (list(map(col.__getitem__, pick))
                                        for col in (rows.texts, rows.sources, rows.template_ids))
        t_order = t_i[order]
        tier_index = t_order.tolist()
        origin = [rows.origin.get(i) for i in range(len(tiers))]  # a tier's rows share their origin
        human = np.asarray([o == "human" for o in origin], dtype=np.int8)[t_order]
        return CandidateColumns(
            ids=ids, texts=texts, scores=np.asarray(score, dtype=np.float64)[order], relevance=rel[order],
            tiers=[names[i] for i in tier_index], sources=sources, template_ids=template_ids,
            origins=[origin[i] for i in tier_index],
            human=human, n_words=np.asarray(rows.n_words, dtype=np.int32)[order], overlap=overlap[order],
            counts=np.bincount(query, minlength=n_queries).tolist(),
        )

    def _static_figures(self, tier: str, label: str, text: str) -> tuple[int, frozenset[str], int]:
        """(word count, word set, Algorithm 1's query-independent flags as bits) of a text."""
        tokens = words(text)
        word_set = frozenset(tokens)
        adj = self.adjuster
        if adj is None:
            return len(tokens), word_set, 0
        return len(tokens), word_set, adj.flag_bits(word_set, len(tokens), adj.label_words.get(label, ()), tier)


@dataclass(frozen=True, slots=True)
class _BatchQueries:
    """What every tier of a batch reads of its queries, found once: labels, the stripped premise and
    hypothesis as :class:`~.fill.Part` s (the texts templates quote; their words are those of the
    texts as read), each query's words, and its true label's words for Algorithm 1."""

    labels: list[str]
    premises: list[Part]
    hypotheses: list[Part]
    vocabs: list[frozenset[str]]
    label_words: list
    adjuster: Adjuster | None
    #: each query's words' flags for its true label (:meth:`~.scoring.Adjuster.word_bits`; 0 without one)
    vocab_bits: np.ndarray
    #: each query's number of distinct words, and its premise's and hypothesis' word counts
    vocab_sizes: np.ndarray
    premise_words: np.ndarray
    hypothesis_words: np.ndarray

    @classmethod
    def of(cls, units: Sequence[Query], adjuster: Adjuster | None) -> _BatchQueries:
        examples = [q.example for q in units]
        labels = [e.label for e in examples]
        parts: dict[str, Part] = {}  # a premise comes back with each of its hypotheses: one Part a batch
        premises = []
        for e in examples:
            text = e.premise.strip()
            part = parts.get(text)
            if part is None:
                part = parts[text] = Part.of(text)
            premises.append(part)
        hypotheses = [Part.of(e.hypothesis.strip()) for e in examples]
        vocabs = [frozenset(p.words).union(h.words) for p, h in zip(premises, hypotheses)]
        if adjuster is None:
            label_words, vocab_bits = [()] * len(labels), [0] * len(labels)
        else:
            label_words = [adjuster.label_words.get(label, ()) for label in labels]
            vocab_bits = list(map(adjuster.word_bits, vocabs, label_words))
        return cls(labels=labels, premises=premises, hypotheses=hypotheses, vocabs=vocabs, label_words=label_words,
                   adjuster=adjuster, vocab_bits=np.asarray(vocab_bits, dtype=np.int64),
                   vocab_sizes=np.fromiter(map(len, vocabs), dtype=np.int64, count=len(vocabs)),
                   premise_words=np.asarray([len(p.words) for p in premises], dtype=np.int64),
                   hypothesis_words=np.asarray([len(h.words) for h in hypotheses], dtype=np.int64))


class _Rows:
    """The rows of a batch as :meth:`CandidateBuilder.candidate_columns` collects them, a tier at a time."""

    __slots__ = ("query", "tier", "slot", "texts", "sources", "template_ids", "origin", "n_words", "overlap", "bits")

    def __init__(self) -> None:
        self.query: list[int] = []
        self.tier: list[int] = []
        self.slot: list[int] = []
        self.texts: list[str] = []
        self.sources: list[str | None] = []
        self.template_ids: list[str | None] = []
        #: each tier's origin (``human``, ``edited``, ``template``): the same for all its rows
        self.origin: dict[int, str] = {}
        self.n_words: list[int] = []
        self.overlap: list[float] = []
        self.bits: list[int] = []

    def add_columns(self, t_i: int, query: list[int], slot: list[int], texts: list[str], template_ids: list[str],
                    n_words: list[int], overlap: list[float], bits: list[int]) -> None:
        """Filled templates, a column each."""
        n = len(query)
        self._extend(t_i, query, slot, texts, [None] * n, template_ids, "template", n_words, overlap, bits)

    def _extend(self, t_i: int, query: list[int], slot: list[int], texts: list[str], sources: list, template_ids: list,
                origin: str, n_words: list[int], overlap: list[float], bits: list[int]) -> None:
        self.query += query
        self.tier += [t_i] * len(query)
        self.slot += slot
        self.texts += texts
        self.sources += sources
        self.template_ids += template_ids
        self.origin[t_i] = origin
        self.n_words += n_words
        self.overlap += overlap
        self.bits += bits

    def add_texts(self, t_i: int, tier: str, origin: str, found: list[tuple[int, int, str, str | None]],
                  batch: _BatchQueries) -> None:
        """People's texts, ``(query, slot, text, source id)`` each: tokenized here."""
        adj, label_words = batch.adjuster, batch.label_words
        n = len(found)
        if not n:
            return
        query, slot, texts, sources = (list(col) for col in zip(*found))
        tokens = [words(text) for text in texts]
        sets = [frozenset(t) for t in tokens]
        n_words = [len(t) for t in tokens]
        if adj is None:
            bits = [0] * n
        else:  # Adjuster.flag_bits, its tier's part found once
            keep, shorter = adj.tier_rule(tier)
            kw, gib = adj.keywords, adj.gibberish  # Adjuster.word_bits, written out (a call a text costs)
            bits = [((0 if ws.isdisjoint(label_words[qi]) else 1) | (0 if ws.isdisjoint(kw) else 2)
                     | (0 if ws.isdisjoint(gib) else 8)) & keep | (4 if k < shorter else 0)
                    for qi, ws, k in zip(query, sets, n_words)]
        vocabs = batch.vocabs
        overlap = [len(vocabs[qi] & ws) / len(vocabs[qi]) if vocabs[qi] else 0.0 for qi, ws in zip(query, sets)]
        self._extend(t_i, query, slot, texts, sources, [None] * n, origin, n_words, overlap, bits)


def _renderer(pieces: Sequence[Part | str], values: Mapping[str, Part]) -> Callable[[str, str], str]:
    """``render(premise, hypothesis)``: the text of a template's ``pieces`` with ``values`` for its
    other placeholders, as :meth:`~.fill.Template.fill` gives it (:func:`~..common.percent_format`;
    ``tests/benchmark/test_fill.py`` compares the texts)."""

    def literal_or_field(p: Part | str) -> tuple[str, str | None]:
        if p in _QUOTED:
            return "", p
        return (p if isinstance(p, Part) else values[p]).text, None

    return percent_format(map(literal_or_field, pieces), _QUOTED)


#: the placeholders whose values differ per query (a bound template's renderer takes them)
_QUOTED = ("premise", "hypothesis")


def _picks(n: list[int], joined: list[str]) -> list[int]:
    """``choice_index(n[i], *parts)`` for each ``i``, from the parts already joined by ``\\x1f``:
    the first 8 bytes of each sha256, big-endian, modulo ``n[i]`` (in numpy for the batch)."""
    if not joined:
        return []
    if min(n) < 1:
        raise ValueError("a choice among no options")
    first = np.frombuffer(b"".join([sha256(j.encode()).digest() for j in joined]), dtype=">u8")[::4]
    return (first % np.asarray(n, dtype=np.uint64)).tolist()


#: what a template tier's candidate is (:meth:`CandidateBuilder._entry`): a text quoting neither the
#: premise nor the hypothesis, a bound quoting template, or one filled and tokenized per query
_LITERAL, _BOUND, _FILLED = 0, 1, 2

#: the two hex digits of each byte value
_HEX = np.array([f"{b:02x}".encode() for b in range(256)], dtype="S2")


@dataclass(frozen=True, slots=True)
class CandidateColumns:
    """A batch's candidate rows in columns (each query's rows contiguous, in output order).

    ``ids`` is an Arrow string array; ``human`` is 1 where ``origins`` says a person wrote the
    text, else 0; ``counts`` is each query's number of rows.
    """

    ids: pa.StringArray
    texts: list[str]
    scores: np.ndarray
    relevance: np.ndarray
    tiers: list[str]
    sources: list[str | None]
    template_ids: list[str | None]
    origins: list[str]
    human: np.ndarray
    n_words: np.ndarray
    overlap: np.ndarray
    counts: list[int]
