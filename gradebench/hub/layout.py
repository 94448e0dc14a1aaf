"""The Hub dataset layout of one or more built benchmarks, as a plan of files (no I/O but reading).

One config per benchmark, named after its recipe::

    README.md                                  YAML front matter (configs, license, ...) + the cards
    LICENSE.md                                 each config's source license statement and citation
    gradebench.json                            each config's manifest essentials (fingerprint, ...)
    data/<config>/<split>-0000i-of-0000N.parquet

The README's ``configs:`` list names every data file of every split explicitly (the Hub's
manual configuration, https://huggingface.co/docs/hub/datasets-manual-configuration), so a
file left over from an earlier, larger upload can never join a split; the first config is
marked ``default``. ``dataset_info`` gives each config's features and split sizes, which
``datasets.load_dataset`` checks against the rows it reads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gradebench.errors import BenchmarkError, InvalidArgumentError

if TYPE_CHECKING:
    from gradebench.datasets.source import License

FORMAT = "gradebench.hub"
FORMAT_VERSION = 1
INDEX = "gradebench.json"
README = "README.md"
LICENSE = "LICENSE.md"
SPLIT_ORDER = ("train", "validation", "test")
TAGS = ("gradebench", "ranking", "learning-to-rank", "explanations", "reward-modeling")
#: the Hub's size_categories buckets: (upper bound exclusive, label)
SIZE_CATEGORIES = (
    (1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B"),
)
#: the manifest keys copied into gradebench.json
ESSENTIALS = (
    "fingerprint", "builder", "recipe", "data_format_version", "schema_version", "gradebench_version", "options",
    "inputs", "source_format", "redistributable", "skipped", "stats", "columns", "validation",
)


@dataclass(frozen=True)
class Variant:
    """One built benchmark folder, read and checked, to become one config."""

    path: Path
    manifest: dict[str, Any]
    card: str

    @property
    def config(self) -> str:
        return self.manifest["recipe"]["name"]

    @property
    def license_text(self) -> str:
        return " ".join(str(self.manifest["recipe"]["source"].get("license", "")).split())

    @property
    def license_terms(self) -> License:
        """The structured license of the source, named by the recipe's license text (see ``license_for``)."""
        from gradebench.datasets.source import License, license_for
        from gradebench.errors import UnknownNameError

        src = self.manifest["recipe"]["source"]
        text = str(src.get("license", ""))
        try:
            return license_for(src["family"], text)
        except UnknownNameError:  # built by a builder that is not installed here: only the text is known
            return License.unknown(text, redistributable=True)

    @property
    def redistributable(self) -> bool:
        # both the manifest's flag (set by the builder at build time; a manifest without it predates
        # the flag) and the source's structured license must allow republishing
        return self.manifest.get("redistributable", True) is not False and self.license_terms.redistributable

    @property
    def builder(self) -> dict[str, Any]:
        """``{"name", "version"}``; builds made before the manifest recorded it used the family's v1."""
        return self.manifest.get("builder") or {"name": self.manifest["recipe"]["source"]["family"], "version": 1}

    def splits(self) -> list[str]:
        return split_order(self.manifest["splits"])

    def data_files(self) -> dict[str, list[tuple[Path, str]]]:
        """``{split: [(source file, path in the repo), ...]}`` in split order."""
        return {
            s: [(self.path / f, f"data/{self.config}/{Path(f).name}") for f in self.manifest["splits"][s]["files"]]
            for s in self.splits()
        }


@dataclass
class Layout:
    """The planned folder: text files by content, data files by their source path."""

    texts: dict[str, str] = field(default_factory=dict)
    data: dict[str, Path] = field(default_factory=dict)
    license_ids: list[str] = field(default_factory=list)
    configs: list[dict[str, Any]] = field(default_factory=list)

    def files(self) -> list[str]:
        return sorted([*self.texts, *self.data])


def split_order(names: Any) -> list[str]:
    """train, validation, test first, then any other split by name."""
    names = list(names)
    return [s for s in SPLIT_ORDER if s in names] + sorted(s for s in names if s not in SPLIT_ORDER)


def read_variant(path: str | Path, *, verify: bool = True) -> Variant:
    """A built benchmark folder with its manifest checked (and, with ``verify``, its files, see :func:`verify`)."""
    from gradebench.benchmark.manifest import read_manifest

    p = Path(path)
    if not p.is_dir():
        raise BenchmarkError("no such benchmark folder", path=p,
                             hint="pass a folder written by `gradebench build` (<out>/<recipe>/<fingerprint12>)")
    manifest = read_manifest(p)
    card_file = p / README
    card = card_file.read_text(encoding="utf-8") if card_file.is_file() else ""
    v = Variant(p, manifest, strip_front_matter(card))
    if verify:
        verify_variant(v)
    return v


def verify_variant(v: Variant) -> None:
    """Every data file present and equal to the size and sha256 its manifest records."""
    from gradebench.benchmark.manifest import cached_problem

    problem = cached_problem(v.path)
    if problem is not None:
        raise BenchmarkError(f"the benchmark folder is damaged: {problem}", path=v.path,
                             hint="rebuild it with `gradebench build ... --force`")


def check_configs(variants: list[Variant]) -> None:
    """Config names (recipe names) must be distinct: one repo holds one build per recipe."""
    seen: dict[str, Path] = {}
    for v in variants:
        if v.config in seen:
            raise InvalidArgumentError(
                f"two benchmarks would both be config {v.config!r}: {seen[v.config]} and {v.path}",
                hint="publish one build per recipe in a repo (builds of the same recipe go to separate repos)",
            )
        seen[v.config] = v.path


def strip_front_matter(text: str) -> str:
    """The card without its leading ``---`` YAML block."""
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end != -1:
            return text[end + 5:].lstrip("\n")
    return text


def demote_headings(markdown: str) -> str:
    """Every ATX heading one level deeper (``#`` -> ``##``), leaving fenced code untouched."""
    out, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#") and line.lstrip("#").startswith(" ") and len(line) - len(
                line.lstrip("#")) < 6:
            line = "#" + line
        out.append(line)
    return "\n".join(out) + ("\n" if markdown.endswith("\n") else "")


def size_category(rows: int) -> str:
    """The Hub's ``size_categories`` bucket of ``rows`` examples."""
    for bound, label in SIZE_CATEGORIES:
        if rows < bound:
            return label
    return "n>1B"


def _split_info(files: list[tuple[Path, str]]) -> tuple[Any, int, int, int]:
    """(arrow schema, rows, uncompressed bytes, file bytes) of one split's Parquet files."""
    import pyarrow.parquet as pq

    schema, rows, nbytes, size = None, 0, 0, 0
    for src, _ in files:
        f = pq.ParquetFile(src)
        schema = schema or f.schema_arrow
        rows += f.metadata.num_rows
        nbytes += sum(f.metadata.row_group(i).total_byte_size for i in range(f.metadata.num_row_groups))
        size += src.stat().st_size
    return schema, rows, nbytes, size


def dataset_info(variants: list[Variant]) -> Any:
    """The ``dataset_info`` card entry (features and split sizes per config), via ``datasets``."""
    from datasets import DatasetInfo, Features, SplitDict, SplitInfo
    from datasets.info import DatasetInfosDict
    from huggingface_hub import DatasetCardData

    infos = {}
    for v in variants:
        splits, features, total, download = SplitDict(), None, 0, 0
        for s, files in v.data_files().items():
            schema, rows, nbytes, size = _split_info(files)
            if rows != v.manifest["splits"][s]["candidates"]:
                raise BenchmarkError(
                    f"split {s} has {rows} rows, the manifest records {v.manifest['splits'][s]['candidates']}",
                    path=v.path, hint="rebuild it with `gradebench build ... --force`",
                )
            features = features or Features.from_arrow_schema(schema)
            splits.add(SplitInfo(name=s, num_bytes=nbytes, num_examples=rows))
            total += nbytes
            download += size
        infos[v.config] = DatasetInfo(features=features, splits=splits, config_name=v.config,
                                      download_size=download, dataset_size=total)
    card = DatasetCardData()
    DatasetInfosDict(infos).to_dataset_card_data(card)
    return card.to_dict()["dataset_info"]


def front_matter(variants: list[Variant], *, pretty_name: str, license_ids: list[str]) -> dict[str, Any]:
    """The README's YAML metadata, in the order the Hub's card template uses."""
    rows = sum(v.manifest["splits"][s]["candidates"] for v in variants for s in v.splits())
    meta: dict[str, Any] = {"pretty_name": pretty_name, "license": license_ids[0] if len(license_ids) == 1 else
                            list(license_ids)}
    if "other" in license_ids:
        meta["license_name"] = "source-terms"
        meta["license_link"] = LICENSE
    meta["task_categories"] = ["text-ranking"]
    meta["tags"] = list(TAGS)
    meta["size_categories"] = [size_category(rows)]
    meta["configs"] = [
        {
            "config_name": v.config,
            **({"default": True} if i == 0 else {}),
            "data_files": [{"split": s, "path": [repo for _, repo in files]} for s, files in v.data_files().items()],
        }
        for i, v in enumerate(variants)
    ]
    meta["dataset_info"] = dataset_info(variants)
    return meta


def _splits_cell(v: Variant) -> str:
    return ", ".join(
        f"{s} {v.manifest['splits'][s]['queries']:,} / {v.manifest['splits'][s]['candidates']:,}" for s in v.splits()
    )


def render_readme(variants: list[Variant], *, repo_id: str, pretty_name: str, license_ids: list[str],
                  verdicts: dict[str, str] | None = None) -> str:
    """README.md: YAML front matter, an overview with usage, then each benchmark's card; a card's
    build-time verdict paragraph is replaced by ``verdicts[fingerprint]`` where given (the
    leaderboard's verdict from result records, see :func:`gradebench.benchmark.card.with_verdict`)."""
    import yaml

    from gradebench.benchmark.card import with_verdict

    meta = yaml.safe_dump(front_matter(variants, pretty_name=pretty_name, license_ids=license_ids),
                          sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000)
    first = variants[0].config
    lines = [
        "---", meta.rstrip("\n"), "---", "",
        f"# {pretty_name}", "",
        "Graded ranking benchmarks built with gradebench. Each row is one (query, candidate) pair with a "
        "graded `score` in [0, 1] and an integer `relevance` (higher is better); the rows sharing a "
        "`query_id` form one ranked list. Every config below is one benchmark, identified by its "
        "content fingerprint; `gradebench.json` holds each config's recipe, builder, statistics and "
        "file digests, and `LICENSE.md` the license each config inherits from its source.", "",
        "| config | recipe | builder | fingerprint | splits (queries / candidates) | license |",
        "|---|---|---|---|---|---|",
    ]
    for v in variants:
        b = v.builder
        lic = v.license_text if len(v.license_text) <= 60 else v.license_text[:57].rstrip() + "..."
        lines.append(
            f"| `{v.config}` | v{v.manifest['recipe']['version']} | {b['name']} v{b['version']} "
            f"| `{v.manifest['fingerprint'][:12]}` | {_splits_cell(v)} | {lic.replace('|', '/')} |"
        )
    lines += [
        "", "## Loading", "", "```python", "from datasets import load_dataset", "",
        f'lists = load_dataset("{repo_id}", "{first}")  # a DatasetDict of splits', "```", "",
        f'or `gradebench.load("{repo_id}", config="{first}")`, which also reads a local copy of this folder.', "",
    ]
    for v in variants:
        card = with_verdict(v.card, (verdicts or {}).get(v.manifest["fingerprint"]))
        lines += [demote_headings(card).rstrip("\n") or f"## `{v.config}`", ""]
    return "\n".join(lines)


def render_license(variants: list[Variant]) -> str:
    """LICENSE.md: the license statement, homepage and citation each config inherits from its source."""
    lines = [
        "# Licenses", "",
        "Each config inherits the license of the source it was built from, as stated in its "
        "gradebench recipe (below). Check these terms before reusing the data.", "",
    ]
    for v in variants:
        src = v.manifest["recipe"]["source"]
        terms = v.license_terms
        lines += [f"## `{v.config}`", "", f"- license: {v.license_text}"]
        if terms.id != "other":
            lines.append(f"- SPDX license expression: `{terms.id}`")
        if terms.url:
            lines.append(f"- terms: {terms.url}")
        lines.append(f"- source: {src.get('homepage') or 'embedded in gradebench'}")
        if not v.redistributable:
            lines.append("- **not redistributable** according to its recipe: published with "
                         "--allow-non-redistributable by someone who states they hold the rights")
        citation = str(src.get("citation", "")).strip()
        if citation:
            lines += ["", "```bibtex", citation, "```"]
        lines.append("")
    return "\n".join(lines)


def index(variants: list[Variant]) -> dict[str, Any]:
    """gradebench.json: each config's manifest essentials, its split files and their digests."""
    from gradebench._version import __version__

    configs = {}
    for v in variants:
        m = v.manifest
        entry = {k: m[k] for k in ESSENTIALS if k in m}
        entry["builder"] = v.builder
        digests = m["file_digests"]  # every checked manifest records them
        entry["splits"] = {}
        entry["file_digests"] = {}
        for s, files in v.data_files().items():
            entry["splits"][s] = {"queries": m["splits"][s]["queries"], "candidates": m["splits"][s]["candidates"],
                                  "files": [repo for _, repo in files]}
            for (src, repo), name in zip(files, m["splits"][s]["files"]):
                d = digests[name]
                entry["file_digests"][repo] = {"bytes": d["bytes"], "sha256": d["sha256"]}
        configs[v.config] = entry
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "published_with": f"gradebench {__version__}",
            "default_config": variants[0].config, "configs": configs}


def plan(variants: list[Variant], *, repo_id: str, pretty_name: str, license_ids: list[str],
         verdicts: dict[str, str] | None = None) -> Layout:
    """Every file of the folder to push, and the per-config summary ``publish`` returns
    (``verdicts``: by fingerprint, see :func:`render_readme`)."""
    layout = Layout(license_ids=list(license_ids))
    layout.texts[README] = render_readme(variants, repo_id=repo_id, pretty_name=pretty_name, license_ids=license_ids,
                                         verdicts=verdicts)
    layout.texts[LICENSE] = render_license(variants)
    layout.texts[INDEX] = json.dumps(index(variants), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    for v in variants:
        for files in v.data_files().values():
            for src, repo in files:
                layout.data[repo] = src
        layout.configs.append({
            "config": v.config, "path": str(v.path), "fingerprint": v.manifest["fingerprint"],
            "recipe_version": v.manifest["recipe"]["version"], "builder": v.builder,
            "license": v.license_text, "redistributable": v.redistributable,
            "verdict": (verdicts or {}).get(v.manifest["fingerprint"]),
            "splits": {s: {"queries": v.manifest["splits"][s]["queries"],
                           "candidates": v.manifest["splits"][s]["candidates"]} for s in v.splits()},
        })
    return layout
