"""gradebench.metrics against peer libraries, to 1e-9, on seeded random inputs.

* pytrec_eval (trec_eval): ``ndcg_cut`` (linear gain), ``map``, ``recip_rank``, ``P`` with
  our ``ties="trec"``. Docnos are zero-padded item indices, so string order = index order
  and trec_eval's "docno descending" tie rule is our "higher index first". Every valid item
  is both retrieved and judged (rel 0 included), so trec_eval's denominators (relevant
  docs in the qrels) are ours; rel >= 1 is relevant (our default threshold 1).
  Queries with no relevant item score 0 in trec_eval: our default ``no_relevant="zero"``.
* ranx ``ndcg_burges`` / ``ndcg`` directly and through ir-measures (``nDCG(dcg='exp-log2')``,
  ranx provider): exp2 / linear gain. ranx breaks score ties with an unstable sort, so our
  inputs tie only items with equal labels (any order gives the same value) and we compare
  every tie policy.
* rax (JAX, float64): ``ndcg_metric``, ``mrr_metric``, ``ap_metric`` on inputs without ties.

Empty lists (mask all False) are NaN here; peers do not see them.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from gradebench.metrics import MAP, MRR, NDCG, Precision, evaluate

pytestmark = pytest.mark.reference

TOL = 1e-9
KS = [1, 3, 5, 10]


def _doc(i: int) -> str:
    return f"d{i:04d}"


def random_batch(seed: int, n: int = 150, size: int = 12, *, score_levels: int | None = 5):
    """Integer grades 0..3 (some queries all 0), ragged masks, scores with many ties."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, size=(n, size)).astype(np.float64)
    labels[rng.random(n) < 0.1] = 0.0
    if score_levels is None:
        scores = rng.normal(size=(n, size))
    else:
        scores = rng.integers(0, score_levels, size=(n, size)) / 4.0
    lengths = rng.integers(1, size + 1, size=n)
    mask = np.arange(size) < lengths[:, None]
    mask = np.take_along_axis(mask, rng.permuted(np.tile(np.arange(size), (n, 1)), axis=1), axis=1)
    return scores, labels, mask


def to_trec(scores, labels, mask):
    qrels, run = {}, {}
    for q in range(len(scores)):
        items = np.flatnonzero(mask[q])
        if len(items) == 0:
            continue
        qrels[f"q{q}"] = {_doc(i): int(labels[q, i]) for i in items}
        run[f"q{q}"] = {_doc(i): float(scores[q, i]) for i in items}
    return qrels, run


def assert_matches(ours: np.ndarray, theirs: dict[str, float], mask: np.ndarray, what: str):
    nonempty = mask.any(axis=1)
    assert np.isnan(ours[~nonempty]).all()
    got = np.array([theirs[f"q{q}"] for q in np.flatnonzero(nonempty)])
    np.testing.assert_allclose(ours[nonempty], got, rtol=0, atol=TOL, err_msg=what)


# --- pytrec_eval ------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pytrec_eval_with_trec_ties(seed):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    scores, labels, mask = random_batch(seed)
    qrels, run = to_trec(scores, labels, mask)
    cuts = ",".join(map(str, KS))
    measures = {f"ndcg_cut.{cuts}", "map", "recip_rank", f"P.{cuts}", "ndcg"}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)

    specs = {"ndcg": NDCG(gain="linear", ties="trec"), "map": MAP(ties="trec"),
             "recip_rank": MRR(ties="trec")}
    for k in KS:
        specs[f"ndcg_cut_{k}"] = NDCG(k=k, gain="linear", ties="trec")
        specs[f"P_{k}"] = Precision(k=k, ties="trec")
    ours = evaluate(scores, labels, list(specs.values()), mask)
    for measure, spec in specs.items():
        per_query = {q: v[measure] for q, v in theirs.items()}
        assert_matches(ours.per_query[spec.name], per_query, mask, measure)


def test_pytrec_eval_really_breaks_ties_by_docno_descending():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels = {"q": {_doc(0): 1, _doc(1): 0, _doc(2): 0}}
    run = {"q": {_doc(0): 1.0, _doc(1): 1.0, _doc(2): 1.0}}
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["q"]["recip_rank"]
    assert rr == pytest.approx(1 / 3)  # d0 is ranked last: higher docno first
    ours = evaluate([[1.0, 1.0, 1.0]], [[1, 0, 0]], [MRR(ties="trec")]).means["mrr[ties=trec]"]
    assert ours == pytest.approx(rr)


def test_pytrec_eval_map_cut_uses_all_relevant_as_denominator():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    scores, labels, mask = random_batch(7, n=60)
    qrels, run = to_trec(scores, labels, mask)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"map_cut.3,5"}).evaluate(run)
    ours = evaluate(scores, labels, [MAP(k=3, ties="trec"), MAP(k=5, ties="trec")], mask)
    for k in (3, 5):
        per_query = {q: v[f"map_cut_{k}"] for q, v in theirs.items()}
        assert_matches(ours.per_query[f"map@{k}[ties=trec]"], per_query, mask, f"map_cut_{k}")


# --- ranx and ir-measures -----------------------------------------------------------------


def label_consistent_ties(seed: int):
    """Scores that tie only items of equal label (tie order cannot change any metric)."""
    scores, labels, mask = random_batch(seed, score_levels=4)
    return scores + 0.01 * labels, labels, mask


@pytest.fixture(scope="module")
def ranx_module():
    ranx = pytest.importorskip("ranx")
    return ranx


@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("ties", ["average", "stable", "trec"])
def test_ranx_ndcg_burges_and_ndcg(ranx_module, seed, ties):
    scores, labels, mask = label_consistent_ties(seed)
    qrels, run = to_trec(scores, labels, mask)
    names = [f"ndcg_burges@{k}" for k in KS] + [f"ndcg@{k}" for k in KS] + ["ndcg_burges", "map", "mrr"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranx_qrels = ranx_module.Qrels(qrels)
        theirs = ranx_module.evaluate(ranx_qrels, ranx_module.Run(run), names, return_mean=False)
    q_ids = list(ranx_qrels.keys())  # ranx sorts query ids as strings
    specs = {f"ndcg_burges@{k}": NDCG(k=k, gain="exp2", ties=ties) for k in KS}
    specs |= {f"ndcg@{k}": NDCG(k=k, gain="linear", ties=ties) for k in KS}
    specs |= {"ndcg_burges": NDCG(ties=ties), "map": MAP(ties=ties), "mrr": MRR(ties=ties)}
    ours = evaluate(scores, labels, list(specs.values()), mask)
    for measure, spec in specs.items():
        per_query = dict(zip(q_ids, np.atleast_1d(theirs[measure])))
        assert_matches(ours.per_query[spec.name], per_query, mask, measure)


def test_ir_measures_ndcg_exp_log2_via_ranx(ranx_module):
    ir_measures = pytest.importorskip("ir_measures")
    import pandas as pd

    scores, labels, mask = label_consistent_ties(5)
    qrels, run = to_trec(scores, labels, mask)
    qrel_rows = [ir_measures.Qrel(q, d, r) for q, docs in qrels.items() for d, r in docs.items()]
    run_rows = [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    measures = {ir_measures.nDCG(dcg="exp-log2") @ k: NDCG(k=k) for k in KS}
    measures |= {ir_measures.nDCG @ k: NDCG(k=k, gain="linear") for k in KS}
    provider = ir_measures.providers.registry["ranx"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # ranx refuses pandas' str dtype (pandas >= 3) in Qrels.from_df: use object strings
        with pd.option_context("future.infer_string", False):
            results = list(provider.iter_calc(list(measures), qrel_rows, run_rows))
    ours = evaluate(scores, labels, list(measures.values()), mask)
    for measure, spec in measures.items():
        per_query = {m.query_id: m.value for m in results if m.measure == measure}
        assert_matches(ours.per_query[spec.name], per_query, mask, str(measure))


# --- rax ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rax_x64():
    rax = pytest.importorskip("rax")
    import jax

    jax.config.update("jax_enable_x64", True)
    return rax, jax.numpy


@pytest.mark.parametrize("seed", [8, 9])
@pytest.mark.parametrize("ties", ["average", "stable", "trec"])
def test_rax_metrics_without_ties(rax_x64, seed, ties):
    rax, jnp = rax_x64
    scores, labels, mask = random_batch(seed, score_levels=None)
    nonempty = mask.any(axis=1)
    s, y, m = jnp.asarray(scores), jnp.asarray(labels), jnp.asarray(mask)
    for k in [None, 1, 3, 5]:
        ours = evaluate(scores, labels, [NDCG(k=k, ties=ties), MRR(k=k, ties=ties),
                                         MAP(k=k, ties=ties)], mask)
        for fn, spec in [(rax.ndcg_metric, NDCG(k=k, ties=ties)), (rax.mrr_metric, MRR(k=k, ties=ties)),
                         (rax.ap_metric, MAP(k=k, ties=ties))]:
            theirs = np.asarray(fn(s, y, where=m, topn=k, reduce_fn=None))
            np.testing.assert_allclose(ours.per_query[spec.name][nonempty], theirs[nonempty],
                                       rtol=0, atol=TOL, err_msg=f"{spec.name} vs rax")


def test_rax_reference_lists(rax_x64):
    rax, jnp = rax_x64
    scores = [[0.5, 2.0, 1.0, -1.0, 0.3], [1.2, 0.1, 0.8, 2.5, -0.4], [0.3, 0.2, 0.1, 0.0, -0.1]]
    labels = [[0, 2, 1, 0, 3], [1, 0, 0, 2, 0], [0, 0, 0, 0, 0]]
    s, y = jnp.asarray(scores, dtype=jnp.float64), jnp.asarray(labels, dtype=jnp.float64)
    ours = evaluate(scores, labels, [NDCG(), NDCG(k=3), MRR(), MAP()])
    assert ours.means["ndcg"] == pytest.approx(float(rax.ndcg_metric(s, y)), abs=TOL)
    assert ours.means["ndcg@3"] == pytest.approx(float(rax.ndcg_metric(s, y, topn=3)), abs=TOL)
    assert ours.means["mrr"] == pytest.approx(float(rax.mrr_metric(s, y)), abs=TOL)
    assert ours.means["map"] == pytest.approx(float(rax.ap_metric(s, y)), abs=TOL)
