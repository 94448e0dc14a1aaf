#!/usr/bin/env bash
# Issue 20 -- the core paper's Table 7 claim ("PPO with a ListNet-trained reward converges in
# ~1,000 steps; MSE-trained rewards never converge") on CPU, with GRPO, on `esnli-human`.
#
# Plain gradebench commands, in order; every step is content-fingerprinted, so running the
# script again skips what is done (and a killed step is continued or started over by it).
#   1. the benchmark (resplit 80/10/10; the test split is never used here)
#   2. two rewards: hashed-mlp trained with listnet and with mse, same seed and budget, exported
#   3. a held-out judge: lambdamart (LightGBM over 14 lexical features), not either reward
#   4. a small policy: GPT-2 (2 layers x 128, BPE 2,048) trained from scratch for 600 steps on
#      the train split's prompts and human explanations (`gradebench pretrain-policy`)
#   5. GRPO from that policy, each reward x seeds 42, 123, 7, same budget (200 steps of 2 prompts
#      x 8 completions), judged on the first 200 validation prompts before and after
#   6. the reward reports (separation ratio, advantage SNR on the test split's graded lists)
#
# Run from the repository root on a 2-core CPU machine (no GPU):
#   OMP_NUM_THREADS=1 bash recipes/experiments/esnli-human-policy.sh
# Measured here (2 cores shared with other jobs): pretraining 160 s CPU, the six GRPO runs
# about 15 CPU-minutes together. The policy records go to leaderboard/results/esnli-human/
# (<id>.policy.json); `python -m gradebench.docs` renders the README table from them.
set -euo pipefail
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
GB="${GB:-gradebench}"
OUT=gradebench-out
RESULTS=leaderboard/results

$GB build esnli-human --source ../shared/data/esnli/eSNLI --resplit 80/10/10 --out $OUT
B=$OUT/esnli-human/3b08965c0209

for LOSS in listnet mse; do
  $GB train --benchmark $B --scorer hashed-mlp --loss $LOSS --epochs 6 --patience 2 --seed 42 \
      --out $OUT/runs/policy-reward-hm-$LOSS
  $GB export-reward $OUT/runs/policy-reward-hm-$LOSS --out $OUT/rewards/hm-$LOSS
done
$GB train --benchmark $B --scorer lambdamart --seed 42 --out $OUT/runs/policy-judge-lambdamart
$GB export-reward $OUT/runs/policy-judge-lambdamart --out $OUT/rewards/judge-lambdamart

$GB pretrain-policy --benchmark $B --out $OUT/policies/esnli-human-gpt2 --steps 600 --seed 42

for LOSS in listnet mse; do
  for SEED in 42 123 7; do
    $GB grpo --policy $OUT/policies/esnli-human-gpt2 --reward $OUT/rewards/hm-$LOSS --benchmark $B \
        --judge $OUT/rewards/judge-lambdamart --judge-queries 200 --judge-samples 2 \
        --steps 200 --lr 1e-4 --kl-coef 0.1 --temperature 0.7 --num-generations 8 --batch-prompts 2 \
        --max-completion-length 32 --seed $SEED \
        --out $OUT/runs/grpo-hm-$LOSS-s$SEED --results-dir $RESULTS
  done
done

for R in hm-listnet hm-mse judge-lambdamart; do
  $GB reward-report $OUT/rewards/$R --benchmark $B --json > $OUT/rewards/$R.report.json
done
