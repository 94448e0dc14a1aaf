"""``gradebench publish-results``: the records as a Hub dataset folder (``--dry-run``), read back by
``leaderboard`` and ``query`` from the folder or, by Hub id, from the local cache. Offline throughout."""

from __future__ import annotations

import json
import shutil

import pytest

from gradebench.errors import HubError, InvalidArgumentError, RecordError
from gradebench.experiments.evaluate import evaluate_scorer
from gradebench.experiments.leaderboard import leaderboard
from gradebench.experiments.query import run_query
from gradebench.experiments.results_hub import FORMAT, INDEX, TABLE, publish_results, resolve_results_dir
from gradebench.hashing import sha256_file
from tests.conftest import run_cli
from tests.results.conftest import Oracle, QueryBlindFake, Shuffle


@pytest.fixture(scope="module")
def store(demo_benchmark, tmp_path_factory):
    out = tmp_path_factory.mktemp("res")
    for scorer in (Oracle(), Shuffle(seed=1), QueryBlindFake()):
        evaluate_scorer(demo_benchmark, scorer, split="train", results_dir=out, n_resamples=100)
    return out


def test_dry_run_is_a_results_folder_the_leaderboard_reads(store, tmp_path):
    dest = tmp_path / "hub"
    result = publish_results(store, repo_id="me/gb-results", dry_run=dest)
    assert result.dry_run == str(dest) and not result.pushed and result.records == 3
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert files == result.files and TABLE in files and "README.md" in files
    index = json.loads((dest / INDEX).read_text(encoding="utf-8"))
    assert index["format"] == FORMAT and index["records"] == 3
    assert all(sha256_file(dest / name) == digest for name, digest in index["files"].items())
    assert not any(f.endswith(".predictions.parquet") for f in files)  # predictions stay local
    assert leaderboard(dest, split="train").to_dict() == leaderboard(store, split="train").to_dict()
    sql = "SELECT scorer, count(*) AS n FROM results GROUP BY 1 ORDER BY 1"
    assert run_query(sql, results_dir=dest).rows == run_query(sql, results_dir=store).rows
    import pyarrow.parquet as pq

    table = pq.read_table(dest / TABLE)
    assert table.num_rows == sum(len(r) for r in [json.loads(p.read_text())["metrics"] for p in store.glob("*/*.json")])
    card = (dest / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\nlicense: cc-by-4.0\n") and "path: data/results.parquet" in card
    assert "gradebench leaderboard --results-dir me/gb-results" in card
    # the same records give the same bytes; an earlier dry run is replaced
    again = tmp_path / "again"
    publish_results(store, repo_id="me/gb-results", dry_run=again)
    assert all((again / f).read_bytes() == (dest / f).read_bytes() for f in files)
    publish_results(store, repo_id="me/gb-results", dry_run=dest)


def test_a_hub_id_is_read_from_the_local_cache(store, tmp_path, capsys, monkeypatch):
    from huggingface_hub import constants

    folder = tmp_path / "hub"
    publish_results(store, repo_id="me/gb-results", dry_run=folder)
    cache = tmp_path / "cache"
    repo = cache / "datasets--me--gb-results"
    shutil.copytree(folder, repo / "snapshots" / ("a" * 40))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("a" * 40)
    assert resolve_results_dir("me/gb-results", cache_dir=cache) == repo / "snapshots" / ("a" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    code, out, err = run_cli(capsys, "leaderboard", "--results-dir", "me/gb-results", "--split", "train", "--json")
    assert code == 0, err
    assert json.loads(out) == leaderboard(store, split="train").to_dict()
    code, out, err = run_cli(capsys, "query", "SELECT count(*) AS n FROM results", "--results-dir", "me/gb-results",
                             "--json")
    assert code == 0 and json.loads(out)["rows"] == [{"n": 3}]
    code, out, err = run_cli(capsys, "leaderboard", "--results-dir", "me/not-here")
    assert code == 2 and err.count("\n") == 1 and "no Hub dataset me/not-here in the local cache" in err
    assert "hf download me/not-here --repo-type dataset" in err


def test_cli_json_equals_the_api_and_errors_write_nothing(store, tmp_path, capsys, monkeypatch):
    dest = tmp_path / "hub"
    code, out, err = run_cli(capsys, "publish-results", "--repo-id", "me/gb", "--results-dir", store,
                             "--dry-run", dest, "--json")
    assert code == 0, err
    assert json.loads(out) == publish_results(store, repo_id="me/gb", dry_run=dest).to_dict()
    code, out, err = run_cli(capsys, "publish-results", "--repo-id", "me/gb", "--results-dir", store, "--dry-run", dest)
    assert code == 0 and f"gradebench leaderboard --results-dir {dest}\n" in out
    assert max(len(x.replace(str(dest), "DIR")) for x in out.splitlines()) <= 80
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    for args, needle in [
        (["--dry-run", other], "not an earlier publish-results folder"),
        (["--repo-id", "not a repo", "--dry-run", tmp_path / "x"], "is not a Hub repo id"),
        (["--results-dir", tmp_path / "missing", "--dry-run", tmp_path / "x"], "no such results folder"),
        (["--license", "nope-1.0", "--dry-run", tmp_path / "x"], "nope-1.0"),
    ]:
        base = ["publish-results", "--repo-id", "me/gb", "--results-dir", store]
        code, out, err = run_cli(capsys, *base, *args)
        assert code == 2 and out == "" and err.count("\n") == 1 and needle in err, err
    assert [p.name for p in other.iterdir()] == ["keep.txt"] and not (tmp_path / "x").exists()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, out, err = run_cli(capsys, "publish-results", "--repo-id", "me/gb", "--results-dir", store)
    assert code == 2 and "offline mode is on" in err and "--dry-run DIR" in err


def test_a_record_failing_its_checks_is_not_published(store, tmp_path, monkeypatch):
    bad = tmp_path / "res"
    shutil.copytree(store, bad)
    record = sorted(bad.glob("*/*.json"))[0]
    data = json.loads(record.read_text())
    data["metrics"]["ndcg@5"]["value"] = 0.123456
    record.write_text(json.dumps(data))
    with pytest.raises(RecordError, match="fails its checks") as e:
        publish_results(bad, repo_id="me/gb", dry_run=tmp_path / "hub")
    assert record.name in str(e.value) and not (tmp_path / "hub").exists()
    with pytest.raises(InvalidArgumentError):
        publish_results(store, repo_id="me", dry_run=tmp_path / "hub")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubError, match="offline"):
        publish_results(store, repo_id="me/gb")
