"""gradebench.losses against rax 0.4.0 (JAX, float64): published constants and live calls.

Two layers:

* ``test_references_md_*``: the rax 0.4.0 values listed in ``../shared/REFERENCES.md``. They are
  **constants computed with rax 0.4.0**, copied here so the test still means something if rax
  changes or is missing.
* ``test_matches_rax_*``: rax itself (``import rax``, x64) on seeded random inputs
  (``np.random.default_rng``), ragged masks included, values **and gradients** to 1e-6, for every
  loss with a rax equivalent. Where the two libraries normalise differently the test uses the
  gradebench parameter that matches (named in each case) or the documented factor:

  ======================  ======================================================================
  gradebench              rax 0.4.0
  ======================  ======================================================================
  mse                     pointwise_mse_loss
  sigmoid_ce              pointwise_sigmoid_loss (labels in [0, 1]; rax clips, gradebench raises)
  ranknet                 pairwise_logistic_loss
  bradley_terry           pairwise_logistic_loss on labels 1[y = max y] (best vs each other)
  hinge(margin=1)         pairwise_hinge_loss; hinge(margin=m) = m * rax(scores / m)
  margin(margin=m)        same as hinge(margin=m)
  listnet(target="raw")   softmax_loss (default identity label_fn)
  listnet("normalize")    softmax_loss(label_fn=utils.normalize_probabilities), lists with a
                          positive label (an all-zero list: rax uniform target, gradebench 0)
  listnet("softmax", T)   softmax_loss(label_fn=softmax(y / T) over valid items)
  listmle(seed=None)      listmle_loss (no key: ties keep list order); any seed if tie-free
  approxndcg(T, gain)     approx_t12n(ndcg_metric, temperature=T), gain_fn 2^y-1 or y
  lambdaloss              pairwise_logistic_loss(lambdaweight_fn=dcg_lambdaweight) / list_size
  lambdarank              same with dcg_lambdaweight(normalize=True), / list_size
  ======================  ======================================================================

  rax's ``dcg_lambdaweight`` multiplies every weight by the padded list size (``ranks.shape[-1]``);
  gradebench leaves it out so padding cannot change the loss, hence the ``/ list_size``. LiPO-λ
  is also checked against a direct NumPy loop over pairs of its Eq. 10.

``neuralndcg`` has no rax equivalent (allRank is not installed); ``tests/losses`` checks it
against a direct NumPy implementation.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np
import pytest
import torch

from gradebench import losses as L
from tests.conftest import one_torch_thread

pytestmark = [
    pytest.mark.reference,
    # rax 0.4.0's approx_t12n uses jax.util.wraps, deprecated in JAX 0.6 (not our code).
    pytest.mark.filterwarnings("ignore:wraps was deprecated:DeprecationWarning"),
]

rax = pytest.importorskip("rax")
jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

TOL = 1e-6


@pytest.fixture(autouse=True)
def _one_torch_thread():  # noqa: ANN202
    """Tiny tensors: one intra-op thread avoids thread-pool wake-ups on a busy machine."""
    with one_torch_thread():
        yield


def _t(a: np.ndarray) -> torch.Tensor:
    return torch.tensor(np.asarray(a), dtype=torch.float64)


def _close(ours: float | np.ndarray, ref: float | np.ndarray) -> None:
    np.testing.assert_allclose(np.asarray(ours, dtype=np.float64), np.asarray(ref, dtype=np.float64),
                               rtol=TOL, atol=TOL)


# ---------------------------------------------------------------------------------------------
# Constants from ../shared/REFERENCES.md (computed with rax 0.4.0, float64)
# ---------------------------------------------------------------------------------------------

REF_SCORES = [[0.5, 2.0, 1.0, -1.0, 0.3], [1.2, 0.1, 0.8, 2.5, -0.4], [0.3, 0.2, 0.1, 0.0, -0.1]]
REF_LABELS = [[0, 2, 1, 0, 3], [1, 0, 0, 2, 0], [0, 0, 0, 0, 0]]


def _ref() -> tuple[torch.Tensor, torch.Tensor]:
    return _t(REF_SCORES), _t(REF_LABELS)


def test_references_md_softmax_loss() -> None:
    s, y = _ref()
    # rax.softmax_loss with its default (identity) label_fn = gradebench listnet(target="raw").
    _close(L.listnet(s, y, target="raw", reduction="none"), [9.704481, 2.711804, 0.0])
    _close(L.listnet(s, y, target="raw"), 4.138762)
    # The same numbers through target="normalize": raw = (sum of labels) * normalized.
    per_list = L.listnet(s, y, target="normalize", reduction="none") * y.sum(-1)
    _close(per_list, [9.704481, 2.711804, 0.0])


def test_references_md_listmle_loss() -> None:
    s, y = _ref()
    # rax without a key keeps tied labels in list order = gradebench seed=None.
    _close(L.listmle(s, y, seed=None, reduction="none"), [3.552299, 2.811203, 4.308291])
    _close(L.listmle(s, y, seed=None), 3.557265)


def test_references_md_approx_ndcg() -> None:
    s, y = _ref()
    _close(L.approxndcg(s, y), -0.471080)


def test_references_md_pairwise_logistic() -> None:
    s, y = _ref()
    _close(L.ranknet(s, y), 0.419239)  # mean over the 16 valid pairs of the batch
    _close(L.ranknet(s, y, reduction="sum") / 16, 0.419239)


def test_references_md_dcg_lambdaweight() -> None:
    s, y = _ref()
    # rax's dcg_lambdaweight carries a factor list_size = 5 that gradebench leaves out.
    _close(5 * L.lambdaloss(s, y), 2.375633)


# ---------------------------------------------------------------------------------------------
# Live rax on seeded random inputs
# ---------------------------------------------------------------------------------------------


def _inputs(seed: int, batch: int, size: int, *, ragged: bool, tie_free: bool = False,
            positive: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Scores ~ N(0, 2) (distinct: rank ties have measure zero), graded labels 0..4.

    ``ragged``: random masks, every list with >= 1 valid item, plus (batch >= 3) one list that is
    all-masked and one whose labels are all equal. ``tie_free``: distinct labels per list.
    ``positive``: every list has a positive valid label.
    """
    rng = np.random.default_rng(seed)
    scores = rng.normal(0.0, 2.0, size=(batch, size))
    if tie_free:
        labels = np.stack([rng.permutation(size) for _ in range(batch)]).astype(np.float64) * (4.0 / size)
    else:
        labels = rng.integers(0, 5, size=(batch, size)).astype(np.float64)
    mask = None
    if ragged:
        mask = rng.random((batch, size)) < 0.75
        mask[np.arange(batch), rng.integers(0, size, batch)] = True
        if batch >= 3:
            mask[1] = False
            if not tie_free:
                labels[2] = 2.0
    if positive:
        labels[:, 0] = np.maximum(labels[:, 0], 1.0)
        if mask is not None:
            mask[:, 0] |= mask.any(-1)
    return scores, labels, mask


class Case(NamedTuple):
    seed: int
    batch: int
    size: int  # list size
    ragged: bool

    def inputs(self, **kwargs: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """:func:`_inputs` for this case (``tie_free``, ``positive``)."""
        return _inputs(self.seed, self.batch, self.size, ragged=self.ragged, **kwargs)


CASES = [  # the smallest list, a ragged one, the largest
    Case(0, 6, 2, False),
    Case(1, 6, 7, True),
    Case(3, 4, 64, True),
]
CASE_IDS = [f"L{c.size}{'-ragged' if c.ragged else ''}" for c in CASES]


def _check(ours_fn, rax_fn, scores: np.ndarray, labels: np.ndarray, mask: np.ndarray | None,
           factor: float = 1.0, jit: bool = False) -> None:
    """``factor * ours == rax`` for the value and the gradient w.r.t. the scores.

    ``jit``: compile the rax side once instead of dispatching op by op (worth it only where rax
    loops over the list, as listmle's logcumsumexp does; compiling costs more elsewhere).
    """
    s = _t(scores).requires_grad_(True)
    m = None if mask is None else torch.tensor(mask)
    value = ours_fn(s, _t(labels), m)
    value.backward()
    where = None if mask is None else jnp.asarray(mask)
    value_and_grad = _jitted_value_and_grad(rax_fn) if jit else jax.value_and_grad(rax_fn)
    ref_value, ref_grad = value_and_grad(jnp.asarray(scores), jnp.asarray(labels), where)
    _close(factor * value.item(), float(ref_value))
    _close(factor * s.grad.numpy(), np.asarray(ref_grad))
    if mask is not None:
        assert not s.grad[~m].any(), "masked items must get exactly zero gradient"


@functools.cache
def _jitted_value_and_grad(rax_fn):  # noqa: ANN001, ANN202
    """One compiled function per rax callable, reused across inputs of the same shape."""
    return jax.jit(jax.value_and_grad(rax_fn))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_matches_rax_pointwise(case: Case) -> None:
    s, y, m = case.inputs()
    _check(lambda a, b, w: L.mse(a, b, mask=w),
           lambda a, b, w: rax.pointwise_mse_loss(a, b, where=w), s, y, m)
    _check(lambda a, b, w: L.sigmoid_ce(a, b / 4, mask=w),
           lambda a, b, w: rax.pointwise_sigmoid_loss(a, b / 4, where=w), s, y, m)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_matches_rax_pairwise(case: Case) -> None:
    s, y, m = case.inputs()
    _check(lambda a, b, w: L.ranknet(a, b, mask=w),
           lambda a, b, w: rax.pairwise_logistic_loss(a, b, where=w), s, y, m)
    _check(lambda a, b, w: L.hinge(a, b, mask=w),
           lambda a, b, w: rax.pairwise_hinge_loss(a, b, where=w), s, y, m)
    # margin m: max(0, m - d) = m * max(0, 1 - d / m), i.e. m * rax(scores / m).
    _check(lambda a, b, w: L.hinge(a, b, mask=w, margin=2.5),
           lambda a, b, w: 2.5 * rax.pairwise_hinge_loss(a / 2.5, b, where=w), s, y, m)
    _check(lambda a, b, w: L.margin(a, b, mask=w),
           lambda a, b, w: 2.0 * rax.pairwise_hinge_loss(a / 2.0, b, where=w), s, y, m)
    # Bradley-Terry = pairwise logistic on "is a best item" labels (best vs each other item).
    valid = np.ones_like(y, dtype=bool) if m is None else m
    top = np.where(valid, y, -np.inf).max(-1, keepdims=True)
    best = (valid & (y == top)).astype(np.float64)
    _check(lambda a, b, w: L.bradley_terry(a, _t(y), mask=w),
           lambda a, b, w: rax.pairwise_logistic_loss(a, b, where=w), s, best, m)


@pytest.mark.parametrize("gain", ["exp2", "linear"])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_matches_rax_lambda_weighted(case: Case, gain: str) -> None:
    s, y, m = case.inputs()
    gain_fn = (lambda v: jnp.exp2(v) - 1.0) if gain == "exp2" else (lambda v: v)
    for name, normalize in (("lambdaloss", False), ("lambdarank", True)):
        weight_fn = functools.partial(rax.dcg_lambdaweight, normalize=normalize, gain_fn=gain_fn)
        _check(lambda a, b, w, name=name: getattr(L, name)(a, b, mask=w, gain=gain),
               lambda a, b, w, f=weight_fn: rax.pairwise_logistic_loss(a, b, where=w, lambdaweight_fn=f),
               s, y, m, factor=float(case.size))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_matches_rax_listnet(case: Case) -> None:
    s, y, m = case.inputs()
    _check(lambda a, b, w: L.listnet(a, b, mask=w, target="raw"),
           lambda a, b, w: rax.softmax_loss(a, b, where=w), s, y, m)
    for temp in (1.0, 0.5):
        label_fn = functools.partial(_softmax_target, temperature=temp)
        _check(lambda a, b, w, t=temp: L.listnet(a, b, mask=w, temperature=t),
               lambda a, b, w, f=label_fn: rax.softmax_loss(a, b, where=w, label_fn=f), s, y, m)
    s, y, m = case.inputs(positive=True)
    _check(lambda a, b, w: L.listnet(a, b, mask=w, target="normalize"),
           lambda a, b, w: rax.softmax_loss(a, b, where=w, label_fn=rax.utils.normalize_probabilities),
           s, y, m)


def _softmax_target(labels, where=None, *, temperature: float):  # noqa: ANN001, ANN202
    """ListNet's target softmax(y / T) over the valid items (0 at masked ones)."""
    z = labels / temperature
    if where is None:
        return jax.nn.softmax(z, axis=-1)
    z = jnp.where(where, z, -jnp.inf)
    p = jnp.exp(z - jnp.max(z, axis=-1, keepdims=True, initial=-1e300, where=where))
    return jnp.where(where, p / jnp.sum(p, axis=-1, keepdims=True, where=where), 0.0)


def test_listnet_normalize_all_zero_list_is_the_documented_deviation() -> None:
    s = np.array([[0.3, -1.0, 2.0], [1.0, 0.0, 0.5]])
    y = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 2.0]])
    ours = L.listnet(_t(s), _t(y), target="normalize", reduction="none")
    theirs = rax.softmax_loss(s, y, label_fn=rax.utils.normalize_probabilities, reduce_fn=None)
    assert ours[0].item() == 0.0  # no relevant item: no target mass (TF-Ranking convention)
    _close(float(theirs[0]), -np.mean(jax.nn.log_softmax(s[0])))  # rax: uniform target
    _close(ours[1].item(), float(theirs[1]))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_matches_rax_listmle(case: Case) -> None:
    s, y, m = case.inputs()  # tied labels
    _check(lambda a, b, w: L.listmle(a, b, mask=w, seed=None), _rax_listmle, s, y, m, jit=True)
    s, y, m = case.inputs(tie_free=True)
    # Without ties the seed cannot matter.
    _check(lambda a, b, w: L.listmle(a, b, mask=w, seed=12345), _rax_listmle, s, y, m, jit=True)


def _rax_listmle(scores, labels, where):  # noqa: ANN001, ANN202
    return rax.listmle_loss(scores, labels, where=where)


@pytest.mark.parametrize(("temperature", "gain"), [(1.0, "exp2"), (0.3, "linear")])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_matches_rax_approxndcg(case: Case, temperature: float, gain: str) -> None:
    s, y, m = case.inputs()
    gain_fn = (lambda v: jnp.exp2(v) - 1.0) if gain == "exp2" else (lambda v: v)
    approx = rax.approx_t12n(rax.ndcg_metric, temperature=temperature)
    _check(lambda a, b, w: L.approxndcg(a, b, mask=w, temperature=temperature, gain=gain),
           lambda a, b, w: approx(a, b, where=w, gain_fn=gain_fn), s, y, m)


# ---------------------------------------------------------------------------------------------
# LiPO-λ (seeds/004 Eq. 10) against a direct loop over pairs
# ---------------------------------------------------------------------------------------------


def _lipo_lambda_loop(scores: np.ndarray, labels: np.ndarray, mask: np.ndarray) -> tuple[float, int]:
    """Sum over lists and pairs psi_i > psi_j of Delta_ij log(1 + exp(-(s_i - s_j))), and #pairs."""
    total, pairs = 0.0, 0
    for s, y, m in zip(scores, labels, mask):
        s, y = s[m], y[m]
        order = sorted(range(len(s)), key=lambda i: -s[i])  # distinct scores: no tie to break
        tau = {item: rank + 1 for rank, item in enumerate(order)}
        for i in range(len(s)):
            for j in range(len(s)):
                if y[i] > y[j]:
                    gain_diff = abs((2.0 ** y[i] - 1) - (2.0 ** y[j] - 1))
                    disc_diff = abs(1 / math.log2(1 + tau[i]) - 1 / math.log2(1 + tau[j]))
                    total += gain_diff * disc_diff * math.log1p(math.exp(-(s[i] - s[j])))
                    pairs += 1
    return total, pairs


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_lambdaloss_equals_lipo_eq10_loop(case: Case) -> None:
    s, y, m = case.inputs()
    y = y / 4.0  # LiPO's psi in [0, 1]
    mask = np.ones_like(s, dtype=bool) if m is None else m
    total, pairs = _lipo_lambda_loop(s, y, mask)
    _close(L.lambdaloss(_t(s), _t(y), mask=torch.tensor(mask), reduction="sum").item(), total)
    _close(L.lambdaloss(_t(s), _t(y), mask=torch.tensor(mask)).item(), total / max(pairs, 1))


# ---------------------------------------------------------------------------------------------
# margin (seeds/002) against torch.nn.MarginRankingLoss on the explicit pairs
# ---------------------------------------------------------------------------------------------


def test_margin_equals_torch_margin_ranking_loss_on_pairs() -> None:
    s, y, m = _inputs(7, 4, 9, ragged=True)
    x1, x2, e = [], [], []
    for b in range(s.shape[0]):
        idx = np.flatnonzero(m[b])
        for a_pos, i in enumerate(idx):
            for j in idx[a_pos + 1:]:  # each unordered pair once, E from the labels
                if y[b, i] != y[b, j]:
                    x1.append(s[b, i]); x2.append(s[b, j]); e.append(1.0 if y[b, i] > y[b, j] else -1.0)
    ref = torch.nn.functional.margin_ranking_loss(_t(x1), _t(x2), _t(e), margin=2.0)
    _close(L.margin(_t(s), _t(y), mask=torch.tensor(m)).item(), ref.item())
