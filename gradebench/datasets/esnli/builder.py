"""e-SNLI (Camburu et al., 2018): the core paper's five-tier construction over NLI pairs.

Reads both releases (:mod:`gradebench.datasets.esnli.reader`): the original CSVs and the authors'
preprocessed line files. The recipes ``esnli``, ``esnli-fixed``, ``esnli-human`` and ``demo``
use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gradebench.datasets import register_builder
from gradebench.datasets.esnli.detect import (
    FORMAT_CSV,
    FORMAT_PREPROCESSED,
    SOURCE_SPLITS,
    detect_esnli,
    preprocessed_splits_in,
)
from gradebench.datasets.records import InputFile, NLIExample
from gradebench.datasets.tiers.builder import SourcePart, TieredNLIBuilder


@register_builder
class ESNLIBuilder(TieredNLIBuilder):
    name = "esnli"
    version = 1
    formats = (FORMAT_CSV, FORMAT_PREPROCESSED)
    summary = "e-SNLI pairs; gold = a human explanation, lower tiers from templates or borrowed explanations"

    def locate(self, source: Path) -> list[InputFile]:
        found = detect_esnli(source)
        if found.format == FORMAT_CSV:
            return [
                InputFile(str(p), f"{FORMAT_CSV}:{split}", split)
                for split, paths in found.csv_files.items()
                for p in paths
            ]
        out = []
        for suffix in preprocessed_splits_in(found.root):
            for stem in ("s1", "s2", "labels", "preproc1_expl_1", "preproc1_expl_2", "preproc1_expl_3"):
                p = found.root / f"{stem}.{suffix}"
                if p.is_file():
                    out.append(InputFile(str(p), f"esnli-preproc:{stem}.{suffix}", SOURCE_SPLITS[suffix]))
        return out

    def source_format(self, files: Sequence[InputFile]) -> str:
        return FORMAT_CSV if files and files[0].role.startswith(FORMAT_CSV + ":") else FORMAT_PREPROCESSED

    def read(self, files: Sequence[InputFile]) -> Mapping[str, Sequence[NLIExample]]:
        # parse_*, not read_*: the engine has hashed every input file already
        from gradebench.datasets.esnli.reader import parse_esnli_csv, parse_esnli_preprocessed

        if self.source_format(files) == FORMAT_CSV:
            by_split: dict[str, list[str]] = {}
            for f in files:
                by_split.setdefault(f.split, []).append(f.path)
            return parse_esnli_csv(by_split)
        return parse_esnli_preprocessed(Path(files[0].path).parent)

    def source_parts(self, files: Sequence[InputFile], *, limit: int | None) -> list[SourcePart] | None:
        """The preprocessed release's splits, indexed by line (the CSV release is not read in slices:
        a quoted field may hold a newline)."""
        if self.source_format(files) == FORMAT_CSV:
            return None
        from gradebench.datasets.esnli.reader import index_esnli_preprocessed

        return index_esnli_preprocessed(Path(files[0].path).parent, limit=limit)

    def read_part(self, key: tuple[str, str], s: Any) -> list[NLIExample]:
        from gradebench.datasets.esnli.reader import read_esnli_slice

        split, suffix = key
        return read_esnli_slice(split, suffix, s)

