"""The base of every configuration model read from a file: unknown keys are errors, values frozen."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """A pydantic model with ``extra="forbid"`` (a typo fails with the key's name) and frozen fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)
