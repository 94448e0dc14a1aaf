"""Issue 16 (part A) for policy runs: killed at any step, the same command starts the run over and ends as
an uninterrupted run; a folder another process works on is refused in one line."""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

from gradebench.experiments.runs import LOCK_FILE, RunInUse, claim  # noqa: E402
from gradebench.rl.lipo import lipo  # noqa: E402
from gradebench.rl.runs import POLICY_DIR, POLICY_RUN, RUN_CONFIG, RUN_JSON  # noqa: E402
from tests.conftest import one_torch_thread  # noqa: E402
from tests.harness._kill import digests, killed_at, names  # noqa: E402


def _lipo(policy, bench, out, results):
    with one_torch_thread():
        return lipo(policy, bench, out=out, steps=2, batch_size=2, list_size=3, lr=1e-3, seed=1, results_dir=results)


@pytest.fixture(scope="module")
def straight(tiny_gpt2, demo_benchmark, tmp_path_factory):
    """An uninterrupted run: ``(folder, result)``."""
    root = tmp_path_factory.mktemp("straight")
    return root / "run", _lipo(tiny_gpt2, demo_benchmark, root / "run", root / "res")


def test_a_policy_run_killed_in_its_final_save_is_started_over_by_the_same_command(
        tiny_gpt2, demo_benchmark, straight, tmp_path, monkeypatch):
    out, res = tmp_path / "run", tmp_path / "res"
    killed_at(monkeypatch, "output-saved", [out, res], lambda: _lipo(tiny_gpt2, demo_benchmark, out, res))
    there = set(names(out))
    assert {LOCK_FILE, RUN_CONFIG, "history.jsonl"} <= there and RUN_JSON not in there
    assert any(n.startswith(".policy.incomplete-") for n in there)  # the policy, saved but not yet renamed
    again = _lipo(tiny_gpt2, demo_benchmark, out, res)
    assert not again.cached
    ref_dir, ref = straight
    assert digests(out / POLICY_DIR) == digests(ref_dir / POLICY_DIR)
    assert again.history == ref.history and again.record_id == ref.record_id
    top = sorted(n for n in names(out) if "/" not in n)
    assert top == sorted(["history.jsonl", POLICY_DIR, RUN_CONFIG, RUN_JSON])  # nothing of the killed attempt
    assert json.loads((out / RUN_JSON).read_text())["record_id"] == again.record_id


def test_a_policy_run_folder_in_use_is_refused(tiny_gpt2, demo_benchmark, tmp_path):
    out = tmp_path / "run"
    with claim(out, "another process's", POLICY_RUN):
        with pytest.raises(RunInUse, match=f"policy run folder is in use by pid {os.getpid()}"):
            _lipo(tiny_gpt2, demo_benchmark, out, tmp_path / "res")
        assert names(out) == [LOCK_FILE]
    assert not out.exists()


@pytest.mark.parametrize("edit, needle", [
    (lambda r: r["benchmark"].update(name="../../../escaped-policy"), "record_json.benchmark.name"),
    (lambda r: r.update(id="0" * 64), "record of another run"),
])
def test_a_finished_run_whose_record_was_edited_never_writes_outside_the_results_dir(
        tiny_gpt2, demo_benchmark, straight, tmp_path, edit, needle):
    """Issue 16.4 through records: a finished run's ``record_json.benchmark.name`` became the folder
    its record was (re)written to, so ``../../../escaped-policy`` escaped ``--results-dir``."""
    import shutil

    from gradebench.errors import RunError

    out = tmp_path / "run"
    shutil.copytree(straight[0], out)
    final = json.loads((out / RUN_JSON).read_text())
    edit(final["record_json"])
    (out / RUN_JSON).write_text(json.dumps(final))
    res = tmp_path / "deep" / "a" / "b" / "res"
    before = set(tmp_path.rglob("*"))
    with pytest.raises(RunError) as e:
        _lipo(tiny_gpt2, demo_benchmark, out, res)
    assert needle in f"{e.value.key} {e.value.message}" and e.value.path == str(out / RUN_JSON)
    assert set(tmp_path.rglob("*")) - before <= {res.parent.parent.parent, res.parent.parent, res.parent, res}
    assert not any(res.parent.parent.parent.rglob("*.json")) and not (tmp_path / "escaped-policy").exists()
    assert (out / RUN_JSON).is_file()  # a finished run is never removed
