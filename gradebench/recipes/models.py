"""Recipe schema: a build recipe is YAML data validated into these pydantic models.

A recipe has the common keys of :class:`Recipe` (name, version, source, ...) and, at the same
top level, the keys of its builder's ``section`` model (``source.family`` names the builder).
:func:`recipe_model` combines the two into one model, so every key is checked in one pass and
a typo fails at load time with the key's name. Defaults are part of the resolved recipe and
therefore of the benchmark fingerprint.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, create_model, field_validator, model_validator

from gradebench.datasets.source import License, RemoteFileSpec, SplitName, license_for, resolve_source
from gradebench.strict import StrictModel

__all__ = ["MAX_VERSION", "Recipe", "RemoteFileSpec", "SourceSpec", "SplitName", "check_resplit", "recipe_model"]
_NAME = r"^[a-z][a-z0-9_-]*$"


class SourceSpec(StrictModel):
    """Where the data comes from and which on-disk formats the recipe reads.

    A recipe states ``family``, ``formats`` and ``default`` (and ``variant`` where the family's
    spec has several releases); the other keys come from the family's source spec
    (``gradebench/datasets/<family>/source.yaml``, see :mod:`gradebench.datasets.source`) unless
    the recipe states them itself. The resolved keys, not the spec, are the recipe's (and its
    fingerprint's): ``variant`` is consumed by the resolution and never dumped.
    """

    family: str = Field(description="the builder that reads this source (gradebench.datasets)")
    variant: str | None = Field(
        default=None, exclude=True, description="which release of the family's source spec (its variants)"
    )
    formats: list[str] = Field(min_length=1, description="the builder's on-disk formats this recipe accepts")
    default: Literal["download", "embedded", "path"] = Field(
        description="what `build` reads when no --source is given ('path': nothing; --source is required)"
    )
    embedded: str | None = Field(default=None, description="package-relative folder of an embedded source")
    base_url: str | None = Field(default=None, description="download base URL, pinned to a commit")
    files: list[RemoteFileSpec] = Field(default_factory=list)
    homepage: str = ""
    license: str
    citation: str

    @model_validator(mode="before")
    @classmethod
    def _fill_from_family_spec(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("family"), str):
            return resolve_source(data)
        return data

    @property
    def license_terms(self) -> License:
        """The structured license of ``license`` (from the family's spec; unknown text: see :func:`license_for`)."""
        return license_for(self.family, self.license)

    @model_validator(mode="after")
    def _default_is_available(self) -> SourceSpec:
        if self.default == "download" and (not self.base_url or not self.files):
            raise ValueError("default 'download' needs base_url and files")
        if self.default == "embedded" and not self.embedded:
            raise ValueError("default 'embedded' needs embedded: <package-relative folder>")
        return self


#: the largest recipe version accepted (a guard against typos such as 10**400)
MAX_VERSION = 1_000_000


class Recipe(StrictModel):
    """The keys every recipe has, whatever its builder (the builder's own keys come from its section)."""

    name: str = Field(pattern=_NAME)
    version: int = Field(ge=1, le=MAX_VERSION)
    description: str
    source: SourceSpec
    seed_namespace: str = Field(min_length=1, description="prefix of every content-derived seed")
    shuffle_candidates: bool = Field(
        default=True, description="order candidates within a query by a content hash, not by grade"
    )
    resplit: tuple[int, int, int] | None = Field(
        default=None, description="default train/validation/test percentages carved by query-id hash"
    )
    notes: str = ""
    card_notes: str = Field(
        default="",
        description=(
            "what the card should say about the build's validity figures (which shortcuts remain, how to "
            "read the numbers); documentation only: not part of the fingerprint, so it can be written after "
            "the figures are measured without changing the benchmark"
        ),
    )

    @field_validator("resplit")
    @classmethod
    def _resplit_ok(cls, v: tuple[int, int, int] | None) -> tuple[int, int, int] | None:
        if v is not None:
            check_resplit(v)
        return v

    @field_validator("source")
    @classmethod
    def _builder_reads_formats(cls, v: SourceSpec) -> SourceSpec:
        from gradebench.datasets import get_builder

        known = get_builder(v.family).formats
        bad = [f for f in v.formats if f not in known]
        if bad:
            raise ValueError(
                f"builder {v.family!r} does not read format(s) {', '.join(map(repr, bad))}; it reads {', '.join(known)}"
            )
        return v

    @property
    def builder_name(self) -> str:
        return self.source.family


_MODELS: dict[type, type[Recipe]] = {}


def recipe_model(builder: type) -> type[Recipe]:
    """The pydantic model of a full recipe for ``builder``: common keys plus its section."""
    model = _MODELS.get(builder)
    if model is None:
        model = create_model(f"{builder.__name__}Recipe", __base__=(Recipe, builder.section))
        _MODELS[builder] = model
    return model


def check_resplit(v: tuple[int, int, int] | list[int]) -> tuple[int, int, int]:
    if not isinstance(v, (tuple, list)) or any(isinstance(p, bool) or not isinstance(p, int) for p in v):
        raise ValueError(f"resplit must be three whole percentages, got {v!r}")
    if len(v) != 3 or any(p < 0 for p in v) or sum(v) != 100:
        raise ValueError(f"resplit must be three non-negative percentages summing to 100, got {list(v)}")
    return (int(v[0]), int(v[1]), int(v[2]))
