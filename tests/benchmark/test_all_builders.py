"""Properties every registered builder must have, checked on its fixture source.

Parametrized over the builder registry: a new builder fails `test_every_builder_has_a_fixture`
until it is given a recipe and a fixture here, and then gets every other test for free.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from gradebench.benchmark import engine
from gradebench.experiments.build import build
from gradebench.datasets import builder_names, get_builder
from gradebench.recipes.loader import load_recipe
from tests.conftest import FIXTURES, REPO

#: builder -> (recipe, fixture source)
CASES: dict[str, tuple[str, Path]] = {
    "esnli": ("demo", FIXTURES / "esnli" / "csv"),
    "dnli": ("dnli", FIXTURES / "dnli"),
    "dnli-natural": ("dnli-natural", FIXTURES / "dnli"),
    "winowhy": ("winowhy", FIXTURES / "winowhy"),
    "mnli": ("mnli", FIXTURES / "mnli" / "multinli_1.0"),
    "nli-table": (str(FIXTURES / "nli_table" / "recipe.yaml"), FIXTURES / "nli_table" / "folder"),
    "chaosnli": ("chaosnli-snli", FIXTURES / "chaosnli" / "chaosNLI_v1.0" / "chaosNLI_snli.jsonl"),
    "anli": ("anli", FIXTURES / "anli"),
    "worldtree": ("worldtree", FIXTURES / "worldtree" / "data"),
    "preferences": ("preference-pairs", FIXTURES / "preferences" / "trl"),
    "best-of-n": ("best-of-n", FIXTURES / "best_of_n" / "rb2"),
    "ratings": ("multi-ratings", FIXTURES / "ratings" / "ultrafeedback"),
}
BUILDERS = sorted(CASES)


def test_every_builder_has_a_fixture():
    assert sorted(builder_names()) == BUILDERS, "give the new builder a recipe and a fixture in CASES"
    for name, (recipe, source) in CASES.items():
        assert load_recipe(recipe).source.family == name
        assert source.exists()


def _digests(path: str) -> dict[str, str]:
    root = Path(path)
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != "README.md"} | {
        "README.md": hashlib.sha256((root / "README.md").read_bytes()).hexdigest()}


_BUILD_IN_SUBPROCESS = (
    "import json, sys; from gradebench.experiments.build import build; "
    "r = build(sys.argv[1], source=sys.argv[2], out=sys.argv[3], progress=False); "
    "print(json.dumps({'fingerprint': r.fingerprint, 'path': r.path}))"
)


def _build_in_process(recipe: str, source: Path, out: Path, seed: str) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": seed, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", _BUILD_IN_SUBPROCESS, recipe, str(source), str(out)],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("builder", BUILDERS)
def test_same_bytes_across_processes_hash_seeds_and_locations(tmp_path, builder):
    recipe, source = CASES[builder]
    moved = tmp_path / "elsewhere" / source.name
    moved.parent.mkdir()
    (shutil.copytree if source.is_dir() else shutil.copy)(source, moved)
    a = _build_in_process(recipe, source, tmp_path / "a", "0")
    b = _build_in_process(recipe, moved, tmp_path / "b", "12345")
    assert a["fingerprint"] == b["fingerprint"]
    assert _digests(a["path"]) == _digests(b["path"])


@pytest.mark.parametrize("builder", BUILDERS)
def test_worker_count_and_batching_do_not_change_bytes(tmp_path, monkeypatch, builder):
    recipe, source = CASES[builder]
    monkeypatch.setattr(engine, "BATCH_QUERIES", 2)  # several batches: the forkserver pool runs
    one = build(recipe, source=source, out=tmp_path / "one", workers=1, progress=False)
    two = build(recipe, source=source, out=tmp_path / "two", workers=2, progress=False)
    assert one.fingerprint == two.fingerprint
    same = {k: v for k, v in _digests(one.path).items() if k.startswith("data/")}
    assert same == {k: v for k, v in _digests(two.path).items() if k.startswith("data/")}


@pytest.mark.parametrize("builder", BUILDERS)
def test_core_contract(tmp_path, builder):
    recipe, source = CASES[builder]
    r = build(recipe, source=source, out=tmp_path, progress=False)
    cls = get_builder(builder)
    manifest = json.loads((Path(r.path) / "manifest.json").read_text())
    assert manifest["builder"] == {"name": builder, "version": cls.version}
    assert r.validation is not None and r.validation["success"]
    table = pq.read_table([f"{r.path}/{f}" for fs in r.files.values() for f in fs])
    core = ["query_id", "query", "candidate_id", "candidate", "score", "relevance", "tier", "split"]
    assert table.column_names == core + [c.name for c in cls.columns]
    rows = table.to_pylist()
    assert all(0.0 <= row["score"] <= 1.0 for row in rows)
    assert len({(row["query_id"], row["candidate_id"]) for row in rows}) == len(rows)
    by_query: dict[str, set] = {}
    for row in rows:
        by_query.setdefault(row["query_id"], set()).add(row["relevance"])
    assert all(len(grades) >= 2 for grades in by_query.values())
    stats = r.stats["all"]
    assert stats["queries"] == len(by_query)
    assert sum(int(k) * v for k, v in stats["list_sizes"].items()) == len(rows)
    assert ("tiers" in stats) == (cls(load_recipe(recipe)).tiers() is not None)
    card = (Path(r.path) / "README.md").read_text()
    assert f"builder: `{builder}` v{cls.version}" in card
    if not cls(load_recipe(recipe)).redistributable():
        assert "Not redistributable" in card


@pytest.mark.parametrize("builder", BUILDERS)
def test_binary_input_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, builder):
    from gradebench.cli.main import main

    recipe, source = CASES[builder]
    broken = tmp_path / "src" / source.name
    broken.parent.mkdir()
    (shutil.copytree if source.is_dir() else shutil.copy)(source, broken)
    located = get_builder(builder)(load_recipe(recipe)).locate(broken)
    Path(located[-1].path).write_bytes(b"\x00\x01garbage\n")  # a file the build really reads
    out = tmp_path / "out"
    code = main(["build", recipe, "--source", str(broken), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("gradebench: error:") and len(err.strip().splitlines()) == 1
    assert not [p for p in out.rglob("*") if p.is_file()]


def test_build_is_safe_inside_a_process_running_torch_threads(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    torch.set_num_threads(2)
    x = torch.randn(256, 256)
    (x @ x).sum().item()  # the intra-op thread pool is now running
    recipe, source = CASES["esnli"]
    monkeypatch.setattr(engine, "BATCH_QUERIES", 4)
    pooled = build(recipe, source=source, out=tmp_path / "a", workers=2, progress=False)
    serial = build(recipe, source=source, out=tmp_path / "b", workers=1, progress=False)
    assert pooled.fingerprint == serial.fingerprint
    assert {k: v for k, v in _digests(pooled.path).items() if k.startswith("data/")} == {
        k: v for k, v in _digests(serial.path).items() if k.startswith("data/")}


def _units(recipe: str, source: Path, limit: int | None = None):
    from gradebench.benchmark.inputs import locate_source

    r = load_recipe(recipe)
    b = get_builder(r.source.family)(r)
    files = locate_source(b, r, str(source))
    return b, b.select(b.read(files), limit=limit).units


def _columns_equal_lists(recipe: str, source: Path, limit: int | None = None) -> None:
    """A builder's column path (what workers run) gives exactly its lists, in columns.

    The tiered NLI builders fill the columns directly, without the per-list objects; this pins
    them to :meth:`make_lists` field by field, floats included.
    """
    from gradebench.datasets.base import GradedColumns

    b, units = _units(recipe, source, limit)
    assert units, f"{recipe}: the source gives no lists"
    direct = _plain(b.make_columns(units))
    assert direct == _plain(GradedColumns.from_lists(b.make_lists(units), b.columns))
    assert len(direct.candidates) == sum(direct.counts) > len(direct.counts)


def _plain(batch):
    """A GradedColumns whose array fields (numpy, Arrow) are lists, so batches compare with ``==``."""
    import dataclasses

    import numpy as np
    import pyarrow as pa

    def plain(v):
        if isinstance(v, pa.Array):
            return v.to_pylist()
        if isinstance(v, np.ndarray):
            return v.tolist()
        if isinstance(v, list) and v and isinstance(v[0], (list, pa.Array, np.ndarray)):
            return [plain(x) for x in v]
        return v

    return dataclasses.replace(batch, **{f.name: plain(getattr(batch, f.name)) for f in dataclasses.fields(batch)})


@pytest.mark.parametrize("builder", BUILDERS)
def test_make_columns_equals_the_lists_in_columns(builder):
    _columns_equal_lists(*CASES[builder])


@pytest.mark.parametrize("builder", BUILDERS)
def test_units_packed_for_the_workers_come_back_equal(builder):
    import pickle

    b, units = _units(*CASES[builder])
    back = b.unpack_units(pickle.loads(pickle.dumps(b.pack_units(units), protocol=pickle.HIGHEST_PROTOCOL)))
    assert list(back) == list(units)
    assert [type(u) for u in back] == [type(u) for u in units]
    assert [type(getattr(u, "example", None)) for u in back] == [type(getattr(u, "example", None)) for u in units]


@pytest.mark.integration
@pytest.mark.parametrize("recipe", ["esnli", "esnli-fixed", "esnli-human", "esnli-contrast", "esnli-contrast-v2"])
def test_make_columns_equals_the_lists_on_real_esnli(recipe):
    from tests.conftest import shared_data

    _columns_equal_lists(recipe, shared_data("esnli", "eSNLI"), limit=1500)
