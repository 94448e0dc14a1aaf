"""``build()``: the engine's benchmark, then its learned validity figures (the public ``gradebench.build``).

The engine (:mod:`gradebench.benchmark.engine`) writes the data, the manifest and the card and
never trains anything. The validity figures train scorers, so they are measured here, after the
folder is complete, and added to its manifest and card through
:func:`~gradebench.benchmark.engine.update_manifest` (data files untouched). A cached folder
that lacks them (built with ``validity=False``, interrupted between the two steps, or built
before they existed), or whose figures are stale (an older figures version, or ``fast`` ones
when ``full`` is asked for), gets them the same way, so a re-run always ends in the same folder.
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
    validity: bool | str = True,
) -> BuildResult:
    """Build a graded benchmark and measure how far shortcuts get on it.

    Args are those of :func:`gradebench.benchmark.engine.build` (``resplit``: ``(80, 10, 10)`` or
    ``"80/10/10"``), plus:
        validity: train shortcut probes and lexical rankers on the train split and record how far
            they get on the test split (:mod:`gradebench.experiments.validity`): ``"fast"`` (or
            True), ``"full"`` (the strong lexical ceiling on every train list, tuned), or False.

    Returns:
        :class:`~gradebench.benchmark.engine.BuildResult`, with ``validity`` set when asked for.
    """
    from gradebench.benchmark import engine
    from gradebench.experiments.validity import is_stale

    mode = validity_mode(validity)
    result = engine.build(
        recipe, source=source, out=out, limit=limit, resplit=resplit, force=force, workers=workers,
        progress=progress, validate=validate,
    )
    if mode is not None and is_stale(result.validity, mode):
        import time

        t0 = time.perf_counter()
        result.validity = add_validity(Path(result.path), mode=mode)
        result.timings["validity"] = round(time.perf_counter() - t0, 3)
    return result


def validity_mode(validity: bool | str) -> str | None:
    """``validity`` as a mode: True -> ``"fast"``, False -> None, ``"fast"``/``"full"`` as they are."""
    if isinstance(validity, bool):
        return "fast" if validity else None
    if validity in ("fast", "full"):
        return str(validity)
    raise InvalidArgumentError(f"validity must be True, False, 'fast' or 'full', got {validity!r}", key="validity",
                               hint="pass validity=True (fast), validity='full' or validity=False")


def add_validity(folder: Path, *, mode: str = "fast") -> dict:
    """Measure the validity figures of a built folder and write them into its manifest and card.

    The label-aware probe reads the column the builder names as its queries' label
    (``query_label``, e.g. ``label`` for the tiered NLI builders); builders without one get none.
    """
    from gradebench.benchmark.engine import builder_of, update_manifest
    from gradebench.benchmark.manifest import read_manifest
    from gradebench.experiments.validity import validity_figures

    m = read_manifest(folder)
    builder = builder_of(m)
    files = [n for v in m["splits"].values() for n in v["files"]]
    figures = validity_figures(folder, files, benchmark=m["recipe"]["name"], fingerprint=m["fingerprint"],
                               query_label=getattr(builder, "query_label", None), mode=mode)
    update_manifest(folder, builder, {"validity": figures})
    return figures


def check_benchmark_folder(path: str | Path) -> Path:
    """``path``, unless it holds builds instead of being one (see :func:`gradebench.benchmark.manifest.builds_inside`)."""
    from gradebench.benchmark.manifest import refuse_builds_inside

    refuse_builds_inside(Path(path))
    return Path(path)

