"""Resolve what a build reads: an embedded source, a local path, or a verified download."""

from __future__ import annotations

from pathlib import Path

from gradebench.errors import SourceFormatError
from gradebench.hashing import sha256_hex
from gradebench.recipes.models import Recipe
from gradebench.sources.base import SourceData

_PKG = Path(__file__).resolve().parents[1]


def is_url(source: str | Path) -> bool:
    return isinstance(source, str) and source.startswith(("http://", "https://"))


def embedded_path(recipe: Recipe) -> Path:
    assert recipe.source.embedded is not None
    return _PKG / recipe.source.embedded


def download_source(recipe: Recipe, base_url: str | None = None) -> SourceData:
    """Download (or reuse from the cache) every file the recipe lists, verified, then read them."""
    from gradebench.sources.download import RemoteFile, cache_dir, fetch_all
    from gradebench.sources.esnli import read_esnli_csv

    base = base_url or recipe.source.base_url
    if not base or not recipe.source.files:
        raise SourceFormatError(
            f"recipe {recipe.name!r} lists no files to download",
            hint="pass --source PATH to a local copy of the data",
        )
    if not base.endswith("/"):
        base += "/"
    remotes = [
        RemoteFile(
            filename=f.filename.rsplit("/", 1)[-1],
            url=base + f.filename,
            split=f.split,
            sha256=f.sha256,
            git_blob_sha1=f.git_blob_sha1,
        )
        for f in recipe.source.files
    ]
    dest = cache_dir() / recipe.source.family / sha256_hex(base)[:12]
    files = fetch_all(remotes, dest)
    return read_esnli_csv(files)


def load_source(recipe: Recipe, source: str | Path | None) -> SourceData:
    """Read the recipe's source from ``source`` (path or URL) or from its default."""
    from gradebench.sources.esnli import read_esnli

    if source is None:
        if recipe.source.default == "embedded":
            data = read_esnli(embedded_path(recipe))
        else:
            data = download_source(recipe)
    elif is_url(source):
        data = download_source(recipe, str(source))
    else:
        data = read_esnli(Path(source))
    if data.format not in recipe.source.formats:
        raise SourceFormatError(
            f"recipe {recipe.name!r} reads {', '.join(recipe.source.formats)}, but this source is {data.format}",
            path=None if source is None else str(source),
            hint="point --source at data in one of the recipe's formats",
        )
    return data
