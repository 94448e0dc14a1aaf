"""The leaderboard as one static HTML page (``gradebench leaderboard --format html``).

:func:`leaderboard_html` computes the :class:`~gradebench.experiments.render.Leaderboard` of a results
folder and lays it out with :func:`page_html`, which also reads the rows' records for what the board
itself does not hold (the benchmark's size and grades, predicted scores per grade, per-subset figures,
list sizes and training benchmarks). The page is a view of the records: the same records give the same
bytes (no timestamps, no machine-dependent text), it opens from disk with no network, and its tables
sort in the browser (:mod:`gradebench.experiments.htmlpage`).

Per benchmark, a section with:

* its card summary: the recipe's description (when a shipped recipe has the benchmark's name), queries,
  candidates and grades of the evaluated split, and the validity verdict (the query-blind probe line);
* the table: rank, the system (its scorer and loss; the full label, training budget, device, seeds,
  record ids and predicted scores per grade open under it), its family (the scorer), the sort metric
  with its CI drawn as an interval on an axis shared by the rows (dashed: the best), vs best (``best``,
  ``=`` not significantly different, ``<`` significantly worse, Holm-corrected; p-values in the
  tooltip), seeds, and the other shown metrics (CIs in the tooltip);
* figures where the records have them: predicted score per grade of the best system and of the
  probe, the sort metric against the training list size, and per-subset figures.

After the sections: the transfer matrix (best sort-metric value of each scorer family trained on one
benchmark, evaluated on another, beside the same family trained in-domain) and the policy runs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gradebench.experiments.htmlpage import (
    data_v,
    esc,
    heatmap_html,
    interval_svg,
    lines_svg,
    num,
    page,
    slug,
    tier_svg,
)
from gradebench.experiments.render import (
    POLICY_HEADER,
    Board,
    Leaderboard,
    Row,
    columns,
    fmt_metric,
    footer,
    policy_cells,
    validity_line,
    verdict_line,
)
from gradebench.paths import RESULTS_DIR

TITLE = "gradebench leaderboard"


def leaderboard_html(
    results_dir: str | Path = RESULTS_DIR,
    *,
    benchmark: str | None = None,
    split: str = "test",
    sort_by: str = "ndcg@5",
    alpha: float = 0.05,
) -> str:
    """The HTML page of :func:`~gradebench.experiments.leaderboard.leaderboard` (same arguments, same errors)."""
    from gradebench.experiments.leaderboard import leaderboard

    lb = leaderboard(results_dir, benchmark=benchmark, split=split, sort_by=sort_by, alpha=alpha)
    return html_of(lb, results_dir, benchmark=benchmark, split=split, sort_by=sort_by, alpha=alpha)


def html_of(lb: Leaderboard, results_dir: str | Path, *, benchmark: str | None = None, split: str = "test",
            sort_by: str = "ndcg@5", alpha: float = 0.05) -> str:
    """The page of ``lb``, computed from ``results_dir`` with these arguments (its records are read again
    for the figures the board does not hold)."""
    from gradebench.experiments.store import list_records

    records = {r.id: r for r in list_records(results_dir, benchmark=benchmark, split=split)}
    return page_html(lb, records, command=command(results_dir, benchmark=benchmark, split=split,
                                                  sort_by=sort_by, alpha=alpha))


def command(results_dir: str | Path, *, benchmark: str | None, split: str, sort_by: str, alpha: float) -> str:
    """The command that writes the page (non-default options only)."""
    parts = ["gradebench leaderboard", f"--results-dir {Path(results_dir).as_posix()}"]
    parts += [] if benchmark is None else [f"--benchmark {benchmark}"]
    parts += [] if split == "test" else [f"--split {split}"]
    parts += [] if sort_by == "ndcg@5" else [f"--sort-by {sort_by}"]
    parts += [] if alpha == 0.05 else [f"--alpha {alpha:g}"]
    return " ".join(parts + ["--format html"])


def page_html(lb: Leaderboard, records: Mapping[str, Any], *,
              command: str = "gradebench leaderboard --format html") -> str:
    """The page of ``lb``; ``records`` by id (those of its rows; a missing one leaves its figures out)."""
    ids = [_board_id(b) for b in lb.boards]
    n_rows = sum(len(b.rows) for b in lb.boards)
    body = [f"<header><h1>{esc(TITLE)}</h1>",
            f"<p>{n_rows} systems on {len(lb.boards)} benchmarks, split {esc(lb.split)}, ranked by "
            f"<b>{esc(lb.sort_by)}</b>. Generated from the result records by <code>{esc(command)}</code>; "
            "a page is a view of the records, never edited by hand.</p>",
            f"<p>{esc(footer(lb))} Click a column header to sort by it; a system's name opens its full "
            "label, training budget, device, seeds, records and predicted scores per grade.</p>"]
    links = [f'<a href="#{i}">{esc(b.benchmark)}</a>' for b, i in zip(lb.boards, ids)]
    transfer = _transfer(lb, records)
    links += ['<a href="#transfer">transfer</a>'] if transfer else []
    links += ['<a href="#policies">policies</a>'] if lb.policies else []
    body += [f"<nav>{' '.join(links)}</nav>", "</header>", "<main>"]
    if not lb.boards:
        body.append(f"<p>No result records for split {esc(lb.split)}.</p>")
    for board, bid in zip(lb.boards, ids):
        body += _section(lb, board, bid, records)
    body += transfer + _policies(lb)
    body += ["</main>", f"<footer>{esc(footer(lb))}</footer>"]
    return page(TITLE, body)


def _board_id(board: Board) -> str:
    return f"b-{slug(board.benchmark)}-{board.fingerprint[:12]}"


def _first(row: Row, records: Mapping[str, Any]) -> Any | None:
    """The row's first record (its smallest seed), or None where it was not given."""
    return next((records[i] for i in row.record_ids if i in records), None)


# -- a benchmark's section ------------------------------------------------------------------------------------
def _section(lb: Leaderboard, board: Board, bid: str, records: Mapping[str, Any]) -> list[str]:
    out = [f'<section class="bench" id="{bid}" data-benchmark="{esc(board.benchmark)}">',
           f"<h2>{esc(board.benchmark)} <small>{board.fingerprint[:12]}, split {esc(board.split)}, "
           f"{len(board.rows)} systems</small></h2>"]
    out += _card(board, records)
    line = validity_line(board)
    if line:
        out.append(f'<p class="verdict {_verdict_class(board.validity)}">{esc(line)}</p>')
    line = verdict_line(board)
    if line:
        bad = "solved by a shortcut" in line or "no verdict" in line or "not shown" in line
        out.append(f'<p class="verdict {"v-warn" if bad else "v-ok"}">{esc(line)}</p>')
    out += _table(lb, board, f"t-{bid}", records)
    out += _figures(lb, board, records)
    out.append("</section>")
    return out


def _card(board: Board, records: Mapping[str, Any]) -> list[str]:
    rec = next((r for row in board.rows if (r := _first(row, records)) is not None), None)
    out = []
    description = recipe_description(board.benchmark)
    if description:
        out.append(f'<p class="card">{esc(description)}</p>')
    if rec is not None:
        b = rec.benchmark
        tiers = " &gt; ".join(f"{esc(t.name)} ({t.grade:g})" for t in sorted(b.tiers, key=lambda t: -t.grade)) \
            if b.tiers else f"natural grades ({len(rec.separation.by_grade)} distinct)"
        out.append(f'<p class="card">{b.n_queries:,} queries, {b.n_candidates:,} candidates on split '
                   f'{esc(rec.split)}; grades: {tiers}.</p>')
    return out


def recipe_description(name: str) -> str | None:
    """The description of the shipped recipe named ``name`` (None for a benchmark of another recipe)."""
    from gradebench.errors import GradebenchError
    from gradebench.recipes import load_recipe, recipe_names

    if name not in recipe_names():
        return None
    try:
        return " ".join(load_recipe(name).description.split())
    except GradebenchError:
        return None


def _verdict_class(v: dict[str, Any] | None) -> str:
    if not v or not v.get("evaluated") or v.get("value") is None:
        return "v-none"
    if v.get("probe_is_best"):
        return "v-bad"
    if v.get("probe_tied_with_best"):
        return "v-warn"
    return "v-ok" if v.get("probe_tied_with_best") is False else "v-none"


_BRACKETS = re.compile(r"\[[^\[\]]*\]|\{[^{}]*\}")


def short_name(row: Row) -> str:
    """The system label without its bracketed config and options: ``cross-encoder + listnet (trained on esnli)``."""
    text = row.system
    while _BRACKETS.search(text):
        text = _BRACKETS.sub("", text)
    return " ".join(text.split()) + (" (probe)" if row.probe else "")


def _mark(row: Row) -> tuple[str, str, str]:
    """(text, class, sort key) of the vs-best cell."""
    if row.human:
        return "ceiling", "mark-ceiling", "3"
    if row.is_best and row.tied_with_best is not None:
        return "best", "mark-best", "0"
    if row.tied_with_best is None:
        return "", "", ""
    return ("=", "mark-tied", "1") if row.tied_with_best else ("<", "mark-worse", "2")


def _table(lb: Leaderboard, board: Board, tid: str, records: Mapping[str, Any]) -> list[str]:
    metric, others = lb.sort_by, [m for m in columns(lb) if m != lb.sort_by]
    axis = [v for r in board.rows for v in (_get(r, metric, "value"), _get(r, metric, "ci_low"),
                                            _get(r, metric, "ci_high")) if v is not None]
    lo, hi = (min(axis), max(axis)) if axis else (0.0, 1.0)
    best = _get(board.rows[0], metric, "value") if board.rows else None
    names = _unique_names(board.rows)
    head = ['<th data-type="num">#</th>', "<th>system</th>", "<th>family</th>",
            f'<th data-type="num" data-first="desc">{esc(metric)} [95% CI]</th>',
            '<th data-type="num" title="paired test against the best, Holm-corrected">vs best</th>',
            '<th data-type="num" data-first="desc">seeds</th>']
    head += [f'<th data-type="num" data-first="desc">{esc(m)}</th>' for m in others]
    out = [f'<p><button type="button" data-table="{tid}" data-group="2">group by family</button> '
           f'<button type="button" data-table="{tid}" data-group="0">order by rank</button></p>',
           f'<div class="scroll"><table class="sortable board" id="{tid}">',
           f"<thead><tr>{''.join(head)}</tr></thead>", "<tbody>"]
    for row, name in zip(board.rows, names):
        m = row.metrics.get(metric) or {}
        text, cls, key = _mark(row)
        p = "" if row.p_adjusted is None else f"p {row.p_value:.4g}, Holm-adjusted {row.p_adjusted:.4g}"
        classes = " ".join(c for c in ("best" if row.is_best else "", "probe" if row.probe else "",
                                       "human" if row.human else "") if c)
        cls_attr = f' class="{classes}"' if classes else ""
        rank = len(board.rows) if row.human else row.rank  # the ceiling sorts under the systems
        tds = [f'<td class="num" data-v="{rank}">{"-" if row.human else row.rank}</td>',
               f'<td data-v="{esc(name)}">{_system_cell(row, name, records)}</td>',
               f'<td data-v="{esc(row.scorer)}"><span class="fam">{esc(row.scorer)}</span></td>',
               f'<td class="num" data-v="{data_v(m.get("value"))}">{esc(fmt_metric(m))}<br>'
               f'{interval_svg(m.get("value"), m.get("ci_low"), m.get("ci_high"), lo, hi, ref=best)}</td>',
               f'<td class="num mark {cls}" data-v="{key}" title="{esc(p)}">{text}</td>',
               f'<td class="num" data-v="{row.n_seeds}">{row.n_seeds}</td>']
        for o in others:
            mo = row.metrics.get(o) or {}
            ci = "" if mo.get("ci_low") is None else f"95% CI [{mo['ci_low']:.3f}, {mo['ci_high']:.3f}]"
            tds.append(f'<td class="num" data-v="{data_v(mo.get("value"))}" title="{ci}">{num(mo.get("value"))}</td>')
        out.append(f'<tr data-rank="{row.rank}" data-family="{esc(row.scorer)}"{cls_attr}>{"".join(tds)}</tr>')
    out.append("</tbody></table></div>")
    return out


def _get(row: Row, metric: str, key: str) -> float | None:
    return (row.metrics.get(metric) or {}).get(key)


def _unique_names(rows: list[Row]) -> list[str]:
    """Short names, numbered (``#2``, ``#3``) where several systems of a board share one."""
    seen: dict[str, int] = {}
    out = []
    for row in rows:
        name = short_name(row)
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return out


def _system_cell(row: Row, name: str, records: Mapping[str, Any]) -> str:
    budget = f"training: {row.training}; device: {row.device}"
    seeds = ", ".join(map(str, row.seeds))
    ids = ", ".join(i[:12] for i in row.record_ids)
    inner = [f'<div class="budget">{esc(row.system)}<br>{esc(budget)}<br>seeds {esc(seeds)}; '
             f'records {esc(ids)}</div>']
    rec = _first(row, records)
    if rec is not None:
        inner.append(tier_svg(_tier_groups(rec)))
        inner.append(f'<div class="budget">predicted score by grade, mean &#177; std (seed {rec.system_seed})</div>')
        inner += _subset_lines(row, records)
    return (f'<details><summary title="{esc(row.system)} ({esc(budget)})">{esc(name)}</summary>'
            f'{"".join(inner)}</details>')


def _tier_groups(rec: Any) -> list[tuple[str, float, float, int]]:
    groups = sorted(rec.separation.by_grade, key=lambda g: -g.grade)
    return [(g.tier or f"grade {g.grade:g}", g.mean, g.std, g.n) for g in groups]


def _subset_figures(row: Row, records: Mapping[str, Any]) -> tuple[str, str, dict[str, float | None]] | None:
    """``(column, metric, {group: mean over seeds})`` of a row whose records have per-subset figures."""
    recs = [records[i] for i in row.record_ids if i in records]
    biased = [r.bias for r in recs if r.bias is not None and r.bias.group_column and r.bias.groups]
    if not biased:
        return None
    values: dict[str, list[float]] = {}
    for b in biased:
        for g in b.groups:
            values.setdefault(g.name, [])
            if g.system is not None:
                values[g.name].append(g.system)
    means = {k: (sum(v) / len(v) if v else None) for k, v in sorted(values.items())}
    return biased[0].group_column, biased[0].metric, means


def _subset_lines(row: Row, records: Mapping[str, Any]) -> list[str]:
    subsets = _subset_figures(row, records)
    if subsets is None:
        return []
    column, metric, means = subsets
    text = ", ".join(f"{k} {num(v)}" for k, v in means.items())
    return [f'<div class="budget">per {esc(column)} ({esc(metric)}, mean over seeds): {esc(text)}</div>']


# -- figures under the table ----------------------------------------------------------------------------------
def _figures(lb: Leaderboard, board: Board, records: Mapping[str, Any]) -> list[str]:
    figs = []
    shown = [board.rows[0]] if board.rows else []
    shown += [r for r in board.rows if r.probe and r is not shown[0]][:1]
    for row in shown:
        rec = _first(row, records)
        if rec is not None:
            who = "the probe" if row.probe else "the best system"
            figs.append(f"<figure>{tier_svg(_tier_groups(rec))}<figcaption>Predicted score per grade of {who}, "
                        f"{esc(short_name(row))} (seed {rec.system_seed}): mean &#177; std.</figcaption></figure>")
    curve = _list_size_chart(lb, board, records)
    if curve:
        figs.append(f"<figure>{curve}<figcaption>{esc(lb.sort_by)} by training list size K (mean over seeds, "
                    "95% CI).</figcaption></figure>")
    out = [f"<h3>Figures</h3><div class=\"figs\">{''.join(figs)}</div>"] if figs else []
    return out + _subset_table(board, records)


def _list_size_chart(lb: Leaderboard, board: Board, records: Mapping[str, Any]) -> str:
    series: dict[str, list[tuple[float, float, float | None, float | None]]] = {}
    names: dict[str, str] = {}
    for row in board.rows:
        rec = _first(row, records)
        k = None if rec is None or rec.run is None else rec.run.options.get("list_size")
        m = row.metrics.get(lb.sort_by) or {}
        if k is None or m.get("value") is None:
            continue
        group = re.sub(r"list_size=\d+,?", "", row.system)
        names.setdefault(group, f"{row.scorer} + {row.loss}" if row.loss else row.scorer)
        series.setdefault(group, []).append((float(k), m["value"], m.get("ci_low"), m.get("ci_high")))
    if len({p[0] for ps in series.values() for p in ps}) < 2:
        return ""
    labelled, count = [], {}
    for group, ps in series.items():
        name = names[group]
        count[name] = count.get(name, 0) + 1
        labelled.append((name if count[name] == 1 else f"{name} #{count[name]}", ps))
    return lines_svg(labelled, x_label="list size K", y_label=lb.sort_by)


def _subset_table(board: Board, records: Mapping[str, Any]) -> list[str]:
    rows = [(row, s) for row in board.rows if (s := _subset_figures(row, records)) is not None]
    if not rows:
        return []
    column, metric = rows[0][1][0], rows[0][1][1]
    groups = sorted({g for _, s in rows for g in s[2]})
    names = dict(zip((id(r) for r in board.rows), _unique_names(board.rows)))
    out = [f"<h3>Per {esc(column)} <small>({esc(metric)}, mean over seeds)</small></h3>",
           '<div class="scroll"><table class="sortable">',
           '<thead><tr><th data-type="num">#</th><th>system</th>'
           + "".join(f'<th data-type="num" data-first="desc">{esc(g)}</th>' for g in groups) + "</tr></thead><tbody>"]
    for row, (_, _, means) in rows:
        cells = "".join(f'<td class="num" data-v="{data_v(means.get(g))}">{num(means.get(g))}</td>' for g in groups)
        out.append(f'<tr data-rank="{row.rank}"><td class="num" data-v="{row.rank}">{row.rank}</td>'
                   f"<td>{esc(names[id(row)])}</td>{cells}</tr>")
    out.append("</tbody></table></div>")
    return out


# -- across benchmarks -----------------------------------------------------------------------------------------
def _transfer(lb: Leaderboard, records: Mapping[str, Any]) -> list[str]:
    """The transfer matrix: per scorer family, trained on X (or in-domain) x evaluated benchmark."""
    best: dict[tuple[str, str], float] = {}
    transfer_targets: set[str] = set()
    families: set[str] = set()
    trained_on: set[tuple[str, str]] = set()
    for board in lb.boards:
        for row in board.rows:
            rec = _first(row, records)
            v = _get(row, lb.sort_by, "value")
            if rec is None or rec.run is None or v is None:
                continue
            source = rec.run.benchmark
            if source == board.benchmark:
                key = (f"{row.scorer} in-domain", board.benchmark)
            else:
                key = (f"{row.scorer} trained on {source}", board.benchmark)
                transfer_targets.add(board.benchmark)
                families.add(row.scorer)
                trained_on.add((row.scorer, source))
            best[key] = max(best.get(key, v), v)
    if not transfer_targets:
        return []
    cols = sorted(transfer_targets | {s for _, s in trained_on})
    rows = []
    for fam in sorted(families):
        rows += [f"{fam} trained on {s}" for f, s in sorted(trained_on) if f == fam] + [f"{fam} in-domain"]
    table = heatmap_html(rows, cols, {k: v for k, v in best.items() if k[0] in rows and k[1] in cols},
                         corner="trained \\ evaluated on")
    return ['<section id="transfer"><h2>Transfer</h2>',
            f"<p>Best {esc(lb.sort_by)} of each scorer family (over its losses and options, mean over seeds) trained "
            "on one benchmark and evaluated on another, beside the same family trained on the evaluated benchmark "
            "itself (in-domain). The best of several systems: an optimistic figure; the sections hold each "
            "system's CI and test.</p>", table, "</section>"]


def _policies(lb: Leaderboard) -> list[str]:
    if not lb.policies:
        return []
    numeric = {4, 5, 6, 7, 8, 9}
    head = "".join(f'<th data-type="num" data-first="desc">{esc(h)}</th>' if i in numeric else f"<th>{esc(h)}</th>"
                   for i, h in enumerate(POLICY_HEADER))
    out = ['<section id="policies"><h2>Policies <small>(gradebench lipo | grpo | ppo; means over the last logged '
           'steps)</small></h2>', '<div class="scroll"><table class="sortable">', f"<thead><tr>{head}</tr></thead>",
           "<tbody>"]
    for i, p in enumerate(lb.policies, 1):
        cells = policy_cells(p)
        tds = "".join(f'<td class="num" data-v="{esc(c if c != "n/a" else "")}">{esc(c)}</td>' if j in numeric
                      else f"<td>{esc(c)}</td>" for j, c in enumerate(cells))
        out.append(f'<tr data-rank="{i}">{tds}</tr>')
    out += ["</tbody></table></div>", "</section>"]
    return out

