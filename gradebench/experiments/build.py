"""``build()``: the engine's benchmark, then its learned validity figures (the public ``gradebench.build``).

The engine (:mod:`gradebench.benchmark.engine`) writes the data, the manifest and the card and
never trains anything. The validity figures train scorers, so they are measured here, after the
folder is complete, and added to its manifest and card through
:func:`~gradebench.benchmark.engine.update_manifest` (data files untouched). A cached folder
that lacks them (built with ``validity=False``, interrupted between the two steps, or built
before they existed) gets them the same way, so a re-run always ends in the same folder.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gradebench.benchmark.engine import BuildResult
from gradebench.errors import InvalidArgumentError
from gradebench.paths import OUT_DIR


def build(
    recipe,
    *,
    source: str | Path | None = None,
    out: str | Path = OUT_DIR,
    limit: int | None = None,
    resplit: Sequence[int] | str | None = None,
    force: bool = False,
    workers: int | None = None,
    progress: bool | None = None,
    validate: bool = True,
    validity: bool = True,
) -> BuildResult:
    """Build a graded benchmark and measure how far shortcuts get on it.

    Args are those of :func:`gradebench.benchmark.engine.build` (``resplit``: ``(80, 10, 10)`` or
    ``"80/10/10"``), plus:
        validity: train a query-blind probe and a lexical ranker on the train split and record
            how far they get on the test split (:mod:`gradebench.experiments.validity`).

    Returns:
        :class:`~gradebench.benchmark.engine.BuildResult`, with ``validity`` set when asked for.
    """
    from gradebench.benchmark import engine

    if not isinstance(validity, bool):
        raise InvalidArgumentError(f"validity must be True or False, got {validity!r}", hint="pass validity=True")
    result = engine.build(
        recipe, source=source, out=out, limit=limit, resplit=resplit, force=force, workers=workers,
        progress=progress, validate=validate,
    )
    if validity and result.validity is None:
        result.validity = add_validity(Path(result.path))
    return result


def add_validity(folder: Path) -> dict:
    """Measure the validity figures of a built folder and write them into its manifest and card."""
    from gradebench.benchmark.engine import builder_of, update_manifest
    from gradebench.benchmark.manifest import read_manifest
    from gradebench.experiments.validity import validity_figures

    m = read_manifest(folder)
    files = [n for v in m["splits"].values() for n in v["files"]]
    figures = validity_figures(folder, files, benchmark=m["recipe"]["name"], fingerprint=m["fingerprint"])
    update_manifest(folder, builder_of(m), {"validity": figures})
    return figures


#: builds named in full in the message of :func:`check_benchmark_folder` (the rest are counted)
LISTED_BUILDS = 5


def check_benchmark_folder(path: str | Path) -> Path:
    """``path``, unless it holds builds instead of being one: then a :class:`BenchmarkError` listing them.

    ``gradebench build`` writes ``<out>/<recipe>/<fingerprint[:12]>/``. The recipe folder above a
    build (``gradebench-out/esnli-human``) and the output root (``gradebench-out``) have no manifest
    of their own; given one of them, this names the builds inside (complete ones, with a manifest)
    so the message says which folder to pass, instead of suggesting an interrupted build. Anything
    else (a build, a missing or truly incomplete folder) is left to the benchmark reader.

    Raises:
        BenchmarkError: ``path`` is a recipe folder or an output root holding builds.
    """
    from gradebench.benchmark.format import MANIFEST
    from gradebench.errors import BenchmarkError

    p = Path(path)
    if not p.is_dir() or (p / MANIFEST).exists():
        return p

    def builds(folder: Path) -> list[Path]:
        return sorted(d for d in folder.iterdir() if d.is_dir() and (d / MANIFEST).is_file())

    found, kind = builds(p), "a recipe folder"
    if not found:
        found = [b for d in sorted(p.iterdir()) if d.is_dir() for b in builds(d)]
        kind = "an output folder"
    if not found:
        return p
    names = [b.relative_to(p).as_posix() for b in found]
    listed = ", ".join(names[:LISTED_BUILDS]) + (f" and {len(names) - LISTED_BUILDS} more" if len(names) > LISTED_BUILDS
                                                   else "")
    what = f"holds {len(names)} builds: {listed}; pass one of them" if len(names) > 1 else \
        f"holds 1 build: {listed}; pass it"
    raise BenchmarkError(f"{kind} of `gradebench build`, not a benchmark: it {what}", path=p,
                         hint=f"e.g. {p / names[0]}")
