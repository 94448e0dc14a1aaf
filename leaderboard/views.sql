-- gradebench result views (DuckDB), loaded by gradebench.experiments.query.connect().
--
-- Placeholders, filled in by gradebench with SQL lists of file paths (never globs, so a
-- writer's temp files are never read):
--   ${RECORD_FILES}       the record JSON files (<results_dir>/<benchmark>/<id>.json)
--   ${PREDICTIONS_SOURCE} a relation: read_parquet(<the records' <id>.predictions.parquet files that are
--                        there>), or an empty one with the core columns when none is (a packed folder such
--                        as leaderboard/results keeps them out of git; see gradebench.experiments.pack)
--   ${PER_QUERY_SOURCE}   a relation (record_id, query_id, metric, value) of the records' per-query values:
--                        their loose <id>.queries.parquet files and their rows of the benchmark folders'
--                        per_query.parquet packs
--   ${FIGURES_SOURCE}     a relation (record_id, query_id, figure, value) of the records' per-query report
--                        figures (gradebench.experiments.figures), from the same files
--   ${CANDIDATES_SOURCE}  a relation: read_parquet(<the benchmarks' Parquet files>, filename = true),
--                        or an empty one with the core columns when no benchmark folder is found
--   ${BENCHMARK_FILES}    a relation (file, benchmark, benchmark_fingerprint) naming those files
--   ${POLICY_SOURCE}      a relation (content, filename) of the policy records
--                        (<results_dir>/<benchmark>/<id>.policy.json), or an empty one
--
-- Views:
--   records      one row per record: id, file, doc (the whole record as JSON)
--   results      one row per record with provenance and every suite metric flattened:
--                "<metric>" (value), "<metric>_low", "<metric>_high" (95% bootstrap CI)
--   metrics      one row per record x metric (long form): value, CI, level, n, n_excluded
--   per_query    one row per record x metric x query: value (NULL = excluded query); a pack leaves out
--                query_separation_ratio (its mean and CI are in metrics)
--   query_figures one row per record x report figure x query: value (NaN = undefined for the query)
--   predictions  one row per record x candidate: prediction, relevance, score, tier, split,
--                plus the record's benchmark, fingerprint, scorer, loss and system_seed; only the
--                records whose predictions file is there (gradebench query says so when none is)
--   candidates   the benchmark rows (every column of the benchmarks' Parquet files) of the
--                benchmarks the records reference, with benchmark and benchmark_fingerprint
--   policies     one row per policy-optimisation run (gradebench lipo | grpo | ppo): method,
--                benchmark, policy, reward, loss, steps and the final-window metrics; with a held-out
--                judge (record v2) its mean score before/after and the run's advantage signal

CREATE OR REPLACE VIEW records AS
SELECT content::JSON ->> 'id' AS id, filename AS file, content::JSON AS doc
FROM read_text(${RECORD_FILES});

CREATE OR REPLACE VIEW results AS
SELECT
    id,
    doc ->> 'created_at' AS created_at,
    doc ->> '$.benchmark.name' AS benchmark,
    doc ->> '$.benchmark.fingerprint' AS benchmark_fingerprint,
    doc ->> '$.benchmark.path' AS benchmark_path,
    doc ->> 'split' AS split,
    CAST(doc ->> '$.benchmark.n_queries' AS BIGINT) AS n_queries,
    CAST(doc ->> '$.benchmark.n_candidates' AS BIGINT) AS n_candidates,
    doc ->> '$.scorer.name' AS scorer,
    CAST(doc ->> '$.scorer.version' AS INTEGER) AS scorer_version,
    doc ->> '$.scorer.kind' AS scorer_kind,
    doc -> '$.scorer.config' AS scorer_config,
    doc ->> '$.loss.name' AS loss,
    doc -> '$.loss.params' AS loss_params,
    doc ->> '$.run.run_fingerprint' AS run_fingerprint,
    doc ->> '$.run.run_dir' AS run_dir,
    CAST(doc ->> 'seed' AS BIGINT) AS seed,
    CAST(doc ->> 'system_seed' AS BIGINT) AS system_seed,
    CAST(doc ->> '$.timings.scoring_s' AS DOUBLE) AS scoring_s,
    CAST(doc ->> '$.timings.candidates_per_s' AS DOUBLE) AS candidates_per_s,
    doc ->> '$.environment.gradebench_version' AS gradebench_version,
    doc ->> '$.environment.git_commit' AS git_commit,
    CAST(doc ->> '$.metrics."ndcg@3".value' AS DOUBLE) AS "ndcg@3",
    CAST(doc ->> '$.metrics."ndcg@3".ci_low' AS DOUBLE) AS "ndcg@3_low",
    CAST(doc ->> '$.metrics."ndcg@3".ci_high' AS DOUBLE) AS "ndcg@3_high",
    CAST(doc ->> '$.metrics."ndcg@5".value' AS DOUBLE) AS "ndcg@5",
    CAST(doc ->> '$.metrics."ndcg@5".ci_low' AS DOUBLE) AS "ndcg@5_low",
    CAST(doc ->> '$.metrics."ndcg@5".ci_high' AS DOUBLE) AS "ndcg@5_high",
    CAST(doc ->> '$.metrics."ndcg@10".value' AS DOUBLE) AS "ndcg@10",
    CAST(doc ->> '$.metrics."ndcg@10".ci_low' AS DOUBLE) AS "ndcg@10_low",
    CAST(doc ->> '$.metrics."ndcg@10".ci_high' AS DOUBLE) AS "ndcg@10_high",
    CAST(doc ->> '$.metrics.map.value' AS DOUBLE) AS "map",
    CAST(doc ->> '$.metrics.map.ci_low' AS DOUBLE) AS map_low,
    CAST(doc ->> '$.metrics.map.ci_high' AS DOUBLE) AS map_high,
    CAST(doc ->> '$.metrics.mrr.value' AS DOUBLE) AS mrr,
    CAST(doc ->> '$.metrics.mrr.ci_low' AS DOUBLE) AS mrr_low,
    CAST(doc ->> '$.metrics.mrr.ci_high' AS DOUBLE) AS mrr_high,
    CAST(doc ->> '$.metrics.kendall.value' AS DOUBLE) AS kendall,
    CAST(doc ->> '$.metrics.kendall.ci_low' AS DOUBLE) AS kendall_low,
    CAST(doc ->> '$.metrics.kendall.ci_high' AS DOUBLE) AS kendall_high,
    CAST(doc ->> '$.metrics.spearman.value' AS DOUBLE) AS spearman,
    CAST(doc ->> '$.metrics.spearman.ci_low' AS DOUBLE) AS spearman_low,
    CAST(doc ->> '$.metrics.spearman.ci_high' AS DOUBLE) AS spearman_high,
    CAST(doc ->> '$.metrics.pairwise_agreement.value' AS DOUBLE) AS pairwise_agreement,
    CAST(doc ->> '$.metrics.pairwise_agreement.ci_low' AS DOUBLE) AS pairwise_agreement_low,
    CAST(doc ->> '$.metrics.pairwise_agreement.ci_high' AS DOUBLE) AS pairwise_agreement_high,
    CAST(doc ->> '$.metrics.top1_accuracy.value' AS DOUBLE) AS top1_accuracy,
    CAST(doc ->> '$.metrics.top1_accuracy.ci_low' AS DOUBLE) AS top1_accuracy_low,
    CAST(doc ->> '$.metrics.top1_accuracy.ci_high' AS DOUBLE) AS top1_accuracy_high,
    CAST(doc ->> '$.metrics.query_separation_ratio.value' AS DOUBLE) AS query_separation_ratio,
    CAST(doc ->> '$.metrics.query_separation_ratio.ci_low' AS DOUBLE) AS query_separation_ratio_low,
    CAST(doc ->> '$.metrics.query_separation_ratio.ci_high' AS DOUBLE) AS query_separation_ratio_high,
    CAST(doc ->> '$.metrics.separation_ratio.value' AS DOUBLE) AS separation_ratio,
    CAST(doc ->> '$.metrics.separation_ratio.ci_low' AS DOUBLE) AS separation_ratio_low,
    CAST(doc ->> '$.metrics.separation_ratio.ci_high' AS DOUBLE) AS separation_ratio_high,
    CAST(doc ->> '$.metrics.tier_eta2.value' AS DOUBLE) AS tier_eta2,
    CAST(doc ->> '$.metrics.tier_eta2.ci_low' AS DOUBLE) AS tier_eta2_low,
    CAST(doc ->> '$.metrics.tier_eta2.ci_high' AS DOUBLE) AS tier_eta2_high,
    CAST(doc ->> '$.separation.mean_centered_gap' AS DOUBLE) AS mean_centered_gap,
    CAST(doc ->> '$.separation.min_centered_gap' AS DOUBLE) AS min_centered_gap,
    doc AS record
FROM records;

CREATE OR REPLACE VIEW metrics AS
WITH keyed AS (SELECT id, doc, unnest(json_keys(doc -> 'metrics')) AS metric FROM records)
SELECT
    id,
    metric,
    doc -> 'metrics' -> metric ->> 'level' AS level,
    CAST(doc -> 'metrics' -> metric ->> 'value' AS DOUBLE) AS value,
    CAST(doc -> 'metrics' -> metric ->> 'ci_low' AS DOUBLE) AS ci_low,
    CAST(doc -> 'metrics' -> metric ->> 'ci_high' AS DOUBLE) AS ci_high,
    CAST(doc -> 'metrics' -> metric ->> 'n' AS BIGINT) AS n,
    CAST(doc -> 'metrics' -> metric ->> 'n_excluded' AS BIGINT) AS n_excluded
FROM keyed;

CREATE OR REPLACE VIEW per_query AS
SELECT CAST(record_id AS VARCHAR) AS record_id, CAST(query_id AS VARCHAR) AS query_id,
       CAST(metric AS VARCHAR) AS metric, CAST(value AS DOUBLE) AS value
FROM ${PER_QUERY_SOURCE}
WHERE CAST(record_id AS VARCHAR) IN (SELECT id FROM records);

CREATE OR REPLACE VIEW query_figures AS
SELECT CAST(record_id AS VARCHAR) AS record_id, CAST(query_id AS VARCHAR) AS query_id,
       CAST(figure AS VARCHAR) AS figure, CAST(value AS DOUBLE) AS value
FROM ${FIGURES_SOURCE}
WHERE CAST(record_id AS VARCHAR) IN (SELECT id FROM records);

CREATE OR REPLACE VIEW predictions AS
SELECT
    p.* REPLACE (CAST(p.split AS VARCHAR) AS split, CAST(p.record_id AS VARCHAR) AS record_id),
    r.benchmark, r.benchmark_fingerprint, r.scorer, r.loss, r.system_seed
FROM ${PREDICTIONS_SOURCE} AS p
JOIN results AS r ON r.id = CAST(p.record_id AS VARCHAR);

CREATE OR REPLACE VIEW benchmark_files AS
SELECT file, benchmark, benchmark_fingerprint FROM ${BENCHMARK_FILES};

CREATE OR REPLACE VIEW candidates AS
SELECT b.benchmark, b.benchmark_fingerprint, c.* EXCLUDE (filename)
FROM ${CANDIDATES_SOURCE} AS c
JOIN benchmark_files AS b ON b.file = c.filename;

CREATE OR REPLACE VIEW policies AS
WITH p AS (SELECT content::JSON AS doc, filename AS file FROM ${POLICY_SOURCE})
SELECT
    doc ->> 'id' AS id,
    file,
    doc ->> 'created_at' AS created_at,
    doc ->> 'method' AS method,
    doc ->> '$.benchmark.name' AS benchmark,
    doc ->> '$.benchmark.fingerprint' AS benchmark_fingerprint,
    doc ->> '$.benchmark.split' AS split,
    doc ->> '$.benchmark.reference' AS reference,
    doc ->> '$.policy.path' AS policy,
    doc ->> '$.policy.fingerprint' AS policy_fingerprint,
    doc ->> '$.policy.output_path' AS trained_policy,
    doc ->> '$.reward.source' AS reward,
    doc ->> '$.reward.fingerprint' AS reward_fingerprint,
    doc ->> '$.loss.name' AS loss,
    CAST(doc ->> 'seed' AS BIGINT) AS seed,
    CAST(doc ->> 'n_steps' AS BIGINT) AS n_steps,
    CAST(doc ->> 'window' AS BIGINT) AS "window",
    CAST(doc ->> '$.metrics.reward_mean' AS DOUBLE) AS reward_mean,
    CAST(doc ->> '$.metrics.reward_std' AS DOUBLE) AS reward_std,
    CAST(doc ->> '$.metrics.kl' AS DOUBLE) AS kl,
    CAST(doc ->> '$.metrics.above_reference' AS DOUBLE) AS above_reference,
    CAST(doc ->> '$.metrics.loss' AS DOUBLE) AS loss_value,
    CAST(doc ->> '$.metrics.margin' AS DOUBLE) AS margin,
    CAST(doc ->> '$.metrics.pair_accuracy' AS DOUBLE) AS pair_accuracy,
    doc ->> '$.judge.source' AS judge,
    CAST(doc ->> '$.judge.before.judge_mean' AS DOUBLE) AS judge_before,
    CAST(doc ->> '$.judge.after.judge_mean' AS DOUBLE) AS judge_after,
    CAST(doc ->> '$.judge.after.judge_above_reference' AS DOUBLE) AS judge_above_reference,
    CAST(doc ->> '$.judge.after.best_f1' AS DOUBLE) AS best_f1,
    CAST(doc ->> '$.signal.advantage_snr' AS DOUBLE) AS advantage_snr,
    CAST(doc ->> '$.signal.judge_agreement' AS DOUBLE) AS judge_agreement,
    CAST(doc ->> '$.signal.group_reward_std' AS DOUBLE) AS group_reward_std,
    doc -> 'metrics' AS metrics,
    doc -> 'options' AS options
FROM p;
