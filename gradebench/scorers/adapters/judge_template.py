"""Prompt templates of the ``hf-llm-judge`` adapter: YAML data, validated, content-hashed.

A template (``extra="forbid"``: a misspelt key fails with its name and line)::

    name: relevance-yes-no
    version: 1
    description: does the candidate answer or explain the query?
    system: null                 # optional system turn (chat models)
    prompt: |-
      Query: {query}
      Candidate: {candidate}
      Does the candidate correctly answer or explain the query? Answer Yes or No.
    chat: auto                   # auto: through the tokenizer's chat template when it has one
    answer_prefix: "Answer:"     # text after the prompt (after the chat template's assistant header)
    score:
      kind: yes-no               # log P(positive) - log P(negative) of the next token
      positive: " Yes"           # (not `yes:`/`no:`, which YAML reads as true/false)
      negative: " No"

or ``score: {kind: rating, labels: {"1": 1, "2": 2, "3": 3, "4": 4, "5": 5}}``: the expected
rating ``sum_r p(r) * value(r)`` under the next-token probabilities of the rating tokens,
renormalised over them. ``prompt`` must use both fields ``{query}`` and ``{candidate}`` and no
other (``{{`` and ``}}`` are literal braces); every answer text must be one token of the
model's tokenizer (checked when the model is loaded). The template's sha256 (of canonical JSON
of the validated template, so comments and layout do not count) goes into the record.

Built-in templates live in ``gradebench/scorers/adapters/templates/`` and are named by their
file name without ``.yaml`` (``template=relevance-yes-no``); anything else is a path.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator

from gradebench.errors import InvalidArgumentError, RecipeError
from gradebench.hashing import sha256_json
from gradebench.io.yamlio import line_of, read_mapping, validation_problem
from gradebench.strict import StrictModel

__all__ = ["BUILTIN_DIR", "JudgeTemplate", "builtin_templates", "load_template"]

BUILTIN_DIR = Path(__file__).resolve().parent / "templates"
FIELDS = ("query", "candidate")


class YesNo(StrictModel):
    kind: Literal["yes-no"]
    positive: str = Field(min_length=1, description="the yes answer, e.g. ' Yes'")
    negative: str = Field(min_length=1, description="the no answer, e.g. ' No'")


class Rating(StrictModel):
    kind: Literal["rating"]
    labels: dict[str, float] = Field(min_length=2, description="answer text -> rating value")


class JudgeTemplate(StrictModel):
    """A validated judge template (see the module docstring)."""

    name: str = Field(min_length=1)
    version: int = Field(1, ge=1)
    description: str = ""
    system: str | None = None
    prompt: str = Field(min_length=1)
    chat: Literal["auto", "always", "never"] = "auto"
    answer_prefix: str = ""
    score: Annotated[YesNo | Rating, Field(discriminator="kind")]

    @field_validator("prompt")
    @classmethod
    def _fields(cls, prompt: str) -> str:
        try:
            used = [f for _, f, _, _ in string.Formatter().parse(prompt) if f is not None]
        except ValueError as e:
            raise ValueError(f"prompt is not a valid format string ({e}); write literal braces as {{{{ and }}}}") from None
        unknown = sorted({f for f in used if f not in FIELDS})
        if unknown:
            raise ValueError(f"prompt uses unknown field(s) {', '.join('{' + f + '}' for f in unknown)}; "
                             f"the fields are {{query}} and {{candidate}}")
        missing = [f for f in FIELDS if f not in used]
        if missing:
            raise ValueError(f"prompt is missing the field {{{missing[0]}}}: the judge would not see the {missing[0]}")
        return prompt

    @property
    def sha256(self) -> str:
        return sha256_json(self.model_dump(mode="json"))

    def render(self, query: str, candidate: str) -> str:
        return self.prompt.format(query=query, candidate=candidate)

    def answers(self) -> dict[str, float]:
        """Answer text -> value (yes-no: ``positive`` -> 1, ``negative`` -> 0)."""
        if isinstance(self.score, YesNo):
            return {self.score.positive: 1.0, self.score.negative: 0.0}
        return dict(self.score.labels)


def builtin_templates() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.yaml"))


def load_template(ref: str | Path) -> tuple[JudgeTemplate, str]:
    """``(template, where)`` for a built-in template name or a YAML file path.

    Raises:
        SourceNotFoundError / InvalidArgumentError: no such template.
        RecipeError: not YAML, an unknown or missing key, a prompt missing a field (file, line, key).
    """
    text = str(ref)
    path = Path(text).expanduser()
    if not path.is_file():
        if path.suffix or "/" in text:
            raise InvalidArgumentError("no such judge template file", path=path, key="template",
                                       hint=f"give a YAML file or a built-in template: {', '.join(builtin_templates())}")
        path = BUILTIN_DIR / f"{text}.yaml"
        if not path.is_file():
            raise InvalidArgumentError(f"unknown judge template {text!r}", key="template",
                                       hint=f"built-in templates: {', '.join(builtin_templates())}; or a YAML file")
    data, node = read_mapping(path, what="judge template", start_hint="start with `name:` and `prompt:`")
    try:
        template = JudgeTemplate.model_validate(data)
    except ValidationError as e:
        msg, loc, hint = validation_problem(e.errors(), unknown_key_hint="keys: " + ", ".join(JudgeTemplate.model_fields))
        key = ".".join(str(p) for p in loc if not str(p).startswith(("yes-no", "rating"))) or None
        raise RecipeError(msg, path=path, line=line_of(node, tuple(p for p in loc if p not in ("yes-no", "rating"))),
                          key=key, hint=hint) from None
    return template, str(path)


def template_options(template: JudgeTemplate, where: str) -> dict[str, Any]:
    """What a record keeps of a template: its name, version, sha256, where it was read, and itself."""
    return {"template": template.name, "template_version": template.version, "template_sha256": template.sha256,
            "template_file": where, "template_content": template.model_dump(mode="json")}
