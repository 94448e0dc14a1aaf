"""Markdown, HTML and rich renderings of a :class:`~gradebench.experiments.leaderboard.Leaderboard`.

Columns: rank, system, seeds, the sort metric and :data:`~gradebench.experiments.conventions.SHOWN`
as ``value [ci_low, ci_high]``, and ``vs best``: ``best``, ``=`` (not significantly different
from the best, Holm-corrected), ``<`` (significantly worse) or blank (not tested).
"""

from __future__ import annotations

import html as _html
from typing import TYPE_CHECKING, Any

from gradebench.experiments.conventions import PROBE, SHOWN

if TYPE_CHECKING:
    from gradebench.experiments.leaderboard import Board, Leaderboard, Row


def columns(lb: Leaderboard) -> list[str]:
    return [lb.sort_by] + [m for m in SHOWN if m != lb.sort_by]


def fmt_metric(m: dict[str, Any] | None) -> str:
    if not m or m.get("value") is None:
        return "n/a"
    text = f"{m['value']:.3f}"
    if m.get("ci_low") is not None and m.get("ci_high") is not None:
        text += f" [{m['ci_low']:.3f}, {m['ci_high']:.3f}]"
    return text


def mark(row: Row) -> str:
    if row.is_best and row.tied_with_best is not None:
        return "best"
    if row.tied_with_best is None:
        return ""
    return "=" if row.tied_with_best else "<"


def cells(lb: Leaderboard, row: Row) -> list[str]:
    name = row.system + (" (probe)" if row.probe else "")
    return [str(row.rank), name, str(row.n_seeds), *(fmt_metric(row.metrics.get(m)) for m in columns(lb)), mark(row)]


def header(lb: Leaderboard) -> list[str]:
    return ["#", "system", "seeds", *columns(lb), "vs best"]


def title(board: Board) -> str:
    return f"{board.benchmark} ({board.fingerprint[:12]}), split {board.split}"


def validity_line(board: Board) -> str:
    v = board.validity
    if v is None:
        return ""
    if not v["evaluated"]:
        return f"Benchmark validity: no {PROBE} probe evaluated (run `gradebench eval --scorer {PROBE}`)."
    if v["value"] is None:
        return f"Benchmark validity: {PROBE} probe {v['metric']} undefined."
    verdict = ("the probe is the best system: the benchmark can be solved without reading the query"
               if v["probe_is_best"] else
               "not significantly below the best: the benchmark may be solvable without the query"
               if v["probe_tied_with_best"] else
               "significantly below the best" if v["probe_tied_with_best"] is False else "not tested")
    ci = "" if v["ci_low"] is None else f" [{v['ci_low']:.3f}, {v['ci_high']:.3f}]"
    gap = "" if v["gap_to_best"] is None else f", gap to best {v['gap_to_best']:.3f}"
    return f"Benchmark validity: {PROBE} probe {v['metric']} {v['value']:.3f}{ci}{gap} ({verdict})."


def footer(lb: Leaderboard) -> str:
    return (f"Mean over seeds; 95% bootstrap CIs over queries. vs best: {lb.test} test against the best "
            f"system on per-query {lb.sort_by}, Holm-corrected, alpha {lb.alpha:g} "
            "(= not significantly different, < significantly worse).")


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


POLICY_HEADER = ["method", "benchmark", "policy", "reward / loss", "seed", "steps", "reward mean", "reward std", "KL",
                 "above reference"]


def policy_cells(p: dict[str, Any]) -> list[str]:
    num = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
    return [p["method"], f"{p['benchmark']} ({p['benchmark_fingerprint'][:12]})", p["policy"], str(p["objective"]),
            str(p["seed"]), str(p["steps"]), num(p["reward_mean"]), num(p["reward_std"]), num(p["kl"]),
            num(p["above_reference"])]


def _policies_markdown(lb: Leaderboard) -> list[str]:
    if not lb.policies:
        return []
    out = ["## Policies (gradebench lipo | grpo | ppo; means over the last logged steps)\n",
           "| " + " | ".join(POLICY_HEADER) + " |", "|" + "|".join("---" for _ in POLICY_HEADER) + "|"]
    out += ["| " + " | ".join(_md_escape(c) for c in policy_cells(p)) + " |" for p in lb.policies]
    return out + [""]


def markdown(lb: Leaderboard) -> str:
    out: list[str] = []
    if not lb.boards:
        return f"No result records for split {lb.split}.\n" + "\n".join(_policies_markdown(lb))
    for board in lb.boards:
        out.append(f"## {title(board)}\n")
        head = header(lb)
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "|".join("---:" if i in (0, 2) else "---" for i in range(len(head))) + "|")
        for row in board.rows:
            out.append("| " + " | ".join(_md_escape(c) for c in cells(lb, row)) + " |")
        out.append("")
        line = validity_line(board)
        if line:
            out.append(line + "\n")
    out += _policies_markdown(lb)
    out.append(footer(lb))
    return "\n".join(out) + "\n"


def html(lb: Leaderboard) -> str:
    esc = _html.escape
    out = ['<div class="gradebench-leaderboard">']
    for board in lb.boards:
        out.append(f"<h2>{esc(title(board))}</h2>")
        out.append("<table>")
        out.append("<thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in header(lb)) + "</tr></thead>")
        out.append("<tbody>")
        for row in board.rows:
            cls = ' class="best"' if row.is_best else (' class="tied"' if row.tied_with_best else "")
            out.append(f"<tr{cls}>" + "".join(f"<td>{esc(c)}</td>" for c in cells(lb, row)) + "</tr>")
        out.append("</tbody></table>")
        line = validity_line(board)
        if line:
            out.append(f"<p>{esc(line)}</p>")
    if not lb.boards:
        out.append(f"<p>No result records for split {esc(lb.split)}.</p>")
    out.append(f"<p>{esc(footer(lb))}</p>")
    out.append("</div>")
    return "\n".join(out) + "\n"


def rich_tables(lb: Leaderboard) -> list[Any]:
    """rich renderables (a title, a table and the validity line per benchmark)."""
    from rich.table import Table

    items: list[Any] = []
    for board in lb.boards:
        t = Table(*header(lb), title=title(board))
        for row in board.rows:
            style = "bold green" if row.is_best else ("green" if row.tied_with_best else None)
            t.add_row(*cells(lb, row), style=style)
        items.append(t)
        line = validity_line(board)
        if line:
            items.append(line)
    if lb.policies:
        t = Table(*POLICY_HEADER, title="Policies (means over the last logged steps)")
        for p in lb.policies:
            t.add_row(*policy_cells(p))
        items.append(t)
    items.append(footer(lb) if lb.boards else f"No result records for split {lb.split}.")
    return items
