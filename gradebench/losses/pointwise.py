"""Pointwise losses: each item is scored against its own label (``mse``, ``sigmoid_ce``).

Per list the loss is the **sum** over its valid items; ``reduction="mean"`` divides the batch
total by the number of valid items in the batch (rax ``pointwise_*_loss`` with
``reduce_fn=jnp.mean``); an all-masked batch gives 0.
"""

from __future__ import annotations

import torch

from gradebench.losses._common import check_reduction, prepare, reduce, softplus
from gradebench.losses._registry import register_loss


def _reduce_items(per_item: torch.Tensor, mask: torch.Tensor, reduction: str) -> torch.Tensor:
    """Sum ``per_item`` over the valid items of each list, then reduce over the valid items."""
    return reduce((per_item * mask).sum(-1), mask.sum(-1), reduction)


@register_loss(
    "mse",
    kind="pointwise",
    source="LiPO (Liu et al. 2024, seeds/004) Eq. 11 point-mse; core paper (seeds/000) MSE regression baseline",
    summary="squared error (s_i - y_i)^2 per item",
    peer="rax.pointwise_mse_loss (identical; reduce_fn=mean over valid items)",
)
def mse(
    scores: torch.Tensor,
    labels: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    reduction: str = "mean",
    validate: bool = True,
) -> torch.Tensor:
    r"""Mean squared error between scores and labels.

    Definition (LiPO, seeds/004 Eq. 11; the regression baseline of seeds/000):

    .. math:: \ell(s, y) = \sum_{i\ \mathrm{valid}} (s_i - y_i)^2

    Args:
        scores: ``[batch, list_size]`` floating tensor of model scores.
        labels: ``[batch, list_size]`` real labels (any finite value).
        mask: optional ``[batch, list_size]`` bool, True for valid items. Masked items do not
            affect the value and get zero gradient.
        reduction: ``"none"`` — ``[batch]`` per-list sums over valid items; ``"sum"`` — their
            total; ``"mean"`` — the total divided by the number of **valid items** in the batch
            (0 if there are none). This is rax's ``pointwise_mse_loss`` (``reduce_fn=jnp.mean``)
            and ``torch.nn.MSELoss`` on the valid items.
        validate: check that valid scores and labels are finite (one host sync). Pass False in
            a hot loop once the data are known to be clean.

    Returns:
        A scalar, or a ``[batch]`` tensor for ``reduction="none"``.

    Example:
        >>> import torch
        >>> s = torch.tensor([[1.0, 0.0, 2.0]]); y = torch.tensor([[1.0, 1.0, 0.0]])
        >>> round(float(mse(s, y)), 6)   # (0 + 1 + 4) / 3
        1.666667
    """
    check_reduction("mse", reduction)
    x = prepare("mse", scores, labels, mask, validate=validate)
    return _reduce_items(torch.square(x.scores - x.labels), x.mask, reduction)


@register_loss(
    "sigmoid_ce",
    kind="pointwise",
    source="LiPO (Liu et al. 2024, seeds/004) Eq. 12 point-sigmoid",
    summary="binary cross-entropy of sigmoid(s_i) against a label in [0, 1]",
    peer="rax.pointwise_sigmoid_loss (identical for labels in [0, 1]; reduce_fn=mean over valid items)",
)
def sigmoid_ce(
    scores: torch.Tensor,
    labels: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    reduction: str = "mean",
    validate: bool = True,
) -> torch.Tensor:
    r"""Sigmoid cross-entropy: each score is a logit for the probability given by its label.

    Definition (LiPO, seeds/004 Eq. 12):

    .. math:: \ell(s, y) = -\sum_{i\ \mathrm{valid}} y_i \log\sigma(s_i) + (1 - y_i)\log(1 - \sigma(s_i))

    computed stably as ``softplus(s) - y * s``.

    Args:
        scores: ``[batch, list_size]`` logits.
        labels: ``[batch, list_size]`` targets in ``[0, 1]`` (graded scores are used as soft
            targets). Values outside ``[0, 1]`` raise :class:`InvalidArgumentError`; rax silently
            clips them instead.
        mask: optional ``[batch, list_size]`` bool, True for valid items.
        reduction: ``"none"`` — ``[batch]`` per-list sums; ``"sum"``; ``"mean"`` — over **valid
            items** in the batch (rax ``pointwise_sigmoid_loss``, ``BCEWithLogitsLoss``).
        validate: check finiteness and the ``[0, 1]`` range of valid labels (one host sync).

    Example:
        >>> import torch
        >>> s = torch.tensor([[0.0, 0.0]]); y = torch.tensor([[1.0, 0.0]])
        >>> round(float(sigmoid_ce(s, y)), 6)   # log 2
        0.693147
    """
    check_reduction("sigmoid_ce", reduction)
    x = prepare(
        "sigmoid_ce", scores, labels, mask, validate=validate, label_min=0.0, label_max=1.0,
        label_rule="sigmoid_ce needs labels in [0, 1]",
    )
    return _reduce_items(softplus(x.scores) - x.labels * x.scores, x.mask, reduction)
