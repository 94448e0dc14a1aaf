"""Resolve what a build reads: an embedded source, a local path, or a verified download.

Only file names are looked at here (the builder's ``locate``); hashing happens in the engine
and parsing only after the cache check.
"""

from __future__ import annotations

from pathlib import Path

from gradebench.datasets.base import Builder
from gradebench.datasets.records import InputFile
from gradebench.errors import SourceFormatError, SourceNotFoundError
from gradebench.hashing import sha256_hex
from gradebench.recipes.models import Recipe

_PKG = Path(__file__).resolve().parents[1]


def is_url(source: str | Path) -> bool:
    return isinstance(source, str) and source.startswith(("http://", "https://"))


def embedded_path(recipe: Recipe) -> Path:
    assert recipe.source.embedded is not None
    return _PKG / recipe.source.embedded


def download_folder(recipe: Recipe, base_url: str | None = None) -> Path:
    """Download (or reuse from the cache) every file the recipe lists, verified; the folder holding them."""
    from gradebench.io.download import RemoteFile, cache_dir, fetch_all

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
    fetch_all(remotes, dest)
    return dest


def locate_source(builder: Builder, recipe: Recipe, source: str | Path | None) -> list[InputFile]:
    """The input files of a build from ``source`` (path or URL) or the recipe's default."""
    if source is None:
        if recipe.source.default == "embedded":
            files = builder.locate(embedded_path(recipe))
        elif recipe.source.default == "download":
            files = builder.locate(download_folder(recipe))
        else:
            raise SourceNotFoundError(
                f"recipe {recipe.name!r} has no default source",
                hint=f"pass --source PATH to the data ({recipe.source.homepage or 'see the recipe'})",
            )
    elif is_url(source):
        files = builder.locate(download_folder(recipe, str(source)))
    else:
        files = builder.locate(Path(source))
    if not files:
        raise SourceFormatError(
            f"no input files for recipe {recipe.name!r} found here",
            path=None if source is None else str(source),
            hint=f"point --source at data in one of the formats {', '.join(recipe.source.formats)}",
        )
    fmt = builder.source_format(files)
    if fmt not in recipe.source.formats:
        raise SourceFormatError(
            f"recipe {recipe.name!r} reads {', '.join(recipe.source.formats)}, but this source is {fmt}",
            path=None if source is None else str(source),
            hint="point --source at data in one of the recipe's formats",
        )
    return files
