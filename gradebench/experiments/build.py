"""``build()``: the engine's benchmark, then its learned validity figures (the public ``gradebench.build``).

The engine (:mod:`gradebench.benchmark.engine`) writes the data, the manifest and the card and
never trains anything. The validity figures train scorers, so they are measured here: on a
validated build, while the engine validates the written data (the engine's ``alongside`` hook:
the slowest figure in a worker process, the others once validation has passed), and the folder
is finished with them in its manifest and card. A build without validation, or a cached folder
that lacks them (built with ``validity=False``, or built before they existed), or whose figures
are stale (an older figures version, or ``fast`` ones when ``full`` is asked for), gets them
after the folder is complete, through :func:`~gradebench.benchmark.engine.update_manifest`
(data files untouched). Either way the folder ends the same, so a re-run always ends in the
same folder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
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
    engine: str = "local",
    ray_address: str | None = None,
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
    from gradebench.benchmark import engine as build_engine
    from gradebench.experiments.validity import is_stale

    mode = validity_mode(validity)
    # with validation on, the figures are measured while the data is validated (their slowest
    # piece in a worker process), before the folder is finished; else after, as for a cached folder
    result = build_engine.build(
        recipe, source=source, out=out, limit=limit, resplit=resplit, force=force, workers=workers,
        progress=progress, validate=validate, engine=engine, ray_address=ray_address,
        alongside=None if mode is None else lambda folder, manifest: _measuring(folder, manifest, mode),
    )
    if mode is not None and is_stale(result.validity, mode):
        import time

        t0 = time.perf_counter()
        with build_engine.status(progress, "measuring the validity figures"):
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


@contextmanager
def _measuring(folder: Path, manifest: dict, mode: str) -> Iterator[Callable[[], dict]]:
    """The engine's ``alongside`` work: the validity figures of an unfinished folder, as a manifest key."""
    from gradebench.benchmark.engine import builder_of
    from gradebench.experiments.validity import measuring

    files = [n for v in manifest["splits"].values() for n in v["files"]]
    with measuring(folder, files, benchmark=manifest["recipe"]["name"], fingerprint=manifest["fingerprint"],
                   query_label=getattr(builder_of(manifest), "query_label", None), mode=mode) as finish:
        yield lambda: {"validity": finish()}


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

