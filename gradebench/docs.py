"""Generated documentation: README tables rendered from the code so they cannot drift.

``python -m gradebench.docs`` rewrites the blocks between ``<!-- BEGIN name -->`` and
``<!-- END name -->`` in README.md; a test fails when the README is out of date.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from gradebench.recipes.catalog import list_recipes


def recipes_table() -> str:
    lines = [
        "| recipe | builder | grades | scores | source formats | license |",
        "|---|---|---|---|---|---|",
    ]
    default = {"download": "verified download", "embedded": "embedded", "path": "--source required"}
    for r in list_recipes():
        grades = " > ".join(r["tiers"]) if r["tiers"] else "natural"
        lines.append(
            f"| `{r['name']}` v{r['version']} | {r['builder']} | {grades} | {r['scoring']} | "
            f"{', '.join(r['formats'])} ({default[r['default_source']]} by default) | {r['license'].splitlines()[0]} |"
        )
    return "\n".join(lines)


#: the core paper's Table 11 (seeds/000): graded datasets built the paper's way
PAPER_TABLE11 = {
    "esnli": "SNLI: 698, 54%, 0.709, 0.9861",
    "dnli": "δ-NLI: 700, 78%, 0.716, 0.9928",
    "mnli": "MultiNLI: 700, 56%, 0.714, 0.9887",
}
STATS_FILE = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "recipes-real-data.json"


def _f(x, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def recipe_stats_table() -> str:
    """Sizes and stats of every recipe built on the real data here (benchmarks/bench_recipes.py)."""
    import json

    if not STATS_FILE.is_file():
        return "(run `python benchmarks/bench_recipes.py` to measure)"
    data = json.loads(STATS_FILE.read_text(encoding="utf-8"))
    lines = [
        "| recipe | source | lists | candidates | list sizes | ambiguity | score range | score-grade NDCG@5 "
        "| probes: length / overlap / authorship "
        "| build s (+validation, validity) | paper Table 11 (size, ambiguity, range, NDCG@5) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in data["recipes"]:
        name = r["recipe"]
        if "skipped" in r:
            lines.append(f"| `{name}` | – | – | – | – | – | – | – | – | – | {PAPER_TABLE11.get(name, '')} ({r['skipped']}) |")
            continue
        sizes = r.get("list_sizes") or {}
        ks = sorted(int(k) for k in sizes)
        size_text = str(ks[0]) if len(ks) == 1 else f"{ks[0]}–{ks[-1]}" if ks else "–"
        p = r.get("shortcut_probes") or {}
        probes = " / ".join(_f(p.get(k)) for k in ("length", "query_overlap", "human_authorship"))
        amb = r.get("ambiguity")
        lines.append(
            f"| `{name}` | {r['source']} | {r['queries']:,} | {r['candidates']:,} | {size_text} | "
            f"{'–' if amb is None else f'{100 * amb:.1f}%'} | {_f(r.get('score_range_mean'))} | {_f(r.get('ndcg@5'), 4)} | "
            f"{probes} | {r['seconds_build']:.1f} ({r['seconds_build_validated']:.1f}) | {PAPER_TABLE11.get(name, '')} |"
        )
    return "\n".join(lines)


def validity_table() -> str:
    """The learned validity figures of every recipe built on the real data here (benchmarks/bench_recipes.py)."""
    import json

    from gradebench.benchmark.card import current_figures

    if not STATS_FILE.is_file():
        return "(run `python benchmarks/bench_recipes.py` to measure)"
    data = json.loads(STATS_FILE.read_text(encoding="utf-8"))
    keys = ("query_blind", "label_aware", "bm25", "lexical_ceiling_dense", "lexical_ceiling_strong")
    lines = [
        "| recipe | query label | query-blind | label-aware | BM25 | lexical ceiling, dense | lexical ceiling, strong "
        "| strong: train + tune lists | warns | validity s (CPU s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in data["recipes"]:
        v = current_figures(r.get("validity") or {})
        if "skipped" in r or "query_blind" not in v:
            why = r.get("skipped") or v.get("skipped") or "not measured"
            lines.append(f"| `{r['recipe']}` | – | – | – | – | – | – | – | – | – ({why}) |")
            continue
        cells = [_f((v.get(k) or {}).get("pairwise_agreement")) for k in keys]
        setup = v.get("lexical_ceiling_strong_setup") or {}
        lists = f"{setup['train_lists']:,} + {setup['tune_lists']:,}" if setup else "–"
        warns = ", ".join(name for key, name, limit in (
            ("query_blind", "query-blind", v.get("warn_query_blind")),
            ("label_aware", "label-aware", v.get("warn_label_aware")),
            ("lexical_ceiling_strong", "strong", v.get("warn_lexical_ceiling_strong")),
        ) if v.get(key) and limit is not None and v[key]["pairwise_agreement"] > limit) or "–"
        secs = (f"{r['seconds_validity']:.1f} ({r['cpu_seconds_validity']:.1f})" if "seconds_validity" in r else "–")
        lines.append(
            f"| `{r['recipe']}` | {v.get('query_label') or '–'} | " + " | ".join(cells) + f" | {lists} | {warns} | {secs} |"
        )
    return "\n".join(lines)


def losses_table() -> str:
    from gradebench.losses import loss_table

    return loss_table().strip()


def scorers_table() -> str:
    from gradebench.scorers import scorer_table

    lines = ["| scorer | kind | trains | default loss | what it is | config (defaults) |", "|---|---|---|---|---|---|"]
    for r in scorer_table():
        cfg = ", ".join(f"`{k}={v!r}`" for k, v in r["config"].items()) or "—"
        lines.append(
            f"| `{r['name']}` v{r['version']} | {r['kind']} | {'yes' if r['trainable'] else 'no'} | "
            f"{r['default_loss'] or '—'} | {r['summary']} | {cfg} |"
        )
    return "\n".join(lines)


#: the committed records the README's result tables are rendered from
RESULTS_DIR = Path(__file__).resolve().parents[1] / "leaderboard" / "results"
#: the sources of issue 20's grids (recipes/experiments/every-source-*.yaml), in the README's order
EVERY_SOURCE = ("dnli", "dnli-natural", "winowhy", "chaosnli-snli", "chaosnli-mnli", "anli", "worldtree")


def _cell(row, metric: str = "pairwise_agreement") -> str:
    if row is None:
        return "–"
    m = row.metrics[metric]
    return f"{m['value']:.3f} [{m['ci_low']:.3f}, {m['ci_high']:.3f}]"


def every_source_table() -> str:
    """Pairwise agreement on the test split of every real-data source (the committed records of
    every-source-hashed.yaml and every-source-cross-encoder.yaml), per system family."""
    from gradebench.experiments.leaderboard import leaderboard

    lines = [
        "| benchmark | test lists | random | BM25 | query-blind | LambdaMART | strong lexical "
        "| hashed-mlp, best loss | cross-encoder, best loss | human ceiling (headroom) | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    boards = {b.benchmark: b for b in leaderboard(RESULTS_DIR, sort_by="pairwise_agreement").boards}
    for name in EVERY_SOURCE:
        board = boards.get(name)
        if board is None:
            lines.append(f"| `{name}` | – | – | – | – | – | – | – | (no records) | – | – |")
            continue
        rows = [r for r in board.rows if r.options is None or r.options.get("list_size") is None]
        own = [r for r in rows if "(trained on" not in r.system]

        def first(scorer: str):
            return next((r for r in own if r.scorer == scorer), None)

        best = {s: first(s) for s in ("random", "bm25", "query-blind", "lambdamart", "lexical-gbdt",
                                     "hashed-mlp", "cross-encoder")}
        cells = [_cell(best[s]) for s in ("random", "bm25", "query-blind", "lambdamart", "lexical-gbdt")]
        for s in ("hashed-mlp", "cross-encoder"):
            r = best[s]
            cells.append("–" if r is None else f"{_cell(r)} {r.loss}, {r.n_seeds} seed{'s' if r.n_seeds > 1 else ''}")
        cells += _ceiling_and_verdict(board)
        lines.append(f"| `{name}` | {board.rows[0].n_queries:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _ceiling_and_verdict(board) -> list[str]:
    """The human ceiling with its headroom over the best system (``gradebench human``; – where the
    source has no split-half votes) and the board's validity verdict, shortened."""
    v = (board.validity or {}).get("verdict") or {}
    human = next((r for r in board.rows if r.human), None)
    ceiling = "–" if human is None else f"{_cell(human)} ({v['headroom']:+.3f})"
    m = v.get("margin") or {}
    line = v.get("line", "")
    if line.startswith("readers beat"):
        short = f"readers +{m['value']:.3f} [{m['ci_low']:.3f}, {m['ci_high']:.3f}]"
    elif line.startswith("solved by a shortcut"):
        short = f"shortcut ({v['best_shortcut']['name']})"
    elif line.startswith("not shown"):
        short = f"not shown ({m['value']:+.3f} [{m['ci_low']:.3f}, {m['ci_high']:.3f}])"
    else:
        short = "–"
    return [ceiling, short]


#: the two rewards it compares (the first is the ranking one)
POLICY_PAIR = ("hashed-mlp + listnet", "hashed-mlp + mse")


def reproduction_summary_table() -> str:
    """The verdict per claim: the summary table of the committed REPRODUCTION.md (a test checks that
    file is what ``gradebench report`` writes from the committed records)."""
    path = Path(__file__).resolve().parents[1] / "REPRODUCTION.md"
    if not path.is_file():
        return "(run `gradebench report --results-dir leaderboard/results --out REPRODUCTION.md`)"
    lines = path.read_text(encoding="utf-8").splitlines()
    rest = lines[lines.index("## Summary") + 1:]
    n = next(i for i, ln in enumerate(rest) if ln.startswith("|"))
    table = []
    for ln in rest[n:]:
        if not ln.startswith("|"):
            break
        table.append(ln)
    return "\n".join(table)


def policy_runs_table() -> str:
    """The judged GRPO runs on esnli-human (recipes/experiments/esnli-human-policy.sh), one row each."""
    from gradebench.experiments.policy_report import policy_rows, runs_table

    rows = policy_rows(RESULTS_DIR, benchmark="esnli-human")
    return runs_table(rows) if rows else "(run `bash recipes/experiments/esnli-human-policy.sh` to measure)"


def policy_paired_table() -> str:
    """Listnet vs mse reward, seed by seed, on the judged GRPO runs of esnli-human."""
    from gradebench.experiments.policy_report import paired_table, policy_rows

    rows = policy_rows(RESULTS_DIR, benchmark="esnli-human")
    return paired_table(rows, *POLICY_PAIR) if rows else "(run `bash recipes/experiments/esnli-human-policy.sh`)"


def policy_curves_table() -> str:
    """The mean reward, judge and KL curves per reward, by decile of the steps (esnli-human GRPO runs)."""
    from gradebench.experiments.policy_report import curves_table, policy_rows

    rows = policy_rows(RESULTS_DIR, benchmark="esnli-human")
    return curves_table(rows) if rows else "(run `bash recipes/experiments/esnli-human-policy.sh`)"


BUILD_FILE = STATS_FILE.parent / "build-throughput.json"


def build_throughput_table() -> str:
    """The build rows of the performance section, from benchmarks/bench_build.py's last output."""
    import json

    if not BUILD_FILE.is_file():
        return "(run `python benchmarks/bench_build.py --pairs 500000` to measure)"
    data = json.loads(BUILD_FILE.read_text(encoding="utf-8"))
    names = {"this checkout": f"this checkout ({data.get('commit') or '?'})",
             "baseline": f"before ({data.get('baseline_commit') or '?'})"}
    lines = [
        f"`python benchmarks/bench_build.py --pairs {data['pairs']}"
        + (f" --repeat {data['repeat']}" if data["repeat"] > 1 else "")
        + "".join(f" --{k.replace('_', '-')}" for k in ("skip_dev", "skip_default") if data.get(k))
        + (" --baseline-pythonpath <checkout>`" if data.get("baseline_commit") else "`")
        + f", median of {data['repeat']}, started {data['started']} at load average "
        f"{' '.join(map(str, data['load_at_start']))} ({data['cores']} cores). Phases in wall seconds; "
        "`lists` is the time spent waiting on the workers; where the selection is streamed (`esnli`), "
        "`select` runs while the workers make lists, and `write` only appends their encoded row groups. "
        "Where the workers read the source (e-SNLI line files, 2 or more workers), `read` only indexes it. "
        "`main CPU` is the building process's own CPU seconds, the part no worker can take over; "
        "`CPU s` is the whole process tree's (the build, its forkserver and its workers).",
        "",
        "| code | input | candidates | wall s | candidates/s | peak PSS MB | CPU s | read | select | lists "
        "| write | stats | validation | validity | main CPU |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in data["rows"]:
        ph = r["phases"] or {}
        # a phase the code did not time is "–" (an older checkout has no main.cpu: 0 in the JSON)
        cells = " | ".join(f"{ph[k]:.2f}" if k in ph and (ph[k] or k != "main.cpu") else "–"
                           for k in ("read", "select", "make_lists", "write", "stats", "validation", "validity",
                                     "main.cpu"))
        short = "" if r["candidates"] >= r["expected_candidates"] else \
            f" (**{r['expected_candidates']:,} expected**)"
        cpu = f"{r['tree_cpu_s']:.1f}" if r.get("tree_cpu_s") else "–"
        lines.append(f"| {names.get(r['code'], r['code'])} | {r['input']} | {r['candidates']:,}{short} | "
                     f"{r['wall_s']:.2f} | {r['candidates_per_s']:,} | {r['peak_pss_mb']:,} | {cpu} | {cells} |")
    ours = {}
    for r in data["rows"]:
        if r["code"] == "this checkout":
            kind = "dev" if r["input"] == "real dev split" else r["input"].rsplit(", ", 1)[-1]
            ours.setdefault(kind, r)
    lines += ["", "Targets (this checkout):"]
    dev, raw, default = ours.get("dev"), ours.get("raw"), ours.get("default")
    def verdict(*parts: tuple[str, bool]) -> str:
        return "; ".join(f"{what} {'met' if ok else '**not met**'}" for what, ok in parts)

    if raw:
        lines.append(f"- raw build >= 200,000 candidates/s at {raw['candidates']:,} candidates, <= 1,024 MB: "
                     f"{raw['candidates_per_s']:,}/s, {raw['peak_pss_mb']:,} MB: "
                     + verdict(("speed", raw["candidates_per_s"] >= 200_000), ("memory", raw["peak_pss_mb"] <= 1024)))
    if raw and default:
        lines.append(f"- default path within 1.5x of raw, <= 1,536 MB: {default['wall_s'] / raw['wall_s']:.2f}x, "
                     f"{default['peak_pss_mb']:,} MB: " + verdict(("time", default["wall_s"] <= 1.5 * raw["wall_s"]),
                                                                 ("memory", default["peak_pss_mb"] <= 1536)))
    if dev:
        lines.append(f"- real dev split (default path) < 5 s: {dev['wall_s']:.1f} s: " + verdict(("time", dev["wall_s"] < 5)))
    ceiling = data.get("machine_ceiling")
    for sc in data.get("scaling", []):
        if sc["code"] == "this checkout" and sc["engine"] == "local" and sc["workers"] == 2 and sc["efficiency"]:
            machine = "" if ceiling is None or ceiling["processes"] != 2 else (
                f" (this machine's own ceiling for 2 processes, measured in the same run: "
                f"{ceiling['efficiency']:.0%})")
            # met only where the medians' figure and the run-by-run pairs' median both reach it
            runs, paired = sc["efficiency_runs"], sc["efficiency_paired"]
            under = sum(r < 0.85 for r in runs)
            lines.append(f"- 1 -> 2 workers >= 85% efficiency: {sc['efficiency']:.0%} from the medians, "
                         f"{paired:.0%} paired run by run ({min(runs):.0%}-{max(runs):.0%}){machine}: "
                         + verdict(("efficiency", min(sc["efficiency"], paired) >= 0.85))
                         + (f" ({under} of {len(runs)} paired runs under 85%)" if under else ""))
    return "\n".join(lines)


BLOCKS = {
    "recipes": recipes_table,
    "recipe-stats": recipe_stats_table,
    "validity": validity_table,
    "losses": losses_table,
    "scorers": scorers_table,
    "every-source": every_source_table,
    "build-throughput": build_throughput_table,
    "reproduction-summary": reproduction_summary_table,
    "policy-runs": policy_runs_table,
    "policy-paired": policy_paired_table,
    "policy-curves": policy_curves_table,
}


def render(text: str) -> str:
    for name, fn in BLOCKS.items():
        pattern = re.compile(rf"(<!-- BEGIN {name} -->\n)(?:.*?\n)?(<!-- END {name} -->)", re.S)
        text = pattern.sub(lambda m, fn=fn: m.group(1) + fn() + "\n" + m.group(2), text)
    return text


def main() -> int:
    readme = Path(__file__).resolve().parents[1] / "README.md"
    old = readme.read_text(encoding="utf-8")
    new = render(old)
    if new != old:
        readme.write_text(new, encoding="utf-8")
        print(f"updated {readme}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
