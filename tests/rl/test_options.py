"""One options model per policy method: defaults stated once (API, CLI and --help read them), one-line errors."""

from __future__ import annotations

import inspect

import pytest

from gradebench.errors import InvalidArgumentError
from gradebench.rl.options import GrpoOptions, LipoOptions, PpoOptions, expects, flag

MODELS = pytest.mark.parametrize("model", [LipoOptions, GrpoOptions, PpoOptions], ids=lambda m: m.method)

#: what a run records under ``options`` (with "precision"): the keys its fingerprint has always covered
RECORDED = {
    "lipo": {"loss", "loss_params", "list_size", "beta", "steps", "lr", "batch_size", "labels", "max_queries",
             "prompt_template"},
    "grpo": {"steps", "num_generations", "batch_prompts", "lr", "kl_coef", "max_completion_length", "temperature",
             "max_queries", "prompt_template"},
    "ppo": {"steps", "batch_size", "lr", "kl_coef", "ppo_epochs", "max_completion_length", "temperature",
            "max_queries", "prompt_template"},
}


def _function(model):
    import gradebench.rl as rl

    return getattr(rl, model.method)


def test_the_defaults_of_before():
    lipo, grpo, ppo = LipoOptions(), GrpoOptions(), PpoOptions()
    assert (lipo.loss, lipo.beta, lipo.steps, lipo.lr, lipo.batch_size, lipo.labels) == (
        "lambdaloss", 0.1, 100, 1e-6, 4, "relevance")
    assert (grpo.num_generations, grpo.batch_prompts, grpo.lr, grpo.kl_coef, grpo.max_completion_length,
            grpo.temperature, grpo.normalize_reward) == (4, 2, 1e-6, 0.04, 64, 1.0, True)
    assert (ppo.batch_size, ppo.lr, ppo.kl_coef, ppo.ppo_epochs, ppo.max_completion_length, ppo.temperature) == (
        8, 1.4e-5, 0.1, 4, 53, 0.7)
    for opts in (lipo, grpo, ppo):
        assert (opts.split, opts.max_queries, opts.prompt_template, opts.seed) == ("train", None,
                                                                                   "{query}\nExplanation:", 42)


@MODELS
def test_recorded_options_keep_their_keys(model):
    assert set(model().recorded()) == RECORDED[model.method]
    assert model.build(lr=1).recorded()["lr"] == 1.0 and isinstance(model.build(lr=1).lr, float)


@MODELS
def test_the_function_signature_shows_the_model_defaults(model):
    params = inspect.signature(_function(model)).parameters
    for name, info in model.model_fields.items():
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY
        assert params[name].default == info.get_default(call_default_factory=True), name


@MODELS
def test_the_cli_flags_are_the_model_fields(model):
    from typer.main import get_command

    from gradebench.cli.app import app

    command = get_command(app).commands[model.method]
    flags = {p.name: p for p in command.params}
    for name, info in model.model_fields.items():
        if name == "loss_params":  # --loss-param key=value, parsed by the CLI
            assert "loss_param" in flags
            continue
        assert flag(name) in flags[name].opts, name
        assert flags[name].default == info.get_default(call_default_factory=True), name
        assert flags[name].help == info.description, name
    if "normalize_reward" in model.model_fields:
        assert flags["normalize_reward"].secondary_opts == ["--raw-reward"]


def test_help_shows_the_defaults(capsys):
    from gradebench.cli import main

    assert main(["ppo", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for default in ("[default: 1.4e-05]", "[default: 53]", "[default: 0.7]", "[default: 8]"):
        assert default in text


@pytest.mark.parametrize(("model", "kwargs", "words"), [
    (PpoOptions, {"batch_size": 1}, ["--batch-size must be an integer >= 2, got 1", "whitens advantages"]),
    (GrpoOptions, {"num_generations": 1}, ["--num-generations must be an integer >= 2", "group"]),
    (LipoOptions, {"beta": 0.0}, ["--beta must be a positive number, got 0.0", "LiPO uses 0.05"]),
    (LipoOptions, {"list_size": 1}, ["--list-size must be an integer >= 2", "2 is DPO"]),
    (LipoOptions, {"labels": "grades"}, ["--labels must be 'relevance' or 'score', got 'grades'"]),
    (GrpoOptions, {"kl_coef": -0.1}, ["--kl-coef must be a non-negative number"]),
    (GrpoOptions, {"lr": float("nan")}, ["--lr must be a positive number, got nan"]),
    (PpoOptions, {"steps": 2.0}, ["--steps must be an integer >= 1, got 2.0"]),
    (PpoOptions, {"steps": True}, ["--steps must be an integer >= 1, got True"]),
    (LipoOptions, {"max_queries": 0}, ["--max-queries must be an integer >= 1, got 0"]),
    (GrpoOptions, {"prompt_template": "no slot"}, ["must contain {query} exactly once"]),
    (LipoOptions, {"stepz": 3}, ["lipo has no option 'stepz'; did you mean 'steps'?"]),
])
def test_a_bad_option_is_one_line_naming_the_flag(model, kwargs, words):
    with pytest.raises(InvalidArgumentError) as e:
        model.build(**kwargs)
    text = str(e.value)
    assert "\n" not in text
    for w in words:
        assert w in text


def test_options_and_keywords_combine():
    base = GrpoOptions(steps=3, lr=1e-3)
    assert GrpoOptions.build(base) is not base and GrpoOptions.build(base) == base
    assert GrpoOptions.build(base, seed=7) == GrpoOptions(steps=3, lr=1e-3, seed=7)
    assert GrpoOptions.build({"steps": 3}).steps == 3
    assert LipoOptions.build(loss_params=None).loss_params == {}
    with pytest.raises(InvalidArgumentError, match="options must be a GrpoOptions or a dict"):
        GrpoOptions.build(PpoOptions())
    with pytest.raises(Exception):  # noqa: B017 - frozen: options are values
        base.steps = 4


def test_expects_in_words():
    assert expects(PpoOptions.model_fields["batch_size"]) == "an integer >= 2"
    assert expects(GrpoOptions.model_fields["normalize_reward"]) == "true or false"
    assert expects(LipoOptions.model_fields["list_size"]) == "an integer >= 2"
    assert expects(LipoOptions.model_fields["split"]) == "a string"


def test_the_api_refuses_a_bad_option_before_anything_else(tmp_path):
    """Options are checked first: a missing policy folder is not even looked at."""
    from gradebench.rl import ppo

    with pytest.raises(InvalidArgumentError, match="--ppo-epochs must be an integer >= 1"):
        ppo(tmp_path / "no-policy", lambda prompts, completions: [0.0] * len(prompts), tmp_path / "no-bench",
            out=tmp_path / "run", ppo_epochs=0)
    assert not (tmp_path / "run").exists()


def test_the_cli_error_names_the_flag(tmp_path, capsys):
    pytest.importorskip("trl")
    from gradebench.cli import main

    code = main(["ppo", "--policy", str(tmp_path / "p"), "--reward", str(tmp_path / "r"), "--benchmark",
                 str(tmp_path / "b"), "--out", str(tmp_path / "run"), "--batch-size", "1"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--batch-size must be an integer >= 2, got 1" in err
    assert not (tmp_path / "run").exists()
