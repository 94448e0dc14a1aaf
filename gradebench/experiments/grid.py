"""Experiment files: the YAML grid that :func:`gradebench.experiments.sweep.sweep` runs.

Example (``recipes/experiments/demo.yaml``)::

    name: demo
    benchmarks:
      - recipe: demo              # built into build_dir (a no-op once built)
      # - path: gradebench-out/esnli/0123456789ab
    scorers:
      - name: bm25
      - name: lambdamart
        config: {n_estimators: 40}
    losses: [listnet, mse]        # for scorers that train with a gradebench loss
    seeds: [0, 1]
    split: test
    train: {epochs: 3}            # TrainOptions, without loss/loss_params/seed (set by the grid)
    # list_sizes: [2, 5, null]    # trained cells once per K (null: the full lists)
    # transfer:                   # every cell also evaluated zero-shot on these benchmarks
    #   - path: gradebench-out/winowhy/bd3f4adfa37b

The grid is benchmarks x scorers x losses x list sizes x seeds; a scorer that takes no loss
gets one cell per seed (its own ``losses:`` list overrides the top-level one), and a scorer
that does not train gets no list-size axis. Relative paths are relative to the current
directory, like every other path on the command line. Unknown keys, and a key given twice in
one mapping, are errors naming the file, line and key.

``list_sizes:`` sets the training option ``list_size`` per cell (:attr:`TrainOptions.list_size`:
every training *and validation* list is subsampled to at most K candidates, by content and
seed, keeping one of its best and one of its worst grade; a list of K or fewer candidates is
kept whole). Each K is its own run (the option enters the run fingerprint) and its records
carry it as ``run.options.list_size``; ``null`` in the list is the run on the full lists (as
without ``list_sizes:``). Every record is still computed on the full lists of ``split:``.
K must be an integer >= 2, each listed once; it excludes ``train: {list_size: ...}``.

``transfer:`` lists benchmarks (entries as in ``benchmarks:``) that every cell is also
evaluated on, on the same ``split:``: a trained cell's run zero-shot
(``gradebench eval --run R --benchmark B --zero-shot``), an untrained scorer directly (its
record is the one a grid listing that benchmark would write, so the baselines on a transfer
benchmark come with it). A transfer benchmark that is the cell's own benchmark is skipped
(that record is the cell's own). Each record goes to ``<results_dir>/<benchmark it was
evaluated on>/``; a cell is done when all its records exist.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from gradebench.errors import RecipeError
from gradebench.paths import OUT_DIR
from gradebench.recipes.loader import _dotted, _line_of, read_mapping

#: training options the grid sets itself
GRID_OPTIONS = ("loss", "loss_params", "seed")
#: the smallest list size of ``list_sizes:`` (a list of one candidate has no preference to learn)
MIN_LIST_SIZE = 2
#: one K of ``list_sizes:`` (an integer; a string, float or bool is refused, not converted)
ListSize = Annotated[int, Field(strict=True, ge=MIN_LIST_SIZE)]
#: the hint of a bad value under these keys (others: "fix the value")
_HINTS = {
    "list_sizes": f"give integers >= {MIN_LIST_SIZE}, each once (null: the full lists), e.g. list_sizes: [2, 3, 5]",
    "transfer": "give benchmark entries as under benchmarks:, each once: transfer: [{path: gradebench-out/x/<fp>}]",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BenchmarkEntry(_Strict):
    """A built benchmark folder (``path``) or a recipe to build (``recipe``, cached by fingerprint)."""

    path: str | None = None
    recipe: str | None = None

    @model_validator(mode="after")
    def _one(self) -> BenchmarkEntry:
        if (self.path is None) == (self.recipe is None):
            raise ValueError("give exactly one of path: or recipe:")
        return self


class LossEntry(_Strict):
    name: str
    params: dict[str, Any] = Field(default_factory=dict)


def _losses(value: Any) -> Any:
    if isinstance(value, list):
        return [{"name": v} if isinstance(v, str) else v for v in value]
    return value


class ScorerEntry(_Strict):
    name: str
    config: dict[str, Any] = Field(default_factory=dict)
    losses: list[LossEntry] | None = None

    @field_validator("losses", mode="before")
    @classmethod
    def _norm(cls, v: Any) -> Any:
        return _losses(v)


class Experiment(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    benchmarks: list[BenchmarkEntry] = Field(min_length=1)
    scorers: list[ScorerEntry] = Field(min_length=1)
    losses: list[LossEntry] = Field(default_factory=list)
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    split: str = "test"
    n_resamples: int = Field(1000, ge=1)
    list_sizes: list[ListSize | None] | None = Field(None, min_length=1)
    train: dict[str, Any] = Field(default_factory=dict)
    transfer: list[BenchmarkEntry] = Field(default_factory=list)
    build_dir: str = str(OUT_DIR)

    @field_validator("losses", mode="before")
    @classmethod
    def _norm(cls, v: Any) -> Any:
        return _losses(v)

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v: list[int]) -> list[int]:
        if any(s < 0 for s in v):
            raise ValueError("seeds must be >= 0")
        if len(set(v)) != len(v):
            raise ValueError("seeds are listed twice")
        return v

    @field_validator("list_sizes")
    @classmethod
    def _list_sizes(cls, v: list[int | None] | None) -> list[int | None] | None:
        twice = sorted({"null" if k is None else str(k) for k in v if v.count(k) > 1}) if v is not None else []
        if twice:
            raise ValueError(f"list_sizes: {', '.join(twice)} is listed twice")
        return v

    @field_validator("train")
    @classmethod
    def _train(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        from gradebench.scorers import TrainOptions

        fixed = [k for k in GRID_OPTIONS if k in v]
        if fixed:
            raise ValueError(f"train: {', '.join(fixed)} is set by the grid (use losses: and seeds:)")
        if "list_size" in v and info.data.get("list_sizes") is not None:
            raise ValueError("train: list_size conflicts with list_sizes: (give one)")
        TrainOptions.model_validate(v)
        return v

    @field_validator("transfer")
    @classmethod
    def _transfer(cls, v: list[BenchmarkEntry]) -> list[BenchmarkEntry]:
        seen: set[tuple[str | None, str | None]] = set()
        for entry in v:
            if (entry.path, entry.recipe) in seen:
                raise ValueError(f"transfer: {entry.path or entry.recipe} is listed twice")
            seen.add((entry.path, entry.recipe))
        return v

    def cell_list_sizes(self) -> list[int | None]:
        """The list sizes a trained cell runs at: ``list_sizes:``, else the one of ``train:`` (None: full lists)."""
        return list(self.list_sizes) if self.list_sizes is not None else [self.train.get("list_size")]


def load_experiment(path: str | Path) -> Experiment:
    """Load and validate an experiment YAML; problems raise :class:`RecipeError` with file, line and key.

    The file is read as recipes are (:func:`gradebench.io.yamlio.read_mapping`): a key given
    twice in one mapping is an error, not the last value silently winning.
    """
    p = Path(path)
    if not p.is_file():
        raise RecipeError("experiment file not found", path=p, hint="give the path to an experiment .yaml")
    data, node = read_mapping(p, what="sweep experiment", start_hint="start with 'name: ...'")
    try:
        return Experiment.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(x for x in err["loc"] if not (isinstance(x, str) and x.startswith(("function-", "str"))))
        if err["type"] == "extra_forbidden":
            msg, hint = f"unknown key {loc[-1]!r}", "remove it or fix its spelling (see recipes/experiments/demo.yaml)"
        elif err["type"] == "missing":
            msg, hint = f"missing required key {loc[-1]!r}", "add it"
        else:
            msg = err["msg"].removeprefix("Value error, ")
            hint = _HINTS.get(str(loc[0]) if loc else "", "fix the value")
        more = len(e.errors()) - 1
        if more:
            msg += f" (and {more} more problem{'s' if more > 1 else ''})"
        raise RecipeError(msg, path=p, line=_line_of(node, loc), key=_dotted(loc) or None, hint=hint) from None
