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
    gains,
    ideal_dcg,
    inverse_log2_discounts,
    prepare,
    reduce,
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
    low = torch.tensor(torch.finfo(dtype).min, dtype=dtype, device=device)
    return torch.softmax(torch.where(cells, logits, low), dim=-1) * cells


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

    Cost: ``O(list_size^2)`` per list and per Sinkhorn round; the scaling is done on two
    vectors per list, so memory stays ``O(batch * list_size^2)``.

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
    # Sinkhorn scaling in vector form: sinkhorn(P) = diag(u) P diag(v), with the same column-then-row
    # order as allRank's alternating normalisation; empty rows/columns stay 0.
    u = torch.ones_like(x.scores)
    v = torch.ones_like(x.scores)
    # Matrix-vector products are written as broadcast multiply + sum: they are memory-bound
    # anyway, and this avoids batched BLAS calls, which are slow for many tiny matrices on CPU.
    for _ in range(iters):
        v = 1.0 / (p_hat * u.unsqueeze(-1)).sum(-2).clamp(min=_SINKHORN_EPS)
        u = 1.0 / (p_hat * v.unsqueeze(-2)).sum(-1).clamp(min=_SINKHORN_EPS)
    g = gains(x.labels, gain) * x.mask
    relaxed_gain = u * (p_hat * (v * g).unsqueeze(-2)).sum(-1)  # [B, L] gain at rank i
    size = x.scores.shape[-1]
    disc = inverse_log2_discounts(size, dtype=x.scores.dtype, device=x.scores.device)
    if k is not None and k < size:
        disc = torch.where(torch.arange(size, device=disc.device) < k, disc, torch.zeros_like(disc))
    dcg = (relaxed_gain * disc).sum(-1)
    idcg = ideal_dcg(g, x.mask, k)
    per_list = -dcg / torch.where(idcg > 0, idcg, torch.ones_like(idcg))
    return reduce(per_list, x.mask.any(-1), reduction)
