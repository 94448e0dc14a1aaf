"""Source specs: what a dataset family's published data is, written once, as data.

Each family folder holds a ``source.yaml`` next to its reader and builder
(``gradebench/datasets/esnli/source.yaml``): the homepage, the citation, the download base URL
and files with checksums where the data can be fetched, an embedded folder where it ships inside
gradebench, and a structured :class:`License`. A recipe's ``source:`` block names the family
(and, for a family with several releases, a ``variant``) and gets every key it leaves out from
the spec (:func:`resolve_source`); a key the recipe states itself wins.

A file is a release at its top level plus named ``variants`` whose keys replace the top level's
(ChaosNLI's ``snli`` and ``mnli`` files, e-SNLI's embedded ``demo``). Every release a file
describes must be complete (license and citation given) and every license text must mean one
license. Errors name the spec file, line and key (:class:`~gradebench.errors.RecipeError`).

The structured license is what ``publish`` uses (Hub ids, the ``redistributable`` refusal); the
free-text ``license.text`` is what recipes carry as ``source.license``, byte for byte, so that
benchmark fingerprints do not change. A recipe's license text names its structured license
(:func:`license_for`): the one of the family's spec with that text, else an unknown license.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from gradebench.errors import RecipeError
from gradebench.io.yamlio import dotted, line_of, read_mapping, validation_problem
from gradebench.registry import suggest
from gradebench.strict import StrictModel

__all__ = [
    "SOURCE_FILE",
    "FamilySource",
    "License",
    "Release",
    "RemoteFileSpec",
    "family_source",
    "license_for",
    "read_source_spec",
    "resolve_source",
    "source_spec_path",
]

#: the spec's file name inside a family's folder (the package of its builder)
SOURCE_FILE = "source.yaml"
#: Hub license ids that are not lower-case SPDX ids (https://huggingface.co/docs/hub/repositories-licenses)
HUB_ONLY_IDS = frozenset({"other", "unknown", "odc-by", "c-uda", "cc", "bsd", "gpl", "lgpl", "gfdl"})
SplitName = Literal["train", "validation", "test"]
_HUB_ID = re.compile(r"[a-z0-9][a-z0-9.+-]*")


def _spdx(expression: str) -> str:
    """The canonical form of an SPDX license expression (``ValueError`` if it is not one)."""
    from packaging.licenses import InvalidLicenseExpression, canonicalize_license_expression

    try:
        return canonicalize_license_expression(expression)
    except InvalidLicenseExpression as e:
        raise ValueError(f"{expression!r} is not an SPDX license expression ({e})") from None


def _spdx_or_none(hub_id: str) -> str | None:
    try:
        return _spdx(hub_id)
    except ValueError:
        return None


def _spdx_ids(expression: str) -> list[str]:
    """The license ids of a canonical SPDX expression, in order (``"MIT AND CC-BY-4.0"`` -> both)."""
    words = expression.replace("(", " ").replace(")", " ").split()
    return [w for w in words if w not in ("AND", "OR", "WITH")]


class License(StrictModel):
    """The terms a source's data comes under, structured (``text`` is the statement recipes carry).

    Example (e-SNLI)::

        id: MIT AND CC-BY-SA-4.0
        hub: [mit, cc-by-sa-4.0]
        name: MIT (e-SNLI explanations) and CC BY-SA 4.0 (SNLI sentences)
        text: MIT (e-SNLI annotations, Copyright 2019 Oana-Maria Camburu); SNLI sentences CC BY-SA 4.0
        url: https://github.com/OanaMariaCamburu/e-SNLI/blob/7b585a3f077fdea899780eb0473940522ae44a2e/LICENSE
        redistributable: true
    """

    id: str = Field(description="SPDX license expression (canonical form), or 'other' when a part has no SPDX id")
    hub: list[str] = Field(min_length=1, description="Hugging Face Hub license ids, 'other' last where needed")
    name: str = Field(min_length=1, description="a short name for tables")
    text: str = Field(min_length=1, description="the full statement; recipes carry it verbatim as source.license")
    url: str | None = Field(default=None, description="where the terms are published")
    redistributable: bool = Field(description="whether the data may be republished (publish refuses it otherwise)")

    @field_validator("id")
    @classmethod
    def _id_is_spdx(cls, v: str) -> str:
        if v != "other" and _spdx(v) != v:
            raise ValueError(f"write the SPDX expression in its canonical form: {_spdx(v)!r}, not {v!r}")
        return v

    @field_validator("hub")
    @classmethod
    def _hub_ids(cls, v: list[str]) -> list[str]:
        for i in v:
            if i not in HUB_ONLY_IDS and (_HUB_ID.fullmatch(i) is None or _spdx_or_none(i) is None):
                raise ValueError(
                    f"{i!r} is not a Hub license id (lower-case SPDX ids such as mit or cc-by-sa-4.0, "
                    f"or one of {', '.join(sorted(HUB_ONLY_IDS))})"
                )
        if len(set(v)) != len(v):
            raise ValueError(f"hub lists an id twice: {v}")
        if "other" in v and v[-1] != "other":
            raise ValueError("hub: put 'other' last")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> License:
        if self.id == "other":
            if "other" not in self.hub:
                raise ValueError("id 'other' needs 'other' in hub (terms without an SPDX id)")
        else:
            want = {i.lower() for i in _spdx_ids(self.id)}
            if set(self.hub) != want:
                raise ValueError(f"hub {self.hub} does not match id {self.id!r}: expected the ids {sorted(want)}")
        if not self.redistributable and "other" not in self.hub:
            raise ValueError("a license that forbids republishing needs 'other' in hub (open ids alone misstate it)")
        return self

    @classmethod
    def unknown(cls, text: str, *, redistributable: bool) -> License:
        """A license gradebench has no spec for: only its text is known."""
        return cls(id="other", hub=["other"], name="stated in the recipe", text=text, url=None,
                   redistributable=redistributable)


class RemoteFileSpec(StrictModel):
    """A file of the source's published release and the checksum that verifies it."""

    filename: str = Field(description="path relative to the source's base_url")
    split: SplitName
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    git_blob_sha1: str | None = Field(default=None, pattern=r"^[0-9a-f]{40}$")

    @model_validator(mode="after")
    def _needs_checksum(self) -> RemoteFileSpec:
        if self.sha256 is None and self.git_blob_sha1 is None:
            raise ValueError(
                f"download file {self.filename!r} has no checksum; add sha256: or git_blob_sha1: "
                "(a source without a checksum cannot be verified)"
            )
        return self


class ReleaseFields(StrictModel):
    """Keys of a release, each optional: the top level of a spec file, or a variant replacing some."""

    homepage: str | None = None
    license: License | None = None
    citation: str | None = None
    base_url: str | None = Field(default=None, description="download base URL, pinned to a commit")
    files: list[RemoteFileSpec] | None = None
    embedded: str | None = Field(default=None, description="package-relative folder of an embedded copy")


class Release(StrictModel):
    """One complete release of a family's data (what fills a recipe's ``source`` block)."""

    homepage: str = ""
    license: License
    citation: str
    base_url: str | None = None
    files: list[RemoteFileSpec] = Field(default_factory=list)
    embedded: str | None = None

    def recipe_fields(self) -> dict[str, Any]:
        """The recipe ``source`` keys of this release (``license`` as its text)."""
        out = self.model_dump(mode="json")
        out["license"] = self.license.text
        return out


#: the recipe ``source`` keys a spec fills in
SPEC_KEYS = tuple(Release.model_fields)


class FamilySource(ReleaseFields):
    """A family's ``source.yaml``: a release at the top level and named variants of it."""

    variants: dict[str, ReleaseFields] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _releases_complete(self) -> FamilySource:
        if self.license is None and not self.variants:
            raise ValueError("a source spec needs license: (or variants: that each have one)")
        for name in [None, *self.variants] if self.license is not None else list(self.variants):
            try:
                self.release(name)
            except ValidationError as e:
                msg, _, _ = validation_problem(e.errors(), unknown_key_hint="")
                where = "the top level" if name is None else f"variant {name!r}"
                raise ValueError(f"{where} is not a complete release: {msg}") from None
        seen: dict[str, License] = {}
        for lic in self.licenses():
            key = " ".join(lic.text.split())
            if seen.setdefault(key, lic) != lic:
                raise ValueError(f"two different licenses have the text {lic.text[:60]!r}; a text must name one license")
        return self

    def release(self, variant: str | None = None) -> Release:
        """The top level with ``variant``'s keys replacing its own (``None``: the top level alone)."""
        data = self.model_dump(exclude_unset=True, exclude={"variants"})
        if variant is not None:
            data.update(self.variants[variant].model_dump(exclude_unset=True))
        return Release.model_validate(data)

    def licenses(self) -> list[License]:
        """Every license the spec states, top level first."""
        found = [self.license] + [v.license for v in self.variants.values()]
        return [lic for lic in found if lic is not None]


# --------------------------------------------------------------------------- finding and reading specs


def source_spec_path(family: str) -> Path | None:
    """The ``source.yaml`` in the folder of ``family``'s builder, or ``None`` when it has none."""
    from gradebench.datasets import get_builder

    package = get_builder(family).__module__.rpartition(".")[0]
    if not package:
        return None
    path = Path(str(resources.files(package) / SOURCE_FILE))
    return path if path.is_file() else None


def read_source_spec(path: Path) -> FamilySource:
    """Read and validate a ``source.yaml``; a problem is a RecipeError naming the file, line and key."""
    data, node = read_mapping(path, what="source spec", start_hint="start with 'homepage: ...' or 'license:'")
    try:
        return FamilySource.model_validate(data)
    except ValidationError as e:
        msg, loc, hint = validation_problem(
            e.errors(), unknown_key_hint="remove it or fix its spelling; the keys are those of FamilySource, "
            "Release and License in gradebench/datasets/source.py (see any family's source.yaml)", model=FamilySource
        )
        raise RecipeError(msg, path=path, line=line_of(node, loc), key=dotted(loc) or None, hint=hint) from None


_read_spec = lru_cache(maxsize=None)(read_source_spec)


def family_source(family: str) -> FamilySource | None:
    """The validated source spec of ``family`` (read once per process), or ``None`` without one."""
    path = source_spec_path(family)
    return None if path is None else _read_spec(path)


def resolve_source(data: Mapping[str, Any]) -> dict[str, Any]:
    """A recipe's ``source`` block with the keys it leaves out filled from its family's spec.

    ``variant`` (a recipe key that is never dumped with the resolved recipe) picks one of the
    spec's variants. Without a spec the block is returned as it is.

    Raises:
        ValueError: an unknown variant, a variant for a family without variants, or a family
            whose spec has only variants and the recipe names none (pydantic reports it at ``source``).
        RecipeError: the family's spec file is malformed.
    """
    out = dict(data)
    variant = out.get("variant")
    family = out["family"]
    spec = family_source(family)
    if spec is None:
        if variant is not None:
            raise ValueError(f"source.variant {variant!r}: family {family!r} has no {SOURCE_FILE} with variants")
        return out
    if variant is not None and variant not in spec.variants:
        names = sorted(spec.variants)
        raise ValueError(
            f"source.variant {variant!r} is not a variant of family {family!r}"
            + suggest(variant, names, cutoff=0.5, n=1)
            + f" (its {SOURCE_FILE} has: {', '.join(names) or 'none'})"
        )
    if variant is None and all(k in out for k in SPEC_KEYS):
        return out  # nothing to fill (a resolved recipe read back, or one that states every key)
    if variant is None and spec.license is None:
        raise ValueError(
            f"family {family!r} has several releases: name one with source.variant ({', '.join(sorted(spec.variants))})"
        )
    for key, value in spec.release(variant).recipe_fields().items():
        out.setdefault(key, value)
    return out


def license_for(family: str, text: str) -> License:
    """The structured license whose text is ``text`` (whitespace-insensitive) in ``family``'s spec.

    A text no spec states (a recipe that overrides ``source.license``) gives :meth:`License.unknown`,
    redistributable only when every license of the family's spec is (no spec: redistributable).
    """
    spec = family_source(family)
    if spec is None:
        return License.unknown(text, redistributable=True)
    key = " ".join(text.split())
    for lic in spec.licenses():
        if " ".join(lic.text.split()) == key:
            return lic
    return License.unknown(text, redistributable=all(lic.redistributable for lic in spec.licenses()))
