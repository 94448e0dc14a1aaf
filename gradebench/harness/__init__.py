"""The harness: train registered scorers on built benchmarks and load the runs back.

* :func:`gradebench.harness.train.train` -- one training run into a run folder;
* :func:`gradebench.harness.runs.load_run` -- a finished run as ``(scorer, RunInfo)``.

Evaluation, result records and the leaderboard live in :mod:`gradebench.results`.
"""
