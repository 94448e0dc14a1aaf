"""Long steps show how far they are (issue 31 item 1): a scoring pass and the invariance check
report their items inside their step, and a build announces validation and the validity figures."""

from __future__ import annotations

import gradebench
from gradebench.benchmark import engine
from gradebench.experiments.build import build


def _calls(**kwargs):
    calls = []
    gradebench.evaluate_model(progress=lambda done, total, message: calls.append((done, total, message)),
                              write=False, n_resamples=20, **kwargs)
    return calls


def test_scoring_and_the_invariance_check_report_their_items(demo_benchmark, seq_classifier):
    calls = _calls(benchmark=demo_benchmark, model=seq_classifier, options={"batch_size": 4},
                   check_invariance=True)
    steps = [c for c in calls if float(c[0]).is_integer() and ":" not in c[2]]
    assert [m.split()[0] for _, _, m in steps][:2] == ["loading", "scoring"]
    assert {t for _, t, _ in calls} == {6}
    for what in ("scoring", "the invariance check"):
        inside = [c for c in calls if c[2].startswith(what) and ": " in c[2]]
        assert len(inside) > 2, (what, calls)  # one a batch
        done = [c[0] for c in inside]
        assert done == sorted(done) and all(int(done[0]) <= d <= int(done[0]) + 1 for d in done)  # within one step
        last = inside[-1][2].rsplit(": ", 1)[1]
        assert last.split("/")[0] == last.split("/")[1]  # the pass ends with every item done


def test_without_a_listener_nothing_is_reported(demo_benchmark, seq_classifier):
    record = gradebench.evaluate_model(demo_benchmark, seq_classifier, write=False, n_resamples=20)
    assert record.timings.load_s is not None and record.timings.load_s >= 0


def test_a_build_announces_validation_and_the_validity_figures(tmp_path, monkeypatch):
    shown = []
    real = engine.status

    def recording(enabled, text):
        shown.append((enabled, text))
        return real(False, text)

    monkeypatch.setattr(engine, "status", recording)
    build("demo", out=tmp_path / "a", progress=True)
    assert {t for e, t in shown if e} == {"validating the benchmark", "measuring the validity figures"}, shown
    shown.clear()
    build("demo", out=tmp_path / "b", progress=False)
    assert shown and not any(e for e, _ in shown)
