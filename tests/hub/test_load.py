"""Loading benchmarks back: ``datasets.load_dataset`` on a publish folder, and ``gradebench.hub.load``.

Everything runs offline (tests/conftest.py sets HF_HUB_OFFLINE / HF_DATASETS_OFFLINE and
per-test caches); the repo-id path is exercised through its failures and a faked ``load_dataset``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
from huggingface_hub import DatasetCard

from gradebench.errors import BenchmarkError, InvalidArgumentError, SourceNotFoundError, UnknownNameError
from gradebench.hub import HubError, load, publish
from tests.hub.test_publish import REPO_ID, build_benchmarks

CORE = {
    "query_id": "string", "query": "string", "candidate_id": "string", "candidate": "string",
    "score": "float64", "relevance": "int16", "tier": "string", "split": "string",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    return build_benchmarks(tmp_path_factory)


@pytest.fixture(scope="module")
def folder(built, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("published") / "hub"
    publish([built["demo"], built["winowhy"]], repo_id=REPO_ID, dry_run=out)
    return out


def manifest(path: Path) -> dict:
    return json.loads((path / "manifest.json").read_text())


def check_core_features(ds: datasets.Dataset) -> None:
    for name, dtype in CORE.items():
        assert isinstance(ds.features[name], datasets.Value) and ds.features[name].dtype == dtype, name


def source_table(bench: Path, split: str):
    import pyarrow as pa

    files = manifest(bench)["splits"][split]["files"]
    return pa.concat_tables([pq.read_table(bench / f) for f in files])


# ---------------------------------------------------------------- datasets.load_dataset on the folder


def test_load_dataset_reads_the_default_config(folder, built, tmp_path):
    dd = datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "c"))
    m = manifest(built["demo"])
    assert list(dd) == ["train", "validation", "test"]
    assert {s: dd[s].num_rows for s in dd} == {s: v["candidates"] for s, v in m["splits"].items()}
    for s in dd:
        check_core_features(dd[s])
        assert dd[s].column_names == m["columns"]
        assert set(dd[s]["split"]) == {s}
        assert len(set(dd[s]["query_id"])) == m["splits"][s]["queries"]
    assert sorted(set(dd["train"]["tier"])) == ["fair", "gold", "good", "nonsense", "poor"]


def test_load_dataset_reads_a_named_config(folder, built, tmp_path):
    assert datasets.get_dataset_config_names(str(folder)) == ["demo", "winowhy"]
    dd = datasets.load_dataset(str(folder), "winowhy", cache_dir=str(tmp_path / "c"))
    m = manifest(built["winowhy"])
    assert {s: dd[s].num_rows for s in dd} == {s: v["candidates"] for s, v in m["splits"].items()}
    check_core_features(dd["test"])
    assert set(dd["test"]["tier"]) == {None}  # natural grades have no tier
    assert dd["test"].data.table.to_pylist() == source_table(built["winowhy"], "test").to_pylist()


def test_the_card_loads_with_its_metadata(folder):
    card = DatasetCard.load(folder / "README.md")
    assert card.data.pretty_name == "gradebench demo, winowhy"
    assert card.data.license == ["apache-2.0", "mit"]
    assert card.data.task_categories == ["text-ranking"]
    assert [c["config_name"] for c in card.data.configs] == ["demo", "winowhy"]
    assert "gradebench benchmark `demo`" in card.text and "gradebench benchmark `winowhy`" in card.text
    assert "## Loading" in card.text


def test_datasets_checks_split_sizes_against_the_card(folder, tmp_path):
    """The card's dataset_info is checked on load: a dropped row would be caught, not passed on."""
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    readme = copy / "README.md"
    readme.write_text(readme.read_text().replace("num_examples: 18", "num_examples: 17"))
    with pytest.raises(datasets.exceptions.NonMatchingSplitsSizesError):
        datasets.load_dataset(str(copy), "winowhy", cache_dir=str(tmp_path / "c"))


# ---------------------------------------------------------------- gradebench.hub.load


@pytest.mark.parametrize("which", ["demo", "winowhy"])
def test_round_trip_rows_per_split_equal_the_manifest(folder, built, which):
    m = manifest(built[which])
    for source in (built[which], folder):
        dd = load(source, config=which)
        assert isinstance(dd, datasets.DatasetDict)
        assert {s: dd[s].num_rows for s in dd} == {s: v["candidates"] for s, v in m["splits"].items()}
        for s in dd:
            check_core_features(dd[s])
            table = source_table(built[which], s)
            assert dd[s]["candidate_id"] == table.column("candidate_id").to_pylist()
            assert dd[s]["score"] == table.column("score").to_pylist()


def test_load_a_build_folder(built):
    dd = load(built["demo"])
    assert list(dd) == ["train", "validation", "test"]
    train = load(built["demo"], split="train")
    assert isinstance(train, datasets.Dataset) and train.num_rows == manifest(built["demo"])["splits"]["train"][
        "candidates"]
    # the temporary cache is gone, the data lives in memory and stays usable
    assert train.cache_files == []
    doubled = train.map(lambda r: {"twice": r["relevance"] * 2})
    assert doubled["twice"] == [2 * r for r in train["relevance"]]


def test_load_with_a_cache_dir_keeps_the_arrow_cache(built, tmp_path):
    ds = load(built["winowhy"], split="test", cache_dir=tmp_path / "cache")
    assert ds.cache_files and all(Path(f["filename"]).is_relative_to(tmp_path / "cache") for f in ds.cache_files)
    assert load(built["winowhy"], split="test", cache_dir=tmp_path / "cache").num_rows == ds.num_rows


def test_load_a_publish_folder_default_config_and_split(folder, built):
    dd = load(folder)
    assert set(dd) == {"train", "validation", "test"}  # demo, the first config
    assert load(folder, "winowhy", "test").num_rows == manifest(built["winowhy"])["splits"]["test"]["candidates"]


def test_unknown_config_and_split_suggest_close_names(folder, built):
    with pytest.raises(UnknownNameError, match="no config 'demoo'; did you mean 'demo'"):
        load(folder, "demoo")
    with pytest.raises(UnknownNameError, match="no split 'trian'; did you mean 'train'"):
        load(folder, "demo", "trian")
    with pytest.raises(UnknownNameError, match="no split 'train'"):
        load(folder, "winowhy", "train")
    with pytest.raises(UnknownNameError, match="no config 'esnli'"):
        load(built["demo"], config="esnli")
    with pytest.raises(UnknownNameError, match="no split 'dev'"):
        load(built["demo"], split="dev")


def test_damaged_local_sources_are_refused(folder, built, tmp_path):
    copy = tmp_path / "hub"
    shutil.copytree(folder, copy)
    shard = copy / "data" / "winowhy" / "test-00000-of-00001.parquet"
    shard.write_bytes(shard.read_bytes()[:-1] + b"\0")
    with pytest.raises(BenchmarkError, match="does not match its digest"):
        load(copy, "winowhy")
    shard.unlink()
    with pytest.raises(BenchmarkError, match="is missing"):
        load(copy, "winowhy")
    bench = tmp_path / "bench"
    shutil.copytree(built["winowhy"], bench)
    next((bench / "data").glob("*.parquet")).unlink()
    with pytest.raises(BenchmarkError, match="damaged"):
        load(bench)


def test_bad_sources(tmp_path):
    with pytest.raises(SourceNotFoundError, match="no such folder"):
        load(tmp_path / "missing")
    with pytest.raises(SourceNotFoundError):
        load("./no/such/folder")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BenchmarkError, match="neither a built benchmark"):
        load(tmp_path / "empty")
    (tmp_path / "file").write_text("x")
    with pytest.raises(BenchmarkError, match="not a folder"):
        load(tmp_path / "file")
    with pytest.raises(InvalidArgumentError):
        load(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        load(tmp_path, split="")


def test_a_repo_id_offline_is_a_one_line_error(tmp_path):
    with pytest.raises(HubError, match="offline mode is on and it is not in the datasets cache") as e:
        load("some-org/not-cached", cache_dir=tmp_path / "c")
    assert "\n" not in str(e.value) and "HF_HUB_OFFLINE" in str(e.value)


def test_a_repo_id_goes_to_load_dataset(monkeypatch):
    calls = []

    def fake(path, name=None, **kwargs):
        calls.append((path, name, kwargs))
        return "dataset"

    monkeypatch.setattr(datasets, "load_dataset", fake)
    assert load("my-org/graded", config="esnli-human", split="test") == "dataset"
    assert calls == [("my-org/graded", "esnli-human", {"split": "test", "cache_dir": None})]


def test_repo_failures_are_mapped(monkeypatch):
    from datasets.exceptions import DatasetNotFoundError

    def missing(*a, **k):
        raise DatasetNotFoundError("Dataset 'my-org/graded' doesn't exist on the Hub or cannot be accessed.")

    monkeypatch.setattr(datasets, "load_dataset", missing)
    with pytest.raises(HubError, match="no such dataset on the Hub"):
        load("my-org/graded")

    def bad_config(*a, **k):
        raise ValueError("BuilderConfig 'x' not found. Available: ['esnli']")

    monkeypatch.setattr(datasets, "load_dataset", bad_config)
    with pytest.raises(UnknownNameError, match="BuilderConfig 'x' not found"):
        load("my-org/graded", config="x")


def _edit_index(copy: Path, config: str, edit) -> None:
    path = copy / "gradebench.json"
    index = json.loads(path.read_text())
    edit(index["configs"][config])
    path.write_text(json.dumps(index))


def test_a_publish_folder_without_digests_is_refused(folder, tmp_path):
    """A ``gradebench.json`` config without ``file_digests`` was loaded unverified."""
    copy = tmp_path / "hub"
    shutil.copytree(folder, copy)
    shard = copy / "data" / "winowhy" / "test-00000-of-00001.parquet"
    shard.write_bytes(shard.read_bytes()[:-1] + b"\0")
    _edit_index(copy, "winowhy", lambda e: e.pop("file_digests"))
    with pytest.raises(BenchmarkError, match="file_digests") as e:
        load(copy, "winowhy")
    assert e.value.path == str(copy / "gradebench.json")


@pytest.mark.parametrize("rel", ["../outside.parquet", "/tmp/outside.parquet", "data/winowhy/../../../x.parquet",
                                 "data/demo/test-00000-of-00001.parquet"])
def test_names_in_the_index_are_checked_before_they_are_joined_to_the_folder(folder, tmp_path, rel):
    """A name in ``gradebench.json`` was joined to the folder unchecked (and a file outside it hashed)."""
    copy = tmp_path / "pub" / "hub"
    shutil.copytree(folder, copy)
    outside = tmp_path / "pub" / "outside.parquet"
    outside.write_bytes(b"outside")
    from gradebench.hashing import sha256_file

    _edit_index(copy, "winowhy", lambda e: e["file_digests"].update(
        {rel: {"bytes": outside.stat().st_size, "sha256": sha256_file(outside)}}))
    with pytest.raises(BenchmarkError, match="not a data file of config 'winowhy'") as e:
        load(copy, "winowhy")
    assert e.value.path == str(copy / "gradebench.json")
