"""``load()``: a benchmark as a ``datasets.DatasetDict``, from a build folder, a publish folder or the Hub.

=========================================  =====================================================
source                                      how it is read
=========================================  =====================================================
a built benchmark folder (manifest.json)   ``load_dataset("parquet", data_files=<its splits>)``
a publish folder (``publish --dry-run``,   ``load_dataset(DIR, config)``: the README's configs
a downloaded repo: README.md configs)
a repo id ``ORG/NAME``                     ``load_dataset(repo_id, config)`` (network, or the
                                           datasets cache when offline)
=========================================  =====================================================

Local sources are verified first (file digests recorded by the build or in
``gradebench.json``), and ``datasets`` checks the row count of every split against the
README's ``dataset_info``. Without ``cache_dir``, local sources are converted in a temporary
cache that is removed again, so the result lives in memory; pass ``cache_dir`` to keep the
Arrow cache (memory-mapped, reused by later calls), which is what large benchmarks want.
Repo ids use the ``datasets`` cache (``HF_DATASETS_CACHE`` or ``cache_dir``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from gradebench.benchmark.format import MANIFEST
from gradebench.errors import BenchmarkError, InvalidArgumentError, SourceNotFoundError, UnknownNameError
from gradebench.hub.errors import HubError
from gradebench.hub.folder import is_publish_folder
from gradebench.hub.layout import INDEX, README, split_order
from gradebench.hub.remote import hub_error, offline
from gradebench.names import check_name, check_published_file
from gradebench.registry import plural_of, suggest

_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
LOCAL_HINT = "or load a local copy (a build folder, or `gradebench publish --dry-run DIR` output)"


def _unknown(kind: str, name: str, known: list[str], where: str) -> UnknownNameError:
    return UnknownNameError(f"{where} has no {kind} {name!r}" + suggest(name, known),
                            hint=f"its {plural_of(kind)}: {', '.join(known) or '(none)'}")


def classify(source: Any) -> tuple[str, str | Path]:
    """``("benchmark" | "folder", Path)`` for a local source, ``("repo", repo_id)`` for a Hub id."""
    if not isinstance(source, (str, os.PathLike)):
        raise InvalidArgumentError(f"source must be a folder path or a repo id, got {type(source).__name__}",
                                   hint="e.g. load('gradebench-out/esnli/0f0a6c818334') or load('org/name')")
    p = Path(source)
    if p.exists():
        if not p.is_dir():
            raise BenchmarkError("not a folder", path=p, hint="pass a benchmark or publish folder, or ORG/NAME")
        if (p / MANIFEST).is_file():
            return "benchmark", p
        if is_publish_folder(p) or (p / README).is_file():
            return "folder", p
        raise BenchmarkError(
            "neither a built benchmark (no manifest.json) nor a Hub dataset folder (no README.md)", path=p,
            hint="pass <out>/<recipe>/<fingerprint12> from `gradebench build`, a `publish --dry-run` folder, "
            "or ORG/NAME",
        )
    text = os.fspath(source)
    if isinstance(source, str) and _REPO_ID.match(text) and ".." not in text:
        return "repo", text
    raise SourceNotFoundError("no such folder", path=text,
                              hint="check the path (a Hub dataset is given as ORG/NAME)")


def _check_split(split: str | None, known: list[str], where: str) -> None:
    if split is not None and split not in known:
        raise _unknown("split", split, known, where)


def _benchmark_files(path: Path, config: str | None, split: str | None) -> dict[str, list[str]]:
    """The Parquet files per split of a verified build folder."""
    from gradebench.hub.layout import read_variant

    v = read_variant(path)
    if config is not None and config != v.config:
        raise _unknown("config", config, [v.config], str(path))
    _check_split(split, v.splits(), str(path))
    return {s: [str(src) for src, _ in files] for s, files in v.data_files().items()}


def _read_index(path: Path) -> dict[str, Any] | None:
    if not is_publish_folder(path):
        return None
    try:
        return json.loads((path / INDEX).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:  # pragma: no cover - is_publish_folder just read it
        raise BenchmarkError(f"cannot read {INDEX} ({e})", path=path / INDEX, hint="publish the folder again") from None


def _check_folder(path: Path, config: str | None, split: str | None) -> str | None:
    """Check config and split against ``gradebench.json`` and verify the config's files; the config to load."""
    from gradebench.hashing import sha256_file

    index = _read_index(path)
    if index is None:  # a Hub dataset folder not written by gradebench: datasets decides
        return config
    configs = index.get("configs") or {}
    name = config if config is not None else index.get("default_config") or next(iter(configs), None)
    if name not in configs:
        raise _unknown("config", str(name), list(configs), str(path))
    entry = configs[name]
    _check_split(split, split_order(entry.get("splits", {})), f"{path} (config {name!r})")
    where = path / INDEX
    check_name(name, what=f"{INDEX} config", path=where)
    digests = entry.get("file_digests")
    if not isinstance(digests, dict) or not digests:
        raise BenchmarkError(f"config {name!r} records no file_digests, so its data cannot be verified", path=where,
                             hint="publish the folder again (or download it again)")
    listed = [f for v in (entry.get("splits") or {}).values() if isinstance(v, dict) for f in v.get("files") or []]
    for rel in [*digests, *listed]:  # names read from a file: checked before they are joined to the folder
        check_published_file(rel, config=name, path=where)
    if listed and sorted(listed) != sorted(digests):
        raise BenchmarkError(f"config {name!r}: file_digests do not name exactly the split files", path=where,
                             hint="publish the folder again (or download it again)")
    for rel, d in sorted(digests.items()):
        f = path / rel
        if not isinstance(d, dict):
            raise BenchmarkError(f"file_digests.{rel} is not an object", path=where,
                                 hint="publish the folder again (or download it again)")
        if not f.is_file():
            raise BenchmarkError(f"{rel} is missing", path=path, hint="publish the folder again (or download it again)")
        if f.stat().st_size != d.get("bytes") or sha256_file(f) != d.get("sha256"):
            raise BenchmarkError(f"{rel} does not match its digest in {INDEX}", path=path,
                                 hint="publish the folder again (or download it again)")
    return name


def _load_local(args: tuple, kwargs: dict[str, Any], cache_dir: str | os.PathLike | None):
    """``datasets.load_dataset`` on a local source: into ``cache_dir``, or in memory via a temporary cache."""
    import datasets

    if cache_dir is not None:
        return datasets.load_dataset(*args, cache_dir=str(cache_dir), **kwargs)
    tmp = tempfile.mkdtemp(prefix="gradebench-load-")
    try:
        return datasets.load_dataset(*args, cache_dir=tmp, keep_in_memory=True, **kwargs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _load_repo(repo_id: str, config: str | None, split: str | None, cache_dir: str | os.PathLike | None):
    import datasets
    from datasets.exceptions import DatasetNotFoundError

    try:
        return datasets.load_dataset(repo_id, config, split=split,
                                     cache_dir=None if cache_dir is None else str(cache_dir))
    except DatasetNotFoundError:
        raise HubError(f"cannot load {repo_id}: no such dataset on the Hub, or it is private or gated",
                       hint=f"check the repo id and your token (`hf auth login` / HF_TOKEN), {LOCAL_HINT}") from None
    except ConnectionError as e:
        if offline() or os.environ.get("HF_DATASETS_OFFLINE", "").strip().lower() in {"1", "on", "yes", "true"}:
            raise HubError(f"cannot load {repo_id}: offline mode is on and it is not in the datasets cache",
                           hint=f"unset HF_HUB_OFFLINE / HF_DATASETS_OFFLINE and check the network, "
                           f"{LOCAL_HINT}") from None
        raise HubError(f"cannot load {repo_id}: the Hub cannot be reached ({e})",
                       hint=f"check the network connection (and HF_ENDPOINT), then retry, {LOCAL_HINT}") from None
    except ValueError as e:
        message = str(e)
        if "BuilderConfig" in message or "Config name is missing" in message or message.startswith("Unknown split"):
            raise UnknownNameError(f"cannot load {repo_id}: {message.splitlines()[0]}",
                                   hint="pick a config and split the repo's README lists") from None
        raise
    except Exception as e:  # noqa: BLE001 - Hub/network failures mapped, anything else re-raised
        mapped = hub_error(e, repo_id=repo_id, action="load", fallback=LOCAL_HINT)
        if mapped is None:
            raise
        raise mapped from None


def load(
    source: str | os.PathLike,
    config: str | None = None,
    split: str | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
):
    """A gradebench benchmark as ``datasets`` objects.

    Args:
        source: a built benchmark folder, a publish folder (``gradebench publish --dry-run``
            output or a downloaded repo), or a Hub repo id ``ORG/NAME``.
        config: the config (recipe name) to load; default: the folder's only benchmark, or
            the repo's default config (the first one published).
        split: one split (``train``, ``validation``, ``test``) to return as a ``Dataset``.
        cache_dir: keep the Arrow cache here (see the module docstring).

    Returns:
        ``datasets.DatasetDict`` of the splits, or a ``datasets.Dataset`` when ``split`` is given.

    Raises:
        UnknownNameError: the config or split does not exist (close matches suggested).
        BenchmarkError: a local folder is incomplete or its files do not match their digests.
        HubError: a repo id that cannot be loaded (offline and not cached, not found, no network).

    Example:
        >>> lists = load("gradebench-out/demo/f9d6d093ff87")  # doctest: +SKIP
        >>> lists["train"].num_rows  # doctest: +SKIP
        190
    """
    for name, value in (("config", config), ("split", split)):
        if value is not None and (not isinstance(value, str) or not value):
            raise InvalidArgumentError(f"{name} must be a non-empty string, got {value!r}", hint=f"omit {name}")
    if cache_dir is not None and not isinstance(cache_dir, (str, os.PathLike)):
        raise InvalidArgumentError(f"cache_dir must be a folder path, got {type(cache_dir).__name__}",
                                   hint="omit it for an in-memory result")
    kind, where = classify(source)
    if kind == "benchmark":
        files = _benchmark_files(Path(where), config, split)
        return _load_local(("parquet",), {"data_files": files, "split": split}, cache_dir)
    if kind == "folder":
        name = _check_folder(Path(where), config, split)
        return _load_local((str(where), name), {"split": split}, cache_dir)
    return _load_repo(str(where), config, split, cache_dir)
