"""Turn selected queries into graded candidate rows (pure given the build context).

Every random choice (template variant, claimed wrong label, sibling/unrelated pick, base
score, candidate order) is derived from sha256 of the recipe's seed namespace and content
(:mod:`gradebench.hashing`), so a row depends only on its own query and the recipe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from hashlib import sha256

from gradebench.datasets.base import GradedColumns
from gradebench.datasets.records import NLIExample
from gradebench.datasets.tiers.fill import Part, Template
from gradebench.datasets.tiers.scoring import Adjuster, base_score, words
from gradebench.datasets.tiers.spec import TieredSection, TierSpec
from gradebench.hashing import choice_index, key_digest, uniform_from_digest


@dataclass(frozen=True, slots=True)
class Query:
    """A source example accepted for the benchmark: a self-contained unit of work.

    ``split`` is the example's source split. ``borrowed`` maps each sibling/unrelated tier to
    the ``(explanation, source_id)`` of the pool rows chosen for it, and each negation_flip
    tier to ``((flipped text, own source_id),)`` or ``()`` (found once, during selection,
    balanced over the split), so building the candidates needs nothing but the query itself.
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
        #: the text of a template without premise or hypothesis, per (tier, key, index, label, claimed)
        self._literal: dict[tuple[str, str, int, str, str], tuple] = {}
        #: the labels other than each label, in recipe order (what a wrong-label tier claims)
        self._wrong: dict[str, list[str]] = {}
        #: such a text's query-independent figures per (tier, the query's label, text): word count,
        #: word set and Algorithm 1's label-word, keyword, short and gibberish flags
        self._static: dict[tuple[str, str, str], tuple] = {}

    # -- candidate texts -------------------------------------------------------------------
    def texts(self, q: Query, tier: TierSpec) -> list[tuple[str, str | None, str | None, str]]:
        """(text, template_id, candidate_source_id, origin) for each candidate of ``tier``.

        ``origin`` is ``human`` for a person's text, ``template`` for a filled template, and
        ``edited`` for a negation flip (a person's text with one negation added or removed).
        A ``negation_flip`` tier gives no candidate when the explanation has no balanced flip.
        """
        return [(text, tid, src, origin) for text, _, tid, src, origin in self._candidates(q, tier, {})]

    def _candidates(
        self, q: Query, tier: TierSpec, values: dict[str, Part]
    ) -> list[tuple[str, list[str] | None, str | None, str | None, str]]:
        """``texts`` with the words of each text where they come for free (else None)."""
        ex = q.example
        if tier.candidates == "explanation":
            if tier.name in q.borrowed:  # the explanation a flip was made from (own_from_flip)
                return [(text, None, None, source_id, "human") for text, source_id in q.borrowed[tier.name]]
            return [(explanation(ex.explanations, tier.explanation), None, None, ex.source_id, "human")]
        if tier.candidates == "template":
            return self._filled(q, tier, values)
        origin = "edited" if tier.candidates == "negation_flip" else "human"
        return [(text, None, None, source_id, origin) for text, source_id in q.borrowed[tier.name]]

    def _part(self, text: str) -> Part:
        p = self._parts.get(text)
        if p is None:
            p = self._parts[text] = Part.of(text)
        return p

    def _filled(
        self, q: Query, tier: TierSpec, values: dict[str, Part]
    ) -> list[tuple[str, list[str] | None, str | None, str | None, str]]:
        ex = q.example
        name = tier.name
        if tier.label == "any":
            claimed = ex.label
            key = "*"
        elif tier.label == "wrong":
            wrong = self._wrong.get(ex.label)
            if wrong is None:
                wrong = self._wrong[ex.label] = [lab for lab in self.recipe.labels if lab != ex.label]
            claimed = wrong[_pick(len(wrong), f"{self.ns}\x1fclaim\x1f{q.query_id}\x1f{name}")]
            key = claimed
        else:
            claimed = ex.label
            key = ex.label
        options = self._templates[name][key]
        start = _pick(len(options), f"{self.ns}\x1ftemplate\x1f{q.query_id}\x1f{name}")
        if "premise" not in values:
            values.update(premise=Part.of(ex.premise.strip()), hypothesis=Part.of(ex.hypothesis.strip()))
        values["label"] = self._part(ex.label)
        values["claimed_label"] = self._part(claimed)
        out = []
        for slot in range(tier.count):
            j = (start + slot) % len(options)
            template = options[j]
            if "premise" in template.fields or "hypothesis" in template.fields:
                text, cand_words = template.fill(values)
                out.append((text, cand_words, f"{name}/{key}/{j}", None, "template"))
                continue
            # the same few texts again and again: text, id and words come from caches
            cache_key = (name, key, j, ex.label, claimed)
            cached = self._literal.get(cache_key)
            if cached is None:
                text = "".join(p.text if isinstance(p, Part) else values[p].text for p in template.pieces)
                cached = self._literal[cache_key] = (text, None, f"{name}/{key}/{j}", None, "template")
            out.append(cached)
        return out

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
        """
        keyed, vocab = self._keyed_rows(q)
        return [row for _, row in keyed], vocab

    def append(self, q: Query, out: GradedColumns, query_text: str, query_extra: tuple) -> None:
        """Add the query and its candidate rows (:meth:`rows_and_vocab`) to a batch in columns."""
        keyed, _ = self._keyed_rows(q)
        out.query_ids.append(q.query_id)
        out.queries.append(query_text)
        out.counts.append(len(keyed))
        for col, value in zip(out.query_extra, query_extra):
            col.append(value)
        src, tid, origin = out.candidate_extra
        for _, (cid, text, score, rel, tier, csrc, template_id, org, n_words, overlap) in keyed:
            out.candidate_ids.append(cid)
            out.candidates.append(text)
            out.scores.append(score)
            out.relevance.append(rel)
            out.tiers.append(tier)
            src.append(csrc)
            tid.append(template_id)
            origin.append(org)
            out.human.append(1 if org == "human" else 0)
            out.n_words.append(n_words)
            out.overlap.append(overlap)

    def _keyed_rows(self, q: Query) -> tuple[list[tuple[bytes, tuple]], frozenset[str]]:
        """The rows of :meth:`rows_and_vocab` with their sort keys, sorted when the recipe shuffles."""
        ex = q.example
        # the stripped texts the templates quote; their words are those of the texts as read
        premise, hypothesis = Part.of(ex.premise.strip()), Part.of(ex.hypothesis.strip())
        values = {"premise": premise, "hypothesis": hypothesis}
        vocab = frozenset(premise.words) | frozenset(hypothesis.words)
        n_vocab = len(vocab)
        shuffle = self.recipe.shuffle_candidates
        label = ex.label
        mode = self.recipe.scoring.mode
        adj = self.adjuster if mode == "algorithm1" else None
        label_words = adj.label_words.get(label, ()) if adj is not None else ()
        # key_digest(ns, "candidate", query id, tier, slot, text): the parts joined by \x1f
        prefix = f"{self.ns}\x1fcandidate\x1f{q.query_id}\x1f"
        keyed = []
        for tier in self.recipe.tiers:
            name = tier.name
            rel = tier.relevance
            lo, hi = tier.score_range
            tier_prefix = f"{prefix}{name}\x1f"
            for slot, (text, composed, template_id, cand_src, origin) in enumerate(self._candidates(q, tier, values)):
                digest = sha256(f"{tier_prefix}{slot}\x1f{text}".encode()).digest()
                static = None
                if composed is None and template_id is not None:  # a literal template's text
                    static = self._static.get((name, label, text))
                    if static is None:
                        static = self._static[(name, label, text)] = self._static_figures(name, label, text)
                    n_words, word_set = static[0], static[1]
                else:
                    word_set = frozenset(composed) if composed is not None else None
                    if word_set is None:
                        composed = words(text)
                        word_set = frozenset(composed)
                    n_words = len(composed)
                overlap = len(vocab & word_set) / n_vocab if n_vocab else 0.0
                if mode == "grade":
                    score = rel / self.max_relevance
                else:
                    score = base_score(uniform_from_digest(digest), lo, hi)
                    if adj is not None:
                        if static is None:
                            static = (n_words, word_set, *self._flags(adj, name, label_words, word_set, n_words))
                        score = adj.adjust(
                            score, (static[2], static[3], overlap > adj.overlap_threshold, static[4], static[5])
                        )
                keyed.append((
                    digest[16:24] if shuffle else b"",
                    (digest[8:16].hex(), text, score, rel, name, cand_src, template_id, origin, n_words, overlap),
                ))
        if shuffle:
            keyed.sort(key=_first)
        return keyed, vocab


    def _static_figures(self, tier: str, label: str, text: str) -> tuple:
        """(word count, word set, label-word, keyword, short, gibberish flags) of a text."""
        tokens = words(text)
        word_set = frozenset(tokens)
        adj = self.adjuster
        if adj is None:
            return len(tokens), word_set
        return len(tokens), word_set, *self._flags(adj, tier, adj.label_words.get(label, ()), word_set, len(tokens))

    @staticmethod
    def _flags(adj: Adjuster, tier: str, label_words, word_set: frozenset[str], n_words: int) -> tuple:
        """Algorithm 1's flags that do not depend on the query: label word, keyword, short, gibberish."""
        return (
            not word_set.isdisjoint(label_words),
            not word_set.isdisjoint(adj.keywords),
            tier in adj.short_tiers and n_words < adj.short_min_words,
            tier not in adj.exempt_tiers and not word_set.isdisjoint(adj.gibberish),
        )


def _pick(n: int, joined: str) -> int:
    """``choice_index(n, *parts)`` from the parts already joined by ``\\x1f``."""
    return int.from_bytes(sha256(joined.encode()).digest()[:8], "big") % n


def _first(kv: tuple) -> bytes:
    return kv[0]
