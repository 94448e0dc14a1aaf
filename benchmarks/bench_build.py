"""Build throughput and memory: `gradebench build esnli` end to end, as a user runs it.

1. The real e-SNLI dev split (../shared/data/esnli/eSNLI, 9,842 pairs): wall time of the
   whole command, interpreter start included (target: < 5 s).
2. The dev split replicated to --pairs DISTINCT pairs: replica k >= 1 suffixes every hypothesis
   with " [r<k>]", so every pair has its own query id (the engine drops repeated query ids and
   identical rows, so verbatim copies would build only the 9,842 originals). Built twice: raw
   (--no-validity --no-validate; target >= 200,000 candidates/s, peak PSS <= 1 GB) and the
   default path (validation and validity figures; target within 1.5x of raw, <= 1.5 GB).

3. The raw build of the big input again over a workers axis (``--workers 1 2 all``; ``all`` =
   the cores this process may use) and an engine axis (``--engines local ray``; ``ray`` starts a
   local Ray instance with that many CPUs, its start-up included in the wall time, as a user's
   build pays it). Each row prints its parallel efficiency: its throughput over N times the
   1-worker throughput of the same engine. Every build of one input must give the same
   fingerprint and the same file digests (checked: the script fails otherwise). The rows are run
   in rounds (repeat i of every row, then repeat i + 1), so the machine's drift falls on every row
   alike; each N-worker row also gives its efficiency paired run by run with the 1-worker row of
   the same round (median and range).
4. The machine's own ceiling (``--ceiling-repeat``): one fixed pure-Python job alone, then N
   copies at once, interleaved; a shared or virtual machine often runs N at once slower than
   one alone, and no build scales past that, so each N-worker row is also given as a share of it.

Each row gives the candidates actually built (and says loudly when that is fewer than expected:
the dev split's candidates per pair, or with --skip-dev the recipe's, times the pairs asked
for), wall time, candidates/s, peak PSS of the whole process tree (workers included, sampled
every second: see PSS_EVERY), its CPU seconds (user + system of the build, its forkserver and its
workers, sampled every 0.05 s from /proc: the work done, less sensitive to the machine's load
than wall time), and the engine's
per-phase wall seconds (`gradebench build --timings`: read, select, make_lists = waiting on the
workers, write, stats, digests, validation, finish, validity; workers.* = seconds summed over
the worker processes). The load average is printed at the start, since the machine is shared:
compare rows of one run only, and use --repeat for medians. A line per build is printed as it
ends (round, row, wall seconds), so a run cut short still shows what it measured.

Both checkouts' packages are compiled to bytecode first (:func:`compile_bytecode`), as an installed
package is, so no row pays for compiling the source.

Usage: python benchmarks/bench_build.py [--pairs 500000] [--repeat 1] [--data PATH] [--skip-dev]
                                        [--skip-default]
                                        [--baseline-pythonpath OTHER_CHECKOUT]
                                        [--workers 1 2 all] [--engines local ray]
Prints a table and writes it to benchmarks/results/build-throughput.json (the README's build rows
are generated from that file: `python -m gradebench.docs`); asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FILES = ["s1", "s2", "labels", "preproc1_expl_1", "preproc1_expl_2", "preproc1_expl_3"]
DEV_PAIRS = 9842
RAW = ["--no-validity", "--no-validate"]
PHASES = ("read", "select", "make_lists", "write", "stats", "digests", "validation", "finish", "validity",
          "workers.make_lists", "workers.tables", "workers.stats", "workers.encode", "workers.read",
          "workers.select", "main.cpu")


def _lines(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def replicate(src: Path, dest: Path, n: int) -> None:
    """Write ``n`` distinct pairs: the dev lines repeated, replica k >= 1 with hypotheses suffixed `` [r<k>]``."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        lines = _lines(src / f"{name}.dev")
        lines += [""] * (len(_lines(src / "s1.dev")) - len(lines))  # a file whose last line is empty
        m = len(lines)
        out = []
        for k in range(-(-n // m)):
            part = lines[: n - k * m]
            out += [f"{line} [r{k}]" for line in part] if name == "s2" and k else part
        (dest / f"{name}.dev").write_text("\n".join(out) + "\n", encoding="utf-8")


#: seconds between two samples of the build's process tree (its processes and their CPU seconds)
SAMPLE_S = 0.05
#: samples between two of its PSS: reading a process's smaps_rollup walks its page tables, about
#: 25 ms for the 2-worker raw build's three processes, so sampling PSS every 0.05 s took a third
#: of a core from the build it measured (on 2 cores); every second it takes about 2.5% of one,
#: and a build's memory grows and shrinks over seconds (the selection's sets, the workers' batches)
PSS_EVERY = 20


def _tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (Linux /proc): the build, its forkserver and its workers.

    Read from each process's ``task/*/children`` files (0.14 ms a sample for a build's tree),
    or where the kernel has none, from a scan of every process's parent (1.5 ms)."""
    try:
        out, stack = [], [pid]
        while stack:
            p = stack.pop()
            out.append(p)
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    stack.extend(int(c) for c in f.read().split())
        return out
    except OSError:  # no children files (or a process ended meanwhile): scan
        pass
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    out, stack = [], [pid]
    while stack:
        p = stack.pop()
        out.append(p)
        stack.extend(children.get(p, []))
    return out


def _pss_kib(pids: list[int]) -> int:
    """Sum of PSS over ``pids``.

    PSS (proportional set size) splits pages shared copy-on-write between the parent and its
    forked workers, so the sum is the memory the build really holds (a sum of RSS would count
    shared pages once per process).
    """
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_s(pids: list[int], seen: dict[int, float]) -> None:
    """Record each process's CPU seconds so far (user + system, /proc/PID/stat) in ``seen``; a
    process that ends between two samples keeps its last value (at most one sample period short)."""
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            seen[p] = max(seen.get(p, 0.0), (int(fields[11]) + int(fields[12])) / _TICK)
        except (OSError, IndexError, ValueError):
            pass


def _recipe_per_pair() -> int:
    """The candidates the ``esnli`` recipe makes a pair (one a tier, ``count`` of a template tier)."""
    from gradebench.recipes.loader import load_recipe

    return sum(t.count for t in load_recipe("esnli").tiers)


def _supports_timings(env: dict, code: Path) -> bool:
    proc = subprocess.run([sys.executable, "-m", "gradebench", "build", "--help"], capture_output=True, text=True,
                          env=env, cwd=code, check=False)
    return "--timings" in proc.stdout


def run_build(source: Path, out: Path, flags: list[str], env: dict, timings: bool, code: Path
              ) -> tuple[float, int, dict, float]:  # noqa: C901
    """One `python -m gradebench build` of ``code`` (its folder is the working directory: `-m` puts
    the working directory ahead of PYTHONPATH)."""
    cmd = [sys.executable, "-m", "gradebench", "build", "esnli", "--source", str(source), "--out", str(out),
           "--json", *flags, *(["--timings"] if timings else [])]
    peak = [0]
    cpu: dict[int, float] = {}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=code, env=env)
    done = threading.Event()

    def sample() -> None:
        n = 0
        while not done.is_set():
            pids = _tree(proc.pid)
            if n % PSS_EVERY == 0:
                peak[0] = max(peak[0], _pss_kib(pids))
            _cpu_s(pids, cpu)
            n += 1
            time.sleep(SAMPLE_S)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - t0
    done.set()
    t.join()
    if proc.returncode != 0:
        raise SystemExit(f"build failed ({proc.returncode}): {stderr.decode()[-2000:]}")
    result = json.loads(stdout)
    result["_digests"] = _digests(Path(result["path"]))
    return wall, peak[0], result, round(sum(cpu.values()), 2)


def compile_bytecode(code: Path) -> None:
    """Compile ``code``'s package to bytecode (``__pycache__``, ignored by git), as an installed
    package has it (pip compiles at install) and a checkout gets on its first run, unless the
    environment sets PYTHONDONTWRITEBYTECODE (some do): then every run compiles the package's
    source again, about 0.2 s of a build's start. The builds read the bytecode either way."""
    package = code / "gradebench"
    target = package if package.is_dir() else code
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    proc = subprocess.run([sys.executable, "-m", "compileall", "-q", str(target)], env=env,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"compiling {target} to bytecode failed: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")


def _digests(folder: Path) -> dict[str, str]:
    """sha256 of every data file of a built folder (the check that two builds wrote the same bytes)."""
    import hashlib

    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((folder / "data").glob("*.parquet"))}


def _commit(path: Path) -> str | None:
    """The short commit id of the checkout at ``path`` (None outside git), with ``+`` if it has changes."""
    try:
        head = subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no", "--",
                                ".", ":!benchmarks/results"],  # a results file the benchmarks wrote is no change
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+" if dirty else "")


#: a fixed piece of pure-Python work (hashing and formatting strings, as list making does), ~1-2 s
_SPIN = ("import hashlib\nx = 0\nfor i in range(1_500_000):\n"
         "    x += len(hashlib.sha256(f'{i} [r{i % 7}]'.encode()).hexdigest())\n")


def machine_ceiling(n: int, repeat: int) -> dict:
    """What N processes can get out of this machine: the same pure-Python work run alone, then N
    copies at once (interleaved, ``repeat`` times each); efficiency = wall alone / wall of N at once.

    A shared or virtual machine often gives less than N x one core (other tenants, clock boost
    that drops when every core is busy): no build can scale better than this, so each scaling row
    is also shown as a share of it.
    """
    def wall(k: int) -> float:
        t0 = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", _SPIN]) for _ in range(k)]
        for proc in procs:
            if proc.wait() != 0:
                raise SystemExit("the machine-ceiling workload failed")
        return time.perf_counter() - t0

    alone, together = [], []
    for _ in range(repeat):
        alone.append(wall(1))
        together.append(wall(n))
    one, many = statistics.median(alone), statistics.median(together)
    return {"processes": n, "repeat": repeat, "alone_s": [round(x, 3) for x in alone],
            "together_s": [round(x, 3) for x in together], "efficiency": round(one / many, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", "--instances", type=int, default=500_000, dest="pairs")
    ap.add_argument("--repeat", type=int, default=1, help="builds per row; the median is reported")
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "esnli" / "eSNLI")
    ap.add_argument("--baseline-pythonpath", type=Path, default=None,
                    help="also run every row with this checkout first on PYTHONPATH (e.g. an older commit)")
    ap.add_argument("--skip-default", action="store_true", help="leave out the default-path row of the big input")
    ap.add_argument("--skip-dev", action="store_true",
                    help="leave out the real dev split's row (its default path needs great-expectations and lightgbm)")
    ap.add_argument("--workers", nargs="+", default=["1", "2", "all"],
                    help="the workers axis of the raw big build: numbers, or 'all' (the cores this process may use)")
    ap.add_argument("--ceiling-repeat", type=int, default=5,
                    help="runs of the machine-ceiling workload (alone and N at once); 0 leaves it out")
    ap.add_argument("--engines", nargs="+", default=["local"], choices=["local", "ray"],
                    help="the engine axis of the raw big build (ray needs `pip install 'gradebench[ray]'`)")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    from gradebench.threads import available_cores

    cores = available_cores()
    axis = sorted({cores if w == "all" else int(w) for w in args.workers})
    if not args.data.is_dir():
        raise SystemExit(f"real data not found at {args.data}")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import header, write

    info = header("gradebench build esnli (bench_build.py)")
    info.update(pairs=args.pairs, repeat=args.repeat, skip_dev=args.skip_dev, skip_default=args.skip_default,
                commit=_commit(REPO),
                baseline_commit=_commit(args.baseline_pythonpath) if args.baseline_pythonpath else None)
    codes = [("this checkout", REPO)] + ([("baseline", args.baseline_pythonpath)] if args.baseline_pythonpath else [])
    for _, path in codes:
        compile_bytecode(path)
    info["bytecode_compiled"] = True
    work = Path(tempfile.mkdtemp(prefix="gradebench-bench-"))
    try:
        big = work / "big"
        replicate(args.data, big, args.pairs)
        rows = []
        per_pair = None
        same_input: dict[str, dict] = {}
        plan = []  # every row's build, in the order the rows print
        for code, path in codes:
            # the code first; what PYTHONPATH held after it (a machine's extra site folder)
            pythonpath = os.pathsep.join(p for p in (str(path), os.environ.get("PYTHONPATH", "")) if p)
            env = {**os.environ, "PYTHONPATH": pythonpath, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
            timings = _supports_timings(env, path)
            cases = [] if args.skip_dev else [("real dev split", args.data, [], DEV_PAIRS)]
            cases.append((f"{args.pairs:,} distinct pairs, raw", big, RAW, args.pairs))
            if not args.skip_default:
                cases.append((f"{args.pairs:,} distinct pairs, default", big, [], args.pairs))
            for engine in args.engines:
                for n in axis:
                    cases.append((f"{args.pairs:,} raw, {engine}, {n} workers", big,
                                  [*RAW, "--workers", str(n), "--engine", engine], args.pairs))
            plan += [(code, path, env, timings, *case) for case in cases]
        # repeat i of every row before repeat i + 1 of any: the machine's drift (other tenants, clock
        # speed) then falls on every row alike, and a row's repeat i is paired with the others' i
        runs: list[list[tuple]] = [[] for _ in plan]
        for i in range(args.repeat):
            for k, (code, path, env, timings, name, source, flags, pairs) in enumerate(plan):
                out = work / f"out-{k}-{i}"
                runs[k].append(run_build(source, out, flags, env, timings, path))
                shutil.rmtree(out, ignore_errors=True)
                print(f"round {i + 1}/{args.repeat}: {code}, {name}: {runs[k][-1][0]:.2f} s", flush=True)
        for (code, path, env, timings, name, source, flags, pairs), row_runs in zip(plan, runs):
            wall = statistics.median(r[0] for r in row_runs)
            pss = statistics.median(r[1] for r in row_runs)
            cpu = statistics.median(r[3] for r in row_runs)
            res = row_runs[0][2]
            cands = sum(s["candidates"] for s in res["splits"].values())
            if per_pair is None:  # the candidates the dev split gives a pair (without its row: the recipe's tiers)
                per_pair = cands / pairs if name == "real dev split" else _recipe_per_pair()
            phases = {k: statistics.median(r[2].get("timings", {}).get(k, 0.0) for r in row_runs) for k in PHASES}
            for r in row_runs[1:]:  # repeats of one row wrote the same bytes
                if r[2]["_digests"] != res["_digests"]:
                    raise SystemExit(f"{code}, {name}: two builds of the same input wrote different files")
            if source == big:  # every build of the big input: one fingerprint, the same bytes
                first = same_input.setdefault(code, res)
                if (res["fingerprint"], res["_digests"]) != (first["fingerprint"], first["_digests"]):
                    raise SystemExit(f"{code}, {name}: not the bytes of the first build of the same input")
            rows.append((code, name, cands, round(per_pair * pairs), wall, pss, phases, res.get("timings") is None,
                         [r[0] for r in row_runs], cpu))
        print(f"{'code':<14} {'input':<34} {'candidates':>11} {'wall s':>8} {'cand/s':>10} {'peak PSS MB':>12}"
              f" {'tree CPU s':>10}")
        for code, name, c, expected, w, p, _, _, _, cpu in rows:
            print(f"{code:<14} {name:<34} {c:>11,} {w:>8.2f} {c / w:>10,.0f} {p / 1024:>12.0f} {cpu:>10.2f}")
            if c < expected:
                print(f"!!! WARNING: built {c:,} candidates, expected {expected:,} ({expected / max(c, 1):.1f}x more):"
                      f" the figures above do not measure the input asked for !!!")
        print("\nper-phase wall seconds (median; workers.* summed over worker processes):")
        print(f"{'code':<14} {'input':<34} " + " ".join(f"{p.replace('workers.', 'w.'):>11}" for p in PHASES))
        for code, name, _, _, _, _, phases, missing, _, _ in rows:
            cells = ["n/a".rjust(11) if missing else f"{phases[p]:>11.2f}" for p in PHASES]
            print(f"{code:<14} {name:<34} " + " ".join(cells))
        scaling = _scaling(rows, axis, args.engines)
        ceiling = None
        if scaling and args.ceiling_repeat > 0 and max(axis) > 1:
            ceiling = machine_ceiling(max(axis), args.ceiling_repeat)
            info["machine_ceiling"] = ceiling
            for s_ in scaling:
                if s_["efficiency"] is not None and s_["workers"] == ceiling["processes"]:
                    s_["of_machine_ceiling"] = round(s_["efficiency"] / ceiling["efficiency"], 3)
        if scaling:
            print(f"\nscaling of the raw big build ({cores} cores here; efficiency = candidates/s at N workers "
                  "over N x the 1-worker rate of the same engine):")
            print(f"{'code':<14} {'engine':<7} {'workers':>7} {'wall s':>8} {'cand/s':>10} {'efficiency':>10} "
                  f"{'paired':>17} {'vs local':>9} {'peak PSS MB':>12}")
            for s_ in scaling:
                eff = "–" if s_["efficiency"] is None else f"{s_['efficiency']:.0%}"
                eff_runs = s_["efficiency_runs"]
                paired = ("–" if not eff_runs else
                          f"{s_['efficiency_paired']:.0%} ({min(eff_runs):.0%}-{max(eff_runs):.0%})")
                vs = "–" if s_["vs_local"] is None else f"{s_['vs_local']:.2f}x"
                print(f"{s_['code']:<14} {s_['engine']:<7} {s_['workers']:>7} {s_['wall_s']:>8.2f} "
                      f"{s_['candidates_per_s']:>10,} {eff:>10} {paired:>17} {vs:>9} {s_['peak_pss_mb']:>12,}")
            info["scaling"] = scaling
            if ceiling is not None:
                print(f"machine ceiling: {ceiling['processes']} copies of one pure-Python job at once run at "
                      f"{ceiling['efficiency']:.0%} of {ceiling['processes']} x the job alone (median of "
                      f"{ceiling['repeat']}; alone {ceiling['alone_s']} s, at once {ceiling['together_s']} s)")
                for s_ in scaling:
                    if "of_machine_ceiling" in s_:
                        print(f"  {s_['code']}, {s_['engine']}, {s_['workers']} workers: efficiency "
                              f"{s_['efficiency']:.0%} = {s_['of_machine_ceiling']:.0%} of the machine's ceiling")
        print("\ntargets (2 cores): real dev < 5 s wall; raw >= 200,000 cand/s and <= 1024 MB peak PSS; "
              "default within 1.5x of raw and <= 1536 MB; 1->2 workers >= 85% efficiency; ray within 1.5x of "
              "local wall time; on many cores, >= 70% efficiency at 15 workers")
        info["rows"] = [
            {"code": code, "input": name, "candidates": c, "expected_candidates": expected, "wall_s": round(w, 3),
             "walls_s": [round(x, 3) for x in walls], "candidates_per_s": round(c / w), "peak_pss_mb": round(p / 1024),
             "tree_cpu_s": cpu, "phases": None if missing else {k: round(v, 3) for k, v in phases.items()}}
            for code, name, c, expected, w, p, phases, missing, walls, cpu in rows
        ]
        write("build-throughput.json", info)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _scaling(rows: list, axis: list[int], engines: list[str]) -> list[dict]:
    """The workers x engine rows with their efficiency and their wall time against the local
    engine's at the same number of workers.

    ``efficiency`` is the issue's definition on the medians (throughput at N workers over N x the
    1-worker throughput); ``efficiency_runs`` pairs the two rows' repeat i (run in the same round,
    so the machine's drift between rounds cancels), and ``efficiency_paired`` is their median."""
    out = []
    by = {}
    for code, name, c, _, w, p, _, _, walls, _ in rows:
        for engine in engines:
            for n in axis:
                if name.endswith(f"raw, {engine}, {n} workers"):
                    by[(code, engine, n)] = (c, w, p, walls)
    for (code, engine, n), (c, w, p, walls) in by.items():
        one = by.get((code, engine, 1))
        local = by.get((code, "local", n))
        eff_runs = None if one is None else [round(w1 / (n * wn), 3) for w1, wn in zip(one[3], walls)]
        out.append({"code": code, "engine": engine, "workers": n, "wall_s": round(w, 3), "candidates_per_s": round(c / w),
                    "efficiency": None if one is None else round((c / w) / (n * one[0] / one[1]), 3),
                    "efficiency_runs": eff_runs,
                    "efficiency_paired": None if not eff_runs else round(statistics.median(eff_runs), 3),
                    "vs_local": None if local is None or engine == "local" else round(w / local[1], 3),
                    "peak_pss_mb": round(p / 1024)})
    return out


if __name__ == "__main__":
    main()
