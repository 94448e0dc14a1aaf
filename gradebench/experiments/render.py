"""A leaderboard's shape (:class:`Leaderboard`, :class:`Board`, :class:`Row`) and its text and Markdown renderings
(the HTML page is :mod:`gradebench.experiments.leaderboard_html`).

:func:`gradebench.experiments.leaderboard.leaderboard` computes a :class:`Leaderboard` from the
records; this module only lays one out, so it imports nothing of the computation.

Columns: rank, system, seeds, training (the budget: training queries x epochs, or ``untrained``),
device (``environment.torch_device`` of the records), the sort metric and :data:`~gradebench.experiments.conventions.SHOWN`
as ``value [ci_low, ci_high]``, and ``vs best``: ``best``, ``=`` (not significantly different
from the best, Holm-corrected), ``<`` (significantly worse) or blank (not tested).

:func:`text` is what ``gradebench leaderboard`` prints: it fits a terminal of ``width`` columns
(rank, the sort metric, vs best, seeds, then the system with its training budget and device in
brackets, wrapped but never cut);
``wide=True`` shows every column of the Markdown table on unwrapped lines.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import asdict, dataclass, field
from typing import Any

from gradebench.experiments.conventions import PROBE, SHOWN


@dataclass(frozen=True)
class Row:
    """One system on one benchmark (see the module docstring)."""

    rank: int
    system: str
    system_id: str
    scorer: str
    scorer_version: int
    config: dict[str, Any]
    loss: str | None
    loss_params: dict[str, Any]
    options: dict[str, Any] | None
    n_seeds: int
    seeds: list[int]
    record_ids: list[str]
    n_queries: int
    metrics: dict[str, dict[str, Any]]
    is_best: bool
    tied_with_best: bool | None
    p_value: float | None
    p_adjusted: float | None
    probe: bool
    #: the training budget (``300 queries x 2 epochs``; ``untrained``) and the device the records ran on
    training: str = "untrained"
    device: str = "-"
    #: the scorer's kind (``baseline``, ``probe``, ``neural``, ``gbdt``, ``external``, ``human``)
    kind: str = ""
    #: the human ceiling (:mod:`gradebench.experiments.human`): shown under the systems, outside the
    #: ranking and the tests against the best (rank 0)
    human: bool = False


@dataclass(frozen=True)
class Board:
    """The leaderboard of one benchmark (name + fingerprint) and split."""

    benchmark: str
    fingerprint: str
    split: str
    rows: list[Row]
    validity: dict[str, Any] | None


@dataclass(frozen=True)
class Leaderboard:
    split: str
    sort_by: str
    alpha: float
    test: str
    boards: list[Board] = field(default_factory=list)
    #: policy-optimisation runs (gradebench lipo | grpo | ppo) on these benchmarks, one row each
    policies: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_markdown(self) -> str:
        return markdown(self)

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
    if row.human:
        return "ceiling"
    if row.is_best and row.tied_with_best is not None:
        return "best"
    if row.tied_with_best is None:
        return ""
    return "=" if row.tied_with_best else "<"


def cells(lb: Leaderboard, row: Row) -> list[str]:
    name = row.system + (" (probe)" if row.probe else "")
    return ["-" if row.human else str(row.rank), name, str(row.n_seeds), row.training, row.device,
            *(fmt_metric(row.metrics.get(m)) for m in columns(lb)), mark(row)]


def header(lb: Leaderboard) -> list[str]:
    return ["#", "system", "seeds", "training", "device", *columns(lb), "vs best"]


def title(board: Board) -> str:
    return f"{board.benchmark} ({board.fingerprint[:12]}), split {board.split}"


def validity_line(board: Board) -> str:
    v = board.validity
    if v is None:
        return ""
    if not v["evaluated"]:
        commands = v.get("commands") or []
        how = "; add it with: " + " && ".join(f"`{c}`" for c in commands) if commands else ""
        return f"Benchmark validity: no {PROBE} probe evaluated{how}."
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


def verdict_line(board: Board) -> str:
    """The board's validity verdict in one line (:func:`gradebench.experiments.leaderboard.verdict`):
    best reader, best shortcut, the human ceiling where known, and whether readers beat the shortcut."""
    v = (board.validity or {}).get("verdict")
    if not v:
        return ""
    parts = [f"Verdict ({v['metric']}): {v['line']}."]
    for key, what in (("best_reader", "best reader"), ("best_shortcut", "best shortcut"), ("human", "human ceiling")):
        x = v.get(key)
        if x is not None and x.get("value") is not None:
            parts.append(f"{what.capitalize()}: {x['name']} {fmt_metric(x)}.")
    if v.get("headroom") is not None:
        parts.append(f"Headroom (ceiling - best system): {v['headroom']:+.3f}.")
    return " ".join(parts)


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
        line = verdict_line(board)
        if line:
            out.append(line + "\n")
    out += _policies_markdown(lb)
    out.append(footer(lb))
    return "\n".join(out) + "\n"


# -- plain text: fits a terminal ----------------------------------------------------------------
#: the narrowest a wrapped last column gets, however little room the fixed columns leave
MIN_WRAP = 20


def wrap_cell(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken after spaces and commas, never cut.

    Joining the lines gives ``text`` back but for the spaces at the breaks; a run longer than
    ``width`` without a break is split where it must be.
    """
    width = max(1, width)
    lines, line = [], ""
    for piece in re.split(r"(?<=[ ,])", text):
        if line and len((line + piece).rstrip(" ")) > width:
            lines.append(line)
            line = ""
        line += piece
        while len(line.rstrip(" ")) > width:  # one piece wider than the column
            lines.append(line[:width])
            line = line[width:]
    if line or not lines:
        lines.append(line)
    return [x.rstrip(" ") for x in lines]


def text_table(header: list[str], rows: list[list[str]], *, width: int | None = 80,
               right: tuple[int, ...] = ()) -> list[str]:
    """Lines of a plain table: columns padded to their widest cell (``right``: right-aligned), two
    spaces apart; the last column wraps (:func:`wrap_cell`) so lines fit ``width`` (None: never)."""
    fixed = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    lead = sum(fixed) + 2 * len(fixed)
    room = None if width is None else max(MIN_WRAP, width - lead)

    def cells(row: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, fixed)))

    out = []
    for row in [header, *rows]:
        last = [row[-1]] if room is None else wrap_cell(row[-1], room)
        out.append((cells(row[:-1]) + "  " + last[0]).rstrip())
        out += [(" " * lead + more).rstrip() for more in last[1:]]
    return out


def command_lines(command: str, width: int | None, indent: str = "  ") -> list[str]:
    """A shell command broken between its words into lines within ``width`` (a word longer than that
    gets a line of its own), each but the last ending in `` \\``, so the lines, pasted into a shell,
    run as the one command; indented by ``indent`` (the continuation lines by two more spaces)."""
    import shlex

    if width is None:
        return [indent + command]
    words = [shlex.quote(w) for w in shlex.split(command)]
    lines: list[str] = []
    line = ""
    for w in words:
        lead = indent if not lines else indent + "  "
        if line and len(lead) + len(line) + 1 + len(w) + 2 > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    lines.append(line)
    return [(indent if i == 0 else indent + "  ") + text + (" \\" if i < len(lines) - 1 else "")
            for i, text in enumerate(lines)]


def _paragraph(text: str, width: int | None) -> list[str]:
    return [text] if width is None else textwrap.wrap(text, width, break_on_hyphens=False) or [""]


def _text_rows(lb: Leaderboard, board: Board, wide: bool) -> tuple[list[str], list[list[str]]]:
    metrics = columns(lb) if wide else [lb.sort_by]
    head = ["#", *metrics, "vs best", "seeds", "system"]
    rows = [["-" if row.human else str(row.rank), *(fmt_metric(row.metrics.get(m)) for m in metrics), mark(row),
             str(row.n_seeds), row.system + (" (probe)" if row.probe else "")
             + f" [{row.training}; {row.device}]"]
            for row in board.rows]
    return head, rows


def text(lb: Leaderboard, *, width: int | None = 80, wide: bool = False) -> str:
    """The leaderboard as plain text lines of at most ``width`` characters.

    Per benchmark: a title, then rank, the sort metric (``wide``: every shown metric), vs best, seeds
    and the system label, which wraps onto indented lines (labels are never cut); then the validity
    line. ``wide=True`` or ``width=None``: nothing is wrapped.
    """
    width = None if wide else width
    out: list[str] = []
    for board in lb.boards:
        head, rows = _text_rows(lb, board, wide)
        out += [title(board), *text_table(head, rows, width=width, right=(0, len(head) - 2)), ""]
        v = board.validity or {}
        if v.get("commands"):  # commands as runnable lines (a shell joins the `\` continuations), not a paragraph
            out += [f"Benchmark validity: no {PROBE} probe evaluated; add it with:",
                    *(line for c in v["commands"] for line in command_lines(c, width)), ""]
        elif line := validity_line(board):
            out += [*_paragraph(line, width), ""]
        if line := verdict_line(board):
            out += [*_paragraph(line, width), ""]
    if lb.policies:
        out += ["Policies (means over the last logged steps)"]
        if wide:
            out += text_table(POLICY_HEADER, [policy_cells(p) for p in lb.policies], width=None)
        else:
            cells_ = [policy_cells(p) for p in lb.policies]
            head = ["method", "seed", "steps", "reward mean", "KL", "above reference", "policy, reward / loss"]
            rows = [[c[0], c[4], c[5], c[6], c[8], c[9], f"{c[2]}, {c[3]} on {c[1]}"] for c in cells_]
            out += text_table(head, rows, width=width, right=(1, 2, 3, 4, 5))
        out.append("")
    out += _paragraph(footer(lb) if lb.boards else f"No result records for split {lb.split}.", width)
    return "\n".join(out) + "\n"
