"""The options of the policy methods: one pydantic model per method, each default stated once.

:class:`LipoOptions`, :class:`GrpoOptions` and :class:`PpoOptions` share :class:`PolicyOptions`
(steps, split, query cap, prompt template, seed); the two methods that sample share
:class:`SamplingOptions` (reward normalisation, and the types of the KL coefficient, completion
length and temperature, whose defaults differ per method). The constraints and help text of an
option live in its type (:data:`LearningRate`, ...) and its default in the method's class.

The Python functions take the options as keyword arguments (or ``options=``) and build the
model with :meth:`PolicyOptions.build`; ``gradebench lipo | grpo | ppo`` make their flags from the
same fields (``--max-completion-length`` is ``max_completion_length``, its default and help are
the field's). A bad value is one :class:`~gradebench.errors.InvalidArgumentError` naming the flag:
``--batch-size must be an integer >= 2, got 1 (hint: PPO whitens advantages per batch)``.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal, Optional, TypeVar

import annotated_types
from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo

from gradebench.errors import GradebenchError, InvalidArgumentError
from gradebench.registry import suggest
from gradebench.rl.prompts import PROMPT_TEMPLATE, check_template
from gradebench.strict import StrictModel

_O = TypeVar("_O", bound="PolicyOptions")
_F = TypeVar("_F", bound=Callable[..., Any])

# -- option types: the constraint and the help of an option, wherever it appears -------------------------
Steps = Annotated[int, Field(strict=True, ge=1, description="optimiser steps")]
LearningRate = Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False, description="learning rate")]
KLCoef = Annotated[float, Field(strict=True, ge=0, allow_inf_nan=False, description=(
    "KL coefficient (GRPO's beta, 0: no reference model; PPO's per-token KL penalty)"))]
CompletionLength = Annotated[int, Field(strict=True, ge=1, description="most new tokens per completion")]
Temperature = Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False, description="sampling temperature")]


def flag(name: str) -> str:
    """The CLI flag of an option: ``max_completion_length`` -> ``--max-completion-length``."""
    return "--" + name.replace("_", "-")


def cli_flag(name: str, info: FieldInfo) -> str:
    """The CLI declaration of a field: :func:`flag`, or its own (``--normalize-reward/--raw-reward``)."""
    return _extra(info, "cli") or flag(name)


class PolicyOptions(StrictModel):
    """What every method takes (the methods' classes give ``lr`` its default). ``split``, ``seed``
    (and ``normalize_reward``) are stored in a run on their own; every other option is in the
    run's ``options`` (see :meth:`recorded`)."""

    #: the method's name, for messages
    method: ClassVar[str] = ""

    steps: Steps = 100
    lr: LearningRate  # each method states its default
    split: str = Field("train", description="the split whose queries train the policy")
    max_queries: Optional[int] = Field(None, strict=True, ge=1, description="use the first N queries only",
                                       json_schema_extra={"none_means": "all queries"})
    prompt_template: str = Field(PROMPT_TEMPLATE, description="how a query is shown to the policy ({query} once)")
    seed: int = Field(42, strict=True, description="seed of the run")

    @field_validator("prompt_template")
    @classmethod
    def _template(cls, value: str) -> str:
        return check_template(value)

    def recorded(self) -> dict[str, Any]:
        """The options a run records under ``options`` (and fingerprints with them)."""
        return self.model_dump(mode="json", exclude={"split", "seed", "normalize_reward"})

    @classmethod
    def build(cls: type[_O], options: _O | dict[str, Any] | None = None, **kwargs: Any) -> _O:
        """The options from ``options`` (a model or a dict) with ``kwargs`` on top.

        Raises:
            InvalidArgumentError: an unknown option, or a bad value (naming its flag).
        """
        if options is None:
            base: dict[str, Any] = {}
        elif isinstance(options, cls):
            base = dict(options)
        elif isinstance(options, dict):
            base = options
        else:
            raise InvalidArgumentError(f"options must be a {cls.__name__} or a dict, got {type(options).__name__}")
        try:
            return cls.model_validate({**base, **kwargs})
        except ValidationError as e:
            raise _one_line(cls, e.errors()[0]) from None


class SamplingOptions(PolicyOptions):
    """What the methods that sample completions and score them with a reward take (GRPO, PPO)."""

    kl_coef: KLCoef
    max_completion_length: CompletionLength
    temperature: Temperature
    normalize_reward: bool = Field(True, strict=True, description=(
        "standardise an exported reward with its stored calibration ((raw - mean) / std); not for a callable"),
        json_schema_extra={"cli": "--normalize-reward/--raw-reward"})


class LipoOptions(PolicyOptions):
    """LiPO (:func:`gradebench.rl.lipo.lipo`): a ranking loss on the policy's log-ratio scores of graded lists."""

    method: ClassVar[str] = "lipo"

    lr: LearningRate = 1e-6
    batch_size: int = Field(4, strict=True, ge=1, description="lists per step")
    loss: str = Field("lambdaloss", description="registered ranking loss (lambdaloss = LiPO-λ, ranknet = DPO at K=2)")
    loss_params: dict[str, Any] = Field(default_factory=dict, description="the loss's parameters")
    list_size: Optional[int] = Field(None, strict=True, ge=2, description="K candidates per list",
                                     json_schema_extra={"hint": "a preference needs two responses; 2 is DPO",
                                                        "none_means": "all candidates"})
    beta: float = Field(0.1, strict=True, gt=0, allow_inf_nan=False, description="scale of the log-ratio scores",
                        json_schema_extra={"hint": "LiPO uses 0.05, DPO 0.1"})
    labels: Literal["relevance", "score"] = Field(
        "relevance", description="relevance (grades) or score (graded quality in [0, 1], LiPO's psi)")

    @field_validator("loss_params", mode="before")
    @classmethod
    def _no_params(cls, value: Any) -> Any:
        return {} if value is None else value


class GrpoOptions(SamplingOptions):
    """GRPO (:func:`gradebench.rl.grpo.grpo`): TRL's ``GRPOTrainer`` rewarded by a gradebench reward."""

    method: ClassVar[str] = "grpo"

    lr: LearningRate = 1e-6
    kl_coef: KLCoef = 0.04
    max_completion_length: CompletionLength = 64
    temperature: Temperature = 1.0
    num_generations: int = Field(4, strict=True, ge=2, description="completions per prompt (the group GRPO "
                                 "normalises over)", json_schema_extra={
                                     "hint": "GRPO normalises rewards within each prompt's group of generations"})
    batch_prompts: int = Field(2, strict=True, ge=1, description="prompts per step")


class PpoOptions(SamplingOptions):
    """PPO (:func:`gradebench.rl.ppo.ppo`): TRL's experimental ``PPOTrainer``; defaults of the core paper."""

    method: ClassVar[str] = "ppo"

    lr: LearningRate = 1.4e-5
    kl_coef: KLCoef = 0.1
    max_completion_length: CompletionLength = 53
    temperature: Temperature = 0.7
    batch_size: int = Field(8, strict=True, ge=2, description="prompts per rollout",
                            json_schema_extra={"hint": "PPO whitens advantages per batch; e.g. --batch-size 8"})
    ppo_epochs: int = Field(4, strict=True, ge=1, description="optimisation epochs per rollout")


class PretrainOptions(PolicyOptions):
    """Pretraining a small policy from scratch (:func:`gradebench.rl.pretrain.pretrain_policy`): a
    byte-level BPE tokenizer and a GPT-2 language model trained on ``split``'s queries and their
    best candidates (``prompt + " " + candidate + EOS``), deterministic from the seed."""

    method: ClassVar[str] = "pretrain-policy"

    steps: Steps = 600
    lr: LearningRate = 1e-3
    batch_size: int = Field(32, strict=True, ge=1, description="examples (query + best candidate) per step")
    layers: int = Field(2, strict=True, ge=1, description="transformer layers")
    dim: int = Field(128, strict=True, ge=8, description="hidden size (a multiple of --heads)")
    heads: int = Field(4, strict=True, ge=1, description="attention heads")
    vocab_size: int = Field(2048, strict=True, ge=300, description="BPE vocabulary size (256 bytes + merges + 2 "
                            "special tokens)", json_schema_extra={"hint": "the 256 byte tokens and the special "
                                                                          "tokens need at least 300"})
    context: int = Field(256, strict=True, ge=16, description="positions (longer examples are skipped)")
    dropout: float = Field(0.0, strict=True, ge=0, lt=1, allow_inf_nan=False, description="dropout probability",
                           json_schema_extra={"hint": "a probability in [0, 1); 0 suits a few CPU minutes"})
    warmup_steps: int = Field(50, strict=True, ge=0, description="linear warmup steps (then linear decay to 0)")
    weight_decay: float = Field(0.01, strict=True, ge=0, allow_inf_nan=False, description="AdamW weight decay")
    loss_on: Literal["response", "all"] = Field(
        "response", description="'response': the loss covers the candidate and EOS only; 'all': the prompt too")
    save_steps: int = Field(200, strict=True, ge=1, description="checkpoint every N steps (an interrupted run "
                            "continues from the last one)")

    @model_validator(mode="after")
    def _heads_divide_dim(self) -> "PretrainOptions":
        if self.dim % self.heads:
            raise InvalidArgumentError(f"--dim {self.dim} is not a multiple of --heads {self.heads}",
                                       hint="e.g. --dim 128 --heads 4")
        return self


# -- one-line errors ---------------------------------------------------------------------------------
def _extra(info: FieldInfo, key: str) -> Any:
    extra = info.json_schema_extra
    return extra.get(key) if isinstance(extra, dict) else None


def expects(info: FieldInfo) -> str:
    """What a field accepts, in words (``an integer >= 2``, ``a positive number``, ``'relevance' or 'score'``)."""
    annotation = info.annotation
    if typing.get_origin(annotation) is Literal:
        return " or ".join(repr(v) for v in typing.get_args(annotation))
    args = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]  # Optional[X] -> X
    bound = {type(m).__name__: m for m in info.metadata if isinstance(m, (annotated_types.Ge, annotated_types.Gt))}
    if args[0] is bool:
        return "true or false"
    if args[0] is int:
        return f"an integer >= {bound['Ge'].ge}" if "Ge" in bound else "an integer"
    if args[0] is float:
        if "Gt" in bound and bound["Gt"].gt == 0:
            return "a positive number"
        return "a non-negative number" if "Ge" in bound and bound["Ge"].ge == 0 else "a number"
    if args[0] is str:
        return "a string"
    return f"a {getattr(args[0], '__name__', args[0])}"


def _one_line(cls: type[PolicyOptions], err: Any) -> GradebenchError:
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, GradebenchError):  # a check of our own (the prompt template)
        return cause
    name = str(err["loc"][0]) if err.get("loc") else ""
    known = [n for n in cls.model_fields]
    if err["type"] == "extra_forbidden":
        return InvalidArgumentError(f"{cls.method} has no option {name!r}{suggest(name, known, n=1)}",
                                    hint=f"options of {cls.method}: {', '.join(known)}")
    info = cls.model_fields[name]
    return InvalidArgumentError(f"{flag(name)} must be {expects(info)}, got {err.get('input')!r}",
                                hint=_extra(info, "hint"))


# -- the option keywords in a function's signature -----------------------------------------------------
def keyword_options(model: type[PolicyOptions]) -> Callable[[_F], _F]:
    """Show ``model``'s fields as keyword arguments (with their defaults) in the signature of a
    function that takes them as ``**kwargs`` (``help()``, ``inspect.signature``, IDEs)."""

    def wrap(fn: _F) -> _F:
        sig = inspect.signature(fn)
        params = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        options = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=info.annotation,
                                     default=info.get_default(call_default_factory=True))
                   for name, info in model.model_fields.items()]
        fn.__signature__ = sig.replace(parameters=params + options)  # type: ignore[attr-defined]
        return fn

    return wrap
