"""gradebench.metrics against peer libraries, per query, to 1e-9.

* pytrec_eval (trec_eval): ``ndcg``, ``ndcg_cut``, ``map``, ``recip_rank``, ``P``, ``recall``
  with linear gain and the ``"trec"`` tie rule (score descending, then docno descending;
  docnos are zero-padded item indices so that string order = index order), on inputs with
  many ties, all-irrelevant queries and ragged lists (masked items are left out of both
  the qrels and the run).
* ir-measures ``nDCG(gains={y: 2^y - 1})`` (trec_eval with a gain map) = ``ndcg_burges``
  with exp2 gain, same inputs and tie rule.
* ranx ``ndcg_burges``, ``ndcg``, ``map``, ``mrr``, ``precision``, ``recall``: ranx breaks
  ties by an unstable sort, so its inputs tie only items of equal label (every tie order
  then gives the same value and all three tie policies must agree).
* rax ``ndcg_metric``, ``mrr_metric``, ``ap_metric`` (float64) on tie-free inputs, masked
  with ``where``.
* scipy ``kendalltau`` (tau-b) and ``spearmanr`` per query, including ties and NaN for
  constant lists.

Peer conventions that these tests pin: MAP divides by the number of relevant documents in
the qrels (not min(R, k)); MAP/MRR/P/R count ``rel >= 1``; P@k divides by k even when the
list is shorter; a query with no relevant document scores 0 everywhere.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from gradebench.metrics import MAP, MRR, NDCG, Precision, Recall, evaluate

pytestmark = pytest.mark.reference

ATOL = 1e-9
CUTOFFS = (1, 3, 5, 10)


# ----------------------------------------------------------------------------- inputs


def random_lists(
    seed: int,
    n: int = 300,
    size: int = 9,
    *,
    ties: str = "many",
    max_label: int = 3,
    p_irrelevant: float = 0.15,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seeded ``(scores, labels, mask)`` with NaN at masked positions.

    ties: ``"many"`` (scores on a grid of 5 values), ``"same_label"`` (ties only between
    items of equal label) or ``"none"`` (continuous scores).
    """
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, max_label + 1, (n, size)).astype(np.float64)
    labels[rng.random(n) < p_irrelevant] = 0.0  # all-irrelevant queries
    if ties == "many":
        scores = rng.integers(0, 5, (n, size)) / 4.0
    elif ties == "same_label":
        base = rng.standard_normal((n, max_label + 1))  # one shared score per label level
        shared = np.take_along_axis(base, labels.astype(int), axis=1)
        scores = np.where(rng.random((n, size)) < 0.4, shared, rng.standard_normal((n, size)))
    else:
        scores = rng.standard_normal((n, size))
    mask = rng.random((n, size)) < 0.8
    mask[np.arange(n), rng.integers(0, size, n)] = True  # at least one valid item
    mask[: n // 4] = True  # some full lists
    scores[~mask] = np.nan
    labels[~mask] = np.nan
    return scores, labels, mask


def to_trec(scores, labels, mask):
    """qrels/run dicts; docno ``d%03d`` of the item index, masked items left out."""
    qrels, run = {}, {}
    for q in range(scores.shape[0]):
        items = np.flatnonzero(mask[q])
        qid = f"q{q:05d}"
        qrels[qid] = {f"d{i:03d}": int(labels[q, i]) for i in items}
        run[qid] = {f"d{i:03d}": float(scores[q, i]) for i in items}
    return qrels, run


def per_query(result: dict[str, dict[str, float]], measure: str, n: int) -> np.ndarray:
    return np.array([result[f"q{q:05d}"][measure] for q in range(n)])


def ours(scores, labels, mask, spec) -> np.ndarray:
    return evaluate(scores, labels, [spec], mask=mask).per_query[spec.name]


def assert_close(actual, expected, what):
    actual, expected = np.asarray(actual, float), np.asarray(expected, float)
    bad = ~np.isclose(actual, expected, rtol=0.0, atol=ATOL, equal_nan=True)
    if bad.any():
        q = np.flatnonzero(bad)[:5]
        raise AssertionError(
            f"{what}: {bad.sum()} queries differ, e.g. {q.tolist()}: "
            f"ours {actual[q].tolist()} vs peer {expected[q].tolist()}"
        )


# ----------------------------------------------------------------------- pytrec_eval


@pytest.mark.reference
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pytrec_eval_trec_ties_linear_gain(seed):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    scores, labels, mask = random_lists(seed, ties="many")
    n = scores.shape[0]
    qrels, run = to_trec(scores, labels, mask)
    cut = ",".join(map(str, CUTOFFS))
    measures = {"ndcg", f"ndcg_cut.{cut}", "map", "recip_rank", f"P.{cut}", f"recall.{cut}"}
    res = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    assert len(res) == n

    checks = [("ndcg", NDCG(gain="linear", ties="trec"))]
    for k in CUTOFFS:
        checks += [
            (f"ndcg_cut_{k}", NDCG(k=k, gain="linear", ties="trec")),
            (f"P_{k}", Precision(k=k, ties="trec")),
            (f"recall_{k}", Recall(k=k, ties="trec")),
        ]
    checks += [("map", MAP(ties="trec")), ("recip_rank", MRR(ties="trec"))]
    result = evaluate(scores, labels, [spec for _, spec in checks], mask=mask)
    for measure, spec in checks:
        expected = per_query(res, measure, n)
        assert_close(result.per_query[spec.name], expected, f"{spec.name} vs trec {measure}")
        assert result.means[spec.name] == pytest.approx(expected.mean(), abs=ATOL)
        assert result.n_excluded[spec.name] == 0


@pytest.mark.reference
def test_pytrec_eval_tie_direction_is_docno_descending():
    """trec_eval ranks tied documents by docno descending: d002 before d001 before d000."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    scores = np.array([[1.0, 1.0, 1.0]])
    labels = np.array([[1.0, 0.0, 0.0]])  # the relevant item has the lowest docno
    qrels, run = to_trec(scores, labels, np.ones_like(scores, dtype=bool))
    res = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
    assert res["q00000"]["recip_rank"] == pytest.approx(1 / 3)
    assert ours(scores, labels, None, MRR(ties="trec")) == pytest.approx([1 / 3])
    assert ours(scores, labels, None, MRR(ties="stable")) == pytest.approx([1.0])
    assert ours(scores, labels, None, MRR(ties="average")) == pytest.approx([(1 + 1 / 2 + 1 / 3) / 3])


@pytest.mark.reference
def test_pytrec_eval_references_md_values():
    """REFERENCES.md: first two rax lists, linear gain."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    scores = np.array([[0.5, 2.0, 1.0, -1.0, 0.3], [1.2, 0.1, 0.8, 2.5, -0.4]])
    labels = np.array([[0, 2, 1, 0, 3], [1, 0, 0, 2, 0]], dtype=float)
    qrels, run = to_trec(scores, labels, np.ones_like(scores, dtype=bool))
    res = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.5", "map", "recip_rank"}).evaluate(run)
    specs = [NDCG(k=5, gain="linear", ties="trec"), MAP(ties="trec"), MRR(ties="trec")]
    r = evaluate(scores, labels, specs)
    for measure, spec, pinned in [
        ("ndcg_cut_5", specs[0], [0.823829, 1.0]),
        ("map", specs[1], [0.916667, 1.0]),
        ("recip_rank", specs[2], [1.0, 1.0]),
    ]:
        assert_close(r.per_query[spec.name], per_query(res, measure, 2), measure)
        assert r.per_query[spec.name] == pytest.approx(pinned, abs=5e-7)


# ----------------------------------------------------------------------- ir-measures


@pytest.mark.reference
@pytest.mark.parametrize("seed", [3, 4])
def test_ir_measures_ndcg_exp2_gain(seed):
    ir_measures = pytest.importorskip("ir_measures")
    scores, labels, mask = random_lists(seed, n=200, ties="many")
    n = scores.shape[0]
    qrels, run = to_trec(scores, labels, mask)
    gains = {g: 2**g - 1 for g in range(4)}
    for k in (*CUTOFFS, None):
        measure = ir_measures.nDCG(gains=gains) if k is None else ir_measures.nDCG(gains=gains) @ k
        # one measure per call: ir-measures 0.4 mixes up gain maps across measures in a call
        got = {m.query_id: m.value for m in ir_measures.pytrec_eval.iter_calc([measure], qrels, run)}
        expected = np.array([got[f"q{q:05d}"] for q in range(n)])
        assert_close(ours(scores, labels, mask, NDCG(k=k, gain="exp2", ties="trec")), expected,
                     f"ndcg@{k} exp2 vs ir-measures {measure}")


# ------------------------------------------------------------------------------ ranx


@pytest.mark.reference
def test_ranx_same_label_ties():
    ranx = pytest.importorskip("ranx")
    scores, labels, mask = random_lists(5, n=150, ties="same_label")
    n = scores.shape[0]
    qrels, run = to_trec(scores, labels, mask)
    names = ["ndcg_burges", "ndcg", "map", "mrr"]
    for k in (1, 3, 5):
        names += [f"ndcg_burges@{k}", f"ndcg@{k}", f"precision@{k}", f"recall@{k}"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba type-safety chatter
        got = ranx.evaluate(
            ranx.Qrels.from_dict(qrels), ranx.Run.from_dict(run), names,
            return_mean=False, make_comparable=True,
        )
    # ranx returns queries in sorted-id order; our ids are zero-padded, so that is 0..n-1
    for ties in ("average", "stable", "trec"):
        for name in names:
            family, _, k_text = name.partition("@")
            k = int(k_text) if k_text else None
            spec = {
                "ndcg_burges": lambda: NDCG(k=k, gain="exp2", ties=ties),
                "ndcg": lambda: NDCG(k=k, gain="linear", ties=ties),
                "map": lambda: MAP(k=k, ties=ties),
                "mrr": lambda: MRR(k=k, ties=ties),
                "precision": lambda: Precision(k=k, ties=ties),
                "recall": lambda: Recall(k=k, ties=ties),
            }[family]()
            assert_close(ours(scores, labels, mask, spec), got[name], f"{spec.name} vs ranx {name}")
    assert len(got["map"]) == n


# ------------------------------------------------------------------------------- rax


@pytest.fixture(scope="module")
def rax_x64():
    pytest.importorskip("rax")
    import jax

    with jax.experimental.enable_x64():
        import jax.numpy as jnp
        import rax

        yield rax, jnp


def _rax(fn, jnp, scores, labels, mask, **kw):
    s = jnp.asarray(np.where(mask, scores, 0.0), dtype=jnp.float64)
    y = jnp.asarray(np.where(mask, labels, 0.0), dtype=jnp.float64)
    out = fn(s, y, where=jnp.asarray(mask), reduce_fn=None, **kw)
    assert out.dtype == jnp.float64
    return np.asarray(out)


@pytest.mark.reference
@pytest.mark.parametrize("seed", [6, 7])
def test_rax_without_ties(rax_x64, seed):
    rax, jnp = rax_x64
    scores, labels, mask = random_lists(seed, n=200, ties="none")
    for k in (None, 1, 3, 5):
        for fn, spec in [
            (rax.ndcg_metric, NDCG(k=k)),
            (rax.mrr_metric, MRR(k=k)),
            (rax.ap_metric, MAP(k=k)),
        ]:
            expected = _rax(fn, jnp, scores, labels, mask, topn=k)
            assert_close(ours(scores, labels, mask, spec), expected, f"{spec.name} vs rax {fn.__name__}")


@pytest.mark.reference
def test_rax_references_md_values(rax_x64):
    """REFERENCES.md: ndcg 0.569176 (0.707528, 1.0, 0), ndcg@3 0.462189, mrr 0.666667,
    ap 0.638889; rax itself and gradebench (default exp2 gain, mean over lists)."""
    rax, jnp = rax_x64
    scores = np.array([[0.5, 2.0, 1.0, -1.0, 0.3], [1.2, 0.1, 0.8, 2.5, -0.4], [0.3, 0.2, 0.1, 0.0, -0.1]])
    labels = np.array([[0, 2, 1, 0, 3], [1, 0, 0, 2, 0], [0, 0, 0, 0, 0]], dtype=float)
    mask = np.ones_like(scores, dtype=bool)
    r = evaluate(scores, labels, [NDCG(), NDCG(k=3), MRR(), MAP()])
    for fn, spec, pinned in [
        (rax.ndcg_metric, NDCG(), 0.569176),
        (rax.mrr_metric, MRR(), 0.666667),
        (rax.ap_metric, MAP(), 0.638889),
    ]:
        expected = _rax(fn, jnp, scores, labels, mask)
        assert_close(r.per_query[spec.name], expected, spec.name)
        assert r.means[spec.name] == pytest.approx(pinned, abs=5e-7)
    assert r.per_query["ndcg"] == pytest.approx([0.707528, 1.0, 0.0], abs=5e-7)
    assert_close(r.per_query["ndcg@3"], _rax(rax.ndcg_metric, jnp, scores, labels, mask, topn=3), "ndcg@3")
    assert r.means["ndcg@3"] == pytest.approx(0.462189, abs=5e-7)


# ----------------------------------------------------------------------------- scipy


@pytest.mark.reference
def test_scipy_kendall_tau_b_and_spearman():
    stats = pytest.importorskip("scipy.stats")
    import gradebench.metrics as gm

    KendallTau = gm.KendallTau
    Spearman = gm.Spearman  # the name the build pipeline imports

    scores, labels, mask = random_lists(8, n=200, size=7, ties="many")
    scores[:5] = 0.5  # constant predictions
    labels[5:10] = 2.0  # constant labels
    mask[10] = False
    mask[10, 3] = True  # a single valid item
    scores[10, 3], labels[10, 3] = 0.25, 1.0
    r = evaluate(scores, labels, [KendallTau(), Spearman()], mask=mask)
    tau, rho = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on constant input
        for q in range(scores.shape[0]):
            x, y = scores[q, mask[q]], labels[q, mask[q]]
            if len(x) < 2:
                tau.append(np.nan)
                rho.append(np.nan)
                continue
            tau.append(stats.kendalltau(x, y, variant="b").statistic)
            rho.append(stats.spearmanr(x, y).statistic)
    assert_close(r.per_query[KendallTau().name], tau, "kendall tau-b vs scipy")
    assert_close(r.per_query[Spearman().name], rho, "spearman vs scipy")
    assert r.n_excluded[KendallTau().name] == int(np.isnan(tau).sum()) >= 11
