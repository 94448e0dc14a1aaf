"""A :class:`~.model.ReproductionReport` as one static HTML page (``gradebench report --format html``).

The same content as :func:`.render.markdown` (``REPRODUCTION.md``), laid out for a browser: the
verdicts table first, each claim linked to its section, where the evidence is (the paper's and our
figures, ours with the CI drawn as an interval, and the tested steps with their p-values); then the
verdict rules and the systems the claims read (a sortable table). Deterministic: the same report
gives the same bytes; self-contained (:mod:`gradebench.experiments.htmlpage`).
"""

from __future__ import annotations

from gradebench.experiments.htmlpage import data_v, esc, interval_svg, page
from gradebench.experiments.reproduction.model import ClaimResult, Figure, ReproductionReport, Table
from gradebench.experiments.reproduction.render import (
    STEP_COLUMNS,
    SYSTEM_COLUMNS,
    TITLE,
    cell,
    intro,
    step_cells,
    summary_rows,
)


def _badge(verdict: str) -> str:
    return f'<span class="badge b-{verdict.replace(" ", "-")}">{esc(verdict)}</span>'


def _claim_id(i: int) -> str:
    return f"claim-{i}"


def _table(t: Table) -> list[str]:
    figures = [c.ci_low for r in t.rows for c in r if isinstance(c, Figure) and c.ci_low is not None]
    figures += [c.ci_high for r in t.rows for c in r if isinstance(c, Figure) and c.ci_high is not None]
    figures += [c.value for r in t.rows for c in r if isinstance(c, Figure) and c.value is not None]
    lo, hi = (min(figures), max(figures)) if figures else (0.0, 1.0)
    out = [f"<h4>{esc(t.title)}</h4>", '<div class="scroll"><table>',
           "<thead><tr>" + "".join(f"<th>{esc(c)}</th>" for c in t.columns) + "</tr></thead><tbody>"]
    for r in t.rows:
        tds = []
        for c in r:
            if isinstance(c, Figure) and c.value is not None:
                drawn = interval_svg(c.value, c.ci_low, c.ci_high, lo, hi)
                tds.append(f'<td class="num">{esc(cell(c))}<br>{drawn}</td>')
            elif isinstance(c, (int, float, Figure)) and not isinstance(c, bool):
                tds.append(f'<td class="num">{esc(cell(c))}</td>')
            else:
                tds.append(f"<td>{esc(cell(c))}</td>")
        out.append(f"<tr>{''.join(tds)}</tr>")
    out.append("</tbody></table></div>")
    return out


def _claim(i: int, c: ClaimResult) -> list[str]:
    out = [f'<section class="claim" id="{_claim_id(i)}">',
           f"<h2>{i}. {esc(c.title)} {_badge(c.verdict)}</h2>",
           f"<p><i>Source:</i> {esc(c.source)}</p>", f"<p><i>Claim:</i> {esc(c.statement)}</p>",
           f'<p class="verdict {_verdict_class(c.verdict)}"><b>Verdict: {esc(c.verdict)}.</b> {esc(c.reason)}</p>',
           "<h3>How</h3>", "<ul>" + "".join(f"<li>{esc(m)}</li>" for m in c.method) + "</ul>"]
    if c.tables:
        out.append("<h3>Evidence</h3>")
        for t in c.tables:
            out += _table(t)
    if c.steps:
        out += ["<h3>Steps <small>(claimed relation above &gt; below; difference = above - below; Holm-corrected "
                "within the claim)</small></h3>", '<div class="scroll"><table class="sortable">',
                "<thead><tr>" + "".join(f'<th{_num_head(h)}>{esc(h)}</th>' for h in STEP_COLUMNS) + "</tr></thead>",
                "<tbody>"]
        for k, s in enumerate(c.steps, 1):
            cells = step_cells(s)
            tds = []
            for h, text in zip(STEP_COLUMNS, cells):
                if h in _NUMERIC:
                    tds.append(f'<td class="num" data-v="{esc(_sort_key(text))}">{esc(text)}</td>')
                else:
                    tds.append(f"<td>{esc(text)}</td>")
            out.append(f'<tr data-rank="{k}">{"".join(tds)}</tr>')
        out.append("</tbody></table></div>")
    for n in c.notes:
        out.append(f"<p><i>Note:</i> {esc(n)}</p>")
    out.append('<p><a href="#summary">back to the summary</a></p></section>')
    return out


_NUMERIC = ("difference", "queries", "p", "p (Holm)")


def _num_head(h: str) -> str:
    return ' data-type="num"' if h in _NUMERIC else ""


def _sort_key(text: str) -> str:
    """The number a step cell starts with (``40 seed pairs`` -> 40, ``<0.0001`` -> 0.0001), empty for none."""
    head = text.split(" ")[0].lstrip("<>=")
    try:
        return data_v(float(head))
    except ValueError:
        return ""


def _verdict_class(verdict: str) -> str:
    return {"reproduced": "v-ok", "contradicted": "v-bad", "inconclusive": "v-warn"}.get(verdict, "v-none")


def html(report: ReproductionReport) -> str:
    """The report as one self-contained HTML page."""
    body = [f"<header><h1>{esc(TITLE)}</h1>"] + [f"<p>{esc(p)}</p>" for p in intro(report)] + ["</header>", "<main>"]
    body += ['<section id="summary"><h2>Summary</h2>', '<div class="scroll"><table class="sortable">',
             '<thead><tr><th data-type="num">#</th><th>claim</th><th>source</th><th>verdict</th></tr></thead><tbody>']
    for n, title, source, verdict in summary_rows(report):
        body.append(f'<tr data-rank="{n}"><td class="num" data-v="{n}">{n}</td>'
                    f'<td><a href="#{_claim_id(int(n))}">{esc(title)}</a></td><td>{esc(source)}</td>'
                    f'<td data-v="{esc(verdict)}">{_badge(verdict)}</td></tr>')
    body += ["</tbody></table></div></section>", '<section id="rules"><h2>Verdict rules</h2><ul>']
    body += [f"<li>{esc(r)}</li>" for r in report.rules] + [f"<li>Family-wise alpha: {report.alpha:g}.</li>",
                                                             "</ul></section>"]
    for i, c in enumerate(report.claims, 1):
        body += _claim(i, c)
    if report.systems:
        body += ['<section id="systems"><h2>Systems</h2>',
                 "<p>Every system of the records (test split), with its training budget (training queries x epochs; "
                 "<code>all</code> without a cap) and the device it was evaluated on.</p>",
                 '<div class="scroll"><table class="sortable">',
                 "<thead><tr>" + "".join(f'<th data-type="num">{h}</th>' if h == "seeds" else f"<th>{esc(h)}</th>"
                                         for h in SYSTEM_COLUMNS)
                 + "</tr></thead><tbody>"]
        for k, row in enumerate(report.systems, 1):
            tds = "".join(f'<td class="num" data-v="{esc(v)}">{esc(v)}</td>' if h == "seeds" else f"<td>{esc(v)}</td>"
                          for h, v in zip(SYSTEM_COLUMNS, row))
            body.append(f'<tr data-rank="{k}">{tds}</tr>')
        body += ["</tbody></table></div></section>"]
    body += ["</main>"]
    return page(TITLE, body)
