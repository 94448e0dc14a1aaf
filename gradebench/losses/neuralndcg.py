"""NeuralNDCG (Pobrotyn & Białobrzeski 2021): NDCG through a NeuralSort relaxation of sorting."""

from __future__ import annotations

import torch

from gradebench.losses._common import (
    GAINS,
    check_choice,
    check_int,
    check_optional_int,
    check_positive,
    check_reduction,
    fill_invalid_lowest,
    gains,
    inverse_log2_discounts,
    minus_ndcg,
    prepare,
)
from gradebench.losses._registry import register_loss

_SINKHORN_EPS = 1e-10  # allRank's DEFAULT_EPS: floor for row/column sums


def neural_sort(scores: torch.Tensor, mask: torch.Tensor, temperature: float) -> torch.Tensor:
    r"""Deterministic NeuralSort (Grover et al. 2019), restricted to the valid items of each list.

    For a list with ``n`` valid items, row ``i = 1..n`` of the returned ``[B, L, L]`` matrix is

    .. math:: \hat P_{i,:} = \mathrm{softmax}\Bigl(\bigl((n + 1 - 2i)\,s - A_s \mathbb{1}\bigr) / \tau\Bigr),
              \qquad (A_s)_{jk} = |s_j - s_k|

    over the valid columns; rows ``i > n`` and masked columns are 0. Row ``i`` is a relaxed
    one-hot of the item at rank ``i`` (unimodal, row-stochastic). Computing it over the valid
    items only (``n`` per list) makes it identical to running it on the sliced list.
    """
    bsz, size = scores.shape
    dtype, device = scores.dtype, scores.device
    n = mask.sum(-1, keepdim=True)
    valid = mask.to(dtype).unsqueeze(-2)
    spread = ((scores.unsqueeze(-1) - scores.unsqueeze(-2)).abs() * valid).sum(-1)  # [B, L] (A_s 1)_j
    positions = torch.arange(1, size + 1, device=device)
    coef = (n + 1 - 2 * positions).to(dtype)  # [B, L] one per row i
    logits = (coef.unsqueeze(-1) * scores.unsqueeze(-2) - spread.unsqueeze(-2)) / temperature
    cells = (positions <= n).unsqueeze(-1) & mask.unsqueeze(-2)
    return torch.softmax(fill_invalid_lowest(logits, cells), dim=-1) * cells


def _matvec(p: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``[B, L]``: ``P x`` per list (broadcast multiply + sum; batched BLAS is slow for tiny matrices on CPU)."""
    return (p * x.unsqueeze(-2)).sum(-1)


def _rmatvec(p: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``[B, L]``: ``P^T x`` per list."""
    return (p * x.unsqueeze(-1)).sum(-2)


class _Sinkhorn(torch.autograd.Function):
    """Sinkhorn scaling vectors with a memory-light backward.

    Forward: ``v_t = 1 / max(P^T u_{t-1}, eps)``, ``u_t = 1 / max(P v_t, eps)``, ``u_0 = 1``, for
    ``t = 1..T``; returns ``(u_T, v_T)``. Autograd through the loop would keep ``2T`` tensors of
    shape ``[B, L, L]``; this backward keeps only ``[T, B, L]`` vectors, runs the loop in reverse
    with vector adjoints, and forms ``dL/dP = sum_t (outer products)`` as one batched matmul.
    """

    @staticmethod
    def forward(ctx, p: torch.Tensor, iters: int):  # noqa: ANN001, ANN205
        eps = max(_SINKHORN_EPS, torch.finfo(p.dtype).tiny)  # 1e-10 underflows in float16
        u = torch.ones(p.shape[:-1], dtype=p.dtype, device=p.device)
        us, vs, cols, rows = [u], [], [], []
        for _ in range(iters):
            col = _rmatvec(p, u)
            v = 1.0 / col.clamp(min=eps)
            row = _matvec(p, v)
            u = 1.0 / row.clamp(min=eps)
            us.append(u), vs.append(v), cols.append(col), rows.append(row)
        v_out = vs[-1] if vs else torch.ones_like(u)
        ctx.iters, ctx.eps = iters, eps
        if iters:
            ctx.save_for_backward(p, torch.stack(us), torch.stack(vs), torch.stack(cols), torch.stack(rows))
        return u, v_out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_u: torch.Tensor, grad_v: torch.Tensor):  # noqa: ANN205
        if ctx.iters == 0:
            return None, None
        p, us, vs, cols, rows = ctx.saved_tensors
        zero = torch.zeros((), dtype=p.dtype, device=p.device)
        u_bar, v_bar = grad_u, grad_v
        left, right = [], []  # dL/dP = sum_k left_k (outer) right_k
        for t in range(ctx.iters - 1, -1, -1):
            # u_t = 1 / max(row_t, eps), row_t = P v_t
            row_bar = torch.where(rows[t] >= ctx.eps, -u_bar * us[t + 1] * us[t + 1], zero)
            left.append(row_bar), right.append(vs[t])
            v_bar = v_bar + _rmatvec(p, row_bar)
            # v_t = 1 / max(col_t, eps), col_t = P^T u_{t-1}
            col_bar = torch.where(cols[t] >= ctx.eps, -v_bar * vs[t] * vs[t], zero)
            left.append(us[t]), right.append(col_bar)
            u_bar = _matvec(p, col_bar)
            v_bar = torch.zeros_like(v_bar)  # v_{t-1} feeds nothing but the next u
        grad_p = torch.bmm(torch.stack(left, -1), torch.stack(right, -2))
        return grad_p, None


def sinkhorn_scaling(p: torch.Tensor, iters: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaling vectors ``(u, v)`` with ``diag(u) P diag(v)`` ≈ doubly stochastic (``[B, L, L]`` ``P``).

    ``iters`` rounds of column then row normalisation, as allRank's ``sinkhorn_scaling`` (sums
    floored at 1e-10, so all-zero rows/columns of padding stay 0), in vector form. The result
    ends row-normalised. Differentiable w.r.t. ``p`` with O(iters * B * L) saved memory.
    """
    return _Sinkhorn.apply(p, iters)


@register_loss(
    "neuralndcg",
    kind="listwise",
    source="Pobrotyn & Białobrzeski 2021 (NeuralNDCG, arXiv:2102.07831); NeuralSort: Grover et al. 2019",
    summary="minus NDCG computed with a Sinkhorn-scaled NeuralSort relaxation of the sorting permutation",
    peer="allRank neuralNDCG (not installed; tested against a direct NumPy implementation and exact NDCG as T->0)",
)
def neuralndcg(
    scores: torch.Tensor,
    labels: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    reduction: str = "mean",
    validate: bool = True,
    temperature: float = 1.0,
    gain: str = "exp2",
    k: int | None = None,
    sinkhorn_iters: int = 50,
) -> torch.Tensor:
    r"""NeuralNDCG: minus NDCG(@k) with the sort replaced by a NeuralSort relaxation.

    Definition (Pobrotyn & Białobrzeski 2021, Eq. 8; the non-transposed variant):

    .. math:: \ell(s, y) = -\frac{1}{\mathrm{IDCG@k}} \sum_{i=1}^{\min(k, n)}
              \bigl(\mathrm{sinkhorn}(\hat P)\, G\bigr)_i \,\frac{1}{\log_2(1 + i)}

    where ``P̂`` is the NeuralSort matrix of the scores (:func:`neural_sort`, temperature
    ``τ``), made doubly stochastic by ``sinkhorn_iters`` rounds of Sinkhorn scaling (column
    then row normalisation, as allRank; a fixed count, so there is no data-dependent early stop
    and no host sync), and ``G = 2^y - 1`` (or ``y``). ``(P̂ G)_i`` is the relaxed gain at rank
    ``i``. As ``τ -> 0`` the loss tends to ``-NDCG@k`` of the ranking by score; its infimum -1
    is reached by scores in label order.

    Args:
        scores: ``[batch, list_size]`` floating scores.
        labels: ``[batch, list_size]`` graded labels ``>= 0``.
        mask: optional ``[batch, list_size]`` bool, True for valid items. NeuralSort, Sinkhorn
            and IDCG use the valid items only, so padding never changes the value (allRank
            pads at the end and uses the same per-list ``n``).
        reduction: ``"none"`` — ``[batch]`` per-list values; ``"sum"``; ``"mean"`` — over lists
            with at least one valid item; a list with no relevant item gives 0 and counts
            (rax convention; allRank's mean skips such lists).
        validate: check finite scores/labels and ``labels >= 0`` (one host sync).
        temperature: NeuralSort ``τ > 0`` (default 1.0, as allRank).
        gain: ``"exp2"`` (default, allRank ``powered_relevancies=True``) or ``"linear"``.
        k: truncation rank (``None`` = whole list).
        sinkhorn_iters: Sinkhorn rounds (default 50, allRank's ``max_iter``).

    Cost: ``O(sinkhorn_iters * list_size^2)`` per list. The Sinkhorn rounds run on two scaling
    vectors per list with a hand-written backward (:func:`sinkhorn_scaling`), so memory is one
    ``[batch, list_size, list_size]`` matrix plus ``O(sinkhorn_iters * batch * list_size)``,
    not one matrix per round as with autograd through the loop.

    Example:
        >>> import torch
        >>> s = torch.tensor([[2.0, 0.0]]); y = torch.tensor([[1.0, 0.0]])
        >>> round(float(neuralndcg(s, y, temperature=0.01)), 6)   # sorted correctly: -NDCG = -1
        -1.0
    """
    check_reduction("neuralndcg", reduction)
    tau = check_positive("neuralndcg", "temperature", temperature)
    check_choice("neuralndcg", "gain", gain, GAINS)
    k = check_optional_int("neuralndcg", "k", k, minimum=1)
    iters = check_int("neuralndcg", "sinkhorn_iters", sinkhorn_iters, minimum=0)
    x = prepare("neuralndcg", scores, labels, mask, validate=validate, gain=gain)
    p_hat = neural_sort(x.scores, x.mask, tau)
    u, v = sinkhorn_scaling(p_hat, iters)
    g = gains(x.labels, gain) * x.mask
    relaxed_gain = u * (p_hat * (v * g).unsqueeze(-2)).sum(-1)  # [B, L] gain at rank i
    disc = inverse_log2_discounts(x.scores.shape[-1], dtype=x.scores.dtype, device=x.scores.device, k=k)
    return minus_ndcg((relaxed_gain * disc).sum(-1), g, x.mask, reduction, k)
