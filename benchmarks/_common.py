"""What the hot-path benchmarks share: the load average, timed child processes, medians, a built
e-SNLI benchmark, and the JSON they write into ``benchmarks/results/``.

Every figure is the median of ``--repeat`` runs, each in a fresh Python process (what a user waits
for: interpreter start and imports included, reported apart as ``import_s`` where the child
measures them). A gradebench figure and its peer's are taken in the same run, alternating, so
the load of the machine weighs on both alike.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
DATA = REPO.parent / "shared" / "data" / "esnli" / "eSNLI"
FILES = ["s1", "s2", "labels", "preproc1_expl_1", "preproc1_expl_2", "preproc1_expl_3"]


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def header(what: str) -> dict[str, Any]:
    """Print and return the machine line: platform, cores, load average at the start."""
    info = {"benchmark": what, "platform": platform.platform(), "python": platform.python_version(),
            "cores": os.cpu_count(), "load_at_start": load(), "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    print(f"# {what} | {info['platform']} | python {info['python']} | {info['cores']} cores | "
          f"load average {' '.join(map(str, info['load_at_start']))} (1, 5, 15 min)")
    return info


def env() -> dict[str, str]:
    """The child processes' environment: this checkout first on the path, offline, one thread."""
    e = dict(os.environ)
    e["PYTHONPATH"] = str(REPO) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    e.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
             OMP_NUM_THREADS=e.get("OMP_NUM_THREADS", "1"), PYTHONDONTWRITEBYTECODE="1")
    return e


def child(code: str, *args: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; it prints one JSON object last. Adds ``wall_s`` (the
    whole process, interpreter start included) and the child's ``cpu_s`` (user + system)."""
    before = os.times()
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env(), cwd=REPO)
    wall = time.perf_counter() - t
    after = os.times()
    if proc.returncode != 0:
        raise RuntimeError(f"child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall_s"] = wall
    out["cpu_s"] = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return out


def command(argv: list[str]) -> dict[str, Any]:
    """Run a command line (``gradebench ...`` as ``python -m gradebench ...``); its stdout, wall and CPU time."""
    before = os.times()
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env(), cwd=REPO)
    wall = time.perf_counter() - t
    after = os.times()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return {"stdout": proc.stdout, "wall_s": wall, "cpu_s": cpu}


def median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def summary(runs: list[dict[str, Any]], keys: tuple[str, ...] = ("wall_s", "cpu_s")) -> dict[str, Any]:
    """Median and range of each key over the runs (seconds, 4 decimals)."""
    out: dict[str, Any] = {"runs": len(runs)}
    for k in keys:
        if all(k in r for r in runs):
            vals = sorted(r[k] for r in runs)
            out[k] = round(statistics.median(vals), 4)
            out[k + "_range"] = [round(vals[0], 4), round(vals[-1], 4)]
    return out


def ratio(a: float, b: float) -> float | None:
    return None if not b else round(a / b, 3)


def write(name: str, results: dict[str, Any]) -> Path:
    results["load_at_end"] = load()
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / name
    path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"# wrote {path} (load average at the end {' '.join(map(str, results['load_at_end']))})")
    return path


def replicate_distinct(src: Path, dest: Path, n: int) -> None:
    """The dev files repeated to ``n`` lines, copy ``k`` of each hypothesis suffixed `` [r<k>]`` so
    every pair (and so every query id) is distinct; line i of every file stays aligned."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        lines = (src / f"{name}.dev").read_text(encoding="utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        out = []
        for i in range(n):
            k, line = divmod(i, len(lines))
            text = lines[line]
            out.append(f"{text} [r{k}]" if name == "s2" and k else text)
        (dest / f"{name}.dev").write_text("\n".join(out) + "\n", encoding="utf-8")


def build(recipe: str, source: Path, out: Path, *extra: str) -> dict[str, Any]:
    """``gradebench build RECIPE --source SOURCE --resplit 80/10/10 --out OUT --json`` (no validity figures,
    no validation: the benchmarks here time what comes after a build)."""
    r = command(["-m", "gradebench", "build", recipe, "--source", str(source), "--resplit", "80/10/10",
                 "--out", str(out), "--no-validity", "--no-validate", "--json", *extra])
    return json.loads(r["stdout"])


def built_esnli(pairs: int | None, workdir: Path) -> dict[str, Any]:
    """Build e-SNLI dev (``pairs=None``) or ``pairs`` distinct replicated pairs under ``workdir``."""
    source = DATA
    if pairs is not None:
        source = workdir / f"esnli-{pairs}"
        replicate_distinct(DATA, source, pairs)
    return build("esnli", source, workdir / "out")


def scratch(prefix: str) -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix=prefix)
