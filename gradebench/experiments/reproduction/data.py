"""What the claims read: the records of a results folder grouped into systems, and their tables.

* :class:`System`: the records of one scorer + loss + training options (without the seed) on
  one benchmark fingerprint, one record per seed (the smallest id where a seed has several),
  as the leaderboard groups them (:func:`gradebench.experiments.leaderboard.system_key`).
* :class:`Evidence`: every test-split evaluation record and every policy record of a folder,
  the systems, and cached readers of per-query values and of the per-query report figures
  (:mod:`gradebench.experiments.figures`: reduced from the predictions when the record was written).
* :data:`LOSS_FAMILIES`: pointwise, pairwise and listwise losses, as the loss registry's
  ``kind`` metadata has them (``lambdaloss`` is pairwise there: LiPO-lambda is a weighted
  pairwise logistic loss); a test keeps the two in step, so the report never imports torch.
* grade kinds: a benchmark's records say whether it has the paper's five tiers
  (``gold > good > fair > poor > nonsense``), other tiers, or natural grades (no tier column).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from gradebench.errors import RecordError
from gradebench.experiments.leaderboard import is_human, system_key
from gradebench.experiments.policy_record import PolicyRecord
from gradebench.experiments.record import EvalRecord
from gradebench.experiments.figures import (  # noqa: F401 - Dense: re-exported
    FIGURE_SETS,
    Dense,
    dense_predictions,
    query_figures,
)
from gradebench.experiments.store import list_records, read_per_query_arrays, read_query_figures
from gradebench.experiments.verify import verified_records
from gradebench.hashing import sha256_json
from gradebench.paths import OUT_DIR

TEST = "test"
LOSS_FAMILIES: dict[str, tuple[str, ...]] = {
    "pointwise": ("mse", "sigmoid_ce"),
    "pairwise": ("bradley_terry", "ranknet", "hinge", "margin", "lambdarank", "lambdaloss"),
    "listwise": ("listnet", "listmle", "approxndcg", "neuralndcg"),
}
FAMILY_OF = {loss: fam for fam, losses in LOSS_FAMILIES.items() for loss in losses}
#: the tiers of the core paper's construction (seeds/000 §4), best first
PAPER_TIERS = ("gold", "good", "fair", "poor", "nonsense")
GradeKind = Literal["paper tiers", "other tiers", "natural"]


@dataclass(frozen=True)
class System:
    """One system's records on one benchmark fingerprint, one per seed, sorted by seed."""

    id: str
    benchmark: str
    fingerprint: str
    scorer: str
    loss: str | None
    options: dict[str, Any] | None
    trained_on: str | None
    zero_shot: bool
    records: tuple[EvalRecord, ...] = field(repr=False)

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(r.system_seed for r in self.records)

    @property
    def list_size(self) -> int | None:
        return None if self.options is None else self.options.get("list_size")

    @property
    def label(self) -> str:
        """``scorer + loss`` (``{K=3}`` for a list-size run, ``(trained on X)`` for a transfer)."""
        text = self.scorer + (f" + {self.loss}" if self.loss else "")
        if self.list_size is not None:
            text += f" {{K={self.list_size}}}"
        if (self.options or {}).get("max_train_queries") is not None:
            text += f" {{{self.options['max_train_queries']} training queries}}"
        if self.zero_shot:
            text += f" (trained on {self.trained_on})"
        return text

    def has_default_options(self) -> bool:
        """Trained on full lists and every training query (no list-size or size ablation)."""
        o = self.options or {}
        return o.get("list_size") is None and o.get("max_train_queries") is None


def grade_kind(record: EvalRecord) -> GradeKind:
    tiers = record.benchmark.tiers
    if not tiers:
        return "natural"
    return "paper tiers" if tuple(t.name for t in tiers) == PAPER_TIERS else "other tiers"


class Evidence:
    """The records of one results folder and cached readers of their tables.

    Raises:
        RecordError: ``results_dir`` does not exist or is not a folder, or a record is invalid.
    """

    def __init__(self, results_dir: str | Path, build_dir: str | Path = OUT_DIR) -> None:
        root = Path(results_dir)
        if not root.is_dir():
            raise RecordError("no such results folder" if not root.exists() else "the results folder is a file",
                              path=root, hint="give the folder `gradebench eval` wrote its records into "
                                              "(--results-dir), e.g. leaderboard/results")
        self.root = root
        self.build_dir = Path(build_dir)
        # failing records left out, and the human ceiling (not a system: gradebench.experiments.human)
        self.records: list[EvalRecord] = [r for r in verified_records(root, split=TEST) if not is_human(r)]
        self.policies: list[PolicyRecord] = list_records(root, kind="policy")
        self.systems = _systems(self.records)
        self._per_query: dict[str, dict[str, tuple[list[str], np.ndarray]]] = {}
        self._figures: dict[str, tuple[list[str], dict[str, np.ndarray]]] = {}

    # -- lookup -------------------------------------------------------------------------------
    def fingerprint(self, benchmark: str) -> str | None:
        """The fingerprint of ``benchmark`` with the most records (ties: the smallest), or None."""
        counts: dict[str, int] = {}
        for r in self.records:
            if r.benchmark.name == benchmark:
                counts[r.benchmark.fingerprint] = counts.get(r.benchmark.fingerprint, 0) + 1
        return min(counts, key=lambda fp: (-counts[fp], fp)) if counts else None

    def benchmarks(self) -> list[str]:
        return sorted({r.benchmark.name for r in self.records})

    def grade_kind(self, benchmark: str) -> GradeKind | None:
        fp = self.fingerprint(benchmark)
        rec = next((r for r in self.records if r.benchmark.fingerprint == fp), None)
        return None if rec is None else grade_kind(rec)

    def find(self, benchmark: str, *, scorer: str | None = None, loss: str | None = None,
             zero_shot: bool | None = False) -> list[System]:
        """Systems on ``benchmark`` (its main fingerprint), sorted by label then id."""
        fp = self.fingerprint(benchmark)
        return [s for s in self.systems if s.fingerprint == fp
                and (scorer is None or s.scorer == scorer) and (loss is None or s.loss == loss)
                and (zero_shot is None or s.zero_shot == zero_shot)]

    def pick(self, benchmark: str, scorer: str, loss: str | None) -> System | None:
        """The system of ``scorer + loss`` on ``benchmark`` (not a transfer) trained on full lists:
        every training query if such a system exists, else a capped one (a cross-encoder trained on
        a few hundred queries); the one with the most seeds if several (then by id)."""
        found = [s for s in self.find(benchmark, scorer=scorer, loss=loss) if s.list_size is None]
        return min(found, key=lambda s: (not s.has_default_options(), -len(s.records), s.id)) if found else None

    # -- tables -------------------------------------------------------------------------------
    def per_query(self, record: EvalRecord, metric: str) -> tuple[list[str], np.ndarray]:
        """``(query ids, values)`` of a per-query metric of a record (NaN = excluded query)."""
        table = self._per_query.get(record.id)
        if table is None:
            table = self._per_query[record.id] = read_per_query_arrays(record)
        if metric not in table:
            raise RecordError(f"the record has no per-query {metric!r}", path=record.per_query_path,
                              hint="evaluate again with this gradebench version")
        return table[metric]

    def figures(self, record: EvalRecord, name: str) -> tuple[list[str], np.ndarray]:
        """``(query ids, [n_queries, n_columns])``: the record's figure set ``name`` (its columns in order).

        Raises:
            RecordError: the record has no such figures (written before they existed, and packed
                without its predictions).
        """
        got = self._figures.get(record.id)
        if got is None:
            got = self._figures[record.id] = read_query_figures(record)
        ids, figures = got
        columns = FIGURE_SETS[name].column_names()
        pred = record.predictions_path
        if any(c not in figures for c in columns) and pred is not None and pred.is_file():
            # a record written before the figures existed (not packed yet): reduce its predictions now
            figures.update(query_figures(record.benchmark.name, dense_predictions(pred)))
        if any(c not in figures for c in columns):
            raise RecordError(f"the record has no per-query {name!r} figures", path=record.path,
                              hint="evaluate it again, or pack its folder while its predictions are there "
                                   "(python -m gradebench.experiments.pack RESULTS_DIR)")
        return ids, np.column_stack([figures[c] for c in columns])


def stored(name: str, columns: slice | None = None):
    """A per-record rows function ``(evidence, record) -> (query ids, rows)`` of the stored figure set
    ``name`` (``columns`` of it)."""
    def rows(ev: Evidence, record: EvalRecord) -> tuple[list[str], np.ndarray]:
        ids, values = ev.figures(record, name)
        return ids, values if columns is None else values[:, columns]
    return rows


def _systems(records: list[EvalRecord]) -> list[System]:
    groups: dict[str, list[EvalRecord]] = {}
    for r in records:
        groups.setdefault(sha256_json(system_key(r)), []).append(r)
    out = []
    for sid, recs in groups.items():
        per_seed: dict[int, EvalRecord] = {}
        for r in sorted(recs, key=lambda r: r.id):
            per_seed.setdefault(r.system_seed, r)
        chosen = tuple(per_seed[s] for s in sorted(per_seed))
        first = chosen[0]
        run = first.run
        options = None if run is None else {k: v for k, v in run.options.items() if k != "seed"}
        out.append(System(
            id=sid[:16], benchmark=first.benchmark.name, fingerprint=first.benchmark.fingerprint,
            scorer=first.scorer.name, loss=first.loss.name, options=options,
            trained_on=None if run is None else run.benchmark,
            zero_shot=run is not None and run.benchmark_fingerprint != first.benchmark.fingerprint,
            records=chosen))
    return sorted(out, key=lambda s: (s.benchmark, s.label, s.id))


def benchmark_folder(record: EvalRecord, build_dir: str | Path = OUT_DIR) -> str:
    """Where ``gradebench build --out build_dir`` puts the record's benchmark: ``<build_dir>/<name>/<fp12>``."""
    return f"{Path(build_dir).as_posix()}/{record.benchmark.name}/{record.benchmark.fingerprint[:12]}"


def split_grade_counts(record: EvalRecord, split: str, build_dir: str | Path = OUT_DIR) -> dict[float, int] | None:
    """Candidates per grade of ``split`` from the manifest of the record's benchmark, when the
    benchmark folder is under ``build_dir`` or at the record's path (fingerprint checked); None
    when neither has it."""
    from gradebench.benchmark.manifest import read_manifest

    for folder in (Path(benchmark_folder(record, build_dir)), Path(record.benchmark.path)):
        try:
            m = read_manifest(folder)
        except Exception:  # noqa: BLE001 - absent or unreadable: try the next place
            continue
        if m.get("fingerprint") != record.benchmark.fingerprint:
            continue
        grades = (m.get("stats") or {}).get(split, {}).get("grades")
        if isinstance(grades, dict) and grades:
            return {float(g): int(v["candidates"] if isinstance(v, dict) else v) for g, v in grades.items()}
    return None
