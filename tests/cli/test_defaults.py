"""Default folders live in gradebench.paths; --help shows every default; the README's commands use both."""

from __future__ import annotations

import inspect
import re
import shlex
from pathlib import Path

import pytest
import typer
import yaml

from gradebench import paths
from gradebench.cli import app
from tests.conftest import REPO

#: commands whose modules other work streams own (their defaults are reported, not changed here)
OWNED_ELSEWHERE: set[str] = set()
#: modules other work streams own that still spell a default folder out (each a one-line change to
#: ``from gradebench.paths import ...``); nothing else in gradebench may
PENDING: set[str] = set()
#: a default folder spelled out: the folder as a whole string, or a sub-folder joined by Path or ``/``
LITERALS = re.compile(r"""(["'])(leaderboard/results|gradebench-out)\1|(Path\(|out / )(["'])(results|runs|plots|rewards)\4""")


def _commands() -> dict[str, object]:
    return typer.main.get_command(app).commands


def _option(command: str, name: str):
    return next(p for p in _commands()[command].params if name in p.opts)


def test_default_folders_are_spelled_out_only_in_paths():
    found = []
    for f in sorted((REPO / "gradebench").rglob("*.py")):
        rel = f.relative_to(REPO).as_posix()
        if rel in PENDING or rel == "gradebench/paths.py":
            continue
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), start=1):
            if LITERALS.search(line):
                found.append(f"{rel}:{i}: {line.strip()}")
    assert not found, "use the constants of gradebench.paths:\n" + "\n".join(found)
    assert paths.RESULTS_DIR == paths.OUT_DIR / "results" == Path("gradebench-out/results")
    assert paths.RUNS_DIR == Path("gradebench-out/runs") and paths.COMMITTED_RESULTS_DIR == Path("leaderboard/results")


@pytest.mark.parametrize("command", ["eval", "sweep", "leaderboard", "query", "plot", "export-reward"])
def test_results_dir_defaults_to_gradebench_out_not_the_committed_leaderboard(command):
    assert _option(command, "--results-dir").default == Path("gradebench-out/results")


def test_other_default_folders_of_the_cli():
    assert _option("sweep", "--runs-dir").default == Path("gradebench-out/runs")
    assert _option("build", "--out").default == _option("demo", "--out").default == Path("gradebench-out")


def test_python_api_defaults_match_the_cli():
    from gradebench.experiments.build import build
    from gradebench.experiments.demo import run_demo
    from gradebench.experiments.evaluate import evaluate_scorer
    from gradebench.experiments.grid import Experiment
    from gradebench.experiments.plot import plot_run
    from gradebench.experiments.query import connect, query, run_query
    from gradebench.experiments.sweep import sweep

    def default(fn, name):
        return inspect.signature(fn).parameters[name].default

    for fn in (evaluate_scorer, sweep, plot_run, connect, query, run_query):
        assert default(fn, "results_dir") == paths.RESULTS_DIR, fn.__name__
    assert default(sweep, "runs_dir") == paths.RUNS_DIR
    assert default(build, "out") == default(run_demo, "out") == paths.OUT_DIR
    assert Experiment.model_fields["build_dir"].default == "gradebench-out"


def test_help_names_the_default_results_dir(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    for command in ("eval", "sweep", "leaderboard"):
        code, out, _ = cli(command, "--help")
        assert code == 0 and "[default: gradebench-out/results]" in out, command


# -- --help shows every option's default ----------------------------------------------------
def _shows_a_default(p) -> bool:
    if p.required or p.name == "help":
        return True
    if getattr(p, "is_flag", False) and not p.secondary_opts and p.default is False:
        return True  # an off switch: absent = off
    return p.show_default is not False and (p.default is not None or isinstance(p.show_default, str))


def test_every_option_shows_its_default():
    missing = [f"{name} {'/'.join(p.opts)}" for name, cmd in sorted(_commands().items())
               if cmd.callback.__module__ not in OWNED_ELSEWHERE
               for p in cmd.params if p.param_type_name == "option" and not _shows_a_default(p)]
    assert not missing, f"options whose --help shows no default: {missing}"


def test_train_help_shows_the_training_defaults(cli, monkeypatch):
    from gradebench.training.options import TrainOptions

    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = cli("train", "--help")
    assert code == 0
    defaults = TrainOptions()
    for option, value in (("--epochs", defaults.epochs), ("--patience", defaults.patience),
                          ("--batch-queries", defaults.batch_queries), ("--seed", defaults.seed)):
        line = next(ln for ln in out.splitlines() if f" {option} " in ln)
        assert f"[default: {value}]" in line, (option, line)
    assert (defaults.epochs, defaults.patience) == (10, 3)
    assert "[default: (the scorer's)]" in next(ln for ln in out.splitlines() if " --lr " in ln)


def test_train_passes_the_shown_defaults(cli, monkeypatch, tmp_path):
    import gradebench.experiments.train as train_module

    seen = {}

    def fake_train(benchmark, scorer, **kwargs):
        seen.update(kwargs["options"])
        raise SystemExit(0)

    monkeypatch.setattr(train_module, "train", fake_train)
    cli("train", "--benchmark", str(tmp_path), "--scorer", "bm25", "--out", str(tmp_path / "run"), "--json")
    from gradebench.training.options import TrainOptions

    d = TrainOptions()
    assert {k: seen[k] for k in ("epochs", "patience", "batch_queries", "seed")} == {
        "epochs": d.epochs, "patience": d.patience, "batch_queries": d.batch_queries, "seed": d.seed}
    assert "lr" not in seen and "list_size" not in seen  # None: the scorer's default, the whole list


# -- the README's commands --------------------------------------------------------------------
def readme_commands() -> list[list[str]]:
    """Every ``gradebench ...`` command of the README's bash blocks, continuation lines joined, comments cut."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            if line.startswith("#"):
                continue
            tokens = shlex.split(line.replace("$e", "E").replace("$r", "R").replace("$B", "B"))
            while tokens and ("=" in tokens[0] or tokens[0] in ("for", "do", "done;")):  # env vars, loops
                tokens = tokens[1:]
            if tokens[:1] == ["gradebench"]:
                out.append(tokens[1:])
    return out


def _opts(tokens: list[str]) -> dict[str, str]:
    return {t: tokens[i + 1] for i, t in enumerate(tokens[:-1]) if t.startswith("--")}


def test_readme_outputs_go_under_gradebench_out():
    commands = readme_commands()
    assert len(commands) > 20
    for tokens in commands:
        for t in tokens:
            assert not re.match(r"(runs|rewards)/|[\w-]+\.png$", t), (t, tokens)


def test_readme_commands_on_the_committed_leaderboard_name_it():
    committed = str(paths.COMMITTED_RESULTS_DIR)
    for tokens in readme_commands():
        o = _opts(tokens)
        if tokens[0] == "leaderboard" and o.get("--format") == "md":  # LEADERBOARD.md is that rendering
            assert o.get("--results-dir") == committed, tokens
        if tokens[0] == "sweep" and o.get("--runs-dir") == "gradebench-out/runs":  # "Reproduce" block
            assert o.get("--results-dir") == committed, tokens
        if tokens[0] == "export-reward" and "--best" in o:  # among the committed records' runs, or the demo's
            assert o.get("--results-dir") == committed or o.get("--benchmark") == "demo", tokens
    assert (REPO / ".gitignore").read_text().count("/gradebench-out/") == 1


@pytest.mark.parametrize(("scorer", "experiment"), [
    ("hashed-mlp", "esnli-human-hashed.yaml"),
    ("cross-encoder", "esnli-human-cross-encoder.yaml"),
])
def test_readme_train_commands_reproduce_the_tables(scorer, experiment):
    """The tables come from the experiment grids: a README `train` of that scorer uses their options."""
    exp = yaml.safe_load((REPO / "recipes" / "experiments" / experiment).read_text(encoding="utf-8"))
    trains = [t for t in readme_commands() if t[0] == "train" and _opts(t).get("--scorer") == scorer]
    assert trains, f"no README train command for {scorer}"
    config = next(s.get("config", {}) for s in exp["scorers"] if s["name"] == scorer)
    for tokens in trains:
        o = _opts(tokens)
        for key, value in exp["train"].items():
            assert float(o.get("--" + key.replace("_", "-"), "nan")) == float(value), (key, tokens)
        sets = [tokens[i + 1] for i, t in enumerate(tokens) if t == "--set"]
        assert sets == [f"{k}={v}" for k, v in config.items()], tokens
