"""``gradebench build | info | list``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from gradebench.cli.app import _emit, app, parse_resplit

@app.command()
def build(
    recipe: Annotated[str, typer.Argument(help="recipe name (see `gradebench list`) or path to a recipe YAML")],
    source: Annotated[Optional[str], typer.Option(help="local file/folder or base URL; default: the recipe's")] = None,
    out: Annotated[Path, typer.Option(help="output root")] = Path("gradebench-out"),
    limit: Annotated[Optional[int], typer.Option(help="read at most N source rows per split")] = None,
    resplit: Annotated[Optional[str], typer.Option(help="carve train/validation/test, e.g. 80/10/10")] = None,
    force: Annotated[bool, typer.Option(help="rebuild even if this fingerprint exists")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Build a graded benchmark into OUT/<recipe>/<fingerprint[:12]>/."""
    from gradebench.build.pipeline import build as build_api

    result = build_api(
        recipe,
        source=source,
        out=out,
        limit=limit,
        resplit=parse_resplit(resplit) if resplit else None,
        force=force,
        progress=None if not as_json else False,
    )
    if as_json:
        _emit(result.to_dict())
        return
    _print_build(result)


def _print_build(result) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    verb = "cached" if result.cached else "built"
    console.print(f"[bold]{result.recipe}[/bold] {verb} at [cyan]{result.path}[/cyan]")
    console.print(f"fingerprint {result.fingerprint}")
    t = Table("split", "queries", "candidates", "ambiguity", "score range", "tier NDCG@5", "tier Spearman")
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
    probes = result.stats.get("all", {}).get("shortcut_probes")
    if probes:
        console.print(
            "shortcut probes (0.5 = no signal): " + ", ".join(f"{k} {v:.3f}" for k, v in probes.items() if v is not None)
        )


@app.command()
def info(
    benchmark_dir: Annotated[Path, typer.Argument(help="a folder written by `gradebench build`")],
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Show a benchmark's manifest and stats."""
    from gradebench.build.info import info as info_api

    result = info_api(benchmark_dir)
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
    for name, t in a.get("tiers", {}).items():
        console.print(f"  tier {name}: {t}")
    if a.get("shortcut_probes"):
        console.print(f"  shortcut probes: {a['shortcut_probes']}")


@app.command("list")
def list_cmd(as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False) -> None:
    """List the shipped recipes."""
    from gradebench.catalog import list_recipes

    result = list_recipes()
    if as_json:
        _emit(result)
        return
    from rich.console import Console
    from rich.table import Table

    t = Table("recipe", "description", "formats", "license", show_lines=True)
    for r in result:
        t.add_row(f"{r['name']} v{r['version']}", r["description"], ", ".join(r["formats"]), r["license"])
    Console().print(t)


