"""``gradebench validity``: a benchmark's validity figures, and a trained reader against its shortcuts."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from gradebench.cli.app import app, emit, table
from gradebench.errors import InvalidArgumentError


@app.command()
def validity(
    benchmark_dir: Annotated[Path, typer.Argument(help="a folder written by `gradebench build`")],
    run: Annotated[Optional[Path], typer.Option(
        "--run", help="a finished run folder of `gradebench train` on this benchmark: check it against "
        "the shortcut attackers", show_default="none: show the stored figures")] = None,
    record: Annotated[Optional[Path], typer.Option(
        "--record", help="instead of --run: an evaluation record (its JSON file) of this benchmark, with its "
        "predictions beside it: the reader's scores are read from them", show_default="none")] = None,
    split: Annotated[Optional[str], typer.Option(
        help="with --run: the held-out split to score; with --record: the record's split; alone, a "
        "held-out split other than test: measure the figures there (not stored), by tier pair too",
        show_default="test; with --record: the record's")] = None,
    validity_mode: Annotated[Optional[str], typer.Option(
        "--validity", metavar="fast|full", help="with --split alone: measure as `gradebench build --validity` "
        "does (full: the strong ceiling tuned)", show_default="the stored figures' mode, else fast")] = None,
    resamples: Annotated[int, typer.Option(help="bootstrap resamples of the margin's CI")] = 1000,
    measure: Annotated[bool, typer.Option(
        "--measure", help="measure the figures again and store them in the manifest and card")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Show how far shortcuts get on a benchmark; with --run (or --record), a reader's margin
    over the best one.

    Not `validate`, which checks a build against its expectation suite."""
    from gradebench.experiments.validity_check import check_validity
    from gradebench.experiments.validity_check import measure as measure_api

    if measure and (run is not None or record is not None):
        flag = "--run" if run is not None else "--record"
        raise InvalidArgumentError(f"--measure and {flag} conflict: give one",
                                   hint=f"--measure stores the figures; {flag} checks a reader against them")
    if measure and (split not in (None, "test") or validity_mode is not None):
        flag = f"--split {split}" if split not in (None, "test") else "--validity"
        raise InvalidArgumentError(f"--measure and {flag} conflict: --measure stores the test split's figures "
                                   "in their mode", hint=f"gradebench validity {shlex.quote(str(benchmark_dir))} "
                                   "--measure")
    if measure:
        result = measure_api(benchmark_dir)
    elif run is None and record is None and split in (None, "test"):
        result = check_validity(benchmark_dir, split=split, n_resamples=resamples, mode=validity_mode)
    else:
        from gradebench.cli.harness_cmds import with_progress

        result = with_progress(not as_json, lambda progress: check_validity(
            benchmark_dir, run=run, record=record, split=split, n_resamples=resamples, progress=progress,
            mode=validity_mode))
    if as_json:
        emit(result.to_dict())
        return
    _print(result)


def _print(result: Any) -> None:
    from rich.console import Console

    from gradebench.cli.build_cmds import command_block, wrap

    console = Console(highlight=False)
    b = result.benchmark
    say = lambda text: console.print(wrap(text), markup=False)  # noqa: E731
    say(f"{b['name']} ({b['fingerprint'][:12]}) at {b['path']}")
    if result.reader is None and result.lists is not None:  # measured on another split
        _print_split(console, say, result)
        return
    if result.reader is None:
        _print_figures(console, say, result.figures)
        for key, what in (("measure", "measure them:"),
                          ("check_reader", "check a reader against the shortcuts (train one, then check it):")):
            if result.commands.get(key):
                say(what)
                for command in result.commands[key]:
                    console.print(command_block(command), markup=False, soft_wrap=True)
        return
    lists = result.lists
    say(f"split {result.split}: {lists['n_queries']} lists; attackers trained on the train split"
        + (" (carved by query-id hash)" if lists["carved"] else ""))
    t = table("system", "pairwise\nagreement", "NDCG@5", numeric=True)
    r = result.reader
    t.add_row(f"reader: {r['scorer']}" + (f" + {r['loss']}" if r.get("loss") else ""),
              _fmt(r.get("pairwise_agreement")), _fmt(r.get("ndcg@5")))
    for f in result.attackers.values():
        t.add_row(f["name"], _fmt(f.get("pairwise_agreement")), _fmt(f.get("ndcg@5")))
    console.print(t)
    _print_pairs(console, say, result.tier_pairs)
    for metric, label in (("pairwise_agreement", "pairwise agreement"), ("ndcg@5", "NDCG@5")):
        m = result.margins.get(metric)
        if not m or m["value"] is None:
            continue
        ci = "" if m["ci_low"] is None else f" [{m['ci_low']:+.3f}, {m['ci_high']:+.3f}]"
        say(f"margin over the best attacker on {label} ({m['best_attacker_name']} {m['best_attacker_value']:.3f}): "
            f"{m['value']:+.3f}{ci}, {m['confidence']:.0%} paired bootstrap CI over {m['n_queries']} queries")
    missing = [what for flag, what in (("label_aware", "label-aware probe: the queries carry no label"),
                                       ("lexical_ceilings", "lexical ceilings: lightgbm is not installed"))
               if not lists[flag]]
    if missing:
        say("not measured: " + "; ".join(missing))
    say(f"verdict: {result.line}")


def _print_figures(console: Any, say: Any, v: dict | None) -> None:
    from gradebench.benchmark.card import VALIDITY_ROWS, current_figures

    if not v:
        say("no validity figures: built with --no-validity, or before they existed")
        return
    if "query_blind" not in v:
        say(f"validity figures not measured: {v.get('skipped', 'unknown reason')}")
        return
    v = current_figures(v)
    say(f"validity figures ({v.get('mode', 'fast')}, version {v.get('version', 1)}): trained on "
        f"{v['train_lists']} train lists, scored on {v['test_lists']} test lists"
        + (" (carved by query-id hash)" if v.get("carved") else "") + "; 0.5 = chance")
    t = table("attacker", "pairwise\nagreement", "NDCG@5", numeric=True)
    for key, name, _ in VALIDITY_ROWS:
        if v.get(key):
            t.add_row(name, _fmt(v[key]["pairwise_agreement"]), _fmt(v[key]["ndcg@5"]))
    console.print(t)
    if v.get("label_aware") is None and "label_aware" in v:
        say(f"no label-aware probe: {v.get('label_aware_skipped') or 'the queries carry no label'}")


#: rows of the per-tier-pair table printed (natural grades can make many pairs; ``--json`` has all)
MAX_PAIR_ROWS = 15


def _print_split(console: Any, say: Any, result: Any) -> None:
    lists = result.lists
    say(f"split {result.split}: {lists['n_queries']} lists; attackers trained on the train split"
        + (" (carved by query-id hash)" if lists["carved"] else "")
        + f"; {lists['mode']} figures measured now, not stored; 0.5 = chance")
    t = table("attacker", "pairwise\nagreement", "NDCG@5", numeric=True)
    for f in result.attackers.values():
        t.add_row(f["name"], _fmt(f.get("pairwise_agreement")), _fmt(f.get("ndcg@5")))
    console.print(t)
    _print_pairs(console, say, result.tier_pairs)
    for flag, what in (("label_aware", "label-aware probe: the queries carry no label"),
                       ("lexical_ceilings", "lexical ceilings: lightgbm is not installed")):
        if not lists[flag]:
            say(f"not measured: {what}")


def _print_pairs(console: Any, say: Any, tier_pairs: dict[str, dict[str, Any]]) -> None:
    """Each system's pairwise agreement per tier pair, a column each (the pairs with most pairs)."""
    keys = [k for k, by in tier_pairs.items() if by]
    if not keys:
        return
    say("pairwise agreement by tier pair (pooled over the pairs):")
    short = {"reader": "reader", "query_blind": "blind", "label_aware": "label", "bm25": "bm25",
             "lexical_ceiling_dense": "dense", "lexical_ceiling_strong": "strong"}
    t = table("pair", "pairs", *(short.get(k, k) for k in keys), numeric=True)
    first = tier_pairs[keys[0]]
    shown = set(sorted(first, key=lambda p: -first[p]["pairs"])[:MAX_PAIR_ROWS])  # the most pairs, in order
    for pair, v in first.items():
        if pair in shown:
            t.add_row(pair, str(v["pairs"]), *(_fmt(tier_pairs[k].get(pair, {}).get("agreement")) for k in keys))
    console.print(t)
    if len(first) > len(shown):
        say(f"{len(first) - len(shown)} more pairs of grades, with fewer pairs each: --json lists them all")


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"
