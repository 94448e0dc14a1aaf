"""The README's examples, run as printed (issue 31).

Every command line of the README's shell blocks and every Python block is an *example*. Each one is
either run as printed by a test here, the test named for it in :data:`RUN_BY`, or sits in a block
with a ``> **Needs** ...`` line right above it (what it needs that a fresh clone does not have: the
real data, the network, a GPU, hours). :func:`test_every_readme_example_is_run_or_marked` fails on
an example that is neither, and on a registered one the README no longer has.

Commands run from a folder laid out as a checkout's root: ``leaderboard/`` and ``recipes/`` are
links to this checkout's, ``../shared`` a link to the one beside it where it exists, and
``gradebench`` runs this checkout (:func:`tests.conftest.run_printed`). Nothing is written into
the checkout.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO, printed_command, run_cli, run_printed

README = REPO / "README.md"
#: the demo benchmark's folder name, as the README prints it (a fingerprint is the same on any machine)
DEMO = "gradebench-out/demo/f9d6d093ff87"
SHELL, PYTHON = {"bash", "sh", "shell", "console"}, {"python", "py"}
#: fenced blocks that show a file, not something to run
NOT_EXAMPLES = {"yaml"}
NEEDS = re.compile(r"^> \*\*Needs\*\* (?P<reason>\S.*)$")

#: each README example that runs on a fresh clone -> the test that runs it as printed. Shell commands
#: are keyed by their text on one line, without the trailing comment; Python blocks by ``python:`` and
#: their first line that is not an import.
RUN_BY = {
    "gradebench list": "test_using_it",
    "gradebench build demo": "test_using_it",
    f"gradebench info {DEMO} --json": "test_using_it",
    'python: result = gb.build("demo")': "test_using_it",
    "python: class MySection(StrictModel):": "test_the_builder_example_registers_a_builder",
    "gradebench scorers": "test_the_harness_and_rewards_on_the_demo",
    f"gradebench train --benchmark {DEMO} --scorer hashed-mlp --loss listnet --epochs 6 --patience 2 --seed 42 "
    "--out gradebench-out/runs/hm-listnet": "test_the_harness_and_rewards_on_the_demo",
    "gradebench eval --run gradebench-out/runs/hm-listnet --seed 42 --json": "test_the_harness_and_rewards_on_the_demo",
    f"gradebench eval --benchmark {DEMO} --scorer bm25": "test_the_harness_and_rewards_on_the_demo",
    "gradebench leaderboard": "test_the_harness_and_rewards_on_the_demo",
    "gradebench plot --run gradebench-out/runs/hm-listnet --out gradebench-out/plots/curves.png":
        "test_the_harness_and_rewards_on_the_demo",
    f'python: run = gb.train("{DEMO}", "hashed-mlp", loss="listnet", out="gradebench-out/runs/x")':
        "test_the_harness_and_rewards_on_the_demo",
    "gradebench export-reward gradebench-out/runs/hm-listnet --out gradebench-out/rewards/hm-listnet":
        "test_the_harness_and_rewards_on_the_demo",
    "gradebench export-reward --best ndcg@5 --benchmark demo --out gradebench-out/rewards/best":
        "test_the_harness_and_rewards_on_the_demo",
    f"gradebench reward-report gradebench-out/rewards/best --benchmark {DEMO} --json":
        "test_the_harness_and_rewards_on_the_demo",
    'python: fn = reward.load("gradebench-out/rewards/best", normalize=True)':
        "test_the_harness_and_rewards_on_the_demo",
    f'python: lists = gradebench.load("{DEMO}")': "test_the_harness_and_rewards_on_the_demo",
    'gradebench query "SELECT benchmark, split, scorer, loss, \\"ndcg@5\\" FROM results ORDER BY 1, 2, 5 DESC"':
        "test_the_query_example_runs_as_printed_and_keeps_benchmarks_apart",
    "gradebench leaderboard --results-dir leaderboard/results --format md": "test_the_committed_records",
    "gradebench leaderboard --results-dir leaderboard/results --format html --out report.html":
        "test_the_committed_records",
    "gradebench report --results-dir leaderboard/results --out REPRODUCTION.md": "test_the_committed_records",
}


@dataclass(frozen=True)
class Example:
    line: int  # README line of its first line
    kind: str  # "shell" or "python"
    text: str  # as printed: a command with its continuations, or a whole Python block
    needs: str | None  # the block's Needs line, None when it is to be run

    @property
    def key(self) -> str:
        if self.kind == "python":
            first = next(s for s in self.text.splitlines()
                         if s.strip() and not s.startswith(("import ", "from ")))
            return "python: " + _without_comment(first)
        return _without_comment(" ".join(self.text.replace("\\\n", " ").split()))


def _without_comment(line: str) -> str:
    """``line`` without a trailing ``# comment`` (a ``#`` inside quotes is kept)."""
    for m in re.finditer(r"\s#(?:\s|$)", line):
        before = line[:m.start()]
        if (before.count('"') - before.count('\\"')) % 2 == 0 and before.count("'") % 2 == 0:
            return before.rstrip()
    return line.rstrip()


def readme_examples(text: str) -> list[Example]:
    """The examples of a README's fenced blocks: each shell command (``\\`` continuations joined, a
    console block's ``$ `` lines only) and each Python block, with the block's Needs reason."""
    lines, examples, i = text.splitlines(), [], 0
    while i < len(lines):
        fence = re.match(r"^```(\S*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        lang, start = fence.group(1).lower(), i + 1
        end = next(j for j in range(start, len(lines)) if lines[j].startswith("```"))
        above = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        needs = m.group("reason") if (m := NEEDS.match(above)) else None
        body = lines[start:end]
        if lang in PYTHON:
            examples.append(Example(start + 1, "python", "\n".join(body) + "\n", needs))
        elif lang in SHELL or lang == "":
            j = 0
            while j < len(body):
                first, command = j, body[j]
                while command.endswith("\\") and j + 1 < len(body):
                    j += 1
                    command += "\n" + body[j]
                j += 1
                if lang == "console":
                    if not command.startswith("$ "):
                        continue
                    command = command[2:]
                if command.strip() and not command.lstrip().startswith("#"):
                    examples.append(Example(start + first + 1, "shell", command, needs))
        elif lang not in NOT_EXAMPLES:
            raise AssertionError(f"README.md:{i + 1}: a ```{lang} block: run it, or say in NOT_EXAMPLES why not")
        i = end + 1
    return examples


def examples_for(test: str) -> list[Example]:
    """The README examples :data:`RUN_BY` gives to ``test``, in README order (the same command in a
    marked block is not one of them)."""
    found = [e for e in readme_examples(README.read_text(encoding="utf-8"))
             if e.needs is None and RUN_BY.get(e.key) == test]
    assert found, f"RUN_BY gives {test} no example the README has"
    return found


def run_example(example: Example, cwd: Path) -> subprocess.CompletedProcess:
    """Run ``example`` as printed in ``cwd`` and check it exits 0."""
    if example.kind == "shell":
        done = run_printed(example.text, cwd=cwd)
    else:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        done = subprocess.run([sys.executable, "-c", example.text], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=600)
    assert done.returncode == 0, f"README.md:{example.line}: {example.key}\n{done.stdout}\n{done.stderr}"
    return done


def _checkout(root: Path, demo: Path | None = None) -> Path:
    """A folder laid out as a checkout's root (see the module's docstring), with the demo benchmark
    ``demo`` (a session build) copied to :data:`DEMO` when given."""
    cwd = root / "checkout"
    cwd.mkdir()
    for name in ("leaderboard", "recipes"):
        (cwd / name).symlink_to(REPO / name, target_is_directory=True)
    if (REPO.parent / "shared").is_dir():
        (root / "shared").symlink_to(REPO.parent / "shared", target_is_directory=True)
    if demo is not None:
        assert demo.name == Path(DEMO).name, f"the demo's fingerprint is {demo.name}: update DEMO and the README"
        shutil.copytree(demo, cwd / DEMO)
    return cwd


def test_every_readme_example_is_run_or_marked():
    import inspect

    examples = readme_examples(README.read_text(encoding="utf-8"))
    run = [e for e in examples if e.needs is None]
    neither = [f"README.md:{e.line}: {e.key}" for e in run if e.key not in RUN_BY]
    assert neither == [], "run these in a test (and add them to RUN_BY) or put a Needs line above their block"
    keys = [e.key for e in run]
    assert sorted(k for k in set(keys) if keys.count(k) > 1) == []
    marked = {e.key for e in examples if e.needs is not None}
    gone = [k for k in RUN_BY if k not in keys]
    assert gone == [], f"RUN_BY names examples the README lacks, or has only marked: {sorted(marked & set(gone))}"
    tests = {name: fn for name, fn in globals().items() if name.startswith("test_") and callable(fn)}
    for test in set(RUN_BY.values()):
        assert test in tests and "examples_for(" in inspect.getsource(tests[test]), f"{test} does not run its examples"


def test_the_readme_parser_on_each_kind_of_block():
    text = "\n".join([
        "```bash", "gradebench a --x 1 \\", "    --y 2   # comment", "# a comment line", "", "B=1", "```",
        "> **Needs** a GPU", "", "```sh", "gradebench gpu", "```",
        "```console", "$ gradebench c \"#1 of\" # shown", "output line", "```",
        "```yaml", "key: value", "```",
        "```python", "import gradebench as gb", "x = gb.f()  # the API", "x.y", "```",
    ])
    got = [(e.line, e.kind, e.key, e.needs) for e in readme_examples(text)]
    assert got == [(2, "shell", "gradebench a --x 1 --y 2", None), (6, "shell", "B=1", None),
                   (11, "shell", "gradebench gpu", "a GPU"), (14, "shell", 'gradebench c "#1 of"', None),
                   (21, "python", "python: x = gb.f()", None)]
    assert readme_examples(text)[0].text == "gradebench a --x 1 \\\n    --y 2   # comment"
    with pytest.raises(AssertionError, match="a ```toml block"):
        readme_examples("```toml\na = 1\n```\n")


def test_using_it(demo_benchmark, tmp_path):
    """``list``, ``build demo`` (here the cached build: the session's demo is copied in first), ``info``
    of the printed fingerprint, and ``gb.build("demo")``."""
    cwd = _checkout(tmp_path, demo_benchmark)
    out = {e.key: run_example(e, cwd).stdout for e in examples_for("test_using_it")}
    assert "demo" in out["gradebench list"] and "esnli" in out["gradebench list"]
    assert DEMO in " ".join(out["gradebench build demo"].split())
    info = json.loads(out[f"gradebench info {DEMO} --json"])
    assert info["fingerprint"].startswith(Path(DEMO).name)


def test_the_builder_example_registers_a_builder(tmp_path):
    (example,) = examples_for("test_the_builder_example_registers_a_builder")
    probe = example.text + "from gradebench.datasets import get_builder\nprint(get_builder('my-data').name)\n"
    assert run_example(Example(example.line, "python", probe, None), tmp_path).stdout == "my-data\n"


@pytest.mark.slow
def test_the_harness_and_rewards_on_the_demo(demo_benchmark, tmp_path):
    """Train, evaluate, leaderboard, plot, the API; then export the run as a reward, pick the best,
    report on it and load it: one folder, in README order."""
    cwd = _checkout(tmp_path, demo_benchmark)
    for example in examples_for("test_the_harness_and_rewards_on_the_demo"):
        run_example(example, cwd)
    assert (cwd / "gradebench-out" / "plots" / "curves.png").stat().st_size > 0
    assert (cwd / "gradebench-out" / "rewards" / "best" / "gradebench-reward.json").is_file()
    assert (cwd / "gradebench-out" / "runs" / "x").is_dir()
    assert not (cwd / "leaderboard" / "results" / "demo").exists()


@pytest.mark.slow
def test_the_committed_records(tmp_path):
    """The commands over ``leaderboard/results``; they only read it. The three run at once."""
    cwd = _checkout(tmp_path)
    examples = examples_for("test_the_committed_records")
    running = []
    for example in examples:
        argv, env = printed_command(example.text, cwd)
        running.append(subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True))
    out = {}
    for example, proc in zip(examples, running):
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, f"README.md:{example.line}: {example.key}\n{stderr}"
        out[example.key] = stdout
    markdown = out["gradebench leaderboard --results-dir leaderboard/results --format md"]
    assert markdown == (REPO / "leaderboard" / "LEADERBOARD.md").read_text(encoding="utf-8")
    assert (cwd / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert (cwd / "REPRODUCTION.md").read_text(encoding="utf-8").startswith("#")


def test_the_query_example_runs_as_printed_and_keeps_benchmarks_apart(demo_benchmark, tmp_path, capsys):
    """`gradebench query` over the default results folder: rows of different benchmarks (and splits)
    do not mix, each row names its benchmark."""
    (example,) = examples_for("test_the_query_example_runs_as_printed_and_keeps_benchmarks_apart")
    results = tmp_path / "gradebench-out" / "results"  # the default --results-dir, from tmp_path
    for split in ("test", "validation"):
        assert run_cli(capsys, "eval", "--benchmark", demo_benchmark, "--scorer", "bm25", "--split", split,
                       "--results-dir", results)[0] == 0
    done = run_example(example, tmp_path)
    header, _, *rows, count = [row.split() for row in done.stdout.splitlines() if row.strip()]
    assert header == ["benchmark", "split", "scorer", "loss", "ndcg@5"] and count == ["(2", "rows)"]
    assert [r[:2] for r in rows] == [["demo", "test"], ["demo", "validation"]]
