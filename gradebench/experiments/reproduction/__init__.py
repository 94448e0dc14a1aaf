"""The reproduction report: the papers' claims checked against the committed records.

``reproduction_report(results_dir)`` returns a :class:`ReproductionReport`: per claim, the
paper's figure, gradebench's figure on the same metric with its CI (read from the records), and
a verdict (*reproduced*, *contradicted*, *inconclusive*, *not testable*) by the rules of
:mod:`.rules`; ``markdown(report)`` is ``REPRODUCTION.md``, ``text(report, width=80)`` the
terminal's. ``gradebench report`` wraps them (``--out REPRODUCTION.md``).

Modules: :mod:`.data` (records grouped into systems), :mod:`.compare` (figures and paired
tests), :mod:`.rules` (verdicts), :mod:`.papers` (the papers' figures), the claims
(:mod:`.claims_losses`, :mod:`.claims_transfer`, :mod:`.claims_policy`, :mod:`.claims_tasks`),
:mod:`.render` (Markdown and text), :mod:`.render_html` (``html(report)``, ``gradebench report --format html``).
"""

from __future__ import annotations

from gradebench.experiments.reproduction.model import ClaimResult, Figure, ReproductionReport, Step, Table
from gradebench.experiments.reproduction.render import markdown, text
from gradebench.experiments.reproduction.render_html import html
from gradebench.experiments.reproduction.report import CLAIMS, reproduction_report, write_report
from gradebench.experiments.reproduction.rules import RULES

__all__ = ["CLAIMS", "RULES", "ClaimResult", "Figure", "ReproductionReport", "Step", "Table", "html", "markdown",
           "reproduction_report", "text", "write_report"]
