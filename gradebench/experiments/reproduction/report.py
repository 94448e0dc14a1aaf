"""``reproduction_report()``: every claim of :data:`CLAIMS` checked against a results folder.

Each claim is a function ``(evidence, alpha) -> ClaimResult`` (records in, a claim result out;
``not testable`` with the reason when the records it needs are absent). The report is a pure
function of the records: the same folder gives the same report, byte for byte, in any order of
files on disk (records are read sorted, every test and bootstrap has a fixed seed).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gradebench.errors import InvalidArgumentError
from gradebench.experiments.leaderboard import devices, training_budget
from gradebench.experiments.reproduction.claims_losses import families, l2r2, lipo_list_size, table3
from gradebench.experiments.reproduction.claims_tasks import chaosnli, rank_to_class, worldtree
from gradebench.experiments.reproduction.claims_policy import policy_rewards
from gradebench.experiments.reproduction.claims_transfer import zero_shot
from gradebench.experiments.reproduction.data import TEST, Evidence
from gradebench.experiments.reproduction.model import ClaimResult, ReproductionReport
from gradebench.experiments.reproduction.render import markdown
from gradebench.experiments.reproduction.render_html import html
from gradebench.experiments.reproduction.rules import RULES
from gradebench.paths import OUT_DIR, RESULTS_DIR, write_text_atomic

#: the claims, in the report's order (issue 20)
CLAIMS: tuple[Callable[[Evidence, float], ClaimResult], ...] = (
    table3, families, zero_shot, policy_rewards, worldtree, rank_to_class, l2r2, lipo_list_size, chaosnli,
)


def reproduction_report(results_dir: str | Path = RESULTS_DIR, *, alpha: float = 0.05,
                        build_dir: str | Path = OUT_DIR) -> ReproductionReport:
    """Check every claim of the papers against the test-split records under ``results_dir``.

    Args:
        results_dir: the records' root (``<results_dir>/<benchmark>/<id>.json``), e.g. the project's
            committed ``leaderboard/results``.
        alpha: the family-wise error rate of each claim's Holm-corrected tests.
        build_dir: where the benchmarks were built (``gradebench build --out``): the one figure not
            in the records, the WinoWhy train split's class prior, is read from its manifest there
            (else at the record's ``benchmark.path``; the fingerprint is checked in both). The
            report never prints ``build_dir``: it is the same wherever the manifest was found.

    Returns:
        A :class:`ReproductionReport`: ``to_dict()`` is what ``gradebench report --json`` prints,
        :func:`~gradebench.experiments.reproduction.render.markdown` of it ``REPRODUCTION.md``.

    Raises:
        RecordError: ``results_dir`` does not exist or is not a folder, or a record in it is invalid.
        InvalidArgumentError: ``alpha`` not in (0, 1).
    """
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise InvalidArgumentError(f"alpha must be in (0, 1), got {alpha!r}", hint="e.g. --alpha 0.05")
    ev = Evidence(results_dir, build_dir)
    claims = tuple(claim(ev, float(alpha)) for claim in CLAIMS)
    return ReproductionReport(results_dir=Path(results_dir).as_posix(), alpha=float(alpha),
                              n_records=len(ev.records), n_policy_records=len(ev.policies), rules=RULES,
                              claims=claims, systems=tuple(
                                  (s.benchmark, s.label, str(len(s.records)), training_budget(list(s.records)),
                                   devices(list(s.records))) for s in ev.systems),
                              verdicts=verdicts(results_dir))


def verdicts(results_dir: str | Path) -> tuple[str, ...]:
    """One sentence per benchmark of the test split: its leaderboard's validity verdict
    (:func:`gradebench.experiments.leaderboard.verdict`): the line, then the best reader, the best
    shortcut and the human ceiling with its headroom where the records hold them."""
    from gradebench.experiments.leaderboard import leaderboard
    from gradebench.experiments.render import fmt_metric

    out = []
    for board in leaderboard(results_dir, split=TEST).boards:
        v = (board.validity or {}).get("verdict")
        if not v:
            continue
        parts = [f"{board.benchmark} ({board.fingerprint[:12]}, {v['metric']}): {v['line']}"]
        for key, what in (("best_reader", "best reader"), ("best_shortcut", "best shortcut"),
                          ("human", "human ceiling")):
            x = v.get(key)
            if x is not None and x.get("value") is not None:
                parts.append(f"{what} {x['name']} {fmt_metric(x)}")
        if v.get("headroom") is not None:
            parts.append(f"headroom {v['headroom']:+.3f}")
        out.append("; ".join(parts) + ".")
    return tuple(out)


def write_report(report: ReproductionReport, out: str | Path, *, fmt: str = "md") -> Path:
    """Write the report to ``out`` atomically (a temp file beside it, then a rename): ``fmt`` ``md``
    (:func:`~gradebench.experiments.reproduction.render.markdown`) or ``html``
    (:func:`~gradebench.experiments.reproduction.render_html.html`)."""
    if fmt not in ("md", "html"):
        raise InvalidArgumentError(f"unknown report format {fmt!r}", hint="md or html")
    path = Path(out)
    write_text_atomic(path, markdown(report) if fmt == "md" else html(report))
    return path
