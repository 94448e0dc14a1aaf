"""Determinism: separate processes with different PYTHONHASHSEED give identical bytes;
the fingerprint changes with the recipe, its version and any input byte."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gradebench.benchmark.inputs import embedded_path
from gradebench.experiments.build import build
from gradebench.recipes import load_recipe, recipes_dir
from tests.conftest import REPO


def _digests(path: str) -> dict[str, str]:
    root = Path(path)
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _build_in_subprocess(out: Path, seed: str, *extra: str) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    proc = subprocess.run(
        [sys.executable, "-m", "gradebench", "build", "demo", "--out", str(out), "--json", *extra],
        capture_output=True, text=True, env=env, cwd=REPO, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_byte_identical_across_processes_and_hash_seeds(tmp_path):
    a = _build_in_subprocess(tmp_path / "a", "1")
    b = _build_in_subprocess(tmp_path / "b", "987654")
    assert a["fingerprint"] == b["fingerprint"]
    assert _digests(a["path"]) == _digests(b["path"])  # parquet, manifest and card


def _copy_demo(tmp_path: Path) -> Path:
    src = embedded_path(load_recipe("demo"))
    dst = tmp_path / "src"
    dst.mkdir()
    for f in src.glob("*.csv"):
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


def test_fingerprint_sensitivity(tmp_path):
    src = _copy_demo(tmp_path)
    base = build("demo", source=src, out=tmp_path / "o", progress=False)
    assert base.fingerprint == build("demo", out=tmp_path / "o2", progress=False).fingerprint  # same bytes

    # one input byte
    csv = next(src.glob("*.csv"))
    data = csv.read_bytes()
    csv.write_bytes(data.replace(b"demo-001", b"demo-00X", 1))
    changed_input = build("demo", source=src, out=tmp_path / "o", progress=False).fingerprint
    csv.write_bytes(data)

    # the recipe, and only its version
    raw = yaml.safe_load((recipes_dir() / "demo.yaml").read_text())
    bumped = tmp_path / "demo-v2.yaml"
    bumped.write_text(yaml.safe_dump({**raw, "version": 2}))
    changed_version = build(bumped, source=src, out=tmp_path / "o", progress=False).fingerprint
    tweaked = tmp_path / "demo-tweak.yaml"
    tweaked.write_text(yaml.safe_dump({**raw, "tiers": [{"name": "gold", "score_range": [0.71, 1.0]}]}))
    changed_recipe = build(tweaked, source=src, out=tmp_path / "o", progress=False).fingerprint
    changed_option = build("demo", source=src, out=tmp_path / "o", limit=20, progress=False).fingerprint

    prints = [base.fingerprint, changed_input, changed_version, changed_recipe, changed_option]
    assert len(set(prints)) == len(prints)


@pytest.mark.parametrize("seed", ["0", "42"])
def test_ids_do_not_depend_on_hash_seed(tmp_path, seed):
    # the same query ids in a fresh interpreter regardless of PYTHONHASHSEED
    code = (
        "from gradebench.datasets.tiers.select import query_id;"
        "from gradebench.datasets.records import NLIExample;"
        "print(query_id(NLIExample('validation', 0, 'x', 'A dog runs.', 'An animal moves.', 'entailment', ())))"
    )
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, check=True)
    from gradebench.datasets.tiers.select import query_id
    from gradebench.datasets.records import NLIExample

    here = query_id(NLIExample("validation", 0, "x", "A dog runs.", "An animal moves.", "entailment", ()))
    assert out.stdout.strip() == here and len(here) == 16
