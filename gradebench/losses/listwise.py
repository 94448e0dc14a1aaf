"""Listwise losses: one value per list (``listnet``, ``listmle``, ``approxndcg``).

``reduction="mean"`` averages the per-list values over the lists that have at least one valid
item — rax's ``reduce_fn=jnp.mean`` for listwise losses; a list with valid items but nothing
relevant still counts (its value is whatever the definition gives, e.g. 0 for ListNet with
``target="normalize"``), an all-masked list contributes 0 and is not counted.
"""

from __future__ import annotations

import torch

from gradebench.errors import InvalidArgumentError
from gradebench.losses._common import (
    GAINS,
    check_choice,
    check_optional_int,
    check_positive,
    check_reduction,
    fill_invalid,
    fill_invalid_lowest,
    gains,
    minus_ndcg,
    positive_or_one,
    prepare,
    reduce,
)
from gradebench.losses._registry import register_loss

LISTNET_TARGETS: tuple[str, ...] = ("softmax", "normalize", "raw")


def _masked_log_softmax(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Log-softmax over the valid items of each list; 0 at masked items (never NaN)."""
    out = torch.log_softmax(fill_invalid_lowest(values, mask), dim=-1)
    return torch.where(mask, out, torch.zeros_like(out))


@register_loss(
    "listnet",
    kind="listwise",
    source="Cao et al. 2007 (ListNet, top-one); seeds/000 App. A.1 Eq. 1; seeds/003 §3.2 (KLD); LiPO Eq. 13 (softmax)",
    summary="softmax cross-entropy between a target distribution from the labels and softmax(scores)",
    peer="rax.softmax_loss (target='raw'; target='normalize' = label_fn=rax.utils.normalize_probabilities)",
)
def listnet(
    scores: torch.Tensor,
    labels: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    reduction: str = "mean",
    validate: bool = True,
    target: str = "softmax",
    temperature: float | None = None,
) -> torch.Tensor:
    r"""ListNet: cross-entropy between a label distribution and the softmax of the scores.

    Definition (Cao et al. 2007; seeds/000 Eq. 1):

    .. math:: \ell(s, y) = -\sum_{i\ \mathrm{valid}} P_y(i)\,\log\frac{e^{s_i}}{\sum_{j\ \mathrm{valid}} e^{s_j}}

    The target ``P_y`` is chosen by ``target``:

    * ``"softmax"`` (default, seeds/000 Eq. 1 and Cao et al.): ``P_y = softmax(y / T)`` over the
      valid items, ``T = temperature`` (default 1). Any finite labels. A list whose labels are
      all equal has the uniform target (its loss is not 0).
    * ``"normalize"`` (TF-Ranking, LiPO Eq. 13): ``P_y = y / Σ y`` (labels ``>= 0``). A list
      whose valid labels sum to 0 gives 0 (rax's ``normalize_probabilities`` would use a
      uniform target there instead; TF-Ranking gives it weight 0).
    * ``"raw"`` (rax ``softmax_loss`` default): ``P_y = y`` unnormalised (labels ``>= 0``), so a
      list weighs as much as its label sum; an all-zero list gives 0.

    Args:
        scores: ``[batch, list_size]`` floating scores.
        labels: ``[batch, list_size]`` labels (``>= 0`` for ``"normalize"`` and ``"raw"``).
        mask: optional ``[batch, list_size]`` bool, True for valid items; both softmaxes run over
            valid items only.
        reduction: ``"none"`` — ``[batch]`` per-list losses; ``"sum"``; ``"mean"`` — over lists
            with at least one valid item (rax ``softmax_loss`` default).
        validate: check finite scores/labels and the label sign the target needs (one sync).
        target: ``"softmax"``, ``"normalize"`` or ``"raw"``.
        temperature: ``T > 0`` for ``target="softmax"`` (default 1.0); an error with the other
            targets.

    Example:
        >>> import torch
        >>> s = torch.tensor([[0.0, 0.0]]); y = torch.tensor([[3.0, 1.0]])
        >>> round(float(listnet(s, y, target="normalize")), 6)   # -(0.75 + 0.25) log 0.5
        0.693147
    """
    check_reduction("listnet", reduction)
    check_choice("listnet", "target", target, LISTNET_TARGETS)
    if target == "softmax":
        t = 1.0 if temperature is None else check_positive("listnet", "temperature", temperature)
        x = prepare("listnet", scores, labels, mask, validate=validate)
        target_p = torch.exp(_masked_log_softmax(x.labels / t, x.mask)) * x.mask
    else:
        if temperature is not None:
            raise InvalidArgumentError(
                f"listnet: temperature applies only to target='softmax', got temperature={temperature!r} "
                f"with target={target!r}",
                hint="drop temperature or use target='softmax'",
            )
        x = prepare(
            "listnet", scores, labels, mask, validate=validate, label_min=0.0,
            label_rule=f"listnet target={target!r} needs labels >= 0",
        )
        target_p = x.labels
        if target == "normalize":
            total = target_p.sum(-1, keepdim=True)
            target_p = target_p / positive_or_one(total)
    per_list = (target_p * -_masked_log_softmax(x.scores, x.mask)).sum(-1)
    return reduce(per_list, x.mask.any(-1), reduction)


@register_loss(
    "listmle",
    kind="listwise",
    source="Xia et al. 2008 (ListMLE); seeds/003 §3.2 (likelihood); LiPO (seeds/004) Eq. 9 list-mle = DPO-PL",
    summary="negative Plackett-Luce log-likelihood of the label order",
    peer="rax.listmle_loss (seed=None gives rax's stable tie order, as rax without key)",
)
def listmle(
    scores: torch.Tensor,
    labels: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    reduction: str = "mean",
    validate: bool = True,
    seed: int | None = 0,
) -> torch.Tensor:
    r"""ListMLE: negative log-likelihood of the label order under a Plackett–Luce model.

    Definition (Xia et al. 2008; seeds/004 Eq. 9), with ``π`` the valid items sorted by
    decreasing label:

    .. math:: \ell(s, y) = -\sum_{k=1}^{n} \Bigl(s_{\pi(k)} - \log\sum_{m=k}^{n} e^{s_{\pi(m)}}\Bigr)

    computed with a reverse ``logcumsumexp``. **Ties** in the labels are broken by a random
    permutation drawn from a local ``torch.Generator`` seeded with ``seed`` (never the global
    RNG): the same ``(seed, batch size, list position)`` always gives the same order, and
    padding at the end of a list does not change it. Pass a different seed per step (e.g. the
    step number) to average over tie orders in training. ``seed=None`` keeps tied items in
    list order, as rax does without a ``key``; rax with a ``key`` draws its own (JAX) random
    order, which cannot be reproduced here.

    Args:
        scores: ``[batch, list_size]`` floating scores.
        labels: ``[batch, list_size]`` labels; only their order matters.
        mask: optional ``[batch, list_size]`` bool, True for valid items.
        reduction: ``"none"`` — ``[batch]`` per-list losses; ``"sum"``; ``"mean"`` — over lists
            with at least one valid item (rax ``listmle_loss`` default).
        validate: check valid scores/labels are finite (one host sync).
        seed: int seed for the tie-breaking permutation, or None for list order.

    Example:
        >>> import torch
        >>> s = torch.tensor([[0.0, 0.0]]); y = torch.tensor([[1.0, 0.0]])
        >>> round(float(listmle(s, y)), 6)   # -(0 - log 2) - (0 - 0)
        0.693147
    """
    check_reduction("listmle", reduction)
    seed = check_optional_int("listmle", "seed", seed, minimum=-(2**63))
    x = prepare("listmle", scores, labels, mask, validate=validate)
    bsz, n = x.scores.shape
    key = fill_invalid(x.labels, x.mask, float("-inf"))  # invalid items sort last
    if seed is None:
        order = torch.sort(key, dim=-1, descending=True, stable=True).indices
    else:
        gen = torch.Generator(device=x.scores.device)
        gen.manual_seed(seed % (2**64))
        # Drawn as [list_size, batch] and transposed, so a list's keys do not depend on how much
        # padding follows it.
        shuffle = torch.argsort(torch.rand((n, bsz), generator=gen, device=x.scores.device).T, dim=-1)
        order = shuffle.gather(-1, torch.sort(key.gather(-1, shuffle), dim=-1, descending=True, stable=True).indices)
    s_sorted = x.scores.gather(-1, order)
    m_sorted = x.mask.gather(-1, order)
    s_low = fill_invalid_lowest(s_sorted, m_sorted)
    tail_lse = torch.logcumsumexp(s_low.flip(-1), dim=-1).flip(-1)
    per_list = torch.where(m_sorted, tail_lse - s_sorted, torch.zeros_like(s_sorted)).sum(-1)
    return reduce(per_list, x.mask.any(-1), reduction)


@register_loss(
    "approxndcg",
    kind="listwise",
    source="Qin, Liu & Li 2010 (ApproxNDCG); Bruch et al. 2019; seeds/000 §4; seeds/003 §3.2",
    summary="minus NDCG with ranks replaced by a sigmoid approximation (temperature)",
    peer="rax.approx_t12n(rax.ndcg_metric, temperature=T) (identical)",
)
def approxndcg(
    scores: torch.Tensor,
    labels: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    reduction: str = "mean",
    validate: bool = True,
    temperature: float = 1.0,
    gain: str = "exp2",
) -> torch.Tensor:
    r"""ApproxNDCG: minus NDCG computed with smooth (sigmoid) approximate ranks.

    Definition (Qin et al. 2010; rax ``approx_t12n(ndcg_metric)``):

    .. math::
        \hat r_i = 1 + \sum_{j \ne i\ \mathrm{valid}} \sigma\Bigl(\frac{s_j - s_i}{T}\Bigr),\qquad
        \ell(s, y) = -\frac{1}{\mathrm{IDCG}} \sum_{i\ \mathrm{valid}} \frac{G_i}{\log_2(1 + \hat r_i)}

    with ``G = 2^y - 1`` (or ``y``) and IDCG the ideal DCG of the valid items. Qin et al.'s
    ``α`` is ``1 / T``. The loss lies in ``[-1, 0]``; its infimum -1 is approached by scores in
    label order as ``T -> 0`` or the score gaps grow. A list with no relevant item (IDCG = 0)
    gives 0 and still counts in the mean (rax; allRank instead drops it and would report 1 - NDCG).

    Args:
        scores: ``[batch, list_size]`` floating scores.
        labels: ``[batch, list_size]`` graded labels ``>= 0``.
        mask: optional ``[batch, list_size]`` bool, True for valid items.
        reduction: ``"none"`` — ``[batch]`` per-list values; ``"sum"``; ``"mean"`` — over lists
            with at least one valid item (rax).
        validate: check finite scores/labels and ``labels >= 0`` (one host sync).
        temperature: ``T > 0`` of the sigmoid (default 1.0, as rax and allRank's ``alpha=1``).
        gain: ``"exp2"`` (default) or ``"linear"``.

    Example:
        >>> import torch
        >>> s = torch.tensor([[0.0, 0.0]]); y = torch.tensor([[1.0, 0.0]])
        >>> round(float(approxndcg(s, y)), 6)   # -1 / log2(2.5)
        -0.756471
    """
    check_reduction("approxndcg", reduction)
    t = check_positive("approxndcg", "temperature", temperature)
    check_choice("approxndcg", "gain", gain, GAINS)
    x = prepare("approxndcg", scores, labels, mask, validate=validate, gain=gain)
    # [b, i, j] = sigmoid((s_j - s_i) / T), summed over valid j. The j = i term is sigmoid(0) = 1/2
    # for every i, so r_i = 1 + sum_{j != i} = 1/2 + sum_j: no [B, L, L] mask needed.
    step = torch.sigmoid((x.scores.unsqueeze(-2) - x.scores.unsqueeze(-1)) / t)
    approx_ranks = 0.5 + (step * x.mask.to(step.dtype).unsqueeze(-2)).sum(-1)
    g = gains(x.labels, gain) * x.mask
    dcg = (g / torch.log2(1.0 + approx_ranks)).sum(-1)
    return minus_ndcg(dcg, g, x.mask, reduction)
