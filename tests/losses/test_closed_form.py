"""Closed-form values of every loss on tiny inputs, computed by hand with ``math``."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from gradebench import losses as L

F64 = torch.float64


def t(rows):  # noqa: ANN001, ANN201
    return torch.tensor(rows, dtype=F64)


def softplus(x: float) -> float:
    return math.log1p(math.exp(-abs(x))) + max(x, 0.0)


def logistic(d: float) -> float:  # log(1 + exp(-d))
    return softplus(-d)


def approx(v: float, rel: float = 1e-12, abs_: float = 1e-12):  # noqa: ANN201
    return pytest.approx(v, rel=rel, abs=abs_)


# --- pointwise -----------------------------------------------------------------------------


def test_mse_masked_and_reductions() -> None:
    s, y = t([[1.0, 0.0, 2.0], [0.5, 9.0, 9.0]]), t([[1.0, 1.0, 0.0], [1.5, 0.0, 0.0]])
    m = torch.tensor([[True, True, True], [True, False, False]])
    assert float(L.mse(s, y, mask=m)) == approx((0 + 1 + 4 + 1) / 4)
    assert float(L.mse(s, y, mask=m, reduction="sum")) == approx(6.0)
    assert L.mse(s, y, mask=m, reduction="none").tolist() == pytest.approx([5.0, 1.0])


def test_sigmoid_ce() -> None:
    s, y = t([[0.0, 2.0, -3.0]]), t([[1.0, 0.5, 0.0]])
    expected = [math.log(2), 0.5 * softplus(-2.0) + 0.5 * softplus(2.0), softplus(-3.0)]
    assert L.sigmoid_ce(s, y, reduction="none").item() == approx(sum(expected))
    assert float(L.sigmoid_ce(s, y)) == approx(sum(expected) / 3)


# --- pairwise ------------------------------------------------------------------------------

S3 = [[0.5, 2.0, -1.0]]
Y3 = [[2.0, 1.0, 0.0]]  # pairs (0,1), (0,2), (1,2)


def test_ranknet() -> None:
    d = [0.5 - 2.0, 0.5 + 1.0, 2.0 + 1.0]
    expected = [logistic(x) for x in d]
    assert float(L.ranknet(t(S3), t(Y3), reduction="sum")) == approx(sum(expected))
    assert float(L.ranknet(t(S3), t(Y3))) == approx(sum(expected) / 3)


def test_ranknet_ignores_tied_pairs() -> None:
    s, y = t([[0.3, -0.2, 1.0]]), t([[1.0, 1.0, 0.0]])
    expected = (logistic(0.3 - 1.0) + logistic(-0.2 - 1.0)) / 2
    assert float(L.ranknet(s, y)) == approx(expected)


def test_bradley_terry_best_against_each_other() -> None:
    # best = item 0 (label 2): pairs (0,1), (0,2) only; (1,2) is not used.
    expected = (logistic(0.5 - 2.0) + logistic(0.5 + 1.0)) / 2
    assert float(L.bradley_terry(t(S3), t(Y3))) == approx(expected)
    # tied best: items 0 and 1 both beat item 2, they are not compared with each other.
    s, y = t([[0.5, 2.0, -1.0]]), t([[2.0, 2.0, 0.0]])
    assert float(L.bradley_terry(s, y, reduction="sum")) == approx(logistic(1.5) + logistic(3.0))


def test_bradley_terry_equals_ranknet_for_pairs() -> None:
    s, y = t([[0.2, 1.1], [3.0, -1.0]]), t([[1.0, 0.0], [0.0, 1.0]])
    assert float(L.bradley_terry(s, y)) == approx(float(L.ranknet(s, y)))


def test_hinge_and_margin() -> None:
    d = [0.5 - 2.0, 0.5 + 1.0, 2.0 + 1.0]
    for gamma in (0.0, 1.0, 2.0, 3.5):
        expected = sum(max(0.0, gamma - x) for x in d) / 3
        assert float(L.hinge(t(S3), t(Y3), margin=gamma)) == approx(expected)
        assert float(L.margin(t(S3), t(Y3), margin=gamma)) == approx(expected)
    assert float(L.hinge(t(S3), t(Y3))) == approx(sum(max(0.0, 1 - x) for x in d) / 3)
    assert float(L.margin(t(S3), t(Y3))) == approx(sum(max(0.0, 2 - x) for x in d) / 3)


def test_margin_matches_seed002_both_orientations() -> None:
    """seeds/002 Eq. 2 sums over ordered pairs with E = +-1; both orientations give the same term."""
    s, y, gamma = [0.3, 1.4, -0.6, 0.9], [3.0, 1.0, 2.0, 0.0], 2.0
    total, count = 0.0, 0
    for i, j in itertools.permutations(range(4), 2):
        e = 1.0 if y[i] > y[j] else -1.0
        total += max(0.0, -e * (s[i] - s[j]) + gamma)
        count += 1
    assert float(L.margin(t([s]), t([y]))) == approx(total / count)


def _dcg_weights(s: list[float], y: list[float], normalize: bool) -> dict[tuple[int, int], float]:
    order = sorted(range(len(s)), key=lambda i: (-s[i], y[i]))
    rank = {item: r + 1 for r, item in enumerate(order)}
    g = [2.0**v - 1 for v in y]
    idcg = sum(gv / math.log2(r + 2) for r, gv in enumerate(sorted(g, reverse=True))) if normalize else 1.0
    idcg = idcg or 1.0
    return {
        (i, j): abs(g[i] - g[j]) * abs(1 / math.log2(1 + rank[i]) - 1 / math.log2(1 + rank[j])) / idcg
        for i, j in itertools.permutations(range(len(s)), 2)
        if y[i] > y[j]
    }


@pytest.mark.parametrize("name,normalize", [("lambdaloss", False), ("lambdarank", True)])
def test_lambda_losses_by_hand(name: str, normalize: bool) -> None:
    s, y = [0.5, 2.0, -1.0, 0.7], [2.0, 1.0, 0.0, 1.0]
    w = _dcg_weights(s, y, normalize)
    expected = sum(wij * logistic(s[i] - s[j]) for (i, j), wij in w.items())
    fn = getattr(L, name)
    assert float(fn(t([s]), t([y]), reduction="sum")) == approx(expected)
    assert float(fn(t([s]), t([y]))) == approx(expected / len(w))


def test_lambdaloss_two_items() -> None:
    # ranks: item 1 first; Delta = (2^1 - 1) * (1 - 1/log2 3); loss = Delta * log(1 + e)
    out = L.lambdaloss(t([[0.0, 1.0]]), t([[1.0, 0.0]]))
    assert float(out) == approx((1 - 1 / math.log2(3)) * math.log1p(math.e))


def test_lambdaloss_label_values_matter_lambdarank_scale_free() -> None:
    s = t([[0.1, 0.4, -0.3]])
    y_small, y_big = t([[0.51, 0.50, 0.49]]), t([[0.99, 0.50, 0.01]])
    assert float(L.lambdaloss(s, y_big)) > 10 * float(L.lambdaloss(s, y_small))
    # gains scale -> lambdarank unchanged when all gains are multiplied (linear gain)
    a = L.lambdarank(s, t([[3.0, 2.0, 1.0]]), gain="linear")
    b = L.lambdarank(s, t([[6.0, 4.0, 2.0]]), gain="linear")
    assert float(a) == approx(float(b))


def test_lambdarank_gradient_is_lambda_of_seed000_eq3() -> None:
    s = t([[0.0, 1.0]]).requires_grad_(True)
    y = t([[1.0, 0.0]])
    L.lambdarank(s, y, reduction="sum").backward()
    delta = 1 - 1 / math.log2(3)
    lam = delta / (1 + math.exp(0.0 - 1.0))
    assert s.grad.tolist()[0] == pytest.approx([-lam, lam], rel=1e-12)


def test_lambda_pessimistic_score_ties() -> None:
    # all scores tied: ranking puts the lowest label first -> worst case DCG weights
    s, y = [0.0, 0.0, 0.0], [2.0, 0.0, 1.0]
    w = _dcg_weights(s, y, normalize=False)
    expected = sum(w.values()) * math.log(2)
    assert float(L.lambdaloss(t([s]), t([y]), reduction="sum")) == approx(expected)


# --- listwise ------------------------------------------------------------------------------


def _log_softmax(v: list[float]) -> list[float]:
    m = max(v)
    lse = m + math.log(sum(math.exp(x - m) for x in v))
    return [x - lse for x in v]


def test_listnet_targets() -> None:
    s, y = [0.5, 2.0, -1.0], [2.0, 1.0, 0.0]
    logq = _log_softmax(s)
    p_soft = [math.exp(v) for v in _log_softmax(y)]
    p_soft_t = [math.exp(v) for v in _log_softmax([v / 0.5 for v in y])]
    p_norm = [v / 3.0 for v in y]
    cases = {
        "softmax": (dict(), p_soft),
        "softmax_t": (dict(temperature=0.5), p_soft_t),
        "normalize": (dict(target="normalize"), p_norm),
        "raw": (dict(target="raw"), y),
    }
    for kwargs, p in cases.values():
        expected = -sum(pi * qi for pi, qi in zip(p, logq))
        assert float(L.listnet(t([s]), t([y]), **kwargs)) == approx(expected)


def test_listnet_zero_label_list() -> None:
    s, y = t([[0.5, 2.0], [1.0, 0.0]]), t([[0.0, 0.0], [1.0, 0.0]])
    out = L.listnet(s, y, target="normalize", reduction="none")
    assert out[0].item() == 0.0
    # the zero list still counts in the mean over lists
    assert float(L.listnet(s, y, target="normalize")) == approx(out[1].item() / 2)
    # softmax target of equal labels is uniform, not zero
    assert L.listnet(s, y, reduction="none")[0].item() == approx(-0.5 * sum(_log_softmax([0.5, 2.0])))


def test_listmle_by_hand() -> None:
    s, y = [0.5, 2.0, -1.0, 0.3], [1.0, 3.0, 0.0, 2.0]
    order = sorted(range(4), key=lambda i: -y[i])
    expected = 0.0
    for k in range(4):
        tail = [s[order[m]] for m in range(k, 4)]
        expected += math.log(sum(math.exp(v) for v in tail)) - s[order[k]]
    assert float(L.listmle(t([s]), t([y]))) == approx(expected)


def test_listmle_ties_seeded_and_stable() -> None:
    s, y = t([[0.5, 2.0, -1.0, 0.3]]), t([[1.0, 1.0, 0.0, 1.0]])

    def by_order(order: list[int]) -> float:
        sv = [float(s[0, i]) for i in order]
        return sum(math.log(sum(math.exp(v) for v in sv[k:])) - sv[k] for k in range(4))

    # seed=None: ties in list order (rax without key)
    assert float(L.listmle(s, y, seed=None)) == approx(by_order([0, 1, 3, 2]))
    # a seed gives one of the tie orders, the same each call
    possible = {round(by_order([*p, 2]), 10) for p in itertools.permutations([0, 1, 3])}
    values = {round(float(L.listmle(s, y, seed=k)), 10) for k in range(40)}
    assert values <= possible and len(values) > 1
    assert float(L.listmle(s, y, seed=7)) == float(L.listmle(s, y, seed=7))


def test_listmle_does_not_touch_global_rng() -> None:
    torch.manual_seed(123)
    a = torch.rand(3)
    torch.manual_seed(123)
    L.listmle(t([[0.1, 0.2, 0.3]]), t([[1.0, 1.0, 1.0]]), seed=5)
    assert torch.equal(torch.rand(3), a)


def _ndcg_dcg(gains_at_rank: list[float]) -> float:
    return sum(g / math.log2(r + 2) for r, g in enumerate(gains_at_rank))


def test_approxndcg_by_hand() -> None:
    s, y, temp = [0.5, 2.0, -1.0], [2.0, 1.0, 0.0], 0.7
    g = [2.0**v - 1 for v in y]
    sig = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    ranks = [1 + sum(sig((s[j] - s[i]) / temp) for j in range(3) if j != i) for i in range(3)]
    dcg = sum(gi / math.log2(1 + r) for gi, r in zip(g, ranks))
    idcg = _ndcg_dcg(sorted(g, reverse=True))
    assert float(L.approxndcg(t([s]), t([y]), temperature=temp)) == approx(-dcg / idcg)
    lin = sum(yi / math.log2(1 + r) for yi, r in zip(y, ranks)) / _ndcg_dcg(sorted(y, reverse=True))
    assert float(L.approxndcg(t([s]), t([y]), temperature=temp, gain="linear")) == approx(-lin)


def test_approxndcg_no_relevant_item_is_zero() -> None:
    out = L.approxndcg(t([[0.3, 0.1], [0.0, 1.0]]), t([[0.0, 0.0], [1.0, 0.0]]), reduction="none")
    assert out[0].item() == 0.0 and out[1].item() < 0


def test_neuralndcg_two_items_closed_form() -> None:
    # NeuralSort of two items is [[a, 1-a], [1-a, a]], a = sigmoid((s1 - s2) / tau): already
    # doubly stochastic, so Sinkhorn is a no-op.
    s, y, tau = [0.3, 1.1], [2.0, 1.0], 0.8
    a = 1 / (1 + math.exp(-(s[0] - s[1]) / tau))
    g = [3.0, 1.0]
    dcg = (a * g[0] + (1 - a) * g[1]) + ((1 - a) * g[0] + a * g[1]) / math.log2(3)
    idcg = 3.0 + 1.0 / math.log2(3)
    assert float(L.neuralndcg(t([s]), t([y]), temperature=tau)) == approx(-dcg / idcg)


def _numpy_neuralndcg(s: np.ndarray, y: np.ndarray, tau: float, iters: int, k: int | None) -> float:
    """Direct transcription of Pobrotyn & Białobrzeski (2021) / allRank, one list, loops."""
    n = len(s)
    p = np.zeros((n, n))
    for i in range(1, n + 1):
        logits = np.array([((n + 1 - 2 * i) * s[j] - sum(abs(s[j] - s[m]) for m in range(n))) / tau for j in range(n)])
        e = np.exp(logits - logits.max())
        p[i - 1] = e / e.sum()
    for _ in range(iters):
        p = p / np.maximum(p.sum(axis=0, keepdims=True), 1e-10)
        p = p / np.maximum(p.sum(axis=1, keepdims=True), 1e-10)
    g = 2.0**y - 1
    k = n if k is None else min(k, n)
    disc = np.array([1 / np.log2(i + 2) for i in range(n)])
    disc[k:] = 0
    dcg = float((p @ g) @ disc)
    idcg = float(np.sort(g)[::-1] @ disc)
    return -dcg / idcg if idcg > 0 else 0.0


@pytest.mark.parametrize("n,tau,iters,k", [(3, 1.0, 50, None), (5, 0.5, 10, 3), (6, 2.0, 0, None), (7, 0.3, 50, 2)])
def test_neuralndcg_matches_direct_numpy(n: int, tau: float, iters: int, k: int | None) -> None:
    rng = np.random.default_rng(n)
    s, y = rng.normal(size=n), rng.integers(0, 4, size=n).astype(float)
    y[0] = 3.0
    got = float(L.neuralndcg(t([s.tolist()]), t([y.tolist()]), temperature=tau, sinkhorn_iters=iters, k=k))
    assert got == approx(_numpy_neuralndcg(s, y, tau, iters, k), rel=1e-9, abs_=1e-12)


def test_neuralndcg_tends_to_exact_ndcg() -> None:
    s, y = [0.5, 2.0, -1.0, 0.3, 1.2], [2.0, 1.0, 0.0, 3.0, 1.0]
    order = sorted(range(5), key=lambda i: -s[i])
    g = [2.0**v - 1 for v in y]
    ndcg = _ndcg_dcg([g[i] for i in order]) / _ndcg_dcg(sorted(g, reverse=True))
    got = float(L.neuralndcg(t([s]), t([y]), temperature=1e-3))
    assert got == approx(-ndcg, rel=1e-6)
    ndcg3 = _ndcg_dcg([g[i] for i in order[:3]]) / _ndcg_dcg(sorted(g, reverse=True)[:3])
    assert float(L.neuralndcg(t([s]), t([y]), temperature=1e-3, k=3)) == approx(-ndcg3, rel=1e-6)


def test_neural_sort_is_unimodal_row_stochastic() -> None:
    s = t([[0.5, 2.0, -1.0, 9.0]])
    m = torch.tensor([[True, True, True, False]])
    p = L.neural_sort(s, m, 0.01)[0]
    assert torch.allclose(p[:3].sum(-1), torch.ones(3, dtype=F64))
    assert torch.all(p[3] == 0) and torch.all(p[:, 3] == 0)
    assert p[:3].argmax(-1).tolist() == [1, 0, 2]


def _sinkhorn_by_autograd(p: torch.Tensor, iters: int) -> tuple[torch.Tensor, torch.Tensor]:
    u = torch.ones(p.shape[:-1], dtype=p.dtype)
    v = torch.ones_like(u)
    for _ in range(iters):
        v = 1.0 / (p * u.unsqueeze(-1)).sum(-2).clamp(min=1e-10)
        u = 1.0 / (p * v.unsqueeze(-2)).sum(-1).clamp(min=1e-10)
    return u, v


def test_sinkhorn_zero_rounds_is_identity() -> None:
    u, v = L.sinkhorn_scaling(torch.rand(2, 3, 3, dtype=F64), 0)
    assert torch.all(u == 1) and torch.all(v == 1)


@pytest.mark.parametrize("iters", [1, 2, 7, 50])
def test_sinkhorn_backward_equals_autograd_through_the_loop(iters: int) -> None:
    gen = torch.Generator().manual_seed(iters)
    p = torch.rand(3, 6, 6, dtype=F64, generator=gen)
    p[0, 4:, :] = 0  # padding rows / columns stay empty
    p[0, :, 4:] = 0
    w_u, w_v = torch.randn(3, 6, dtype=F64, generator=gen), torch.randn(3, 6, dtype=F64, generator=gen)
    grads = []
    for fn in (L.sinkhorn_scaling, _sinkhorn_by_autograd):
        leaf = p.clone().requires_grad_(True)
        u, v = fn(leaf, iters)
        ((u * w_u + v * w_v)[1:].sum() + (u * w_u + v * w_v)[0, :4].sum()).backward()
        grads.append((u.detach(), v.detach(), leaf.grad))
    (u1, v1, g1), (u2, v2, g2) = grads
    assert torch.allclose(u1, u2) and torch.allclose(v1, v2)
    assert torch.allclose(g1, g2, rtol=1e-10, atol=1e-10)
    rows = (torch.diag_embed(u1) @ p @ torch.diag_embed(v1))[1:].sum(-1)
    assert torch.allclose(rows, torch.ones_like(rows))


def test_sinkhorn_gradcheck() -> None:
    p = (torch.rand(2, 4, 4, dtype=F64, generator=torch.Generator().manual_seed(1)) + 0.1).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda q: L.sinkhorn_scaling(q, 5), (p,))
