"""Reliability of the build engine: empty builds, cache verification, stale staging folders,
folder modes, API argument types, duplicate rows, malformed manifests, builder versions."""

from __future__ import annotations

import csv
import fcntl
import json
import os
import shutil
from pathlib import Path

import pytest

from gradebench.experiments.build import build
from gradebench.benchmark.info import info
from gradebench.datasets.esnli.builder import ESNLIBuilder
from gradebench.cli.main import main
from gradebench.errors import BenchmarkError, InvalidArgumentError
from tests.conftest import FIXTURES

HEADER = ["pairID", "gold_label", "Sentence1", "Sentence2"] + [
    f"{c}_{k}" for k in (1, 2, 3) for c in
    ("Explanation", "Sentence1_marked", "Sentence2_marked", "Sentence1_Highlighted", "Sentence2_Highlighted")
]


def _csv(folder: Path, rows: list[tuple[str, str, str, str, str]]) -> Path:
    """An e-SNLI dev CSV with (pairID, label, premise, hypothesis, explanation) rows."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "esnli_dev.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        for pid, label, p, h, e in rows:
            w.writerow([pid, label, p, h] + [e, p, h, "", ""] + ["", "", "", "", ""] * 2)
    return folder


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


# -- empty builds ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rows",
    [
        [("1", "ENTAILMENT", "A man runs.", "A person runs.", "a man is a person")],
        [("1", "maybe", "A man runs.", "A person runs.", "a man is a person")],
        [("1", "entailment", "A man runs.", "A person runs.", "   ")],
        [],
    ],
    ids=["upper-case-label", "unknown-label", "blank-explanation", "header-only"],
)
def test_build_where_everything_is_skipped_is_refused(tmp_path, rows, cli=None):
    src = _csv(tmp_path / "src", rows)
    out = tmp_path / "out"
    with pytest.raises(BenchmarkError, match="nothing to build") as e:
        build("demo", source=src, out=out, progress=False)
    if rows:
        assert "skipped" in e.value.message
    assert _files(out) == []


def test_empty_build_exits_2_with_skip_counts(tmp_path, capsys):
    src = _csv(tmp_path / "src", [("1", "ENTAILMENT", "A man runs.", "A person runs.", "a man is a person")] * 3)
    code = main(["build", "demo", "--source", str(src), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert "unknown_label 3" in err and len(err.strip().splitlines()) == 1
    assert _files(tmp_path / "out") == []


def test_esnli_human_with_tiny_limit_is_refused(tmp_path):
    # two rows cannot supply sibling/unrelated explanations: every row is skipped
    with pytest.raises(BenchmarkError, match="nothing to build"):
        build("esnli-human", source=FIXTURES / "esnli" / "csv", out=tmp_path, limit=2, progress=False)


# -- cache verification ------------------------------------------------------------------------


def _demo(out: Path, **kw):
    return build("demo", out=out, progress=False, **kw)


@pytest.mark.parametrize("damage", ["delete", "truncate", "edit"])
def test_damaged_cache_is_rebuilt(tmp_path, damage):
    first = _demo(tmp_path)
    f = Path(first.path) / first.files["train"][0]
    original = f.read_bytes()
    if damage == "delete":
        f.unlink()
    elif damage == "truncate":
        f.write_bytes(original[: len(original) // 2])
    else:  # same size, different bytes
        f.write_bytes(original[:-9] + bytes(b ^ 0xFF for b in original[-9:]))
    again = _demo(tmp_path)
    assert not again.cached and again.repaired
    assert f.read_bytes() == original
    assert _demo(tmp_path).cached  # and now the cache is trusted again


def test_intact_cache_is_reused(tmp_path):
    first = _demo(tmp_path)
    again = _demo(tmp_path)
    assert again.cached and again.repaired is None and again.path == first.path


# -- staging folders -----------------------------------------------------------------------------


def _fake_staging(recipe_dir: Path, name: str, hold: bool) -> int | None:
    """A staging folder with a Parquet-sized file, its lock held (a live build) or free (a dead one)."""
    d = recipe_dir / ".staging" / name
    (d / "data").mkdir(parents=True)
    (d / "data" / "train-00000.parquet").write_bytes(b"x" * 1000)
    fd = os.open(d / ".lock", os.O_CREAT | os.O_RDWR)
    if hold:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd
    os.close(fd)
    return None


def test_stale_staging_is_cleaned_and_live_one_kept(tmp_path):
    recipe_dir = tmp_path / "demo"
    _fake_staging(recipe_dir, "dead.incomplete-1", hold=False)
    fd = _fake_staging(recipe_dir, "live.incomplete-2", hold=True)
    try:
        _demo(tmp_path)
        names = sorted(p.name for p in (recipe_dir / ".staging").iterdir())
        assert names == ["live.incomplete-2"]
    finally:
        os.close(fd)
    _demo(tmp_path, force=True)  # the lock is free now: the next build removes it
    assert not (recipe_dir / ".staging").exists()


def test_glob_over_benchmarks_never_sees_staging(tmp_path):
    import duckdb

    result = _demo(tmp_path)
    _fake_staging(tmp_path / "demo", "dead.incomplete-1", hold=False)
    shutil.copytree(Path(result.path) / "data", tmp_path / "demo" / ".staging" / "dead.incomplete-1" / "data",
                    dirs_exist_ok=True)
    rows = duckdb.sql(f"select count(*) from read_parquet('{tmp_path}/demo/*/data/*.parquet')").fetchall()[0][0]
    assert rows == sum(s["candidates"] for s in result.splits.values())


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_benchmark_folder_follows_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        result = _demo(tmp_path)
    finally:
        os.umask(old)
    for p in (Path(result.path), Path(result.path) / "data"):
        assert p.stat().st_mode & 0o777 == 0o777 & ~umask
    assert (Path(result.path) / "manifest.json").stat().st_mode & 0o777 == 0o666 & ~umask


# -- API argument types ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"limit": True}, {"limit": 2.5}, {"limit": "5"}, {"limit": 0},
        {"resplit": (80.5, 9.5, 10)}, {"resplit": (80, 10)}, {"resplit": "80/10"}, {"resplit": "a/b/c"},
        {"resplit": "80/10/10/0"},  # the string "80/10/10" is accepted (issue 15): malformed ones are not
        {"source": 123}, {"out": 5}, {"force": "yes"}, {"workers": 0}, {"workers": True},
    ],
)
def test_api_rejects_bad_argument_types(tmp_path, kwargs):
    kwargs.setdefault("out", tmp_path)
    with pytest.raises(InvalidArgumentError):
        build("demo", progress=False, **kwargs)
    assert _files(tmp_path) == []


# -- duplicates ----------------------------------------------------------------------------------


def test_conflicting_pair_ids_and_duplicate_rows_are_skipped(tmp_path):
    rows = [
        ("p1", "entailment", "A man runs.", "A person runs.", "a man is a person"),
        ("p1", "entailment", "A cat sleeps.", "An animal sleeps.", "a cat is an animal"),  # same id, other text
        ("p2", "neutral", "A dog barks.", "A dog is angry.", "barking need not mean anger"),
        ("p2", "neutral", "A dog barks.", "A dog is angry.", "barking need not mean anger"),  # exact duplicate
        ("p3", "contradiction", "A boy sits.", "A boy runs.", "one cannot sit and run"),
    ]
    result = build("demo", source=_csv(tmp_path / "src", rows), out=tmp_path / "out", progress=False)
    assert result.skipped == {"conflicting_source_id": 1, "duplicate_row": 1}
    assert sum(s["queries"] for s in result.splits.values()) == 3


def test_duplicate_preprocessed_lines_are_skipped(tmp_path):
    src = tmp_path / "pre"
    src.mkdir()
    lines = {
        "s1": ["A man runs .", "A man runs .", "A dog barks ."],
        "s2": ["A person runs .", "A person runs .", "A dog is angry ."],
        "labels": ["entailment", "entailment", "neutral"],
        "preproc1_expl_1": ["a man is a person", "a man is a person", "barking need not mean anger"],
    }
    for stem, values in lines.items():
        (src / f"{stem}.dev").write_text("\n".join(values) + "\n", encoding="utf-8")
    recipe = tmp_path / "r.yaml"
    recipe.write_text("extends: demo\nname: pre\nsource:\n  formats: [esnli-preprocessed]\n", encoding="utf-8")
    result = build(recipe, source=src, out=tmp_path / "out", progress=False)
    assert result.skipped == {"duplicate_row": 1}


# -- manifests -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "manifest",
    [
        [1, 2],
        {"data_format_version": 1, "fingerprint": 3},
        {"data_format_version": 1, "fingerprint": "x", "recipe": {"name": "demo"}, "splits": {"test": 5}},
        {"data_format_version": 1, "fingerprint": "x", "recipe": "demo"},
    ],
    ids=["list", "fingerprint-type", "split-type", "recipe-type"],
)
def test_malformed_manifest_is_one_line_exit_2(tmp_path, capsys, manifest):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(BenchmarkError, match="manifest"):
        info(tmp_path / "b")
    assert main(["info", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gradebench: error:") and len(err.strip().splitlines()) == 1


# -- builder versions ----------------------------------------------------------------------------


def test_builder_version_changes_only_its_own_fingerprints(tmp_path, monkeypatch):
    from gradebench.datasets.winowhy.builder import WinoWhyBuilder

    wino_src = FIXTURES / "winowhy"
    before = (_demo(tmp_path / "a").fingerprint,
              build("winowhy", source=wino_src, out=tmp_path / "a", progress=False).fingerprint)
    monkeypatch.setattr(ESNLIBuilder, "version", 2)
    after = (_demo(tmp_path / "b").fingerprint,
             build("winowhy", source=wino_src, out=tmp_path / "b", progress=False).fingerprint)
    assert before[0] != after[0]
    assert before[1] == after[1]
    assert WinoWhyBuilder.version == 1
