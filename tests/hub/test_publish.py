"""``publish``: the Hub layout (dry run), licenses, refusals, and the push path with ``HfApi`` faked.

Nothing here touches the network: the push tests replace ``HfApi.create_repo`` and
``HfApi.upload_folder`` and make them raise the real ``huggingface_hub`` exception types.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import httpx2
import huggingface_hub
import pyarrow.parquet as pq
import pytest
import yaml
from huggingface_hub import errors as hf_errors

from gradebench.cli import main
from gradebench.datasets.source import License
from gradebench.errors import BenchmarkError, InvalidArgumentError
from gradebench.hashing import sha256_file
from gradebench.hub import HubError, NotRedistributableError, publish
from gradebench.hub.layout import demote_headings, size_category, strip_front_matter
from gradebench.hub.licenses import check_ids, hub_license_ids
from gradebench.recipes.loader import load_recipe
from tests.cli.conftest import assert_one_line_error
from tests.conftest import FIXTURES

REPO_ID = "my-org/graded-demo"


def build_benchmarks(tmp_path_factory) -> dict[str, Path]:
    """demo (tiered), winowhy (natural grades) and anli (not redistributable) built from fixtures.

    Built into one folder under the session's base temp, so a second caller gets the cached builds.
    """
    from gradebench.experiments.build import build

    out = tmp_path_factory.getbasetemp() / "hub-benchmarks"
    return {
        "demo": Path(build("demo", out=out, progress=False, workers=1).path),
        "winowhy": Path(build("winowhy", source=FIXTURES / "winowhy", out=out, progress=False, workers=1).path),
        "anli": Path(build("anli", source=FIXTURES / "anli", out=out, progress=False, workers=1).path),
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    return build_benchmarks(tmp_path_factory)


@pytest.fixture(scope="module")
def dry(built, tmp_path_factory):
    """A dry-run folder of demo + winowhy and the result that wrote it."""
    out = tmp_path_factory.mktemp("dry") / "hub"
    result = publish([built["demo"], built["winowhy"]], repo_id=REPO_ID, dry_run=out)
    return out, result


def manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def front_matter(readme: Path) -> tuple[dict, str]:
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    head, _, body = text[4:].partition("\n---\n")
    return yaml.safe_load(head), body


def tree(folder: Path) -> dict[str, str]:
    """``{relative path: sha256}`` of every file under ``folder``."""
    return {p.relative_to(folder).as_posix(): sha256_file(p) for p in sorted(folder.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------- the layout (dry run)


def test_dry_run_writes_the_hub_layout(dry, built):
    out, result = dry
    files = sorted(tree(out))
    assert files == result.files == [
        "LICENSE.md", "README.md",
        "data/demo/test-00000-of-00001.parquet", "data/demo/train-00000-of-00001.parquet",
        "data/demo/validation-00000-of-00001.parquet", "data/winowhy/test-00000-of-00001.parquet",
        "gradebench.json",
    ]
    assert result.dry_run == str(out) and result.pushed is False and result.url is None
    assert [c["config"] for c in result.configs] == ["demo", "winowhy"]
    # data files are byte copies of the benchmark's shards
    for cfg in ("demo", "winowhy"):
        for split, v in manifest(built[cfg])["splits"].items():
            for f in v["files"]:
                assert sha256_file(out / "data" / cfg / Path(f).name) == sha256_file(built[cfg] / f)
    # no temporary sibling is left next to the folder
    assert sorted(p.name for p in out.parent.iterdir()) == ["hub"]


def test_readme_front_matter_declares_one_config_per_benchmark(dry, built):
    out, _ = dry
    meta, body = front_matter(out / "README.md")
    assert meta["pretty_name"] == "gradebench demo, winowhy"
    assert meta["license"] == ["apache-2.0", "mit"]
    assert meta["task_categories"] == ["text-ranking"]
    assert meta["size_categories"] == ["n<1K"]
    configs = {c["config_name"]: c for c in meta["configs"]}
    assert list(configs) == ["demo", "winowhy"]
    assert configs["demo"].get("default") is True and "default" not in configs["winowhy"]
    for cfg, c in configs.items():
        m = manifest(built[cfg])
        splits = {d["split"]: d["path"] for d in c["data_files"]}
        assert set(splits) == set(m["splits"])
        for split, paths in splits.items():
            assert paths == [f"data/{cfg}/{Path(f).name}" for f in m["splits"][split]["files"]]
            assert all((out / p).is_file() for p in paths)
    assert [s["split"] for s in configs["demo"]["data_files"]] == ["train", "validation", "test"]
    infos = {i["config_name"]: i for i in meta["dataset_info"]}
    for cfg in ("demo", "winowhy"):
        m = manifest(built[cfg])
        assert {s["name"]: s["num_examples"] for s in infos[cfg]["splits"]} == {
            s: v["candidates"] for s, v in m["splits"].items()}
        features = {f["name"]: f["dtype"] for f in infos[cfg]["features"]}
        assert [f["name"] for f in infos[cfg]["features"]] == m["columns"]
        assert features["score"] == "float64" and features["relevance"] == "int16"
        assert features["query_id"] == features["candidate"] == features["tier"] == "string"
    # the datasheet: an overview, then each card with its headings one level down
    assert body.lstrip().startswith("# gradebench demo, winowhy")
    assert f'load_dataset("{REPO_ID}", "demo")' in body
    assert "## gradebench benchmark `demo` (recipe v1)" in body
    assert "## gradebench benchmark `winowhy` (recipe v1)" in body
    assert "### Construction" in body and "\n# gradebench benchmark" not in body
    assert "\n---\n" not in body and "task_categories: [text-ranking]" not in body  # the cards' YAML is gone
    demo_card = strip_front_matter((built["demo"] / "README.md").read_text())
    assert demote_headings(demo_card).strip() in body


def test_gradebench_json_holds_each_configs_manifest_essentials(dry, built):
    out, _ = dry
    index = json.loads((out / "gradebench.json").read_text())
    assert index["format"] == "gradebench.hub" and index["format_version"] == 1
    assert index["default_config"] == "demo" and list(index["configs"]) == ["demo", "winowhy"]
    for cfg, entry in index["configs"].items():
        m = manifest(built[cfg])
        for key in ("fingerprint", "builder", "stats", "validation", "redistributable", "inputs", "columns"):
            assert entry[key] == m[key], key
        assert entry["recipe"]["name"] == cfg and entry["recipe"]["version"] == m["recipe"]["version"]
        assert {s: (v["queries"], v["candidates"]) for s, v in entry["splits"].items()} == {
            s: (v["queries"], v["candidates"]) for s, v in m["splits"].items()}
        for rel, d in entry["file_digests"].items():
            assert (out / rel).stat().st_size == d["bytes"] and sha256_file(out / rel) == d["sha256"]
            assert pq.ParquetFile(out / rel).metadata.num_rows > 0
    assert "timestamp" not in (out / "gradebench.json").read_text()


def test_license_file_states_each_source_license(dry):
    text = (dry[0] / "LICENSE.md").read_text()
    assert "## `demo`" in text and "Apache-2.0 (written by the gradebench team)" in text
    assert "## `winowhy`" in text and "MIT (WinoWhy release" in text and "@inproceedings{zhang2020winowhy" in text


def test_dry_run_is_deterministic_and_replaces_an_earlier_dry_run(dry, built, capsys):
    out, first = dry
    before = tree(out)
    # the CLI, same arguments: --json prints exactly the API result; the folder is replaced byte-identically
    code = main(["publish", str(built["demo"]), str(built["winowhy"]), "--repo-id", REPO_ID, "--dry-run", str(out),
                 "--json"])
    stdout, _ = capsys.readouterr()
    assert code == 0
    assert json.loads(stdout) == json.loads(json.dumps(first.to_dict()))
    assert tree(out) == before


def test_human_output_of_a_dry_run(built, tmp_path, capsys):
    code = main(["publish", str(built["winowhy"]), "--repo-id", REPO_ID, "--dry-run", str(tmp_path / "d")])
    stdout, err = capsys.readouterr()
    assert code == 0 and err == ""
    assert "nothing was pushed" in stdout and "winowhy" in stdout


def test_single_config_repo_and_license_override(built, tmp_path):
    r = publish(built["winowhy"], repo_id=REPO_ID, dry_run=tmp_path / "one", license=["mit", "cc-by-4.0"],
                pretty_name="WinoWhy graded")
    meta, body = front_matter(tmp_path / "one" / "README.md")
    assert r.license == meta["license"] == ["mit", "cc-by-4.0"]
    assert meta["pretty_name"] == "WinoWhy graded" and body.lstrip().startswith("# WinoWhy graded")
    assert [c["config_name"] for c in meta["configs"]] == ["winowhy"]
    assert isinstance(meta["dataset_info"], dict) and meta["dataset_info"]["config_name"] == "winowhy"


def test_dry_run_refuses_a_folder_that_is_not_its_own(built, tmp_path, capsys):
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.txt").write_text("keep me")
    with pytest.raises(InvalidArgumentError, match="not an earlier publish folder"):
        publish(built["demo"], repo_id=REPO_ID, dry_run=target)
    assert main(["publish", str(built["demo"]), "--repo-id", REPO_ID, "--dry-run", str(target)]) == 2
    assert_one_line_error(capsys.readouterr().err, "--dry-run", "not an earlier publish folder")
    assert sorted(p.name for p in target.iterdir()) == ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


def test_dry_run_never_replaces_a_git_checkout(dry, built, tmp_path):
    import shutil

    clone = tmp_path / "clone"
    shutil.copytree(dry[0], clone)
    (clone / ".git").mkdir()
    with pytest.raises(InvalidArgumentError, match="git checkout"):
        publish(built["demo"], repo_id=REPO_ID, dry_run=clone)
    assert (clone / ".git").is_dir() and tree(clone) == tree(dry[0])


def test_an_interrupted_dry_run_leaves_nothing(built, tmp_path, monkeypatch):
    import shutil

    calls = []
    real = shutil.copyfile

    def failing(src, dst, *a, **k):
        calls.append(src)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(src, dst, *a, **k)

    monkeypatch.setattr(shutil, "copyfile", failing)
    with pytest.raises(KeyboardInterrupt):
        publish(built["demo"], repo_id=REPO_ID, dry_run=tmp_path / "hub")
    assert list(tmp_path.iterdir()) == []


def test_a_damaged_benchmark_is_not_published(built, tmp_path):
    import shutil

    copy = tmp_path / "demo"
    shutil.copytree(built["demo"], copy)
    shard = next((copy / "data").glob("train-*.parquet"))
    shard.write_bytes(shard.read_bytes()[:-10])
    with pytest.raises(BenchmarkError, match="damaged"):
        publish(copy, repo_id=REPO_ID, dry_run=tmp_path / "hub")
    with pytest.raises(BenchmarkError, match="no such benchmark folder"):
        publish(tmp_path / "missing", repo_id=REPO_ID, dry_run=tmp_path / "hub")
    assert not (tmp_path / "hub").exists()


@pytest.mark.parametrize("name", ["../../../victim", "/tmp/victim-abs"])
def test_a_manifest_name_never_takes_a_dry_run_outside_its_folder(built, tmp_path, capsys, name):
    """Issue 16.4: a manifest's ``recipe.name`` "../../../victim" became ``data/<config>/`` of the dry
    run, and ``publish --dry-run`` overwrote an existing file outside the output folder."""
    import shutil

    bench = tmp_path / "in" / "demo"
    shutil.copytree(built["demo"], bench)
    m = json.loads((bench / "manifest.json").read_text())
    m["recipe"]["name"] = name
    (bench / "manifest.json").write_text(json.dumps(m))
    out = tmp_path / "a" / "b" / "hub"
    # where data/<name>/<split>-00000-of-00001.parquet of the dry run lands: tmp_path/a/victim/
    victims = [out / "data" / name / Path(f).name for v in m["splits"].values() for f in v["files"]]
    for v in victims:
        if str(v).startswith(str(tmp_path)):
            v.resolve().parent.mkdir(parents=True, exist_ok=True)
            v.resolve().write_text("victim\n")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    code = main(["publish", str(bench), "--repo-id", REPO_ID, "--dry-run", str(out)])
    assert code == 2
    assert_one_line_error(capsys.readouterr().err, "recipe.name", "not a valid name", str(bench / "manifest.json"))
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    assert (tmp_path / "a" / "victim").is_dir() or name.startswith("/")
    assert not out.exists() and not Path("/tmp/victim-abs").exists()


@pytest.mark.parametrize("repo_id", ["noslash", "a/b/c", "/abs", "org/", "org/na me", "", "org/..x"])
def test_bad_repo_ids_are_refused(built, tmp_path, repo_id):
    with pytest.raises(InvalidArgumentError, match="repo id"):
        publish(built["demo"], repo_id=repo_id, dry_run=tmp_path / "hub")


def test_one_config_per_recipe(built, tmp_path, capsys):
    with pytest.raises(InvalidArgumentError, match="both be config 'demo'"):
        publish([built["demo"], built["demo"]], repo_id=REPO_ID, dry_run=tmp_path / "hub")
    assert main(["publish", str(built["demo"]), str(built["demo"]), "--repo-id", REPO_ID,
                 "--dry-run", str(tmp_path / "hub")]) == 2
    assert_one_line_error(capsys.readouterr().err, "config 'demo'")


# ---------------------------------------------------------------- licenses


def test_non_redistributable_benchmarks_are_refused(built, tmp_path, capsys):
    assert manifest(built["anli"])["redistributable"] is False
    with pytest.raises(NotRedistributableError, match="'anli' may not be redistributed"):
        publish([built["demo"], built["anli"]], repo_id=REPO_ID, dry_run=tmp_path / "hub")
    code = main(["publish", str(built["anli"]), "--repo-id", REPO_ID, "--dry-run", str(tmp_path / "hub")])
    assert code == 2
    assert_one_line_error(capsys.readouterr().err, "'anli' may not be redistributed", "CC BY-NC 4.0",
                          "--allow-non-redistributable")
    assert not (tmp_path / "hub").exists()


def test_non_redistributable_with_the_flag(built, tmp_path, capsys):
    code = main(["publish", str(built["anli"]), "--repo-id", REPO_ID, "--dry-run", str(tmp_path / "hub"),
                 "--allow-non-redistributable", "--json"])
    out, _ = capsys.readouterr()
    assert code == 0
    result = json.loads(out)
    assert result["configs"][0]["redistributable"] is False and "anli" in result["warnings"][0]
    meta, _ = front_matter(tmp_path / "hub" / "README.md")
    assert "other" in meta["license"] and meta["license_link"] == "LICENSE.md"
    assert "not redistributable" in (tmp_path / "hub" / "LICENSE.md").read_text()


@pytest.mark.parametrize(("recipe", "ids"), [
    ("demo", ["apache-2.0"]),
    ("esnli", ["mit", "cc-by-sa-4.0"]),
    ("esnli-fixed", ["mit", "cc-by-sa-4.0"]),
    ("esnli-human", ["mit", "cc-by-sa-4.0"]),
    ("esnli-contrast", ["mit", "cc-by-sa-4.0"]),
    ("esnli-contrast-v2", ["mit", "cc-by-sa-4.0"]),
    ("esnli-contrast-v3", ["mit", "cc-by-sa-4.0"]),
    ("esnli-contrast-v4", ["mit", "cc-by-sa-4.0"]),
    ("winowhy", ["mit"]),
    ("chaosnli-snli", ["cc-by-nc-4.0", "cc-by-sa-4.0"]),
    ("chaosnli-mnli", ["cc-by-nc-4.0", "cc-by-sa-3.0", "cc-by-3.0", "other"]),
    ("dnli", ["mit", "cc-by-sa-4.0", "cc-by-4.0"]),
    ("dnli-natural", ["mit", "cc-by-sa-4.0", "cc-by-4.0"]),
    ("mnli", ["cc-by-sa-3.0", "cc-by-3.0", "other"]),
    ("worldtree", ["cc-by-sa-4.0", "mit", "other"]),
    ("nli-table", ["other"]),
    ("anli", ["cc-by-nc-4.0", "other"]),  # ART states no license for its data (Apache-2.0 is its code's)
    ("preference-pairs", ["other"]),  # the importers read the user's own file: its terms are unknown
    ("best-of-n", ["other"]),
    ("multi-ratings", ["other"]),
    ("multi-ratings-flat", ["other"]),
])
def test_hub_license_ids_of_every_recipe(recipe, ids):
    from gradebench.recipes import recipe_names

    assert recipe in recipe_names()
    terms = load_recipe(recipe).source.license_terms
    assert hub_license_ids([(terms, True)]) == terms.hub == ids
    assert terms.redistributable is (recipe not in ("worldtree", "nli-table", "anli", "preference-pairs", "best-of-n",
                                                    "multi-ratings", "multi-ratings-flat"))


def test_every_shipped_recipe_has_its_hub_ids_pinned():
    from gradebench.recipes import recipe_names

    # the parametrize list above is the pin; this checks that it covers every shipped recipe
    params = next(m for m in test_hub_license_ids_of_every_recipe.pytestmark if m.name == "parametrize").args[1]
    assert sorted(r for r, _ in params) == recipe_names()


def _lic(hub: list[str], *, redistributable: bool = True) -> License:
    spdx = " AND ".join(i.upper() for i in hub if i != "other")
    return License(id=spdx if "other" not in hub else "other", hub=hub, name="x", text=" ".join(hub),
                   redistributable=redistributable)


def test_hub_license_ids_merge_details():
    mit, by_sa, by = _lic(["mit"]), _lic(["cc-by-sa-4.0"]), _lic(["cc-by-4.0"])
    # ids in order of first appearance across sources, each once
    assert hub_license_ids([(by_sa, True), (_lic(["cc-by-4.0", "mit"]), True), (mit, True)]) == [
        "cc-by-sa-4.0", "cc-by-4.0", "mit"]
    # 'other' once and last, whether a license lists it or a benchmark may not be redistributed
    assert hub_license_ids([(_lic(["cc-by-3.0", "other"]), True), (mit, True)]) == ["cc-by-3.0", "mit", "other"]
    assert hub_license_ids([(mit, True), (by, False)]) == ["mit", "cc-by-4.0", "other"]
    assert hub_license_ids([(_lic(["other"], redistributable=False), True)]) == ["other"]
    # a license text no spec states: only 'other', redistributable as its family's licenses are
    unknown = License.unknown("CC0 (my own copy)", redistributable=True)
    assert hub_license_ids([(unknown, True)]) == ["other"] and unknown.text == "CC0 (my own copy)"
    assert check_ids(["mit", "mit", "cc-by-4.0"]) == ["mit", "cc-by-4.0"]
    for bad in (["MIT License"], [], [""], [3]):
        with pytest.raises(InvalidArgumentError):
            check_ids(bad)


def test_a_license_id_the_hub_does_not_list_is_refused(built, tmp_path, capsys):
    """Issue 16.6: ``publish --license no-such-id`` was not checked and went into the card."""
    for bad in ("no-such-id", "cc-by-sa-4", "apache-3.0"):
        with pytest.raises(InvalidArgumentError, match=f"license '{bad}' is not a Hub license identifier"):
            check_ids([bad])
    with pytest.raises(InvalidArgumentError, match="did you mean 'cc-by-sa-4.0'"):
        check_ids(["mit", "cc-by-sa-4"])
    out = tmp_path / "hub"
    code = main(["publish", str(built["winowhy"]), "--repo-id", REPO_ID, "--dry-run", str(out),
                 "--license", "mit", "--license", "no-such-id"])
    assert code == 2
    assert_one_line_error(capsys.readouterr().err, "'no-such-id' is not a Hub license identifier",
                          "repositories-licenses")
    assert not out.exists()  # refused before anything is written


def test_every_hub_id_the_sources_use_is_on_the_hubs_list():
    """The shipped source specs' ``hub`` ids are among the Hub's documented ids, and all are accepted."""
    from gradebench.datasets import builder_names
    from gradebench.datasets.source import family_source
    from gradebench.hub.licenses import HUB_LICENSE_IDS, known_ids

    used = {i for name in builder_names() if (spec := family_source(name)) for lic in spec.licenses() for i in lic.hub}
    assert used and used <= set(HUB_LICENSE_IDS)
    assert set(known_ids()) == set(HUB_LICENSE_IDS) and len(set(HUB_LICENSE_IDS)) == len(HUB_LICENSE_IDS)
    assert check_ids(list(HUB_LICENSE_IDS)) == list(HUB_LICENSE_IDS)


def test_the_structured_license_decides_even_when_the_manifest_flag_allows(built, tmp_path):
    """A manifest that says redistributable (or predates the flag) cannot lift the license's refusal."""
    import shutil

    copy = tmp_path / "anli"
    shutil.copytree(built["anli"], copy)
    m = manifest(copy)
    m.pop("redistributable")
    (copy / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(NotRedistributableError, match="'anli' may not be redistributed"):
        publish(copy, repo_id=REPO_ID, dry_run=tmp_path / "hub")


def test_license_file_names_the_structured_terms(dry):
    text = (dry[0] / "LICENSE.md").read_text()
    demo, winowhy = text.split("## `winowhy`")
    assert "- SPDX license expression: `Apache-2.0`" in demo and "https://www.apache.org/licenses/LICENSE-2.0" in demo
    assert "- SPDX license expression: `MIT`" in winowhy
    assert "- terms: https://github.com/HKUST-KnowComp/WinoWhy/blob/" in winowhy


def test_markdown_helpers():
    card = "---\nlicense: mit\n---\n\n# Title\n\n## Part\n\n```bibtex\n# not a heading\n```\n#hashtag\n"
    body = strip_front_matter(card)
    assert body.startswith("# Title")
    assert demote_headings(body) == "## Title\n\n### Part\n\n```bibtex\n# not a heading\n```\n#hashtag\n"
    assert strip_front_matter("no front matter") == "no front matter"
    assert [size_category(n) for n in (0, 999, 1000, 2_750_000)] == ["n<1K", "n<1K", "1K<n<10K", "1M<n<10M"]


# ---------------------------------------------------------------- the push path, HfApi faked


class FakeHub:
    """Records ``create_repo`` / ``upload_folder`` calls and a snapshot of the uploaded folder."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.uploaded: dict[str, str] = {}
        self.folder: Path | None = None
        self.links: dict[str, int] = {}
        self.raise_on: dict[str, BaseException] = {}

    def install(self, monkeypatch) -> None:
        hub = self

        def create_repo(api, repo_id, **kwargs):
            hub.calls.append(("create_repo", {"repo_id": repo_id, "token": api.token, **kwargs}))
            if "create_repo" in hub.raise_on:
                raise hub.raise_on["create_repo"]
            return huggingface_hub.RepoUrl(f"https://huggingface.co/datasets/{repo_id}")

        def upload_folder(api, **kwargs):
            hub.calls.append(("upload_folder", kwargs))
            hub.folder = Path(kwargs["folder_path"])
            hub.uploaded = tree(hub.folder)
            hub.links = {p: os.stat(hub.folder / p).st_nlink for p in hub.uploaded}
            if "upload_folder" in hub.raise_on:
                raise hub.raise_on["upload_folder"]
            return huggingface_hub.CommitInfo(
                commit_url=f"https://huggingface.co/datasets/{kwargs['repo_id']}/commit/{'a' * 40}",
                commit_message=kwargs.get("commit_message", ""), commit_description="", oid="a" * 40)

        monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", create_repo)
        monkeypatch.setattr(huggingface_hub.HfApi, "upload_folder", upload_folder)


@pytest.fixture()
def online(monkeypatch, tmp_path):
    """Online mode with a token, HfApi faked, and temporary folders under tmp_path."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_test_token")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    hub = FakeHub()
    hub.install(monkeypatch)
    return hub


def test_push_creates_the_repo_and_uploads_exactly_the_dry_run_folder(online, dry, built):
    result = publish([built["demo"], built["winowhy"]], repo_id=REPO_ID, private=True)
    assert [c[0] for c in online.calls] == ["create_repo", "upload_folder"]
    create, upload = online.calls[0][1], online.calls[1][1]
    assert create == {"repo_id": REPO_ID, "token": "hf_test_token", "repo_type": "dataset", "private": True,
                      "exist_ok": True}
    assert upload["repo_id"] == REPO_ID and upload["repo_type"] == "dataset"
    assert upload["delete_patterns"] == ["data/*"]
    assert "demo (" in upload["commit_message"] and "winowhy (" in upload["commit_message"]
    assert online.uploaded == tree(dry[0])  # byte for byte what --dry-run writes
    assert not online.folder.exists() and list(Path(tempfile.gettempdir()).iterdir()) == []
    assert result.pushed and result.private and result.dry_run is None
    assert result.url == f"https://huggingface.co/datasets/{REPO_ID}"
    assert result.commit == "a" * 40 and result.commit_url.endswith("a" * 40)
    assert result.files == sorted(online.uploaded)


def test_push_from_the_cli_prints_the_api_result(online, built, capsys):
    code = main(["publish", str(built["winowhy"]), "--repo-id", REPO_ID, "--json"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert json.loads(out) == json.loads(json.dumps(publish(built["winowhy"], repo_id=REPO_ID).to_dict()))
    assert online.calls[0][1]["private"] is False
    code = main(["publish", str(built["winowhy"]), "--repo-id", REPO_ID, "--private"])
    out, _ = capsys.readouterr()
    assert code == 0 and "pushed configs winowhy" in out and "aaaaaaaaaaaa" in out
    assert online.calls[-2][1]["private"] is True


def test_missing_token(online, built, monkeypatch, capsys):
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    with pytest.raises(HubError, match="no Hugging Face token"):
        publish(built["demo"], repo_id=REPO_ID)
    assert main(["publish", str(built["demo"]), "--repo-id", REPO_ID]) == 2
    assert_one_line_error(capsys.readouterr().err, "token", "hf auth login", "HF_TOKEN", "--dry-run")
    assert online.calls == []


def test_offline_mode(online, built, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["publish", str(built["demo"]), "--repo-id", REPO_ID]) == 2
    assert_one_line_error(capsys.readouterr().err, "offline", "HF_HUB_OFFLINE", "--dry-run")
    assert online.calls == []


def _response(status: int) -> httpx2.Response:
    return httpx2.Response(status, request=httpx2.Request("POST", "https://huggingface.co/api/repos/create"))


@pytest.mark.parametrize(("where", "error", "needles"), [
    ("create_repo", httpx2.ConnectError("[Errno -2] Name or service not known"),
     ("cannot be reached", "check the network", "--dry-run")),
    ("create_repo", hf_errors.OfflineModeIsEnabled("offline"), ("offline", "HF_HUB_OFFLINE")),
    ("create_repo", hf_errors.HfHubHTTPError("401 Unauthorized", response=_response(401)),
     ("rejected the token", "hf auth login", "HF_TOKEN")),
    ("upload_folder", hf_errors.HfHubHTTPError("403 Forbidden", response=_response(403)),
     ("may not write", "write access")),
    ("upload_folder", hf_errors.RepositoryNotFoundError("404", response=_response(404)),
     ("does not exist", "--repo-id")),
    ("upload_folder", hf_errors.HfHubHTTPError("500 Server Error", response=_response(500)),
     ("answered 500", "retry")),
    ("upload_folder", httpx2.ReadTimeout("timed out"), ("cannot be reached", "ReadTimeout")),
])
def test_hub_failures_are_one_line_errors(online, built, capsys, where, error, needles):
    online.raise_on[where] = error
    with pytest.raises(HubError):
        publish(built["demo"], repo_id=REPO_ID)
    assert main(["publish", str(built["demo"]), "--repo-id", REPO_ID]) == 2
    assert_one_line_error(capsys.readouterr().err, REPO_ID, *needles)
    assert list(Path(tempfile.gettempdir()).iterdir()) == []  # the staged folder is gone


def test_other_failures_are_not_disguised(online, built):
    online.raise_on["upload_folder"] = RuntimeError("a bug")
    with pytest.raises(RuntimeError, match="a bug"):
        publish(built["demo"], repo_id=REPO_ID)
    assert list(Path(tempfile.gettempdir()).iterdir()) == []


def test_push_stages_data_files_as_hard_links_where_possible(online, built):
    publish(built["demo"], repo_id=REPO_ID)
    assert online.calls[1][1]["folder_path"].startswith(tempfile.gettempdir() + os.sep)
    # tmp_path and the builds share a file system here: the shards are linked, not copied
    assert {p: n > 1 for p, n in online.links.items()} == {p: p.startswith("data/") for p in online.links}
