#!/usr/bin/env bash
# Issue 27's GPU run, in one command that ends within LIMIT seconds (default 560): bench_gpu.py, then
# the full-budget cross-encoder records (recipes/experiments/full-budget-*.yaml) as concurrent
# one-cell sweeps (benchmarks/gpu/grid_parallel.py) until the time is up.
#
# Needs, beside the checkout: the payload of ../shared/gpu/make-payload.sh in .gpu (wheels the GPU
# machine lacks, MiniLM) and the three benchmarks built here (see the grids' comments for the build
# commands), under gradebench-out or packed into .gpu (below). On the device machine, from the
# repository root:
#   bash benchmarks/gpu/run.sh [LIMIT]
# Everything it writes goes to $OUT (default gradebench-out/gpu): bench-gpu.json and its log,
# records.tgz (the records, to unpack into leaderboard/results and pack with
# `python -m gradebench.experiments.pack leaderboard/results`), grid.log, cell-logs.tgz, nvidia-smi.csv.
set -uo pipefail
LIMIT=${1:-560}
OUT=${OUT:-gradebench-out/gpu}
BENCH_S=${BENCH_S:-150}
mkdir -p "$OUT"
# the benchmarks, carried as .gpu/benchmarks.tar.xz (made here with
#   tar cJf .gpu/benchmarks.tar.xz gradebench-out/esnli/1d2f086232ae gradebench-out/esnli-contrast-v2/5d4bc47091dd \
#     gradebench-out/esnli-contrast-v3/35a2c8ff3ecb
# with the benchmarks of the grids' cells that are to run; TRAIN_BENCH: bench_gpu.py's training benchmark.
# The payload may carry its wheels unzipped, as .gpu/site.tar.xz (about 1.5 MB smaller), made with
#   mkdir s && for w in .gpu/whl/*.whl; do unzip -q -o "$w" -d s; done && tar cJf .gpu/site.tar.xz -C s .
# setup-on-gpu.sh then unpacks it into /tmp/site instead of installing the wheels)
[ -f .gpu/benchmarks.tar.xz ] && tar xJf .gpu/benchmarks.tar.xz
# shellcheck disable=SC1091
source .gpu/setup-on-gpu.sh .gpu > "$OUT/setup.log" 2>&1 || { cat "$OUT/setup.log"; exit 1; }
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # this checkout's code
tail -1 "$OUT/setup.log"
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total,utilization.gpu,clocks.sm,clocks.max.sm \
  --format=csv > "$OUT/nvidia-smi.csv" 2>&1
cat "$OUT/nvidia-smi.csv"
python3 -c "import gradebench, sentence_transformers, transformers; print(gradebench.__file__, 'st', sentence_transformers.__version__, 'transformers', transformers.__version__)"

ESNLI=gradebench-out/esnli/1d2f086232ae
V2=gradebench-out/esnli-contrast-v2/5d4bc47091dd
echo "== bench_gpu.py (at most ${BENCH_S}s) at ${SECONDS}s"
timeout -k 10 "$BENCH_S" python3 benchmarks/bench_gpu.py --benchmark "$ESNLI" --train-benchmark "${TRAIN_BENCH:-$V2}" \
  --train-lists 800 --batch-queries 8 32 --peer-batches 128 512 --out "$OUT/bench-gpu.json" > "$OUT/bench-gpu.log" 2>&1
echo "bench_gpu rc=$?"
grep -v -E "Warning|warn|Loading|Writing|warmup_ratio|^\{" "$OUT/bench-gpu.log" | tail -45

LEFT=$((LIMIT - SECONDS))
echo "== full-budget records at ${SECONDS}s, ${LEFT}s left"
# GRIDS: the grids; CELLS: only these of their cells (tags as `grid_parallel.py --list` prints them)
GRIDS=${GRIDS:-recipes/experiments/full-budget-contrast-cross-encoder.yaml recipes/experiments/full-budget-esnli-cross-encoder.yaml}
# shellcheck disable=SC2086
python3 benchmarks/gpu/grid_parallel.py $GRIDS ${CELLS:+--cells $CELLS} --workers "${WORKERS:-8}" --threads 2 \
  --results-dir /tmp/gb-results --runs-dir /tmp/gb-runs --start-by $((LEFT - 170)) --stop-at $((LEFT - 30)) \
  > "$OUT/grid.log" 2>&1
echo "grid rc=$?"
tail -32 "$OUT/grid.log" | cut -c1-400
tar czf "$OUT/records.tgz" -C /tmp/gb-results . 2>/dev/null
tar czf "$OUT/cell-logs.tgz" -C /tmp/gb-runs/_cells . 2>/dev/null
ls -la "$OUT"
echo "done at ${SECONDS}s"
