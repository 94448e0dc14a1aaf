"""Result records as a Hugging Face dataset (``gradebench publish-results``), and reading one back.

The results live apart from the code, the way RewardBench 2 and MTEB keep theirs: a dataset repo
whose root is a results folder (``<benchmark>/<id>.json`` records of every kind with their per-query
Parquet tables, packed or not; the predictions stay local), plus

* ``data/results.parquet``: one row per (record, metric) -- id, benchmark, fingerprint, split,
  system, scorer, loss, trained_on, seed, metric, value, ci_low, ci_high, n -- the table the Hub's
  viewer shows (the card's one config);
* ``README.md``: the card (license, what the records are, counts per benchmark, how to read them);
* ``gradebench.json``: the index (format ``gradebench.results``, counts, the sha256 of every file).

Because the root is a results folder, ``gradebench leaderboard --results-dir`` and ``gradebench query
--results-dir`` read a downloaded copy as it is; :func:`resolve_results_dir` also takes a Hub id and finds
its snapshot in the local Hugging Face cache (never the network). The folder is a pure function of
the records: the same records give the same bytes.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gradebench.errors import InvalidArgumentError, RecordError
from gradebench.hashing import sha256_file
from gradebench.paths import RESULTS_DIR

FORMAT = "gradebench.results"
FORMAT_VERSION = 1
#: the index file, named as gradebench.hub.layout.INDEX (not imported from there: importing
#: gradebench.hub loads pyarrow, and this module is on the start-up of leaderboard and query)
INDEX = "gradebench.json"
TABLE = "data/results.parquet"
#: the Hub files a push replaces (records deleted locally disappear from the repo too)
DELETE_PATTERNS = ("*.json", "*.parquet")
DEFAULT_LICENSE = "cc-by-4.0"
PER_QUERY_PACK = "per_query.parquet"


@dataclass
class ResultsPublishResult:
    """What :func:`publish_results` returns and ``gradebench publish-results --json`` prints."""

    repo_id: str
    records: int
    policy_records: int
    #: records per benchmark folder
    benchmarks: dict[str, int]
    #: every file of the folder, relative to its root, sorted
    files: list[str]
    license: str
    private: bool
    pushed: bool
    dry_run: str | None = None
    url: str | None = None
    commit: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _record_files(results_dir: Path) -> tuple[list[Path], dict[str, Path]]:
    """The records (every kind) and the folder's files to publish, by their path in the repo."""
    from gradebench.experiments.store import record_files

    records = record_files(results_dir, kind=None)
    files: dict[str, Path] = {}
    for r in records:
        folder = r.parent
        files[f"{folder.name}/{r.name}"] = r
        stem = r.name[:-len(".json")]
        for extra in (folder / f"{stem}.queries.parquet", folder / PER_QUERY_PACK):
            if extra.is_file():
                files[f"{folder.name}/{extra.name}"] = extra
    return records, files


def _check_records(results_dir: Path) -> tuple[list[Any], list[Any], dict[str, Path]]:
    """The verified evaluation records, the policy records and the files; a record failing its checks is an error."""
    import warnings

    from gradebench.experiments.store import list_records
    from gradebench.experiments.verify import verified_records

    if not results_dir.is_dir():
        raise RecordError("no such results folder", path=results_dir,
                          hint="give the folder `gradebench eval` wrote its records into (--results-dir)")
    paths, files = _record_files(results_dir)
    if not paths:
        raise RecordError("no result records to publish", path=results_dir,
                          hint="evaluate something first (gradebench eval ...), or give --results-dir")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        evaluations = verified_records(results_dir)
    verified = {Path(r.path).resolve() for r in evaluations}
    failed = sorted(str(p) for p in paths if p.name.count(".") == 1 and p.resolve() not in verified)
    if failed:
        why = next((str(w.message) for w in caught if failed[0] in str(w.message)), "it fails its checks")
        raise RecordError(f"a record fails its checks and is not published: {why}", path=failed[0],
                          hint="re-evaluate it (gradebench eval), or move it out of the folder")
    return evaluations, list_records(results_dir, kind="policy"), files


def results_table(records: list[Any]) -> Any:
    """``data/results.parquet`` as a pyarrow table: one row per (record, metric), records by benchmark then id."""
    import pyarrow as pa

    from gradebench.experiments.leaderboard import system_label

    rows = []
    for r in sorted(records, key=lambda r: (r.benchmark.name, r.id)):
        base = {"id": r.id, "benchmark": r.benchmark.name, "benchmark_fingerprint": r.benchmark.fingerprint,
                "split": r.split, "system": system_label(r), "scorer": r.scorer.name, "loss": r.loss.name,
                "trained_on": None if r.run is None else r.run.benchmark, "seed": r.system_seed}
        for name in sorted(r.metrics):
            m = r.metrics[name]
            rows.append({**base, "metric": name, "value": m.value, "ci_low": m.ci_low, "ci_high": m.ci_high,
                         "n": m.n})
    schema = pa.schema([("id", pa.string()), ("benchmark", pa.string()), ("benchmark_fingerprint", pa.string()),
                        ("split", pa.string()), ("system", pa.string()), ("scorer", pa.string()),
                        ("loss", pa.string()), ("trained_on", pa.string()), ("seed", pa.int64()),
                        ("metric", pa.string()), ("value", pa.float64()), ("ci_low", pa.float64()),
                        ("ci_high", pa.float64()), ("n", pa.int64())])
    return pa.Table.from_pylist(rows, schema=schema)


def card(*, repo_id: str, pretty_name: str, license_id: str, benchmarks: dict[str, int], n_records: int,
         n_policy: int, verdicts: list[tuple[str, str, str]] | None = None) -> str:
    """The dataset card (README.md): front matter with the viewer's config, then what the records are,
    and each benchmark's validity verdict (``verdicts``: (benchmark, fingerprint, the leaderboard's
    verdict line), see :func:`verdict_lines`)."""
    import yaml

    front = {"license": license_id, "pretty_name": pretty_name, "tags": ["gradebench", "leaderboard",
                                                                           "evaluation-results"],
             "configs": [{"config_name": "results", "default": True,
                          "data_files": [{"split": "train", "path": TABLE}]}]}
    rows = "\n".join(f"| `{b}` | {n} |" for b, n in sorted(benchmarks.items()))
    return (f"---\n{yaml.safe_dump(front, sort_keys=False, allow_unicode=True)}---\n\n# {pretty_name}\n\n"
            f"Result records of gradebench evaluations (graded ranking benchmarks), kept apart from the "
            f"code: {n_records} evaluation records and {n_policy} policy records. Each record "
            "(`<benchmark>/<id>.json`, with a `schema_version`) holds one system's metrics on one benchmark split "
            "with bootstrap CIs and its provenance (benchmark fingerprint, scorer, loss, training options, seed, "
            "environment); its per-query values are in the Parquet tables beside it (`per_query.parquet` or "
            f"`<id>.queries.parquet`). `{TABLE}` is the viewer's table: one row per record and metric.\n\n"
            f"| benchmark | records |\n|---|---:|\n{rows}\n\n"
            + _verdict_section(verdicts or [], repo_id)
            + "## Use\n\n"
            "The repo's root is a gradebench results folder, so the leaderboard (CIs, paired tests against the "
            "best) and SQL queries read it as it is:\n\n```bash\n"
            f"hf download {repo_id} --repo-type dataset              # into the local cache, once\n"
            f"gradebench leaderboard --results-dir {repo_id}          # read from the cache, offline\n"
            f"gradebench query \"SELECT scorer, count(*) FROM results GROUP BY 1\" --results-dir {repo_id}\n"
            "```\n\n"
            f"`{INDEX}` lists every file with its sha256.\n")


def _verdict_section(verdicts: list[tuple[str, str, str]], repo_id: str) -> str:
    if not verdicts:
        return ""
    items = "\n".join(f"- `{name}` (`{fp[:12]}`): {line}" for name, fp, line in verdicts)
    return ("## Validity verdicts\n\n"
            "Each benchmark's best reader against its best shortcut on the test split, from these records "
            f"(`gradebench leaderboard --results-dir {repo_id}` shows them under each board):\n\n{items}\n\n")


def verdict_lines(results_dir: str | Path) -> list[tuple[str, str, str]]:
    """(benchmark, fingerprint, verdict line) of every board of the leaderboard of ``results_dir``
    on the test split (:func:`gradebench.experiments.render.verdict_line`), in the leaderboard's order."""
    from gradebench.experiments.leaderboard import leaderboard
    from gradebench.experiments.render import verdict_line

    out = []
    for board in leaderboard(results_dir, split="test").boards:
        line = verdict_line(board)
        if line:
            out.append((board.benchmark, board.fingerprint, line))
    return out


def publish_results(
    results_dir: str | Path = RESULTS_DIR,
    *,
    repo_id: str,
    dry_run: str | os.PathLike | None = None,
    private: bool = False,
    license: str = DEFAULT_LICENSE,  # noqa: A002 - the Hub's name for it
    pretty_name: str | None = None,
) -> ResultsPublishResult:
    """Publish the records under ``results_dir`` as one Hub dataset repo (or write it to ``dry_run``).

    Raises:
        RecordError: no such folder, no records, or a record that fails its checks (named).
        InvalidArgumentError: a bad repo id, license id or ``dry_run`` folder.
        HubError: no token, offline mode, no network, or the Hub refused (one line with the fix).
    """
    from gradebench.hub.licenses import check_ids
    from gradebench.hub.remote import check_repo_id, require_online, require_token

    check_repo_id(repo_id)
    (license_id,) = check_ids([license])
    if pretty_name is not None and (not isinstance(pretty_name, str) or not pretty_name.strip()):
        raise InvalidArgumentError("pretty_name must be a non-empty string", hint="omit it for the default")
    root = Path(results_dir)
    if dry_run is not None:
        from gradebench.hub.folder import check_destination

        check_destination(Path(dry_run), fmt=FORMAT, command="publish-results")
    else:
        require_online("push to the Hub")
    evaluations, policies, files = _check_records(root)
    token = None if dry_run is not None else require_token()
    benchmarks: dict[str, int] = {}
    for name in files:
        if name.endswith(".json"):
            benchmarks[name.split("/")[0]] = benchmarks.get(name.split("/")[0], 0) + 1
    name = pretty_name.strip() if pretty_name else f"gradebench results ({repo_id})"
    readme = card(repo_id=repo_id, pretty_name=name, license_id=license_id, benchmarks=benchmarks,
                  n_records=len(evaluations), n_policy=len(policies), verdicts=verdict_lines(root))
    result = ResultsPublishResult(repo_id=repo_id, records=len(evaluations), policy_records=len(policies),
                                  benchmarks=dict(sorted(benchmarks.items())),
                                  files=sorted([*files, TABLE, "README.md", INDEX]), license=license_id,
                                  private=private, pushed=False)
    tmp = Path(tempfile.mkdtemp(prefix=".results.incomplete-", dir=Path(dry_run).parent if dry_run else None))
    try:
        folder = tmp / "repo"
        _write(folder, files, results_table(evaluations), readme, len(evaluations), len(policies), benchmarks)
        if dry_run is not None:
            from gradebench.paths import publish_dir

            Path(dry_run).parent.mkdir(parents=True, exist_ok=True)
            publish_dir(folder, Path(dry_run))
            result.dry_run = str(dry_run)
            return result
        result.url, result.commit = _push(folder, repo_id=repo_id, private=private, token=str(token),
                                          n=len(evaluations))
        result.pushed = True
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _write(folder: Path, files: dict[str, Path], table: Any, readme: str, n: int, n_policy: int,
           benchmarks: dict[str, int]) -> None:
    import pyarrow.parquet as pq

    for name, src in sorted(files.items()):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, folder / name)
    (folder / "data").mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / TABLE, compression="zstd")
    (folder / "README.md").write_text(readme, encoding="utf-8")
    digests = {name: sha256_file(folder / name) for name in sorted([*files, TABLE, "README.md"])}
    index = {"format": FORMAT, "format_version": FORMAT_VERSION, "records": n, "policy_records": n_policy,
             "benchmarks": dict(sorted(benchmarks.items())), "files": digests}
    (folder / INDEX).write_text(json.dumps(index, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _push(folder: Path, *, repo_id: str, private: bool, token: str, n: int) -> tuple[str, str | None]:
    from huggingface_hub import HfApi

    from gradebench.hub.remote import hub_error

    api = HfApi(token=token)
    try:
        url = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        info = api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=str(folder),
                                 commit_message=f"gradebench publish-results: {n} records",
                                 delete_patterns=list(DELETE_PATTERNS))
    except Exception as e:  # noqa: BLE001 - mapped when it is a Hub/network failure, re-raised otherwise
        mapped = hub_error(e, repo_id=repo_id, action="push to")
        if mapped is None:
            raise
        raise mapped from None
    return str(url), getattr(info, "oid", None)


def resolve_results_dir(value: str | Path, *, cache_dir: str | Path | None = None) -> Path:
    """A results folder: ``value`` itself where it exists, else the Hub dataset ``value`` (``ORG/NAME``)
    from the local Hugging Face cache (offline: nothing is downloaded).

    Raises:
        RecordError: neither a folder nor a dataset in the local cache (with the command that downloads it).
    """
    path = Path(value)
    text = str(value)
    if path.exists() or text.startswith((".", "/")) or text.count("/") != 1:
        return path
    from gradebench.hub.remote import check_repo_id

    try:
        check_repo_id(text)
    except InvalidArgumentError:
        return path
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(text, repo_type="dataset", local_files_only=True,
                                      cache_dir=None if cache_dir is None else str(cache_dir)))
    except Exception:  # noqa: BLE001 - not in the cache (LocalEntryNotFoundError and kin)
        raise RecordError(f"no such results folder, and no Hub dataset {text} in the local cache", path=path,
                          hint=f"download it first (hf download {text} --repo-type dataset), or give a local "
                               "folder") from None
