"""Pairwise losses over pairs ``(i, j)`` of valid items with ``y_i > y_j``.

All are computed on ``[batch, list_size, list_size]`` pair tensors (no Python loop over pairs
or lists). Per list the loss is the **sum** over its valid pairs; ``reduction="mean"`` divides
the batch total by the number of valid pairs in the batch — rax's ``pairwise_*_loss`` with
``reduce_fn=jnp.mean`` (also TF-Ranking's ``SUM_BY_NONZERO_WEIGHTS`` and allRank's RankNet). A
batch with no valid pair (all labels tied, or everything masked) gives 0, never NaN.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from gradebench.losses._common import (
    GAINS,
    Inputs,
    check_choice,
    check_nonnegative,
    check_reduction,
    fill_invalid,
    gains,
    ideal_dcg,
    pair_diffs,
    pair_mask,
    positive_or_one,
    prepare,
    ranks_by_score,
    reduce,
    softplus,
)
from gradebench.losses._registry import register_loss


def _reduce_pairs(
    pair_losses: torch.Tensor, pairs: torch.Tensor, reduction: str, weights: torch.Tensor | None = None
) -> torch.Tensor:
    """Sum ``pair_losses`` over the valid pairs of each list (weighted), then reduce.

    ``pairs`` is the float 0/1 pair mask (see :func:`_float_pairs`); ``weights``, if given,
    must already be 0 outside the valid pairs. Multiplying by a float mask and summing it are
    much faster than ``torch.where`` and a bool reduction on ``[B, L, L]`` tensors.
    """
    w = pairs if weights is None else weights
    return reduce((pair_losses * w).sum((-2, -1)), pairs.sum((-2, -1)), reduction)


def _float_pairs(x: Inputs) -> torch.Tensor:
    """``[B, L, L]`` float 0/1: 1 where ``y_i > y_j`` and both items are valid."""
    return pair_mask(x.labels, x.mask).to(x.scores.dtype)


def _logistic(x: Inputs) -> torch.Tensor:
    """``[B, L, L]``: ``log(1 + exp(-(s_i - s_j)))``, stable for any magnitude."""
    return softplus(x.scores.unsqueeze(-2) - x.scores.unsqueeze(-1))  # s_j - s_i


@register_loss(
    "ranknet",
    kind="pairwise",
    source="Burges et al. 2005 (RankNet); seeds/000 App. A.1 Eq. 2; seeds/003 §3.2; LiPO (seeds/004) Eq. 5 pair-logistic = DPO-BT",
    summary="pairwise logistic loss log(1 + exp(-(s_i - s_j))) over all pairs with y_i > y_j",
    peer="rax.pairwise_logistic_loss (identical, reduce_fn=mean over valid pairs)",
)
def ranknet(
    scores: torch.Tensor,
    labels: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    reduction: str = "mean",
    validate: bool = True,
) -> torch.Tensor:
    r"""RankNet: pairwise logistic loss over every pair with different labels.

    Definition (Burges et al. 2005; seeds/000 Eq. 2; seeds/004 Eq. 5):

    .. math:: \ell(s, y) = \sum_{y_i > y_j} \log\bigl(1 + e^{-(s_i - s_j)}\bigr)
              = -\sum_{y_i > y_j} \log\sigma(s_i - s_j)

    Args:
        scores: ``[batch, list_size]`` floating scores.
        labels: ``[batch, list_size]`` labels; only their order matters (any finite values).
        mask: optional ``[batch, list_size]`` bool, True for valid items.
        reduction: ``"none"`` — ``[batch]`` per-list sums over valid pairs; ``"sum"``;
            ``"mean"`` — total over the number of **valid pairs in the batch** (rax
            ``pairwise_logistic_loss`` default; 0 when there is no pair).
        validate: check valid scores/labels are finite (one host sync).

    Example:
        >>> import torch
        >>> s = torch.tensor([[2.0, 0.0, 1.0]]); y = torch.tensor([[2.0, 0.0, 0.0]])
        >>> round(float(ranknet(s, y)), 6)   # (log(1+e^-2) + log(1+e^-1)) / 2
        0.220095
    """
    check_reduction("ranknet", reduction)
    x = prepare("ranknet", scores, labels, mask, validate=validate)
    return _reduce_pairs(_logistic(x), _float_pairs(x), reduction)


@register_loss(
    "bradley_terry",
    kind="pairwise",
    source="Bradley & Terry 1952; DPO (Rafailov et al. 2023) as the core paper's binary baseline (seeds/000 §4); LiPO Prop. 2.1",
    summary="logistic loss of the best candidate against each lower-labelled candidate",
    peer="rax.pairwise_logistic_loss on the best-vs-rest pairs (K=2: identical to ranknet)",
)
def bradley_terry(
    scores: torch.Tensor,
    labels: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    reduction: str = "mean",
    validate: bool = True,
) -> torch.Tensor:
    r"""Bradley–Terry binary preference: the best candidate against each other one.

    With ``w`` the valid items holding the list's highest label:

    .. math:: \ell(s, y) = -\sum_{i \in w}\ \sum_{j:\ y_j < y_i} \log\sigma(s_i - s_j)

    With one best item this is DPO's BT loss applied to the ``K - 1`` pairs (best, other);
    if several items tie for the best label each of them is a winner (tied winners are not
    compared), which keeps the loss independent of item order. For ``K = 2`` it equals
    :func:`ranknet` (LiPO Prop. 2.1).

    Args:
        scores: ``[batch, list_size]`` floating scores.
        labels: ``[batch, list_size]`` labels; only their order matters.
        mask: optional ``[batch, list_size]`` bool, True for valid items.
        reduction: ``"none"`` — ``[batch]`` per-list sums over the (best, other) pairs;
            ``"sum"``; ``"mean"`` — over the number of such **pairs in the batch** (rax pairwise
            convention; 0 when no list has a strictly lower item).
        validate: check valid scores/labels are finite (one host sync).

    Example:
        >>> import torch
        >>> s = torch.tensor([[1.0, 1.0, 0.0]]); y = torch.tensor([[2.0, 1.0, 0.0]])
        >>> round(float(bradley_terry(s, y)), 6)   # (log 2 + log(1+e^-1)) / 2
        0.503204
    """
    check_reduction("bradley_terry", reduction)
    x = prepare("bradley_terry", scores, labels, mask, validate=validate)
    best = fill_invalid(x.labels, x.mask, float("-inf")).amax(-1, keepdim=True)
    winners = x.mask & (x.labels == best)
    pairs = (pair_mask(x.labels, x.mask) & winners.unsqueeze(-1)).to(x.scores.dtype)
    return _reduce_pairs(_logistic(x), pairs, reduction)


def _hinge(name: str, scores, labels, mask, reduction, validate, margin) -> torch.Tensor:  # noqa: ANN001
    check_reduction(name, reduction)
    gamma = check_nonnegative(name, "margin", margin)
    x = prepare(name, scores, labels, mask, validate=validate)
    return _reduce_pairs(F.relu(gamma - pair_diffs(x.scores)), _float_pairs(x), reduction)


@register_loss(
    "hinge",
    kind="pairwise",
    source="Herbrich et al. 2000 / Joachims 2002 (RankSVM); seeds/003 §3.2; LiPO (seeds/004) Eq. 7 pair-hinge = SLiC-norm",
    summary="pairwise hinge max(0, margin - (s_i - s_j)) over all pairs with y_i > y_j",
    peer="rax.pairwise_hinge_loss (identical at margin=1; margin m equals m * rax(scores / m))",
)
def hinge(
    scores: torch.Tensor,
    labels: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    reduction: str = "mean",
    validate: bool = True,
    margin: float = 1.0,
) -> torch.Tensor:
    r"""RankSVM / SLiC pairwise hinge loss.

    Definition (RankSVM; seeds/004 Eq. 7 with margin 1):

    .. math:: \ell(s, y) = \sum_{y_i > y_j} \max\bigl(0,\ m - (s_i - s_j)\bigr)

    Args:
        scores: ``[batch, list_size]`` floating scores.
        labels: ``[batch, list_size]`` labels; only their order matters.
        mask: optional ``[batch, list_size]`` bool, True for valid items.
        reduction: ``"none"`` — per-list sums over valid pairs; ``"sum"``; ``"mean"`` — over
            **valid pairs in the batch** (rax ``pairwise_hinge_loss``).
        validate: check valid scores/labels are finite (one host sync).
        margin: ``m >= 0`` (default 1, as in RankSVM, SLiC and rax).

    Example:
        >>> import torch
        >>> s = torch.tensor([[0.5, 0.0, 2.0]]); y = torch.tensor([[1.0, 0.0, 0.0]])
        >>> round(float(hinge(s, y)), 6)   # (max(0, 1-0.5) + max(0, 1+1.5)) / 2
        1.5
    """
    return _hinge("hinge", scores, labels, mask, reduction, validate, margin)


@register_loss(
    "margin",
    kind="pairwise",
    source="Atapour-Abarghouei et al., Rank over class (seeds/002) §3.2 Eq. 2, gamma = 2",
    summary="margin ranking loss max(0, -E (f(x1) - f(x2)) + gamma) over all pairs with different labels",
    peer="torch.nn.MarginRankingLoss per pair; = hinge(margin=gamma)",
)
def margin(
    scores: torch.Tensor,
    labels: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    reduction: str = "mean",
    validate: bool = True,
    margin: float = 2.0,
) -> torch.Tensor:
    r"""Margin ranking loss of "Rank over class" (seeds/002 §3.2).

    Definition (seeds/002 Eq. 2), over pairs of valid items with different labels, with
    ``E = +1`` if ``p_i`` is ranked higher (larger label) and ``-1`` otherwise:

    .. math:: \ell = \sum_{(p_i, p_j)} \max\bigl(0,\ -E(p_i, p_j)\,(f(p_i) - f(p_j)) + \gamma\bigr)

    Each unordered pair is counted once; both of its orientations give the same value, so this
    is mathematically :func:`hinge` with ``margin = gamma`` (and ``torch.nn.MarginRankingLoss``
    applied to every pair). It is registered separately with the paper's default
    ``gamma = 2`` (its best value, Table 7) so results name the loss the paper used.

    Args:
        scores: ``[batch, list_size]`` floating scores.
        labels: ``[batch, list_size]`` labels; only their order matters.
        mask: optional ``[batch, list_size]`` bool, True for valid items.
        reduction: ``"none"`` — per-list sums over valid pairs; ``"sum"``; ``"mean"`` — over
            **valid pairs in the batch** (``MarginRankingLoss``'s mean over pairs).
        validate: check valid scores/labels are finite (one host sync).
        margin: ``gamma >= 0`` (default 2.0 as in the paper; 0 makes the loss blind to how far
            apart the scores are).

    Example:
        >>> import torch
        >>> s = torch.tensor([[1.0, 0.0]]); y = torch.tensor([[1.0, 0.0]])
        >>> float(margin(s, y))   # max(0, -(1 - 0) + 2)
        1.0
    """
    return _hinge("margin", scores, labels, mask, reduction, validate, margin)


def _lambda_weighted(
    name: str, scores, labels, mask, reduction, validate, gain, normalize: bool  # noqa: ANN001
) -> torch.Tensor:
    check_reduction(name, reduction)
    check_choice(name, "gain", gain, GAINS)
    x = prepare(name, scores, labels, mask, validate=validate, gain=gain)
    pairs = _float_pairs(x)
    with torch.no_grad():
        g = gains(x.labels, gain)
        if normalize:
            idcg = ideal_dcg(g, x.mask)
            g = g / positive_or_one(idcg).unsqueeze(-1)
        inv_disc = 1.0 / torch.log2(1.0 + ranks_by_score(x.scores, x.labels, x.mask).to(x.scores.dtype))
        # On valid pairs y_i > y_j, so G_i - G_j >= 0 needs no abs(); other pairs are zeroed.
        weights = g.unsqueeze(-1) - g.unsqueeze(-2)
        weights.mul_((inv_disc.unsqueeze(-1) - inv_disc.unsqueeze(-2)).abs_()).mul_(pairs)
    return _reduce_pairs(_logistic(x), pairs, reduction, weights)


@register_loss(
    "lambdarank",
    kind="pairwise",
    source="Burges et al. 2006/2010 (LambdaRank); seeds/000 App. A.1 Eq. 3; seeds/003 §3.2",
    summary="pairwise logistic loss weighted by |delta NDCG| of swapping i and j under the current ranking",
    peer="rax.pairwise_logistic_loss(lambdaweight_fn=partial(rax.dcg_lambdaweight, normalize=True)) / list_size",
)
def lambdarank(
    scores: torch.Tensor,
    labels: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    reduction: str = "mean",
    validate: bool = True,
    gain: str = "exp2",
) -> torch.Tensor:
    r"""LambdaRank: pairwise logistic loss weighted by the NDCG change of swapping the pair.

    Definition (Burges 2010; seeds/003 §3.2; seeds/000 Eq. 3 gives its gradient):

    .. math::
        \ell(s, y) = \sum_{y_i > y_j} |\Delta\mathrm{NDCG}_{ij}|\,\log\bigl(1 + e^{-(s_i - s_j)}\bigr),
        \qquad
        |\Delta\mathrm{NDCG}_{ij}| = \frac{|G_i - G_j|\,\bigl|1/D(r_i) - 1/D(r_j)\bigr|}{\mathrm{IDCG}}

    with ``G = 2^y - 1`` (or ``y``), ``D(r) = log2(1 + r)``, ``r`` the 1-based rank under the
    current scores, and IDCG the ideal DCG of the list's valid items (1 if it is 0). The
    weights are computed without gradient, so ``d loss / d s_i`` is the LambdaRank lambda
    ``-|ΔNDCG_ij| / (1 + exp(s_i - s_j))`` of seeds/000 Eq. 3. Score ties are ranked
    pessimistically (lower label first), so the value does not depend on item order.

    Args:
        scores: ``[batch, list_size]`` floating scores.
        labels: ``[batch, list_size]`` graded labels ``>= 0``.
        mask: optional ``[batch, list_size]`` bool, True for valid items; ranks and IDCG are
            computed over valid items only.
        reduction: ``"none"`` — per-list weighted sums; ``"sum"``; ``"mean"`` — over the
            number of **valid pairs** (``y_i > y_j``) in the batch, as rax does for
            lambda-weighted pairwise losses. rax's ``dcg_lambdaweight`` also multiplies every
            weight by the (padded) list size; gradebench does not, because that would make
            padding change the loss: rax value = ``list_size * lambdarank``.
        validate: check finite scores/labels and ``0 <= labels`` (one host sync).
        gain: ``"exp2"`` (``2^y - 1``, default, rax/TF-Ranking) or ``"linear"`` (``y``).

    Example:
        >>> import torch
        >>> s = torch.tensor([[0.0, 1.0]]); y = torch.tensor([[1.0, 0.0]])
        >>> round(float(lambdarank(s, y)), 6)   # (1 - 1/log2 3) * log(1 + e)
        0.484686
    """
    return _lambda_weighted("lambdarank", scores, labels, mask, reduction, validate, gain, normalize=True)


@register_loss(
    "lambdaloss",
    kind="pairwise",
    source="LiPO-lambda (Liu et al. 2024, seeds/004 §3 Eq. 10); LambdaLoss (Wang et al. 2018)",
    summary="pairwise logistic loss weighted by |G_i - G_j| |1/D(tau_i) - 1/D(tau_j)| (ranks under current scores)",
    peer="rax.pairwise_logistic_loss(lambdaweight_fn=rax.dcg_lambdaweight) / list_size (LiPO App. C)",
)
def lambdaloss(
    scores: torch.Tensor,
    labels: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    reduction: str = "mean",
    validate: bool = True,
    gain: str = "exp2",
) -> torch.Tensor:
    r"""LiPO-λ: the LambdaLoss objective of LiPO (seeds/004 §3).

    Definition (seeds/004 Eq. 10, whose leading minus sign is a typo — the loss is minimised):

    .. math::
        \ell(s, y) = \sum_{y_i > y_j} \Delta_{ij}\,\log\bigl(1 + e^{-(s_i - s_j)}\bigr),
        \qquad \Delta_{ij} = |G_i - G_j|\cdot\Bigl|\frac{1}{D(\tau_i)} - \frac{1}{D(\tau_j)}\Bigr|

    with ``G = 2^y - 1``, ``D(τ) = log2(1 + τ)`` and ``τ_i`` the 1-based rank of item ``i``
    under the **current scores** (computed without gradient; score ties ranked pessimistically,
    lower label first). Unlike :func:`lambdarank` the weights are not divided by the ideal DCG,
    so label values and list size scale the loss (LiPO: "gains grow with list size").

    Args:
        scores: ``[batch, list_size]`` floating scores.
        labels: ``[batch, list_size]`` graded labels ``>= 0`` (LiPO uses ψ in [0, 1]).
        mask: optional ``[batch, list_size]`` bool, True for valid items.
        reduction: ``"none"`` — per-list weighted sums; ``"sum"``; ``"mean"`` — over the number
            of **valid pairs** (``y_i > y_j``) in the batch, as rax. LiPO computes this loss with
            ``rax.pairwise_logistic_loss(..., lambdaweight_fn=rax.dcg_lambdaweight)`` (its
            App. C), whose weights carry an extra factor of the padded list size; gradebench
            follows Eq. 10 without it: rax value = ``list_size * lambdaloss``.
        validate: check finite scores/labels and ``0 <= labels`` (one host sync).
        gain: ``"exp2"`` (``2^y - 1``, default) or ``"linear"``.

    Example:
        >>> import torch
        >>> s = torch.tensor([[0.0, 1.0]]); y = torch.tensor([[1.0, 0.0]])
        >>> round(float(lambdaloss(s, y)), 6)   # 1 * (1 - 1/log2 3) * log(1 + e)
        0.484686
    """
    return _lambda_weighted("lambdaloss", scores, labels, mask, reduction, validate, gain, normalize=False)
