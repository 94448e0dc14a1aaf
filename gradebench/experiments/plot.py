"""Plots: predicted-score distributions per tier (Figure 1 of the paper) and training curves.

matplotlib is imported lazily with the non-interactive Agg backend; every PNG is written to a
temp file beside the target and renamed onto it, so a reader never sees half a PNG.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from gradebench.errors import GradebenchError, InvalidArgumentError
from gradebench.experiments.record import EvalRecord
from gradebench.experiments.store import read_predictions
from gradebench.experiments.verify import find_verified
from gradebench.paths import RESULTS_DIR, publish, temp_beside

#: keys of a history entry that are never plotted (besides timings: ``*_s``, ``*time*``, ``*seconds*``)
_SKIP = ("epoch", "step", "lr", "learning_rate")


def _skipped(key: str) -> bool:
    return key in _SKIP or key.endswith("_s") or "time" in key or "seconds" in key


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, out_png: str | Path) -> Path:
    out = Path(out_png)
    if out.suffix.lower() != ".png":
        raise InvalidArgumentError(f"plot output must be a .png file, got {out.name!r}", hint="e.g. --out run.png")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_beside(out)
    try:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight", metadata={"Software": None})
        publish(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        _pyplot().close(fig)
    return out


def kde(values: np.ndarray, grid: np.ndarray) -> np.ndarray | None:
    """Gaussian kernel density of ``values`` on ``grid`` (Scott's bandwidth); None if degenerate."""
    v = np.asarray(values, dtype=np.float64)
    if v.size < 2 or np.ptp(v) == 0:
        return None
    bw = 1.06 * v.std(ddof=1) * v.size ** (-1 / 5)
    if not bw > 0:
        return None
    z = (grid[:, None] - v[None, :]) / bw
    return np.exp(-0.5 * z * z).sum(axis=1) / (v.size * bw * math.sqrt(2 * math.pi))


def plot_run(record_or_id: str | Path | EvalRecord, out_png: str | Path, *,
             results_dir: str | Path = RESULTS_DIR) -> Path:
    """Overlapping per-tier histograms + KDE of a record's predicted scores (per grade without tiers).

    Args:
        record_or_id: an :class:`EvalRecord`, a path to its JSON, or its id (or unique prefix)
            in ``results_dir``.
        out_png: the PNG to write.
    """
    record = find_verified(record_or_id, results_dir=results_dir, predictions=True)  # refused if it fails
    df = read_predictions(record)
    if df.empty:
        raise GradebenchError("the record has no predictions to plot", path=record.path,
                              hint="evaluate a non-empty split")
    pred = df["prediction"].to_numpy(dtype=np.float64)
    grade = df["relevance"].to_numpy(dtype=np.float64)
    tiers = df["tier"].astype(object).to_numpy() if "tier" in df.columns else None
    groups = []
    for g in sorted(np.unique(grade).tolist(), reverse=True):
        sel = grade == g
        names = [] if tiers is None else sorted({str(t) for t in tiers[sel] if t is not None})
        label = "/".join(names) if names else f"grade {g:g}"
        groups.append((f"{label} ({g:g})" if names else label, pred[sel]))
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    lo, hi = float(pred.min()), float(pred.max())
    if hi == lo:
        lo, hi = lo - 0.5, hi + 0.5
    bins = np.linspace(lo, hi, 31)
    grid = np.linspace(lo, hi, 256)
    cmap = plt.get_cmap("viridis")
    for i, (label, v) in enumerate(groups):
        color = cmap(i / max(1, len(groups) - 1))
        ax.hist(v, bins=bins, density=True, alpha=0.35, color=color, label=f"{label}, n={v.size}")
        density = kde(v, grid)
        if density is not None:
            ax.plot(grid, density, color=color, linewidth=1.6)
    sep = record.metrics.get("separation_ratio")
    sep_text = "" if sep is None or sep.value is None else f", separation ratio {sep.value:.3f}"
    loss = f" + {record.loss.name}" if record.loss.name else ""
    ax.set_title(f"{record.scorer.name}{loss} on {record.benchmark.name} ({record.split}){sep_text}", fontsize=10)
    ax.set_xlabel("predicted score")
    ax.set_ylabel("density")
    ax.legend(fontsize=8, frameon=False)
    return _save(fig, out_png)


def read_history(run_dir: str | Path) -> list[dict[str, Any]]:
    """Per-epoch logs of a run: ``history.jsonl`` if present, else ``run.json``'s history."""
    d = Path(run_dir)
    path = d / "history.jsonl"
    if path.is_file():
        out = []
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as e:
                raise GradebenchError(f"history line is not JSON ({e})", path=path, line=i,
                                      hint="the run is corrupt; train it again") from None
            if isinstance(row, dict):
                out.append(row)
        return out
    from gradebench.experiments.runs import read_run_info

    return list(read_run_info(d).history)


def _series(history: list[dict[str, Any]]) -> dict[str, tuple[list[float], list[float]]]:
    out: dict[str, tuple[list[float], list[float]]] = {}
    for i, row in enumerate(history, start=1):
        x = row.get("epoch", i)
        for k, v in row.items():
            if _skipped(k) or isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            if not math.isfinite(float(v)):
                continue
            xs, ys = out.setdefault(k, ([], []))
            xs.append(float(x))
            ys.append(float(v))
    return out


def plot_history(run_dir: str | Path, out_png: str | Path) -> Path:
    """Training curves of a run per epoch: losses, validation ranking metrics (``eval_*``) and
    other numbers the trainer logged (gradient norm, validation separation ratio...)."""
    history = read_history(run_dir)
    series = _series(history)
    if not series:
        raise GradebenchError("the run has no numeric per-epoch history to plot", path=run_dir,
                              hint="untrained scorers have no training curves; plot a record with --record")
    losses = {k: v for k, v in series.items() if "loss" in k}
    metrics = {k: v for k, v in series.items() if k.startswith("eval_") and "separation" not in k}
    other = {k: v for k, v in series.items() if k not in losses and k not in metrics}
    panels = [p for p in ((losses, "loss"), (metrics, "validation metric"), (other, "diagnostics")) if p[0]]
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.6), squeeze=False)
    for ax, (data, ylabel) in zip(axes[0], panels):
        for k in sorted(data):
            xs, ys = data[k]
            ax.plot(xs, ys, marker="o", markersize=3, label=k)
        ax.set_xlabel("epoch")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7, frameon=False)
    fig.suptitle(f"training curves: {Path(run_dir).name}", fontsize=10)
    return _save(fig, out_png)
