"""Build every shipped recipe on the real data in ../shared/data and record its size and stats.

Usage::

    python benchmarks/bench_recipes.py                 # all recipes with real data here
    python benchmarks/bench_recipes.py --recipes dnli winowhy

For each recipe: one plain build and one with validation and the learned validity figures
(``--validity fast``, the default, or ``full``; each into a fresh temporary folder, one
worker), wall-clock seconds of both, and the
manifest's counts, stats and validity figures. The
figures go to ``benchmarks/results/recipes-real-data.json``; ``python -m gradebench.docs``
renders them into the README's recipe-stats table beside the core paper's Table 11. The
great-expectations import is timed separately (once per process, paid by the first build
that validates).

The 1-minute load average is printed first: numbers taken while other processes run are slower.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = (REPO / ".." / "shared" / "data").resolve()
OUT = REPO / "benchmarks" / "results" / "recipes-real-data.json"

#: recipe -> (source below ../shared/data or None for the embedded default, resplit)
SOURCES: dict[str, tuple[str | None, tuple[int, int, int] | None]] = {
    "demo": (None, None),
    "esnli": ("esnli/eSNLI", (80, 10, 10)),
    "esnli-fixed": ("esnli/eSNLI", (80, 10, 10)),
    "esnli-human": ("esnli/eSNLI", (80, 10, 10)),
    "esnli-contrast": ("esnli/eSNLI", (80, 10, 10)),
    # its own premise-grouped splits (resplit_by: premise), read before any borrowing
    "esnli-contrast-v2": ("esnli/eSNLI", None),
    "dnli": ("dnli", None),
    "dnli-natural": ("dnli", None),
    "winowhy": ("winowhy", None),
    "chaosnli-snli": ("chaosnli/chaosNLI_v1.0/chaosNLI_snli.jsonl", None),
    "chaosnli-mnli": ("chaosnli/chaosNLI_v1.0/chaosNLI_mnli_m.jsonl", None),
    "anli": ("chaosnli/chaosNLI_v1.0/chaosNLI_alphanli.jsonl", None),
    "worldtree": ("worldtree/data", None),
}
#: no real file here: mnli (MultiNLI not staged), nli-table (user data), the response recipes
NO_REAL_DATA = {"mnli": "no MultiNLI file is staged here", "nli-table": "a user's own table",
                **{name: "no preference or ratings file is staged here" for name in
                   ("best-of-n", "multi-ratings", "multi-ratings-flat", "preference-pairs")}}


def _timed_build(name: str, source: str | None, resplit, validate: bool,
                 validity: str = "fast") -> tuple[float, object, dict]:
    """(wall seconds, result, validity timing): with ``validate``, the validity figures are
    measured right after the build (as ``gradebench build`` does) and timed on their own, in
    wall-clock and CPU seconds of this process (the machine may be shared; the strong ceiling's
    worker process, where one runs, is not counted in the CPU seconds)."""
    from gradebench.experiments.build import add_validity, build

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        result = build(name, source=source, out=tmp, resplit=resplit, workers=1, progress=False, validate=validate,
                       validity=False)
        timing: dict = {}
        if validate:
            t1, c1 = time.perf_counter(), time.process_time()
            result.validity = add_validity(Path(result.path), mode=validity)
            timing = {"seconds_validity": round(time.perf_counter() - t1, 2),
                      "cpu_seconds_validity": round(time.process_time() - c1, 2)}
        return time.perf_counter() - t0, result, timing


def measure(name: str, validity: str = "fast") -> dict:
    rel, resplit = SOURCES[name]
    source = None if rel is None else str(DATA / rel)
    if source is not None and not Path(source).exists():
        return {"recipe": name, "skipped": f"{source} is not here"}
    t_plain, _, _ = _timed_build(name, source, resplit, validate=False)
    t_valid, r, timing = _timed_build(name, source, resplit, validate=True, validity=validity)
    a = r.stats.get("all", {})
    return {
        "recipe": name,
        "source": rel or "embedded",
        "resplit": None if resplit is None else list(resplit),
        "fingerprint": r.fingerprint[:12],
        "splits": r.splits,
        "queries": sum(s["queries"] for s in r.splits.values()),
        "candidates": sum(s["candidates"] for s in r.splits.values()),
        "skip_counts": r.skipped,
        "ambiguity": a.get("ambiguity"),
        "score_range_mean": a.get("score_range_mean"),
        "ndcg@5": a.get("tier_ndcg@5"),
        "spearman": a.get("tier_spearman"),
        "list_sizes": a.get("list_sizes"),
        "grades": {g: v["candidates"] for g, v in a.get("grades", {}).items()},
        "shortcut_probes": a.get("shortcut_probes"),
        "entropy_mean": a.get("entropy_mean"),
        "validation": r.validation,
        "validity": r.validity,
        "seconds_build": round(t_plain, 2),
        "seconds_build_validated": round(t_valid, 2),
        **timing,
    }


def main(argv: list[str] | None = None) -> int:
    from gradebench.recipes.loader import recipe_names

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recipes", nargs="*", default=None)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--validity", choices=("fast", "full"), default="fast", help="mode of the validity figures")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print(f"load average (1 min): {os.getloadavg()[0]:.2f}", file=sys.stderr)
    t0 = time.perf_counter()
    import great_expectations  # noqa: F401

    ge_import = time.perf_counter() - t0
    print(f"great-expectations import: {ge_import:.2f} s", file=sys.stderr)
    names = args.recipes or recipe_names()
    rows = []
    for name in names:
        if name in NO_REAL_DATA:
            rows.append({"recipe": name, "skipped": NO_REAL_DATA[name]})
            continue
        row = measure(name, args.validity)
        rows.append(row)
        if "skipped" not in row:
            print(
                f"{name:15s} {row['queries']:6d} lists {row['candidates']:7d} candidates  "
                f"build {row['seconds_build']:6.2f} s  +validation {row['seconds_build_validated']:6.2f} s  "
                f"(validity {row['seconds_validity']:.2f} s, {row['cpu_seconds_validity']:.2f} s CPU)",
                file=sys.stderr,
            )
    previous = json.loads(args.out.read_text()) if args.out.is_file() and args.recipes else {"recipes": []}
    merged = {r["recipe"]: r for r in previous.get("recipes", [])}
    merged.update({r["recipe"]: r for r in rows})
    payload = {
        "great_expectations_import_seconds": round(ge_import, 2),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "recipes": [merged[k] for k in sorted(merged)],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
