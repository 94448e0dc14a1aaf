#!/usr/bin/env bash
# Issue 20 -- seeds/004's list-size curve for the policy: LiPO-lambda (lambdaloss) vs DPO-style
# pairwise logistic (ranknet; DPO itself at K = 2) with `gradebench lipo`, on `esnli-human`
# (5 graded explanations per premise/hypothesis), from the same small pretrained policy.
#
# Plain gradebench commands, in order; every step is content-fingerprinted, so running the
# script again skips what is done.
#   1. the benchmark, the held-out judge (lambdamart) and the small policy: the same commands as
#      esnli-human-policy.sh (skipped with SKIP_PREP=1 when that script has built them)
#   2. LiPO from that policy, each loss x K = 2, 3, 5, 4 (each training list subsampled to K of its
#      5 candidates, keeping the best and the worst), seed 42, same budget for all: 200 steps of
#      4 lists, lr 5e-5, beta 0.1; judged on the first 200 validation prompts x 2 completions before
#      and after (temperature 0.7, 32 new tokens), with the held-out pair accuracy of the implicit
#      reward on those prompts' full 5-candidate lists
#
# Run from the repository root on a 2-core CPU machine (no GPU):
#   OMP_NUM_THREADS=1 bash recipes/experiments/esnli-human-lipo-list-size.sh
# The policy records go to leaderboard/results/esnli-human/ (<id>.policy.json); the report's
# claim 004-list-size reads them (`gradebench reproduce`).
set -euo pipefail
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
GB="${GB:-gradebench}"
OUT=gradebench-out
RESULTS=leaderboard/results
B=$OUT/esnli-human/3b08965c0209

if [ "${SKIP_PREP:-0}" != 1 ]; then
  $GB build esnli-human --source ../shared/data/esnli/eSNLI --resplit 80/10/10 --out $OUT
  $GB train --benchmark $B --scorer lambdamart --seed 42 --out $OUT/runs/policy-judge-lambdamart
  $GB export-reward $OUT/runs/policy-judge-lambdamart --out $OUT/rewards/judge-lambdamart
  $GB pretrain-policy --benchmark $B --out $OUT/policies/esnli-human-gpt2 --steps 600 --seed 42
fi

for K in ${KS:-2 3 5 4}; do
  for LOSS in lambdaloss ranknet; do
    for SEED in ${SEEDS:-42}; do
      $GB lipo --policy $OUT/policies/esnli-human-gpt2 --benchmark $B --loss $LOSS --list-size $K \
          --steps 200 --batch-size 4 --lr 5e-5 --beta 0.1 --seed $SEED \
          --judge $OUT/rewards/judge-lambdamart --judge-queries 200 --judge-samples 2 \
          --out $OUT/runs/lipo-$LOSS-k$K-s$SEED --results-dir $RESULTS
    done
  done
done
