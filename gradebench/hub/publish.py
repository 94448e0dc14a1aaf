"""``publish()``: built benchmarks -> one Hugging Face dataset repo (one config per benchmark).

The folder pushed (or written by ``dry_run``) is planned by :mod:`gradebench.hub.layout` and
written by :mod:`gradebench.hub.folder`; pushing is ``HfApi.create_repo`` (``exist_ok``) then
one ``HfApi.upload_folder`` that also deletes the repo's earlier ``data/`` files, so the repo's
data always equals the README's configs. Failures of the Hub or the network become one-line
:class:`~gradebench.hub.errors.HubError` s (:mod:`gradebench.hub.remote`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gradebench.errors import InvalidArgumentError
from gradebench.hub.errors import NotRedistributableError
from gradebench.hub.folder import check_destination, write_folder
from gradebench.hub.layout import Variant, check_configs, plan, read_variant, verify_variant
from gradebench.hub.licenses import check_ids, hub_license_ids
from gradebench.hub.remote import check_repo_id, hub_error, require_online, require_token

#: remote files replaced by every push (README.md, LICENSE.md and gradebench.json are overwritten)
DELETE_PATTERNS = ("data/*",)
REPO_TYPE = "dataset"


@dataclass
class PublishResult:
    """What :func:`publish` returns and ``gradebench publish --json`` prints."""

    repo_id: str
    #: one entry per config: config, path, fingerprint, recipe_version, builder, license, redistributable, splits
    configs: list[dict[str, Any]]
    #: every file of the folder, relative to its root, sorted
    files: list[str]
    #: the README's ``license:`` ids
    license: list[str]
    private: bool
    pushed: bool
    #: the folder written by ``dry_run`` (None when pushed)
    dry_run: str | None = None
    #: the repo's URL and the commit made (None for a dry run)
    url: str | None = None
    commit: str | None = None
    commit_url: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _paths(benchmarks: Any) -> list[Path]:
    if isinstance(benchmarks, (str, os.PathLike)):
        benchmarks = [benchmarks]
    if not isinstance(benchmarks, Sequence) or not benchmarks:
        raise InvalidArgumentError("no benchmark folder given", hint="pass one or more folders from `gradebench build`")
    for b in benchmarks:
        if not isinstance(b, (str, os.PathLike)):
            raise InvalidArgumentError(f"a benchmark must be a folder path, got {type(b).__name__}",
                                       hint="pass paths of folders written by `gradebench build`")
    return [Path(b) for b in benchmarks]


def _check_redistributable(variants: list[Variant], allow: bool) -> list[str]:
    warnings = []
    for v in variants:
        if v.redistributable:
            continue
        if not allow:
            raise NotRedistributableError(
                f"benchmark {v.config!r} may not be redistributed; its source license: {v.license_text}",
                path=v.path,
                hint="keep it local, or pass --allow-non-redistributable if you hold the rights to publish it",
            )
        warnings.append(f"{v.config}: published although its recipe marks it not redistributable "
                        f"(--allow-non-redistributable); license: {v.license_text}")
    return warnings


def publish(
    benchmarks: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    repo_id: str,
    private: bool = False,
    dry_run: str | os.PathLike | None = None,
    allow_non_redistributable: bool = False,
    license: Sequence[str] | None = None,  # noqa: A002 - the Hub's name for it
    pretty_name: str | None = None,
    verdicts: dict[str, str] | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> PublishResult:
    """Publish built benchmarks as one Hub dataset repo, one config per benchmark.

    Args:
        benchmarks: folders written by ``gradebench build``; each becomes the config named
            after its recipe (``esnli``, ``esnli-human``, ...); the first is the default config.
        repo_id: ``ORG/NAME`` of the dataset repo (created if missing).
        private: create the repo private (an existing repo keeps its visibility).
        dry_run: write exactly the folder that would be pushed here (atomically) and push
            nothing; no token or network needed.
        allow_non_redistributable: publish benchmarks whose source's license forbids republishing
            (``redistributable: false`` in the family's ``source.yaml``, recorded in the manifest).
        license: the README's Hub license ids (default: the ``hub`` ids of the sources' structured
            licenses, see :mod:`gradebench.hub.licenses`).
        pretty_name: the card's title (default ``gradebench <config>, <config>``).
        verdicts: validity verdicts by benchmark fingerprint (the leaderboard's, from result records:
            :func:`gradebench.experiments.leaderboard.verdict_texts`); each replaces the build-time
            "no verdict" paragraph of its config's card. ``gradebench publish`` reads them from
            ``--results-dir``.
        progress: ``progress(done, total, message)`` while the folder is written.

    Returns:
        :class:`PublishResult`.

    Raises:
        NotRedistributableError: a benchmark may not be redistributed and the flag is absent.
        HubError: no token, offline mode, no network, or the Hub refused (one line with the fix).
        BenchmarkError: a folder is not a complete, intact benchmark.
    """
    paths = _paths(benchmarks)
    check_repo_id(repo_id)
    for name, value in (("private", private), ("allow_non_redistributable", allow_non_redistributable)):
        if not isinstance(value, bool):
            raise InvalidArgumentError(f"{name} must be True or False, got {value!r}", hint=f"pass {name}=True")
    if pretty_name is not None and (not isinstance(pretty_name, str) or not pretty_name.strip()):
        raise InvalidArgumentError("pretty_name must be a non-empty string", hint="omit it for the default")
    ids = None if license is None else check_ids([license] if isinstance(license, str) else list(license))
    if verdicts is not None and (not isinstance(verdicts, dict)
                                 or not all(isinstance(k, str) and isinstance(t, str) for k, t in verdicts.items())):
        raise InvalidArgumentError("verdicts must map benchmark fingerprints to verdict lines",
                                   hint="omit it, or pass leaderboard.verdict_texts(results_dir)")
    if dry_run is not None and not isinstance(dry_run, (str, os.PathLike)):
        raise InvalidArgumentError(f"dry_run must be a folder path, got {type(dry_run).__name__}",
                                   hint="pass dry_run='hub-folder'")
    variants = [read_variant(p, verify=False) for p in paths]
    check_configs(variants)
    warnings = _check_redistributable(variants, allow_non_redistributable)
    token = None
    if dry_run is not None:  # fail fast, before any file is hashed or copied
        check_destination(Path(dry_run))
    else:
        require_online("push to the Hub")
        token = require_token()
    for v in variants:  # hashing every file comes after the cheap refusals
        verify_variant(v)
    ids = ids or hub_license_ids((v.license_terms, v.redistributable) for v in variants)
    name = pretty_name.strip() if pretty_name else "gradebench " + ", ".join(v.config for v in variants)
    layout = plan(variants, repo_id=repo_id, pretty_name=name, license_ids=ids, verdicts=verdicts)
    result = PublishResult(repo_id=repo_id, configs=layout.configs, files=layout.files(), license=ids,
                           private=private, pushed=False, warnings=warnings)
    if dry_run is not None:
        result.dry_run = str(write_folder(layout, Path(dry_run), progress=progress))
        return result

    tmp = Path(tempfile.mkdtemp(prefix="gradebench-publish-"))
    try:
        folder = write_folder(layout, tmp / "repo", link=True, progress=progress)
        url, info = _push(folder, repo_id=repo_id, private=private, token=str(token),
                          message="gradebench publish: " + ", ".join(
                              f"{c['config']} ({c['fingerprint'][:12]})" for c in layout.configs))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result.pushed = True
    result.url = url
    result.commit = getattr(info, "oid", None)
    result.commit_url = getattr(info, "commit_url", None)
    return result


def _push(folder: Path, *, repo_id: str, private: bool, token: str, message: str) -> tuple[str, Any]:
    """create_repo + upload_folder; Hub and network failures become :class:`HubError`."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    try:
        url = api.create_repo(repo_id, repo_type=REPO_TYPE, private=private, exist_ok=True)
        info = api.upload_folder(repo_id=repo_id, repo_type=REPO_TYPE, folder_path=str(folder),
                                 commit_message=message, delete_patterns=list(DELETE_PATTERNS))
    except Exception as e:  # noqa: BLE001 - mapped when it is a Hub/network failure, re-raised otherwise
        mapped = hub_error(e, repo_id=repo_id, action="push to")
        if mapped is None:
            raise
        raise mapped from None
    return str(url), info
