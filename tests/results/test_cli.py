"""CLI: --json equals the API's to_dict(); conflicting flags name each other; one-line errors."""

from __future__ import annotations

import json

import pytest

from gradebench.experiments.leaderboard import leaderboard
from gradebench.experiments.leaderboard_html import leaderboard_html
from gradebench.experiments.query import run_query
from gradebench.experiments.render import text
from gradebench.experiments.store import read_record
from gradebench.experiments.sweep import sweep
from tests.conftest import run_cli, run_printed

VOLATILE = ("created_at", "timings", "environment")


def _stable(doc):
    """The record without what varies by run, nor its tables' digests (a record not written has no tables)."""
    out = {k: v for k, v in doc.items() if k not in VOLATILE}
    if "files" in out:
        out["files"] = {k: v for k, v in out["files"].items() if not k.endswith("_sha256")}
    return out


def test_eval_json_equals_api(demo_bench, tmp_path, capsys):
    from gradebench.experiments.evaluate import evaluate_scorer
    from gradebench.scorers import make_scorer

    res = tmp_path / "res"
    code, out, err = run_cli(capsys, "eval", "--benchmark", demo_bench, "--scorer", "length", "--set", "prefer=shorter",
                         "--seed", 3, "--resamples", 100, "--results-dir", res, "--json")
    assert code == 0, err
    printed = json.loads(out)
    written = read_record(res / "demo" / f"{printed['id']}.json")
    assert printed == written.to_dict()
    api = evaluate_scorer(demo_bench, make_scorer("length", {"prefer": "shorter"}, seed=3), seed=3,
                          n_resamples=100, write=False)
    assert _stable(printed) == _stable(api.to_dict())
    code, out, _ = run_cli(capsys, "eval", "--benchmark", demo_bench, "--scorer", "bm25", "--results-dir", res)
    assert code == 0 and "ndcg@5" in out and "bm25" in out


@pytest.mark.parametrize("args, needle", [
    (["--scorer", "bm25", "--run", "/r"], "--scorer and --run conflict"),
    ([], "give --scorer NAME or --run RUN_DIR"),
    (["--run", "/r", "--set", "a=1"], "--set and --run conflict"),
    (["--scorer", "bm2"], "unknown scorer 'bm2'; did you mean 'bm25'"),
    (["--scorer", "bm25", "--set", "k9=1"], "bad config for scorer 'bm25'"),
    (["--scorer", "bm25", "--set", "k11=1"], "unknown key 'k11'; did you mean 'k1'?"),  # issue 31
    (["--run", "/no/such/run"], "no such run folder"),
])
def test_eval_errors(demo_bench, tmp_path, capsys, args, needle):
    code, out, err = run_cli(capsys, "eval", "--benchmark", demo_bench, "--results-dir", tmp_path, *args)
    assert code == 2 and out == ""
    assert err.startswith("gradebench: error: ") and needle in err and err.count("\n") == 1


def test_eval_from_run(demo_bench, tmp_path, capsys):
    from gradebench.experiments.train import train

    result = train(demo_bench, "lambdamart", config={"n_estimators": 5, "min_child_samples": 5},
                   out=tmp_path / "run", options={"seed": 4})
    code, out, err = run_cli(capsys, "eval", "--benchmark", demo_bench, "--run", result.run_dir,
                         "--results-dir", tmp_path / "res", "--json", "--resamples", 50)
    assert code == 0, err
    printed = json.loads(out)
    assert printed["run"]["run_fingerprint"] == result.run_fingerprint and printed["system_seed"] == 4
    assert printed["scorer"]["name"] == "lambdamart" and printed["timings"]["train"] == result.timings
    code, out2, err = run_cli(capsys, "eval", "--run", result.run_dir, "--results-dir", tmp_path / "res", "--json",
                          "--resamples", 50)  # --benchmark defaults to the run's
    assert code == 0, err
    assert json.loads(out2)["id"] == printed["id"]
    code, out, err = run_cli(capsys, "plot", "--run", result.run_dir, "--out", tmp_path / "curves.png", "--json")
    assert code == 0, err
    assert json.loads(out) == {"out": str(tmp_path / "curves.png")}


@pytest.fixture()
def store(demo_bench, tmp_path, capsys):
    res = tmp_path / "res"
    for scorer in ("bm25", "random", "length"):
        assert run_cli(capsys, "eval", "--benchmark", demo_bench, "--scorer", scorer, "--split", "train",
                   "--resamples", 50, "--results-dir", res, "--json")[0] == 0
    return res


def test_leaderboard_json_equals_api(store, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run_cli(capsys, "leaderboard", "--split", "train", "--format", "json", "--results-dir", store)
    assert code == 0, err
    assert json.loads(out) == leaderboard(store, split="train").to_dict()
    code, out, _ = run_cli(capsys, "leaderboard", "--split", "train", "--results-dir", store, "--sort-by", "kendall",
                       "--format", "md")
    assert code == 0 and out == leaderboard(store, split="train", sort_by="kendall").to_markdown()
    code, out, _ = run_cli(capsys, "leaderboard", "--split", "train", "--results-dir", store, "--sort-by", "kendall")
    assert code == 0 and out == text(leaderboard(store, split="train", sort_by="kendall"), width=80)  # the default
    code, out, _ = run_cli(capsys, "leaderboard", "--split", "train", "--results-dir", store, "--wide")
    assert code == 0 and out == text(leaderboard(store, split="train"), wide=True)
    code, _, err = run_cli(capsys, "leaderboard", "--results-dir", store, "--wide", "--format", "md")
    assert code == 2 and "--wide conflicts with --format md" in err
    code, out, _ = run_cli(capsys, "leaderboard", "--split", "train", "--results-dir", store, "--format", "html")
    assert code == 0 and out == leaderboard_html(store, split="train")
    code, _, err = run_cli(capsys, "leaderboard", "--results-dir", store, "--format", "pdf")
    assert code == 2 and "unknown --format 'pdf'" in err


def test_query_json_equals_api(store, capsys):
    sql = 'select scorer, "ndcg@5", "ndcg@5_low" from results order by scorer'
    code, out, err = run_cli(capsys, "query", sql, "--format", "json", "--results-dir", store)
    assert code == 0, err
    assert json.loads(out) == run_query(sql, results_dir=store).to_dict()
    code, out, _ = run_cli(capsys, "query", sql, "--format", "csv", "--results-dir", store)
    assert code == 0 and out.splitlines()[0] == "scorer,ndcg@5,ndcg@5_low" and len(out.splitlines()) == 4
    code, out, err = run_cli(capsys, "query", "select * form results", "--results-dir", store)
    assert code == 2 and "SQL error" in err and err.count("\n") == 1


def test_plot_record(store, tmp_path, capsys):
    rid = run_query("select id from results where scorer = 'bm25'", results_dir=store).rows[0][0]
    code, out, err = run_cli(capsys, "plot", "--record", rid[:8], "--out", tmp_path / "p.png", "--results-dir", store)
    assert code == 0, err
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    code, _, err = run_cli(capsys, "plot", "--record", rid, "--run", "/r", "--out", tmp_path / "q.png")
    assert code == 2 and "--record and --run conflict" in err


def test_sweep_json_equals_api(demo_bench, tmp_path, capsys):
    exp = tmp_path / "e.yaml"
    exp.write_text(f"name: t\nbenchmarks: [{{path: {demo_bench}}}]\nscorers: [{{name: overlap}}]\n"
                   "seeds: [0, 1]\nn_resamples: 20\n")
    args = ["sweep", exp, "--results-dir", tmp_path / "res", "--runs-dir", tmp_path / "runs", "--json"]
    code, out, err = run_cli(capsys, *args)
    assert code == 0, err
    first = json.loads(out)
    assert (first["evaluated"], first["skipped"]) == (2, 0)
    api = sweep(exp, results_dir=tmp_path / "res", runs_dir=tmp_path / "runs").to_dict()
    code, out, _ = run_cli(capsys, *args)
    again = json.loads(out)
    assert (again["evaluated"], again["skipped"]) == (0, 2)
    assert {k: v for k, v in again.items() if k != "seconds"} == {k: v for k, v in api.items() if k != "seconds"}


def test_a_first_eval_lands_under_gradebench_out_and_the_readers_find_it(demo_bench, tmp_path, capsys, monkeypatch):
    """No --results-dir anywhere: eval writes gradebench-out/results, leaderboard and query read it,
    and nothing is written to a leaderboard/results beside it (the project's committed records)."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "eval", "--benchmark", demo_bench, "--scorer", "length", "--resamples", 20, "--json")
    assert code == 0, err
    rid = json.loads(out)["id"]
    assert (tmp_path / "gradebench-out" / "results" / "demo" / f"{rid}.json").is_file()
    assert not (tmp_path / "leaderboard").exists()
    code, out, err = run_cli(capsys, "leaderboard", "--format", "json")
    assert code == 0, err
    assert [r["system"] for b in json.loads(out)["boards"] for r in b["rows"]] == ["length"]
    code, out, err = run_cli(capsys, "query", "select id from results", "--format", "json")
    assert code == 0 and json.loads(out)["rows"] == [{"id": rid}], err


def test_leaderboard_probe_hint_is_a_command_that_works_as_printed(demo_bench, tmp_path, capsys, monkeypatch):
    """The validity line of a board without the query-blind probe prints the commands that add it;
    run as printed (issue 31: it said `gradebench eval --scorer query-blind`, which refuses an
    untrained probe), they do."""
    monkeypatch.setenv("COLUMNS", "80")
    res = tmp_path / "res"
    assert run_cli(capsys, "eval", "--benchmark", demo_bench, "--scorer", "bm25", "--results-dir", res)[0] == 0
    code, out, _ = run_cli(capsys, "leaderboard", "--results-dir", res)
    assert code == 0 and max(map(len, out.splitlines())) <= 80
    lines = out.splitlines()
    start = lines.index("Benchmark validity: no query-blind probe evaluated; add it with:") + 1
    block = lines[start:lines.index("", start)]  # the commands, `\\`-continued to fit 80 columns
    assert [line.split()[:2] for line in block if not line.startswith("    ")] == [
        ["gradebench", "train"], ["gradebench", "eval"]]
    done = run_printed("\n".join(block), cwd=tmp_path)  # pasted into a shell as printed
    assert done.returncode == 0, done.stderr
    board = leaderboard(res).boards[0]
    assert board.validity["evaluated"] and any(r.probe for r in board.rows)
    assert "commands" not in board.validity and "add it with" not in leaderboard(res).to_markdown()
