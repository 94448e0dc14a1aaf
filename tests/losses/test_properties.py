"""Invariances every registered loss must satisfy (hypothesis), parametrized over the registry."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradebench.losses import LOSSES, get_loss

from ._util import ALL, LISTWISE, PAIRWISE, RANKING, TIE_SENSITIVE, fit_labels, units

F64 = torch.float64
# The repo's autouse fixture only sets environment variables, so sharing it across examples is safe.
PROPS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def lists(draw, name: str, *, tie_free: bool = False, max_size: int = 7):  # noqa: ANN001, ANN201
    """(scores, labels) of shape [B, L] in float64, labels valid for ``name``."""
    b = draw(st.integers(1, 3))
    n = draw(st.integers(2, max_size))
    score = st.floats(-6, 6, allow_nan=False, allow_infinity=False, width=32)
    scores = torch.tensor(draw(st.lists(st.lists(score, min_size=n, max_size=n), min_size=b, max_size=b)), dtype=F64)
    if tie_free:
        rows = [draw(st.permutations(list(range(n)))) for _ in range(b)]
        labels = torch.tensor(rows, dtype=F64) * (4.0 / max(n - 1, 1))
    else:
        rows = draw(st.lists(st.lists(st.integers(0, 4), min_size=n, max_size=n), min_size=b, max_size=b))
        labels = torch.tensor(rows, dtype=F64)
    return scores, fit_labels(name, labels)


def call(name: str, scores: torch.Tensor, labels: torch.Tensor, **kw) -> torch.Tensor:  # noqa: ANN003
    return get_loss(name)(scores, labels, **kw)


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.allclose(a, b, rtol=1e-9, atol=1e-11)


# --- permutation ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
@PROPS
@given(data=st.data())
def test_permuting_items_and_labels_together(name: str, data: st.DataObject) -> None:
    s, y = data.draw(lists(name, tie_free=name in TIE_SENSITIVE))
    perm = torch.stack([torch.tensor(data.draw(st.permutations(list(range(s.shape[1]))))) for _ in range(s.shape[0])])
    before = call(name, s, y, reduction="none")
    after = call(name, s.gather(1, perm), y.gather(1, perm), reduction="none")
    assert close(before, after), (before, after)


# --- masking = slicing ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
@PROPS
@given(data=st.data())
def test_masking_equals_slicing(name: str, data: st.DataObject) -> None:
    """Valid items scattered among masked junk (NaN, inf, huge) give the sliced loss and zero grad."""
    s, y = data.draw(lists(name, tie_free=name in TIE_SENSITIVE))
    b, n = s.shape
    pad = data.draw(st.integers(1, 4))
    total = n + pad
    junk = st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e30, -1e4, 7.0, -1.0])
    s_pad = torch.tensor(data.draw(st.lists(st.lists(junk, min_size=total, max_size=total), min_size=b, max_size=b)), dtype=F64)
    y_pad = torch.tensor(data.draw(st.lists(st.lists(junk, min_size=total, max_size=total), min_size=b, max_size=b)), dtype=F64)
    mask = torch.zeros(b, total, dtype=torch.bool)
    positions = []
    for row in range(b):
        pos = sorted(data.draw(st.permutations(list(range(total))))[:n])
        positions.append(pos)
        mask[row, pos] = True
    index = torch.tensor(positions)
    s_pad = s_pad.scatter(1, index, s)
    y_pad = y_pad.scatter(1, index, y)

    s_pad.requires_grad_(True)
    s_ref = s.clone().requires_grad_(True)
    for reduction in ("none", "mean"):
        got = call(name, s_pad, y_pad, mask=mask, reduction=reduction)
        want = call(name, s_ref, y, reduction=reduction)
        assert close(got, want), (reduction, got, want)
    call(name, s_pad, y_pad, mask=mask, reduction="sum").backward()
    call(name, s_ref, y, reduction="sum").backward()
    assert torch.all(s_pad.grad[~mask] == 0)
    assert close(s_pad.grad.gather(1, index), s_ref.grad)


def test_listmle_end_padding_keeps_the_seeded_tie_order() -> None:
    s = torch.tensor([[0.3, -1.2, 2.0, 0.1, 0.7]], dtype=F64)
    y = torch.tensor([[1.0, 1.0, 2.0, 1.0, 0.0]], dtype=F64)
    s_pad = torch.cat([s, torch.full((1, 3), 5.0, dtype=F64)], 1)
    y_pad = torch.cat([y, torch.full((1, 3), 1.0, dtype=F64)], 1)
    mask = torch.arange(8).unsqueeze(0) < 5
    for seed in range(10):
        assert close(get_loss("listmle")(s_pad, y_pad, mask=mask, seed=seed), get_loss("listmle")(s, y, seed=seed))


# --- batch = loop --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
@PROPS
@given(data=st.data())
def test_batch_equals_loop(name: str, data: st.DataObject) -> None:
    s, y = data.draw(lists(name, tie_free=name in TIE_SENSITIVE))
    batched = call(name, s, y, reduction="none")
    looped = torch.stack([call(name, s[i : i + 1], y[i : i + 1], reduction="sum") for i in range(s.shape[0])])
    assert close(batched, looped)
    assert close(call(name, s, y, reduction="sum"), looped.sum())


@pytest.mark.parametrize("name", ALL)
@PROPS
@given(data=st.data())
def test_mean_divides_by_the_documented_units(name: str, data: st.DataObject) -> None:
    s, y = data.draw(lists(name))
    mask = torch.rand(s.shape, generator=torch.Generator().manual_seed(data.draw(st.integers(0, 99)))) < 0.8
    total = call(name, s, y, mask=mask, reduction="sum")
    mean = call(name, s, y, mask=mask, reduction="mean")
    count = units(name, y, mask)
    assert close(mean, total / count if count else torch.zeros((), dtype=F64))


# --- degenerate lists ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_all_masked_gives_zero_and_zero_grad(name: str, reduction: str) -> None:
    s = torch.tensor([[0.1, 0.2, 0.3], [1.0, 2.0, 3.0]], dtype=F64, requires_grad=True)
    y = fit_labels(name, torch.tensor([[1.0, 0.0, 2.0], [3.0, 4.0, 0.0]], dtype=F64))
    out = call(name, s, y, mask=torch.zeros(2, 3, dtype=torch.bool), reduction=reduction)
    assert torch.all(out == 0)
    out.sum().backward()
    assert torch.all(s.grad == 0)


@pytest.mark.parametrize("name", PAIRWISE)
def test_no_valid_pair_gives_zero(name: str) -> None:
    s = torch.tensor([[0.1, 5.0, -3.0]], dtype=F64, requires_grad=True)
    out = call(name, s, torch.full((1, 3), 2.0, dtype=F64))
    assert out.item() == 0.0 and not math.isnan(out.item())
    out.backward()
    assert torch.all(s.grad == 0)


@pytest.mark.parametrize("name", ALL)
def test_single_item_lists_are_finite(name: str) -> None:
    s = torch.tensor([[0.4], [-2.0]], dtype=F64, requires_grad=True)
    out = call(name, s, fit_labels(name, torch.tensor([[1.0], [0.0]], dtype=F64)))
    assert torch.isfinite(out)
    out.backward()
    assert torch.isfinite(s.grad).all()


# --- numerics ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("size", [2, 5, 16, 64])
def test_extreme_scores_give_finite_values_and_gradients(name: str, dtype: torch.dtype, size: int) -> None:
    gen = torch.Generator().manual_seed(size)
    signs = torch.where(torch.rand(4, size, generator=gen) < 0.5, -1.0, 1.0)
    s = (signs * 1e4).to(dtype)
    s[1] = torch.randn(size, generator=gen, dtype=dtype) * 1e4
    s[2] = 1e4  # all tied at the top
    s[3, : size // 2] = -1e4
    y = fit_labels(name, torch.randint(0, 5, (4, size), generator=gen).to(dtype))
    mask = torch.ones(4, size, dtype=torch.bool)
    mask[3, -1] = False
    for reduction in ("mean", "sum", "none"):
        leaf = s.clone().requires_grad_(True)
        out = call(name, leaf, y, mask=mask, reduction=reduction)
        assert torch.isfinite(out).all(), (reduction, out)
        out.sum().backward()
        assert torch.isfinite(leaf.grad).all()


@pytest.mark.parametrize("name", ALL)
def test_gradcheck(name: str) -> None:
    gen = torch.Generator().manual_seed(3)
    s = torch.randn(2, 5, dtype=F64, generator=gen, requires_grad=True)
    y = fit_labels(name, torch.tensor([[0.0, 1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 0.0, 1.0, 0.0]], dtype=F64))
    mask = torch.tensor([[True] * 5, [True, True, True, True, False]])
    assert torch.autograd.gradcheck(lambda x: call(name, x, y, mask=mask), (s,))


@pytest.mark.parametrize("name", ALL)
def test_dtype_is_preserved(name: str) -> None:
    for dtype in (torch.float32, torch.float64):
        s = torch.tensor([[0.1, 0.5, -0.2]], dtype=dtype)
        y = torch.tensor([[0, 2, 1]])  # integer labels are accepted
        assert call(name, s, fit_labels(name, y.to(dtype))).dtype == dtype
        assert call(name, s, y if name != "sigmoid_ce" else y.clamp(max=1)).dtype == dtype


# --- label order minimises ranking losses --------------------------------------------------


@pytest.mark.parametrize("name", RANKING)
@PROPS
@given(data=st.data())
def test_scores_in_label_order_beat_any_permutation(name: str, data: st.DataObject) -> None:
    s, y = data.draw(lists(name, tie_free=name in TIE_SENSITIVE))
    perm = torch.tensor(data.draw(st.permutations(list(range(s.shape[1])))))
    c = 20.0
    aligned = call(name, c * y, y, reduction="none")
    shuffled = call(name, c * y[:, perm], y, reduction="none")
    assert torch.all(aligned <= shuffled + 1e-6), (aligned, shuffled)


@pytest.mark.parametrize("name", [n for n in RANKING if n != "listnet"])
@PROPS
@given(data=st.data())
def test_scores_in_label_order_reach_the_infimum(name: str, data: st.DataObject) -> None:
    # tie-free labels: with ties, ApproxNDCG/NeuralNDCG cannot separate tied items (rank 1.5 each)
    s, y = data.draw(lists(name, tie_free=True))
    out = call(name, 20.0 * y, y, reduction="none")
    if name in ("approxndcg", "neuralndcg"):
        relevant = (y > 0).any(-1)
        infimum = torch.where(relevant, -1.0, 0.0).to(F64)
    else:
        infimum = torch.zeros_like(out)
    slack = 3.0 if name in ("hinge", "margin") else 0.0  # margins need gaps > margin / (20 * label gap)
    if slack:
        out = call(name, 20.0 * slack * y, y, reduction="none")
    assert torch.allclose(out, infimum, atol=1e-5), (out, infimum)


@pytest.mark.parametrize("target", ["softmax", "normalize", "raw"])
def test_listnet_minimum_is_the_target_entropy(target: str) -> None:
    y = torch.tensor([[3.0, 1.0, 0.5, 2.0]], dtype=F64)
    p = torch.softmax(y, -1) if target == "softmax" else y / y.sum()
    scale = y.sum() if target == "raw" else 1.0
    s = p.log().clone().requires_grad_(True)
    out = get_loss("listnet")(s, y, target=target)
    assert torch.allclose(out, -(p * p.log()).sum() * scale)
    out.backward()
    assert torch.allclose(s.grad, torch.zeros_like(s), atol=1e-12)
    for _ in range(20):
        other = torch.randn(1, 4, dtype=F64)
        assert get_loss("listnet")(other, y, target=target) >= out - 1e-12


@pytest.mark.parametrize("name", LISTWISE + PAIRWISE)
def test_training_step_moves_toward_label_order(name: str) -> None:
    """A few gradient steps from equal scores order a list correctly (sanity of gradient signs)."""
    y = fit_labels(name, torch.tensor([[0.0, 3.0, 1.0, 4.0, 2.0]], dtype=F64))
    s = torch.zeros(1, 5, dtype=F64, requires_grad=True)
    opt = torch.optim.SGD([s], lr=1.0)
    for _ in range(60):
        opt.zero_grad()
        call(name, s, y, reduction="sum").backward()
        opt.step()
    order = torch.argsort(s.detach()[0], descending=True).tolist()
    if name == "bradley_terry":  # only the best item is told apart
        assert order[0] == 3
    else:
        assert order == [3, 1, 4, 2, 0], order


def test_registry_covers_the_issue() -> None:
    wanted = {"mse", "sigmoid_ce", "bradley_terry", "ranknet", "hinge", "margin", "lambdarank", "listnet",
              "listmle", "approxndcg", "lambdaloss", "neuralndcg"}
    assert wanted <= set(LOSSES.names())


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_is_finite_and_close(name: str, dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(11)
    s = (torch.randn(4, 8, generator=gen) * 3).to(dtype).requires_grad_(True)
    y = fit_labels(name, torch.randint(0, 5, (4, 8), generator=gen).to(dtype))
    mask = torch.rand(4, 8, generator=gen) < 0.8
    out = call(name, s, y, mask=mask)
    out.backward()
    assert out.dtype == dtype and torch.isfinite(out) and torch.isfinite(s.grad).all()
    ref = call(name, s.detach().double(), y.double(), mask=mask)
    assert abs(out.item() - ref.item()) <= 0.05 * max(1.0, abs(ref.item()))
