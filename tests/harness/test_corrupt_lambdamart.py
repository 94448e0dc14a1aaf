"""A truncated or edited LambdaMART model is one line naming the file, never a dead process.

LightGBM's C++ parser aborts the process on a malformed model string (``terminate called``,
exit 134), segfaults reading past the buffer, or loads fewer trees than were trained without a
word. The model text is therefore checked in Python first: against the sha256 recorded at save
time, and for its structure (runs saved before digests existed have only that). The
reproductions run in a subprocess, so that the old behaviour fails the test instead of killing
pytest.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import textwrap

import pytest

from gradebench.errors import RunError
from gradebench.experiments.runs import load_run
from gradebench.experiments.train import train
from tests.cli.conftest import assert_one_line_error, run_module
from tests.conftest import REPO

pytest.importorskip("lightgbm")

CFG = {"min_child_samples": 5, "n_estimators": 20}
MODEL = "lambdamart.txt"


@pytest.fixture(scope="module")
def lm_run(demo_benchmark, tmp_path_factory):
    out = tmp_path_factory.mktemp("lm") / "run"
    train(demo_benchmark, "lambdamart", config=CFG, out=out)
    return out


@pytest.fixture(scope="module")
def many_trees(demo_lists, tmp_path_factory) -> str:
    """The text of a LambdaMART model with 20 trees (trained without validation, so no early stop)."""
    from gradebench.scorers import TrainOptions, make_scorer

    scorer = make_scorer("lambdamart", CFG, seed=1)
    scorer.fit(demo_lists["train"], None, TrainOptions())
    out = tmp_path_factory.mktemp("lm-model")
    scorer.save(out)
    return (out / MODEL).read_text()


def _copy(run, tmp_path, *, digest: bool = True):
    out = tmp_path / "run"
    shutil.copytree(run, out)
    if not digest:  # a run saved before digests were recorded
        (out / "model" / (MODEL + ".sha256")).unlink(missing_ok=True)
    return out


def _cuts(text: str) -> dict[str, int]:
    """Named truncation points of a model text."""
    first = text.index("\nTree=") + 1
    last = text.rindex("\nTree=") + 1
    end = text.index("end of trees")
    return {"header-only": first, "mid-tree": first + (last - first) // 2, "before-last-tree": last,
            "before-end-of-trees": end, "inside-end-of-trees": end + 5}


def _truncate(run, at: str) -> int:
    path = run / "model" / MODEL
    text = path.read_text()
    cut = _cuts(text)[at]
    path.write_text(text[:cut])
    return cut


@pytest.mark.parametrize("at, digest", [("mid-tree", True), ("mid-tree", False), ("header-only", False)])
def test_eval_of_a_truncated_model_is_one_line(lm_run, tmp_path, at, digest):
    """Issue 16.5: ``eval --run L`` exited 134 (LightGBM's Fatal in an OpenMP loop), or scored with 0 trees."""
    run = _copy(lm_run, tmp_path, digest=digest)
    _truncate(run, at)
    results = tmp_path / "results"
    done = run_module("eval", "--run", str(run), "--results-dir", str(results))
    assert done.returncode == 2, (done.returncode, done.stderr[-500:])
    assert_one_line_error(done.stderr, str(run / "model" / MODEL), "cannot load the LambdaMART model")
    assert ("sha256" in done.stderr) == digest  # the digest catches it first; else the structure does
    assert not results.exists() or not any(results.rglob("*.json"))


def test_reward_load_of_a_truncated_export_raises_in_the_host(lm_run, tmp_path):
    """Issue 16.5: ``gradebench.reward.load`` of such an export took the host interpreter down with it."""
    from gradebench.reward import export_reward

    reward = tmp_path / "reward"
    export_reward(lm_run, out=reward, results_dir=tmp_path / "no-results")
    model = reward / "scorer" / MODEL
    model.write_text(model.read_text()[: _cuts(model.read_text())["mid-tree"]])
    (reward / "scorer" / (MODEL + ".sha256")).unlink(missing_ok=True)  # the structural check alone must hold too
    assert_reward_load_raises_in_a_live_host(reward, model)


def assert_reward_load_raises_in_a_live_host(reward, model) -> str:
    """``gradebench.reward.load(reward)`` in a fresh interpreter raises a RunError naming ``model``,
    and the interpreter lives on; returns what it printed."""
    host = textwrap.dedent(f"""
        import gradebench.reward
        from gradebench.errors import GradebenchError
        try:
            gradebench.reward.load({str(reward)!r})
        except GradebenchError as e:
            print("raised", type(e).__name__, e)
        print("host alive")
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", host], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-500:])
    assert "raised RunError" in done.stdout and str(model) in done.stdout and "host alive" in done.stdout
    return done.stdout


@pytest.mark.parametrize("at", ["header-only", "mid-tree", "before-end-of-trees", "inside-end-of-trees"])
def test_an_old_run_without_a_digest_is_checked_for_structure(lm_run, tmp_path, at):
    run = _copy(lm_run, tmp_path, digest=False)
    _truncate(run, at)
    with pytest.raises(RunError, match="cannot load the LambdaMART model") as e:
        load_run(run)
    assert e.value.path == str(run / "model" / MODEL) and "truncated" in e.value.message


def test_an_old_run_without_a_digest_still_loads(lm_run, demo_lists, tmp_path):
    import numpy as np

    run = _copy(lm_run, tmp_path, digest=False)
    scorer, _ = load_run(run)
    genuine, _ = load_run(lm_run)
    test = demo_lists["test"]
    np.testing.assert_array_equal(scorer.score(test), genuine.score(test))


def test_the_digest_catches_an_edit_the_structure_allows(lm_run, tmp_path):
    run = _copy(lm_run, tmp_path)
    path = run / "model" / MODEL
    text = path.read_text()
    start = text.index("leaf_value=") + len("leaf_value=")
    digit = next(i for i in range(start, len(text)) if text[i] in "123456789")
    edited = text[:digit] + ("1" if text[digit] != "1" else "2") + text[digit + 1:]
    path.write_text(edited)
    with pytest.raises(RunError, match="sha256") as e:
        load_run(run)
    assert e.value.path == str(path) and "recorded at save time" in e.value.message
    (run / "model" / (MODEL + ".sha256")).unlink()
    load_run(run)  # without a digest, a well-formed edit loads: the digest is what catches it


def test_a_damaged_digest_or_feature_list_names_its_file(lm_run, tmp_path):
    run = _copy(lm_run, tmp_path)
    digest = run / "model" / (MODEL + ".sha256")
    digest.write_text("not a digest\n")
    with pytest.raises(RunError, match="recorded sha256 is unreadable") as e:
        load_run(run)
    assert e.value.path == str(digest)
    shutil.copy(lm_run / "model" / (MODEL + ".sha256"), digest)
    (run / "model" / "features.json").write_text("[\"trunc")
    with pytest.raises(RunError, match="feature list") as e:
        load_run(run)
    assert e.value.path == str(run / "model" / "features.json")


def test_save_records_the_digest_of_the_model(lm_run):
    import hashlib

    model = lm_run / "model" / MODEL
    line = (lm_run / "model" / (MODEL + ".sha256")).read_text()
    assert line == f"{hashlib.sha256(model.read_bytes()).hexdigest()}  {MODEL}\n"  # sha256sum -c format


# -- the structural check on its own -----------------------------------------------------------------
def test_every_truncation_before_the_end_of_the_trees_is_refused(many_trees):
    from gradebench.scorers._lgbm_text import ModelTextError, check_model_text

    text = many_trees
    assert check_model_text(text) == 20
    end = text.index("end of trees\n") + len("end of trees\n")
    for cut in sorted({*range(0, end, 37), *_cuts(text).values(), end - 1}):
        with pytest.raises(ModelTextError):
            check_model_text(text[:cut])
    check_model_text(text[:end])  # what follows the trees (importances, parameters) is optional


def _edit_tree0(text: str, key: str, edit) -> str:  # noqa: ANN001
    """``text`` with tree 0's ``key=`` values passed through ``edit`` and ``tree_sizes`` kept true, so
    only the edited values are wrong."""
    start = text.index(f"\n{key}=", text.index("\nTree=0\n")) + 1
    end = text.index("\n", start)
    values = text[start + len(key) + 1: end].split(" ")
    line = f"{key}=" + " ".join(edit(values))
    sizes = text[text.index("tree_sizes=") + len("tree_sizes="):].split("\n", 1)[0].split(" ")
    sizes[0] = str(int(sizes[0]) + len(line) - (end - start))
    text = text[:start] + line + text[end:]
    old = text[text.index("tree_sizes="):].split("\n", 1)[0]
    return text.replace(old, "tree_sizes=" + " ".join(sizes), 1)


@pytest.mark.parametrize("edit, needle", [
    (lambda t: t.replace("tree_sizes=", "tree_sizes=1", 1), "tree 0"),
    (lambda t: _edit_tree0(t, "left_child", lambda v: ["0", *v[1:]]), "child index 0"),
    (lambda t: _edit_tree0(t, "left_child", lambda v: [v[1], v[1], *v[2:]]), "reached twice"),
    (lambda t: _edit_tree0(t, "right_child", lambda v: [*v[:-1], "-999"]), "leaf index 998"),
    (lambda t: _edit_tree0(t, "split_feature", lambda v: ["14", *v[1:]]), "split_feature is outside"),
    (lambda t: _edit_tree0(t, "threshold", lambda v: v[1:]), "threshold has"),
    (lambda t: _edit_tree0(t, "leaf_value", lambda v: ["1_0", *v[1:]]), "not a number"),
    (lambda t: t.replace("decision_type=2", "decision_type=1", 1), "not a numerical split"),
    (lambda t: t.replace("num_cat=0", "num_cat=1", 1), "categorical"),
    (lambda t: t.replace("\nobjective=lambdarank", "\nobjective=regression", 1), "not lambdarank"),
    (lambda t: t.replace("[boosting: gbdt]", "[boosting gbdt]", 1), r"is not '\[key: value\]'"),
    (lambda t: t.replace("max_feature_idx=13", "max_feature_idx=12", 1), "feature_names"),
    (lambda t: "\r\n".join(t.split("\n")), "carriage return"),
])
def test_edits_lightgbm_would_crash_on_are_refused(many_trees, edit, needle):
    from gradebench.scorers._lgbm_text import ModelTextError, check_model_text

    text = many_trees
    edited = edit(text)
    assert edited != text
    with pytest.raises(ModelTextError, match=needle):
        check_model_text(edited)


@pytest.mark.slow
def test_random_edits_the_check_accepts_load_without_crashing(many_trees, tmp_path):
    """Seeded random byte edits: whatever the check lets through, LightGBM loads and predicts with
    (or refuses with a Python exception) in a process that survives."""
    from gradebench.scorers._lgbm_text import ModelTextError, check_model_text

    text = many_trees
    rng = random.Random(16)
    accepted = []
    for _ in range(1500):
        chars = list(text)
        for _ in range(rng.choice([1, 1, 2, 3])):
            i = rng.randrange(len(chars))
            op = rng.random()
            if op < 0.6:
                chars[i] = rng.choice("0123456789-=.: []\nTre")
            elif op < 0.8:
                del chars[i]
            else:
                chars.insert(i, rng.choice("0123456789-=.: []\nTre"))
        candidate = "".join(chars)
        try:
            check_model_text(candidate)
        except ModelTextError:
            continue
        accepted.append(candidate)
    assert len(accepted) > 50  # the edits that keep the structure (digits of values, parameter text)
    (tmp_path / "accepted.json").write_text(json.dumps(accepted))
    probe = textwrap.dedent(f"""
        import json, numpy as np, lightgbm as lgb
        x = np.linspace(-3, 3, 14 * 20).reshape(20, 14)
        for i, s in enumerate(json.load(open({str(tmp_path / "accepted.json")!r}))):
            try:
                lgb.Booster(model_str=s, params={{"verbosity": -1}}).predict(x, num_threads=1)
            except Exception:
                pass
        print("survived")
    """)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "survived" in done.stdout, (done.returncode, done.stderr[-500:])
