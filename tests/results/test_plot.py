"""Plots: valid PNGs of score distributions per tier and of training curves."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from gradebench.errors import GradebenchError, InvalidArgumentError
from gradebench.experiments.evaluate import evaluate_scorer
from gradebench.experiments.plot import kde, plot_history, plot_run
from tests.input_files import write_jsonl
from tests.results.conftest import Noisy, fake_run

PNG = b"\x89PNG\r\n\x1a\n"


def _png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_plot_run_by_id_path_and_record(demo_bench, tmp_path):
    rec = evaluate_scorer(demo_bench, Noisy(seed=1), split="train", results_dir=tmp_path / "res", n_resamples=20)
    for ref, name in ((rec.id[:10], "a.png"), (str(rec.path), "b.png"), (rec, "c.png")):
        out = plot_run(ref, tmp_path / "plots" / name, results_dir=tmp_path / "res")
        w, h = _png_size(out)
        assert w > 300 and h > 200
    from PIL import Image

    with Image.open(tmp_path / "plots" / "a.png") as im:
        im.verify()
    assert not [p for p in (tmp_path / "plots").iterdir() if p.name.startswith(".")]  # no temp files left
    with pytest.raises(InvalidArgumentError, match=".png"):
        plot_run(rec, tmp_path / "x.jpg")


def test_plot_history_from_jsonl_and_run_json(tmp_path):
    from gradebench.experiments.runs import RUN_JSON
    from gradebench.paths import write_json_atomic

    a = tmp_path / "run_a"
    a.mkdir()
    lines = [{"epoch": e, "train_loss": 1 / e, "eval_ndcg@5": 0.5 + e / 20, "eval_spearman": 0.1 * e,
              "epoch_s": 0.3} for e in range(1, 5)]
    write_jsonl(a / "history.jsonl", lines)
    assert _png_size(plot_history(a, tmp_path / "a.png"))[0] > 300
    b = tmp_path / "run_b"
    write_json_atomic(b / RUN_JSON, fake_run("f" * 64).to_dict())
    assert _png_size(plot_history(b, tmp_path / "b.png"))[0] > 300
    c = tmp_path / "run_c"
    c.mkdir()
    (c / "history.jsonl").write_text('{"epoch": 1}\n')
    with pytest.raises(GradebenchError, match="no numeric per-epoch history"):
        plot_history(c, tmp_path / "c.png")
    (c / "history.jsonl").write_text("{oops\n")
    with pytest.raises(GradebenchError, match="not JSON") as e:
        plot_history(c, tmp_path / "c.png")
    assert e.value.line == 1


def test_kde_integrates_to_one():
    v = np.random.default_rng(0).normal(size=200)
    grid = np.linspace(-8, 8, 4001)
    assert np.trapezoid(kde(v, grid), grid) == pytest.approx(1.0, abs=1e-3)
    assert kde(np.ones(5), grid) is None
