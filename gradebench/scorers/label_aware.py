"""``label-aware-blind``: the query-blind probe that also knows the query's label, and nothing else of the query.

A benchmark whose queries carry a label (the NLI label, the δ-NLI update type) can give its
grades away through the wording that goes with each label: an explanation of a contradiction
reads differently from one of an entailment, so a probe that knows the label but never reads
the premise or hypothesis ranks "an explanation of this label" above "an explanation of
another label" (issue 18: 0.79 pairwise agreement on ``esnli-contrast``, where the plain
query-blind probe is at chance). This probe measures that shortcut.

Features: those of ``query-blind`` (:func:`gradebench.scorers.features.hash_texts` of the
candidate text, ``dim`` columns), **plus** the same n-grams hashed again with a salt per label
(``gradebench/label=<label>``), so each n-gram has one weight shared by every label and one per
label. The label is read from the column ``label_column`` of the lists (``Lists.extra``; e.g.
``bench.lists(split, columns=("tier", "label"))``); a candidate whose label is null gets only the
shared features. Training is ``query-blind``'s within-list ridge regression (loss ``mse``;
``alpha`` None picks one on validation); there is no torch solver.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from gradebench.benchmark.lists import Lists
from gradebench.errors import InvalidArgumentError
from gradebench.scorers import register_scorer
from gradebench.scorers.base import FitJob, ScorerConfig
from gradebench.scorers.query_blind import QueryBlind, QueryBlindConfig


class LabelAwareConfig(QueryBlindConfig):
    """``label-aware-blind`` settings: ``query-blind``'s, plus the label column (ridge only)."""

    solver: Literal["auto", "ridge"] = Field("auto", description="ridge (the only solver; loss mse)")
    label_column: str = Field("label", description="the lists' column holding the query's label")


@register_scorer("label-aware-blind")
class LabelAwareBlind(QueryBlind):
    """Ridge on hashed candidate n-grams, shared and crossed with the query's label; never reads the query text."""

    kind = "probe"
    summary = ("linear probe on hashed candidate n-grams, alone and crossed with the query's label (never the "
               "query text): how much does label-specific wording give away")
    Config: ClassVar[type[ScorerConfig]] = LabelAwareConfig
    ARCH_KEYS: ClassVar[tuple[str, ...]] = ("dim", "word_ngrams", "char_ngrams", "label_column")

    def list_columns(self) -> tuple[str, ...]:
        return (self.config.label_column,)

    def _labels(self, lists: Lists) -> list[str | None]:
        column = self.config.label_column
        if column not in lists.extra:
            raise InvalidArgumentError(
                f"label-aware-blind needs the query label column {column!r}, which these lists lack",
                key="label_column",
                hint=f"read the lists with columns=('tier', {column!r}), or set label_column to the benchmark's "
                     "label column",
            )
        rows, cols = lists.flat_index()
        return [None if v is None else str(v) for v in lists.extra[column][rows, cols].tolist()]

    def _flat(self, lists: Lists) -> Any:
        """CSR ``[n_candidates, dim]``: the candidate's n-grams, plus the same n-grams salted by its label."""
        import scipy.sparse as sp

        from gradebench.scorers.features import expand_rows, hash_texts

        c = self.config
        labels = self._labels(lists)
        _, candidates = lists.pairs()
        kw = dict(dim=c.dim, word_ngrams=tuple(c.word_ngrams), char_ngrams=tuple(c.char_ngrams))
        out = hash_texts(candidates, **kw)
        for label in sorted({x for x in labels if x is not None}):
            at = np.flatnonzero(np.fromiter((x == label for x in labels), dtype=bool, count=len(labels)))
            crossed = hash_texts([candidates[i] for i in at.tolist()], salt=f"gradebench/label={label}", **kw)
            out = out + expand_rows(crossed, at, len(candidates))
        out = sp.csr_matrix(out, dtype=np.float32)
        out.sum_duplicates()
        out.sort_indices()
        return out

    def _fit_torch(self, job: FitJob) -> list[dict[str, Any]]:
        raise InvalidArgumentError("label-aware-blind trains by ridge regression only", key="solver",
                                   hint="drop --loss (or use --loss mse)")
