#!/usr/bin/env bash
# Issue 29's many-core figures in one command on the device machine (16 cores): bench_build.py's
# raw build of e-SNLI dev replicated to 500,000 distinct pairs (2.5M candidates) at the default
# workers (all cores) and at 1, 2, 8 and 15, in REPEAT rounds (default 3), with the machine's own
# ceiling for 15 processes. The real dev row and the default path are left out (they need
# great-expectations and lightgbm, which that machine lacks).
#
# Needs the payload of ../shared/gpu/make-payload.sh in .gpu (the wheels that machine lacks, and
# .gpu/data/esnli/eSNLI). From the repository root there:
#   bash benchmarks/gpu/build_scaling.sh
# An estimate from this machine's figures, not measured there: 3-5 minutes at REPEAT=3. A line per
# build goes to the log as it ends, so a run cut short still shows what it measured.
# Writes $OUT/build-throughput.json and $OUT/build-scaling.log (OUT default: gradebench-out/gpu);
# exits non-zero, copying no JSON, when the benchmark fails.
set -uo pipefail
OUT=${OUT:-gradebench-out/gpu}
REPEAT=${REPEAT:-3}
PAIRS=${PAIRS:-500000}  # smaller for a check on another machine
mkdir -p "$OUT"
# shellcheck disable=SC1091
source .gpu/setup-on-gpu.sh .gpu > "$OUT/setup.log" 2>&1 || { cat "$OUT/setup.log"; exit 1; }
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # this checkout's code
# what "all cores" can mean there: the affinity (what the build counts) and any cgroup quota
{ echo "nproc $(nproc)"; cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo "no cgroup v2 cpu.max"; } \
  | tee "$OUT/build-scaling.log"
python3 benchmarks/bench_build.py --pairs "$PAIRS" --data .gpu/data/esnli/eSNLI --skip-dev --skip-default \
  --workers 1 2 8 15 --repeat "$REPEAT" --ceiling-repeat 3 2>&1 | tee -a "$OUT/build-scaling.log" \
  || { echo "bench_build.py failed: see $OUT/build-scaling.log" >&2; exit 1; }
cp benchmarks/results/build-throughput.json "$OUT/"
