"""Adversarial construction of tiered lists (the recipe's ``adversarial:`` key; Zellers et al. 2018, 2019;
Le Bras et al. 2020).

:func:`refine` takes the selected queries with their output splits and, round by round:

1. trains ``partitions`` members of every attacker (:mod:`.attackers`), each on a content-seeded
   ``train_share`` of the TRAIN lists; a train list is scored by the members that did not learn
   from it, a list of another split by every member (no other split is ever learned from);
2. for each candidate of a ``replace`` tier, in the order ``replace`` lists them (an
   own-explanation tier first), draws its pool (the pair's other annotators' explanations, in
   their order, for its own-explanation tier, none while the list holds a flipped candidate made
   from the current one; the same premise's other explanations, any of 1-3, for a sibling tier;
   the ``pool`` explanations of pairs about other premises with the best Okapi BM25 against the
   query, for an unrelated tier; the tier's ``borrow_label`` rule either way; a text already in
   the list, or held in the same tier by another list of the split, is never taken) and keeps
   the alternative whose pairs with the list's other candidates the members order right in the
   fewest votes (``choose: chance``: nearest half of them);
3. drops each candidate of a ``drop`` tier whose pairs the members still order right in at least
   ``tau`` of their votes, and each list left with fewer than ``min_tiers`` tiers, or (with
   ``list_tau``) whose pairs they order right in at least ``list_tau`` of their votes, pooled over
   the list (AFLite's filter, a list as the instance).

With ``mirror``, the sibling and unrelated candidates are not drawn from pools of explanations but
from the split's lists themselves, so that every text of those tiers is another list's own
explanation: after step 2 has chosen the own explanations, each list's siblings become the own
explanations of the same premise's other lists (the tier's label rule; the pairs of lists, in
sha256 order, linked while both have fewer than ``count``, so the link is mutual), and each
unrelated candidate the own explanation of another premise's list (the label rule), one of the
``pool`` with the best BM25 against the query that the members order worst (``choose: chance``:
nearest half; the best BM25 where the tier is not in ``replace``), each lent to one list at most
(lists in sha256 order). A list dropped in step 3 takes its own explanation out of the lists it
was lent to (repeated until no list is left with too few tiers). So an own > sibling pair of one
list is a sibling > own pair of another: a scorer that reads the candidate alone orders those
pairs exactly at chance, and own > unrelated pairs about so, however the own explanations were
chosen.

It stops after ``rounds`` rounds or once every attacker's pairwise agreement on the train lists
is at most ``target``. Everything is a function of the content: member partitions and pool
orders are sha256 draws of the seed namespace and query ids (BM25 pools by score, own pools by
annotator), ties go to the current text and then to the first in the pool, scores are rounded to
1e-9 before they are compared, and the step runs once in the building process, so the worker
count changes nothing. The report (per round: agreement per attacker and split before and after,
per tier pair, lists kept, candidates replaced and dropped) goes into the manifest as
``adversarial``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gradebench.datasets.tiers.attackers import Featurizer, fit_pairwise, matrix
from gradebench.datasets.tiers.candidates import Query, explanation, premise_key
from gradebench.datasets.tiers.spec import AdversarialSpec, TieredSection, TierSpec
from gradebench.errors import BenchmarkError
from gradebench.hashing import uniform
from gradebench.words import words

#: the chunk of queries scored against a split's explanations at once (BM25 pools)
_CHUNK = 512
#: the tier kinds whose candidates ``mirror`` takes from the split's own explanations
_MIRRORED = ("sibling_explanation", "unrelated_explanation")


@dataclass
class _List:
    q: Query
    split: str
    borrowed: dict[str, tuple[tuple[str, str], ...]]
    premise: list[str]
    hypothesis: list[str]

    def candidates(self, recipe: TieredSection) -> list[tuple[str, int, str]]:
        """(tier, slot, text) of every candidate, in tier order."""
        out = []
        for t in recipe.tiers:
            got = self.borrowed.get(t.name)
            if got is None and t.candidates == "explanation":
                got = ((explanation(self.q.example.explanations, t.explanation), ""),)
            out.extend((t.name, s, text) for s, (text, _) in enumerate(got or ()))
        return out


def refine(recipe: TieredSection, units: Sequence[Query], splits: Sequence[str]
           ) -> tuple[list[Query], list[str], dict[str, Any]]:
    """The queries after the adversarial step, their splits, and the step's report (module docstring)."""
    adv: AdversarialSpec = recipe.adversarial  # type: ignore[assignment]
    ns = f"{recipe.seed_namespace}/adversarial"
    lists = [_List(q, s, dict(q.borrowed), words(q.example.premise), words(q.example.hypothesis))
             for q, s in zip(units, splits)]
    n_train = sum(lst.split == "train" for lst in lists)
    if n_train < 2 * adv.partitions:
        raise BenchmarkError(
            f"adversarial: {n_train} train lists are too few for {adv.partitions} partitions",
            hint="build with a train split of at least 2 x adversarial.partitions lists, or lower "
            "adversarial.partitions")
    grade = {t.name: t.relevance for t in recipe.tiers}
    for t in recipe.tiers:  # an own-explanation tier to choose: its current text as a borrowed one
        if t.candidates == "explanation" and t.name in adv.replace:
            for lst in lists:
                if t.name not in lst.borrowed:
                    ex = lst.q.example
                    lst.borrowed[t.name] = ((explanation(ex.explanations, t.explanation), ex.source_id),)
    feats = [Featurizer(a.features, adv.hash_bits) for a in adv.attackers]
    cache: list[dict[tuple[str, str], dict[int, float]]] = [{} for _ in adv.attackers]
    mirrored = {t.name for t in recipe.tiers if t.candidates in _MIRRORED} if adv.mirror else set()
    pools = _pools(recipe, adv, lists, ns, skip=mirrored)
    used = Counter((lst.split, t, text) for lst in lists for t in adv.replace
                   for text, _ in lst.borrowed.get(t, ()))
    rounds: list[dict[str, Any]] = []
    for r in range(adv.rounds):
        live = [lst for lst in lists if lst is not None]
        models = _train(adv, feats, cache, live, recipe, grade, ns, r)
        before = _agreement(adv, models, live, recipe, grade)
        replaced: Counter = Counter()
        for lst in live:
            for t in adv.replace:
                if t in mirrored:
                    continue
                for slot in range(len(lst.borrowed.get(t, ()))):
                    if _replace(adv, models, lst, recipe, grade, t, slot, pools, used):
                        replaced[t] += 1
        if mirrored:
            replaced.update(_mirror(adv, models, recipe, live, grade, ns))
        mid = _agreement(adv, models, live, recipe, grade)
        dropped: Counter = Counter()
        lists_dropped: Counter = Counter()
        lists_easy: Counter = Counter()  # of those, the lists dropped by list_tau
        for i, lst in enumerate(lists):
            if lst is None:
                continue
            for t, n in _drop(adv, models, lst, recipe, grade).items():
                dropped[t] += n
            present = {t for t, _, _ in lst.candidates(recipe)}
            few = len(present) < adv.min_tiers
            easy = not few and adv.list_tau is not None and _list_share(models, lst, recipe, grade) >= adv.list_tau
            if few or easy:
                lists_dropped[lst.split] += 1
                if easy:
                    lists_easy[lst.split] += 1
                for t in adv.replace:
                    for text, _ in lst.borrowed.get(t, ()):
                        used[(lst.split, t, text)] -= 1
                lists[i] = None
        if mirrored:
            _unlend(adv, recipe, lists, live, lists_dropped)
        live = [lst for lst in lists if lst is not None]
        after = _agreement(adv, models, live, recipe, grade)
        rounds.append({
            "round": r + 1,
            "before": before,
            "after_replace": mid,
            "after": after,
            "replaced": dict(sorted(replaced.items())),
            "dropped_candidates": dict(sorted(dropped.items())),
            "dropped_lists": dict(sorted(lists_dropped.items())),
            **({"easy_lists": dict(sorted(lists_easy.items()))} if adv.list_tau is not None else {}),
            "lists": dict(sorted(Counter(lst.split for lst in live).items())),
        })
        if all(v <= adv.target for v in after["attackers"]["train"].values()):
            break
    kept = [lst for lst in lists if lst is not None]
    out_units = [Query(lst.q.example, lst.q.query_id, lst.q.split, lst.borrowed) for lst in kept]
    report = {
        "family": "linear (pairwise ridge on lexical features)",
        "attackers": [a.model_dump(mode="json") for a in adv.attackers],
        "settings": {k: v for k, v in adv.model_dump(mode="json").items() if k != "attackers"},
        "rounds": rounds,
        "target_met": bool(rounds) and all(v <= adv.target for v in rounds[-1]["after"]["attackers"]["train"].values()),
        "lists_in": dict(sorted(Counter(splits).items())),
        "lists_out": dict(sorted(Counter(lst.split for lst in kept).items())),
    }
    return out_units, [lst.split for lst in kept], report


# -- attackers ---------------------------------------------------------------------------------
@dataclass
class _Model:
    """Every attacker's member weights, and which members learned from which train list."""

    weights: list[np.ndarray]  # per attacker: [dim, partitions]
    feats: list[Featurizer]
    cache: list[dict]
    learned: dict[str, np.ndarray]  # query id -> [partitions] bool (train lists only)

    def scores(self, lst: _List, texts: Sequence[str]) -> np.ndarray:
        """[attackers, partitions, len(texts)] scores, rounded; members that learned from the list masked by NaN."""
        out = []
        for a, (f, c, w) in enumerate(zip(self.feats, self.cache, self.weights)):
            rows = [_row(f, c, lst, t) for t in texts]
            s = np.round(np.asarray((matrix(rows, f.dim) @ w).T), 9)
            out.append(s)
        s = np.stack(out)
        seen = self.learned.get(lst.q.query_id)
        if seen is not None and lst.split == "train":
            s[:, seen, :] = np.nan
        return s


def _row(f: Featurizer, cache: dict, lst: _List, text: str) -> dict[int, float]:
    key = (lst.q.query_id, text)
    row = cache.get(key)
    if row is None:
        row = cache[key] = f.row(lst.premise, lst.hypothesis, lst.q.example.label, text)
    return row


def _train(adv: AdversarialSpec, feats: list[Featurizer], cache: list[dict], live: list[_List],
           recipe: TieredSection, grade: dict[str, int], ns: str, r: int) -> _Model:
    train = [lst for lst in live if lst.split == "train"]
    learned = {lst.q.query_id: np.array([uniform(ns, "partition", str(r), str(m), lst.q.query_id) < adv.train_share
                                         for m in range(adv.partitions)]) for lst in train}
    rows_of: list[list[int]] = []
    grades_of: list[list[int]] = []
    all_rows: list[list[dict]] = [[] for _ in feats]
    n = 0
    for lst in train:
        cands = lst.candidates(recipe)
        for a, (f, c) in enumerate(zip(feats, cache)):
            all_rows[a].extend(_row(f, c, lst, text) for _, _, text in cands)
        rows_of.append(list(range(n, n + len(cands))))
        grades_of.append([grade[t] for t, _, _ in cands])
        n += len(cands)
    weights = []
    for a, (spec, f) in enumerate(zip(adv.attackers, feats)):
        x = matrix(all_rows[a], f.dim)
        w = np.zeros((f.dim, adv.partitions))
        for m in range(adv.partitions):
            hi, lo = [], []
            for lst, rows, g in zip(train, rows_of, grades_of):
                if learned[lst.q.query_id][m]:
                    for i in range(len(g)):
                        for j in range(len(g)):
                            if g[i] > g[j]:
                                hi.append(rows[i])
                                lo.append(rows[j])
            w[:, m] = fit_pairwise(x, np.asarray(hi, dtype=np.int64), np.asarray(lo, dtype=np.int64), spec.alpha)
        weights.append(w)
    return _Model(weights, feats, cache, learned)


def _votes(s_hi: np.ndarray, s_lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(right votes, votes) per attacker for pairs whose better candidate scores ``s_hi``: ties count 1/2."""
    valid = ~(np.isnan(s_hi) | np.isnan(s_lo))
    right = np.where(valid, (s_hi > s_lo) + 0.5 * (s_hi == s_lo), 0.0)
    return right.sum(axis=1), valid.sum(axis=1)


def _agreement(adv: AdversarialSpec, model: _Model, live: list[_List], recipe: TieredSection,
               grade: dict[str, int]) -> dict[str, Any]:
    """Each attacker's pairwise agreement (mean over pairs of its members' right-vote share) per split,
    and the pooled members' per tier pair."""
    names = [a.name for a in adv.attackers]
    per: dict[str, list[list[float]]] = {}
    pairs: dict[str, list[float]] = {}
    for lst in live:
        cands = lst.candidates(recipe)
        s = model.scores(lst, [c[2] for c in cands])
        for i, (ti, _, _) in enumerate(cands):
            for j, (tj, _, _) in enumerate(cands):
                if grade[ti] <= grade[tj]:
                    continue
                right, n = _votes(s[:, :, i], s[:, :, j])
                share = np.where(n > 0, right / np.maximum(n, 1), np.nan)
                per.setdefault(lst.split, []).append(share.tolist())
                if n.sum():
                    pairs.setdefault(f"{ti}>{tj}", []).append(float(right.sum() / n.sum()))
    return {
        "attackers": {split: {name: round(float(np.nanmean(np.asarray(v)[:, a])), 4) for a, name in enumerate(names)}
                      for split, v in sorted(per.items())},
        "tier_pairs": {k: round(float(np.mean(v)), 4) for k, v in sorted(pairs.items())},
    }


# -- replacing and dropping ---------------------------------------------------------------------
def _replace(adv: AdversarialSpec, model: _Model, lst: _List, recipe: TieredSection, grade: dict[str, int],
             tier: str, slot: int, pools: dict, used: Counter) -> bool:
    """Swap the candidate ``tier``/``slot`` of ``lst`` for its pool's hardest alternative (``choose:
    chance``: the one its pairs are ordered closest to chance; with ``length_match``, among those of
    about the own explanation's length, and the current one only if it is too; an own explanation
    stays while the list holds a flipped candidate made from it, and is not length matched);
    True if it changed."""
    choosing_own = any(t.name == tier and t.candidates == "explanation" for t in recipe.tiers)
    if choosing_own and any(lst.borrowed.get(t.name) for t in recipe.tiers
                            if t.candidates == "negation_flip" and t.own_from_flip):
        return False
    cands = lst.candidates(recipe)
    current, source = lst.borrowed[tier][slot]
    in_list = {c[2] for c in cands}
    alts = [(current, source)] + [(t, s) for t, s in pools[(lst.q.query_id, tier)]
                                  if t not in in_list and used[(lst.split, tier, t)] == 0]
    keep_current = True
    own = _own_length(recipe, cands) if adv.length_match is not None and not choosing_own else None
    if own is not None:  # only alternatives of about the own explanation's length
        near = [a for a in alts[1:] if abs(len(words(a[0])) - own) <= adv.length_match]
        keep_current = abs(len(words(current)) - own) <= adv.length_match
        alts = alts[:1] + near
    if len(alts) == 1:
        return False
    others = [c for c in cands if not (c[0] == tier and c[1] == slot)]
    s = model.scores(lst, [c[2] for c in others] + [a[0] for a in alts])
    k = len(others)
    g = grade[tier]
    hardness = []
    for a in range(len(alts)):
        right = np.zeros(s.shape[0])
        n = np.zeros(s.shape[0])
        for o, (t, _, _) in enumerate(others):
            if grade[t] == g:
                continue
            hi, lo = (s[:, :, o], s[:, :, k + a]) if grade[t] > g else (s[:, :, k + a], s[:, :, o])
            r_, n_ = _votes(hi, lo)
            right += r_
            n += n_
        hardness.append(right.sum() / max(n.sum(), 1))
    # first of equals: the current text wins ties (unless its length is out of range)
    rank = np.round(np.abs(np.asarray(hardness) - 0.5) if adv.choose == "chance" else np.asarray(hardness), 9)
    if not keep_current:
        rank[0] = np.inf
    best = int(np.argmin(rank))
    if best == 0:
        return False
    new = list(lst.borrowed[tier])
    new[slot] = alts[best]
    lst.borrowed[tier] = tuple(new)
    used[(lst.split, tier, current)] -= 1
    used[(lst.split, tier, alts[best][0])] += 1
    return True


def _own_length(recipe: TieredSection, cands: list[tuple[str, int, str]]) -> int | None:
    """Words in the list's own explanation (its ``explanation`` tier), None without one."""
    own = {t.name for t in recipe.tiers if t.candidates == "explanation"}
    return next((len(words(text)) for tier, _, text in cands if tier in own), None)


def _pair_votes(model: _Model, lst: _List, cands: list[tuple[str, int, str]], grade: dict[str, int]
                ) -> tuple[np.ndarray, np.ndarray]:
    """``(right, votes)``, each ``[len(cands), len(cands)]``: the members' votes pooled over attackers
    for each pair whose better candidate is the row's (zero where the row's grade is not higher)."""
    s = model.scores(lst, [c[2] for c in cands])
    right = np.zeros((len(cands), len(cands)))
    votes = np.zeros_like(right)
    for i, (ti, _, _) in enumerate(cands):
        for j, (tj, _, _) in enumerate(cands):
            if grade[ti] > grade[tj]:
                r_, n_ = _votes(s[:, :, i], s[:, :, j])
                right[i, j], votes[i, j] = r_.sum(), n_.sum()
    return right, votes


def _list_share(model: _Model, lst: _List, recipe: TieredSection, grade: dict[str, int]) -> float:
    """The share of the members' votes, pooled over the list's pairs, that order its pairs right."""
    right, votes = _pair_votes(model, lst, lst.candidates(recipe), grade)
    return float(right.sum() / votes.sum()) if votes.sum() else 0.0


def _drop(adv: AdversarialSpec, model: _Model, lst: _List, recipe: TieredSection, grade: dict[str, int]) -> Counter:
    """Drop the ``drop``-tier candidates of ``lst`` whose pairs the members order right in >= tau of the votes."""
    cands = lst.candidates(recipe)
    right, votes = _pair_votes(model, lst, cands, grade)
    easy = []
    for i, (ti, si, _) in enumerate(cands):
        if ti not in adv.drop:
            continue
        r, n = right[i].sum() + right[:, i].sum(), votes[i].sum() + votes[:, i].sum()  # its pairs, either side
        if n and r / n >= adv.tau:
            easy.append((ti, si))
    out: Counter = Counter()
    for t in {t for t, _ in easy}:
        gone = {si for ti, si in easy if ti == t}
        lst.borrowed[t] = tuple(x for k, x in enumerate(lst.borrowed[t]) if k not in gone)
        out[t] += len(gone)
    return out


# -- pools -----------------------------------------------------------------------------------
def _pools(recipe: TieredSection, adv: AdversarialSpec, lists: list[_List], ns: str, skip: Collection[str] = ()
           ) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(query id, tier) -> the alternatives of that tier's candidates for the query, best first (none for the
    tiers in ``skip``)."""
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    tiers = {t.name: t for t in recipe.tiers}
    for split in sorted({lst.split for lst in lists}):
        members = [lst for lst in lists if lst.split == split]
        docs: dict[str, tuple[str, str, str]] = {}  # text -> (source id, premise key, label), first holder
        for lst in members:
            ex = lst.q.example
            for k in (1, 2, 3):
                text = explanation(ex.explanations, k)
                if text and text not in docs:
                    docs[text] = (ex.source_id, premise_key(ex.premise), ex.label)
        texts = list(docs)
        by_premise: dict[str, list[int]] = {}
        for d, text in enumerate(texts):
            by_premise.setdefault(docs[text][1], []).append(d)
        for name in adv.replace:
            if name in skip:
                continue
            tier = tiers[name]
            same = tier.borrow_label == "same"
            if tier.candidates == "explanation":  # the pair's annotators, in order (a tied flip: _replace)
                for lst in members:
                    ex = lst.q.example
                    texts_k = [explanation(ex.explanations, k) for k in (1, 2, 3)]
                    out[(lst.q.query_id, name)] = [(x, ex.source_id) for i, x in enumerate(texts_k)
                                                   if x and x not in texts_k[:i]]
            elif tier.candidates == "sibling_explanation":
                for lst in members:
                    ex = lst.q.example
                    own = {explanation(ex.explanations, k) for k in (1, 2, 3)}
                    found = [(texts[d], docs[texts[d]][0]) for d in by_premise.get(premise_key(ex.premise), [])
                             if (docs[texts[d]][2] == ex.label) == same and texts[d] not in own]
                    found.sort(key=lambda x: uniform(ns, "pool", name, lst.q.query_id, x[0]))
                    out[(lst.q.query_id, name)] = found[:adv.pool]
            else:
                out.update(_bm25_pools(recipe, adv, members, texts, docs, name, same))
    return out


def _bm25_pools(recipe: TieredSection, adv: AdversarialSpec, members: list[_List], texts: list[str],
                docs: dict[str, tuple[str, str, str]], name: str, same: bool) -> dict:
    if len(texts) < adv.pool + 1:
        raise BenchmarkError(
            f"adversarial.pool {adv.pool}: a split has only {len(texts)} explanations to draw from",
            hint="lower adversarial.pool or build from more source rows")
    premise = np.array([docs[t][1] for t in texts], dtype=object)
    label = np.array([docs[t][2] for t in texts], dtype=object)
    tops = _bm25_top(recipe, members, texts, premise, label, same, adv.pool)
    return {(lst.q.query_id, name): [(texts[d], docs[texts[d]][0]) for d in top] for lst, top in zip(members, tops)}


def _bm25_top(recipe: TieredSection, members: list[_List], texts: list[str], premise: np.ndarray, label: np.ndarray,
              same: bool, pool: int) -> list[np.ndarray]:
    """For each list of ``members``, the places in ``texts`` of the ``pool`` with the best BM25 against its
    query (rounded to 9 places, ties in text order) among those of another premise (``premise``: each
    text's premise key) and the label rule (``label``: each text's label, the same as the list's where
    ``same``, else another); the queries scored :data:`_CHUNK` at a time."""
    from gradebench.datasets.tiers.contrast import Bm25Index

    index = Bm25Index(texts)
    out = []
    for a in range(0, len(members), _CHUNK):
        chunk = members[a:a + _CHUNK]
        qs = [recipe.query_template.format(premise=lst.q.example.premise, hypothesis=lst.q.example.hypothesis,
                                           label=lst.q.example.label) for lst in chunk]
        for lst, row in zip(chunk, np.round(index.scores(qs), 9)):
            ex = lst.q.example
            cand = np.flatnonzero((premise != premise_key(ex.premise)) & ((label == ex.label) == same))
            out.append(cand[np.argsort(-row[cand], kind="stable")[:pool]])
    return out


# -- mirror ------------------------------------------------------------------------------------
def _own(recipe: TieredSection, lst: _List) -> tuple[str, str]:
    """(text, source id) of the list's own explanation (its ``explanation`` tier's candidate)."""
    t = next(t for t in recipe.tiers if t.candidates == "explanation")
    got = lst.borrowed.get(t.name)
    if got:
        return got[0]
    return explanation(lst.q.example.explanations, t.explanation), lst.q.example.source_id


def _mirror(adv: AdversarialSpec, model: _Model, recipe: TieredSection, live: list[_List], grade: dict[str, int],
            ns: str) -> Counter:
    """Make every sibling and unrelated candidate of ``live`` another list's own explanation (module
    docstring); the count of candidates that changed, per tier."""
    changed: Counter = Counter()
    for split in sorted({lst.split for lst in live}):
        members = [lst for lst in live if lst.split == split]
        owns = [_own(recipe, lst) for lst in members]
        before = [dict(lst.borrowed) for lst in members]
        for t in recipe.tiers:
            if t.candidates == "sibling_explanation":
                _mirror_siblings(t, members, owns, ns)
        for t in recipe.tiers:
            if t.candidates == "unrelated_explanation":
                _mirror_unrelated(adv, model, recipe, grade, t, members, owns, ns)
        for lst, old in zip(members, before):
            for t in recipe.tiers:
                if t.candidates in _MIRRORED:
                    was = {text for text, _ in old.get(t.name, ())}
                    changed[t.name] += sum(text not in was for text, _ in lst.borrowed.get(t.name, ()))
    return changed


def _mirror_siblings(tier: TierSpec, members: list[_List], owns: list[tuple[str, str]], ns: str) -> None:
    """Each list's ``tier`` candidates: the own explanations of the same premise's other lists (the tier's
    label rule), linked in pairs, in sha256 order, while both lists have fewer than ``count``."""
    same = tier.borrow_label == "same"
    groups: dict[str, list[int]] = {}
    for i, lst in enumerate(members):
        groups.setdefault(premise_key(lst.q.example.premise), []).append(i)
    linked: list[list[int]] = [[] for _ in members]
    for idx in groups.values():
        edges = [(a, b) for k, a in enumerate(idx) for b in idx[k + 1:]
                 if (members[a].q.example.label == members[b].q.example.label) == same
                 and owns[a][0] and owns[b][0] and owns[a][0] != owns[b][0]]
        edges.sort(key=lambda e: uniform(ns, "mirror", tier.name, *sorted((members[e[0]].q.query_id,
                                                                          members[e[1]].q.query_id))))
        for a, b in edges:
            if (len(linked[a]) < tier.count and len(linked[b]) < tier.count
                    and owns[b][0] not in {owns[x][0] for x in linked[a]}
                    and owns[a][0] not in {owns[x][0] for x in linked[b]}):
                linked[a].append(b)
                linked[b].append(a)
    for lst, links in zip(members, linked):
        lst.borrowed[tier.name] = tuple(owns[b] for b in links)


def _mirror_unrelated(adv: AdversarialSpec, model: _Model, recipe: TieredSection, grade: dict[str, int], tier: TierSpec,
                      members: list[_List], owns: list[tuple[str, str]], ns: str) -> None:
    """Each list's ``tier`` candidates: own explanations of other premises' lists (the tier's label rule), of
    the ``pool`` with the best BM25 against the query the one the members order worst (``choose: chance``:
    nearest half; not in ``replace``: the first), each lent to one list at most."""
    if len(members) < adv.pool + 1:
        raise BenchmarkError(
            f"adversarial.pool {adv.pool}: a split has only {len(members)} lists to lend own explanations",
            hint="lower adversarial.pool or build from more source rows")
    premise = np.array([premise_key(lst.q.example.premise) for lst in members], dtype=object)
    label = np.array([lst.q.example.label for lst in members], dtype=object)
    pool = [top.tolist() for top in _bm25_top(recipe, members, [text for text, _ in owns], premise, label,
                                              tier.borrow_label == "same", adv.pool)]
    choosing = tier.name in adv.replace
    taken: set[str] = set()
    for i in sorted(range(len(members)), key=lambda i: uniform(ns, "mirror-order", tier.name, members[i].q.query_id)):
        lst = members[i]
        lst.borrowed[tier.name] = ()
        for _ in range(tier.count):
            in_list = {text for _, _, text in lst.candidates(recipe)}
            alts = [x for x in pool[i] if owns[x][0] and owns[x][0] not in taken and owns[x][0] not in in_list]
            if not alts:
                break
            best = 0
            if choosing and len(alts) > 1:
                h = np.round(_hardness(model, lst, recipe, grade, tier.name, [owns[x][0] for x in alts]), 9)
                best = int(np.argmin(np.abs(h - 0.5) if adv.choose == "chance" else h))
            taken.add(owns[alts[best]][0])
            lst.borrowed[tier.name] = (*lst.borrowed[tier.name], owns[alts[best]])


def _hardness(model: _Model, lst: _List, recipe: TieredSection, grade: dict[str, int], tier: str,
              texts: list[str]) -> np.ndarray:
    """For each of ``texts`` in a ``tier`` slot of ``lst``: the share of the members' votes, pooled over its pairs
    with the list's candidates of other grades, that order those pairs right."""
    cands = [c for c in lst.candidates(recipe) if grade[c[0]] != grade[tier]]
    s = model.scores(lst, [c[2] for c in cands] + texts)
    k = len(cands)
    out = np.zeros(len(texts))
    for a in range(len(texts)):
        right = n = 0.0
        for o, (t, _, _) in enumerate(cands):
            hi, lo = (s[:, :, o], s[:, :, k + a]) if grade[t] > grade[tier] else (s[:, :, k + a], s[:, :, o])
            r_, n_ = _votes(hi, lo)
            right += float(r_.sum())
            n += float(n_.sum())
        out[a] = right / max(n, 1.0)
    return out


def _unlend(adv: AdversarialSpec, recipe: TieredSection, lists: list[_List | None], live: list[_List],
            lists_dropped: Counter) -> None:
    """Take the own explanations of the lists dropped this round (``live`` less ``lists``) out of the lists
    they were lent to, and drop the lists left with fewer than ``min_tiers`` tiers, until none is."""
    kept = {id(lst) for lst in lists if lst is not None}
    gone = [lst for lst in live if id(lst) not in kept]
    while gone:
        owns = {(lst.split, *_own(recipe, lst)) for lst in gone}  # (split, text, source id): texts can repeat
        gone = []
        for i, lst in enumerate(lists):
            if lst is None:
                continue
            for t in recipe.tiers:
                if t.candidates in _MIRRORED and t.name in lst.borrowed:
                    lst.borrowed[t.name] = tuple(x for x in lst.borrowed[t.name] if (lst.split, *x) not in owns)
            if len({t for t, _, _ in lst.candidates(recipe)}) < adv.min_tiers:
                lists_dropped[lst.split] += 1
                gone.append(lst)
                lists[i] = None
