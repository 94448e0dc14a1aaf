"""``gradebench build | info | list``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from gradebench.cli.app import _emit, app, parse_resplit, pip_extra, table
from gradebench.paths import OUT_DIR


@app.command()
def build(
    recipe: Annotated[str, typer.Argument(help="recipe name (see `gradebench list`) or path to a recipe YAML")],
    source: Annotated[Optional[str], typer.Option(help="local file/folder or base URL",
                                                  show_default="the recipe's")] = None,
    out: Annotated[Path, typer.Option(help="output root")] = OUT_DIR,
    limit: Annotated[Optional[int], typer.Option(help="read at most N source rows per split",
                                                 show_default="all rows")] = None,
    resplit: Annotated[Optional[str], typer.Option(help="carve train/validation/test, e.g. 80/10/10",
                                                   show_default="the recipe's splits")] = None,
    force: Annotated[bool, typer.Option(help="rebuild even if this fingerprint exists")] = False,
    validate: Annotated[
        bool, typer.Option("--validate/--no-validate", help="check the result against its expectation suite")
    ] = True,
    validity: Annotated[
        Optional[str],
        typer.Option("--validity", metavar="fast|full",
                     help="measure learned shortcut probes and lexical ceilings: fast, or full (the strong ceiling "
                          "on every train list, tuned)", show_default="fast"),
    ] = None,
    no_validity: Annotated[bool, typer.Option("--no-validity", help="skip the validity figures")] = False,
    map_: Annotated[
        Optional[list[str]],
        typer.Option("--map", help="column roles of table sources (nli-table, preference and rating "
                     "importers), e.g. --map premise=sentence1,label=gold",
                     show_default="the recipe's columns"),
    ] = None,
    workers: Annotated[Optional[int], typer.Option(
        "--workers", min=1, metavar="N", help="worker processes (the output never depends on it)",
        show_default="the cores this process may use")] = None,
    engine: Annotated[str, typer.Option(
        "--engine", metavar="local|ray", help="where lists are made: worker processes here, or Ray tasks "
        f"({pip_extra('ray')}); the same files either way")] = "local",
    ray_address: Annotated[Optional[str], typer.Option(
        "--ray-address", metavar="ADDR", help="the Ray cluster of --engine ray",
        show_default="RAY_ADDRESS, else a local instance")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
    timings: Annotated[bool, typer.Option("--timings", help="report wall seconds per build phase and "
                                          "this process's CPU seconds, main.cpu "
                                          "(with --json: a 'timings' key)")] = False,
) -> None:
    """Build a graded benchmark into OUT/<recipe>/<fingerprint[:12]>/."""
    from gradebench.benchmark.workers import use_system_memory_pool
    from gradebench.experiments.build import build as build_api
    from gradebench.recipes.loader import load_recipe, with_overrides

    use_system_memory_pool()
    _check_workers(workers)

    mode = validity_option(validity, no_validity)
    r = load_recipe(recipe)
    if map_:
        r = with_overrides(r, parse_map(map_))
    result = build_api(
        r,
        source=source,
        out=out,
        limit=limit,
        resplit=parse_resplit(resplit) if resplit else None,
        force=force,
        progress=None if not as_json else False,
        validate=validate,
        validity=mode,
        workers=workers,
        engine=engine,
        ray_address=ray_address,
    )
    from gradebench.experiments.validity import warning_lines

    if not result.cached:  # a cached build's figures were warned about when it was built (its card keeps them)
        for note in warning_lines(result.validity):
            sys.stderr.write(wrap(f"gradebench: warning: {note}") + "\n")
        for note, command in empty_split_notes(result, resplit or r.resplit):
            sys.stderr.write(wrap(f"gradebench: warning: {note}") + "\n" + command_block(command) + "\n")
    if as_json:
        _emit(result.to_dict(timings=timings))
        return
    _print_build(result)
    if timings:
        print(timings_text(result.timings, cached=result.cached))


def empty_split_notes(result, resplit: str | tuple[int, int, int] | list[int] | None) -> list[tuple[str, str]]:
    """``(note, command)`` when splits the build should have are empty: with a resplit, each split of
    a non-zero share; without, ``test`` (the split ``gradebench eval`` scores by default). The
    command scores a split the build has."""
    import shlex

    if isinstance(resplit, str):
        resplit = parse_resplit(resplit)
    shares = dict(zip(("train", "validation", "test"), resplit)) if resplit else {"test": 1}
    have = [s for s, v in result.splits.items() if v.get("queries")]
    empty = [s for s, share in shares.items() if share and s not in have]
    if not empty or not have:
        return []
    lists = sum(result.splits[s]["queries"] for s in have)
    many = len(empty) > 1
    note = (f"split{'s' if many else ''} {' and '.join(empty)} {'are' if many else 'is'} empty: the source gave "
            f"{lists} list{'s' if lists != 1 else ''}, all in {', '.join(have)}. Build from more rows, or score "
            f"{have[0]} (`gradebench eval` scores test by default):")
    return [(note, shlex.join(["gradebench", "eval", "--benchmark", str(result.path), "--scorer", "bm25",
                               "--split", have[0]]))]


def command_block(command: str) -> str:
    """``command`` indented, broken into ``\\``-continued lines within the terminal's width (pasted
    into a shell, the lines run as the one command)."""
    from gradebench.cli.app import terminal_width
    from gradebench.experiments.render import command_lines

    return "\n".join(command_lines(command, terminal_width()))


def wrap(text: str, width: int | None = None) -> str:
    """``text`` broken at spaces into lines of at most ``width`` columns (the terminal's, else 80),
    the lines after the first indented by two spaces."""
    import textwrap

    from gradebench.cli.app import terminal_width

    return textwrap.fill(text, width=width or terminal_width(), subsequent_indent="  ", break_long_words=False,
                         break_on_hyphens=False)


def timings_text(timings: dict[str, float], *, cached: bool, width: int | None = None) -> str:
    """``--timings``' lines: ``timings (s): read 0.03, select 5.07, ...`` within ``width`` columns, never
    breaking a phase from its seconds; a cached build says that nothing was built."""
    from gradebench.cli.app import terminal_width

    if cached or not timings:
        return "timings (s): none, the build was cached (--force rebuilds it)"
    width = width or terminal_width()
    lines, line = [], "timings (s):"
    for i, (k, v) in enumerate(timings.items()):
        item = f"{k} {v:.2f}" + ("," if i < len(timings) - 1 else "")
        if len(line) + 1 + len(item) > width and line.strip():
            lines.append(line)
            line = "  " + item
        else:
            line += " " + item
    return "\n".join([*lines, line])


def validity_option(validity: str | None, no_validity: bool) -> str | bool:
    """``--validity MODE`` / ``--no-validity`` -> the ``validity`` argument of the build API."""
    from gradebench.errors import InvalidArgumentError
    from gradebench.experiments.validity import check_mode

    if no_validity:
        if validity is not None:
            raise InvalidArgumentError(f"--no-validity conflicts with --validity {validity}",
                                       hint="give one of them")
        return False
    return check_mode(validity or "fast")


def parse_map(values: list[str]) -> dict[str, str]:
    """``["premise=sentence1,label=gold", ...]`` -> ``{"columns.premise": "sentence1", ...}``."""
    from gradebench.errors import InvalidArgumentError

    out: dict[str, str] = {}
    for value in values:
        for item in value.split(","):
            role, sep, column = item.partition("=")
            if not sep or not role.strip() or not column.strip():
                raise InvalidArgumentError(
                    f"--map {item!r} is not ROLE=COLUMN", hint="e.g. --map premise=sentence1,hypothesis=sentence2"
                )
            out[f"columns.{role.strip()}"] = column.strip()
    return out


def _print_build(result) -> None:
    from rich.console import Console

    console = Console()
    verb = "cached" if result.cached else "built"
    console.print(f"[bold]{result.recipe}[/bold] {verb} at [cyan]{result.path}[/cyan]")
    console.print(f"fingerprint {result.fingerprint}")
    t = table("split", "queries", "candidates", "ambiguity", "score\nrange", "tier\nNDCG@5", "tier\nSpearman",
              numeric=True)
    for split, v in result.splits.items():
        s = result.stats.get(split, {})
        t.add_row(
            split, str(v["queries"]), str(v["candidates"]),
            *(("n/a" if s.get(k) is None else f"{s[k]:.3f}") for k in
              ("ambiguity", "score_range_mean", "tier_ndcg@5", "tier_spearman")),
        )
    console.print(t)
    if result.skipped:
        console.print("skipped: " + ", ".join(f"{k} {v}" for k, v in result.skipped.items()))
    if result.repaired:
        console.print(f"[yellow]rebuilt: the cached folder could not be trusted ({result.repaired})[/yellow]")
    if result.validity and "query_blind" in result.validity:
        from gradebench.benchmark.card import current_figures

        v = current_figures(result.validity)
        names = (("query_blind", "query-blind"), ("label_aware", "label-aware"), ("bm25", "bm25"),
                 ("lexical_ceiling_dense", "lexical ceiling (dense)"),
                 ("lexical_ceiling_strong", "lexical ceiling (strong)"))
        parts = [f"{name} {v[key]['pairwise_agreement']:.3f}" for key, name in names if v.get(key)]
        console.print("validity (pairwise agreement on held-out lists, 0.5 = chance): " + ", ".join(parts))
    if result.validation is not None:
        v = result.validation
        console.print(f"validation: {'passed' if v.get('success') else 'FAILED'} ({v.get('expectations', '?')} expectations)")
    probes = result.stats.get("all", {}).get("shortcut_probes")
    if probes:
        from gradebench.benchmark.card import probes_in_order

        console.print("shortcut probes (0.5 = no signal): " + ", ".join(
            f"{k} {v:.3f}" for k, v in probes_in_order(probes) if v is not None))


@app.command()
def info(
    benchmark_dir: Annotated[Path, typer.Argument(help="a folder written by `gradebench build`")],
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Show a benchmark's manifest and stats."""
    from gradebench.benchmark.info import info as info_api
    from gradebench.experiments.build import check_benchmark_folder

    result = info_api(check_benchmark_folder(benchmark_dir))
    if as_json:
        _emit(result)
        return
    from rich.console import Console

    console = Console()
    console.print(f"[bold]{result['recipe']['name']}[/bold] v{result['recipe']['version']} at {result['path']}")
    console.print(f"fingerprint {result['fingerprint']}")
    for split, v in result["splits"].items():
        console.print(f"  {split}: {v['queries']} queries, {v['candidates']} candidates")
    a = result["stats"].get("all", {})
    for k in ("ambiguity", "score_range_mean", "tier_ndcg@3", "tier_ndcg@5", "tier_spearman"):
        if k in a:
            console.print(f"  {k}: {a[k]}")
    if a.get("tiers"):
        console.print(_tier_table(a["tiers"]))
    if a.get("shortcut_probes"):
        from rich.padding import Padding

        from gradebench.benchmark.card import probes_in_order

        console.print(Padding("shortcut probes (0.5 = no signal): " + ", ".join(
            f"{k} {v:.3f}" for k, v in probes_in_order(a["shortcut_probes"]) if v is not None), (0, 0, 0, 2)))


#: (stats key, column header) of the tier table of `gradebench info`
TIER_COLUMNS = (("relevance", "grade"), ("candidates", "candidates"), ("score_mean", "score\nmean"),
                ("score_min", "score\nmin"), ("score_max", "score\nmax"), ("words_mean", "words\nmean"),
                ("query_overlap_mean", "query\noverlap"), ("human_share", "human\nshare"))


def _tier_table(tiers: dict) -> object:
    t = table("tier", *(head for _, head in TIER_COLUMNS), numeric=True)
    for name, stats in tiers.items():
        cells = [stats.get(key) for key, _ in TIER_COLUMNS]
        t.add_row(name, *("n/a" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v) for v in cells))
    return t


@app.command("list")
def list_cmd(
    wide: Annotated[bool, typer.Option("--wide", help="also show each recipe's description, formats and license")]
    = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """List the shipped recipes (name, builder, grades; --wide for the rest)."""
    from gradebench.recipes.catalog import list_recipes

    result = list_recipes()
    if as_json:
        _emit(result)
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.padding import Padding

    console = Console()
    grades = {r["name"]: " > ".join(r["tiers"]) if r["tiers"] else "natural" for r in result}
    if not wide:
        t = table("recipe", "builder", "grades")
        for r in result:
            t.add_row(f"{r['name']} v{r['version']}", r["builder"], grades[r["name"]])
        console.print(t)
        console.print("descriptions, formats and licenses: gradebench list --wide (or --json)")
        return
    for r in result:  # one block per recipe: wraps at any width, cuts nothing
        console.print(f"[bold]{r['name']} v{r['version']}[/bold]  builder {r['builder']}, grades {grades[r['name']]}")
        for text in (r["description"], f"formats: {', '.join(r['formats'])}", f"license: {r['license']}"):
            console.print(Padding(escape(" ".join(text.split())), (0, 0, 0, 2)))
        console.print()


@app.command()
def validate(
    benchmark_dir: Annotated[Path, typer.Argument(help="a folder written by `gradebench build`")],
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """Check a built benchmark against its expectation suite; exit 1 when an expectation fails."""
    from gradebench.benchmark.info import info as info_api
    from gradebench.benchmark.validate import validate_folder
    from gradebench.experiments.build import check_benchmark_folder

    info_api(check_benchmark_folder(benchmark_dir))  # one-line error for a folder that is not a benchmark
    report = validate_folder(benchmark_dir)
    if as_json:
        _emit(report.summary())
    else:
        from rich.console import Console

        console = Console()
        summary = report.summary()
        console.print(f"{benchmark_dir}: {'passed' if report.success else 'FAILED'}")
        for f in summary.get("failures", []):
            console.print(f"  {f}")
    if not report.success:
        raise typer.Exit(1)


def _check_workers(workers: int | None) -> None:
    """One warning line when ``--workers`` asks for more processes than this process has cores."""
    from gradebench.threads import available_cores

    cores = available_cores()
    if workers is not None and workers > cores:
        sys.stderr.write(f"gradebench: warning: --workers {workers} is more than the {cores} cores this "
                         f"process may use; the workers will share them\n")
