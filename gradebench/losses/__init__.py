"""Ranking losses in PyTorch: pure functions on ``[batch, list_size]`` tensors, registered by name.

Every loss has the signature::

    loss(scores, labels, *, mask=None, reduction="mean", validate=True, **params) -> Tensor

* ``mask`` (bool, True = valid item) handles ragged lists: masked items never affect the value
  and get exactly zero gradient, whatever junk (even NaN) the padding holds.
* ``reduction="none"`` gives one value per list (``[batch]``; for pointwise and pairwise
  losses the *sum* over the list's items or valid pairs), ``"sum"`` their total, and ``"mean"``
  the total divided by the number of units in the batch — valid items (pointwise), valid
  pairs ``y_i > y_j`` (pairwise) or lists with a valid item (listwise). This is rax's
  ``reduce_fn=jnp.mean`` with ``safe_reduce``: no unit at all gives 0, never NaN.
* Bad input raises :class:`~gradebench.errors.InvalidArgumentError` (shape mismatch, NaN/inf
  in valid scores or labels, labels a gain or target cannot take, bad parameters); an unknown
  name raises :class:`~gradebench.errors.UnknownNameError` with close matches. The value
  checks cost one host sync; ``validate=False`` skips them (shape and parameter checks stay).

Use :func:`get_loss` (or :data:`LOSSES`) to pick a loss by name; each entry carries metadata
(kind, source, peer, what "mean" averages over) from which docs are generated::

    >>> from gradebench.losses import get_loss
    >>> spec = get_loss("listnet")
    >>> spec.kind, spec.mean_over
    ('listwise', 'lists with at least one valid item')
"""

from __future__ import annotations

from gradebench.losses._registry import LOSSES, LossSpec, get_loss, loss_names, register_loss
from gradebench.losses.listwise import approxndcg, listmle, listnet
from gradebench.losses.neuralndcg import neural_sort, neuralndcg, sinkhorn_scaling
from gradebench.losses.pairwise import bradley_terry, hinge, lambdaloss, lambdarank, margin, ranknet
from gradebench.losses.pointwise import mse, sigmoid_ce

__all__ = [
    "LOSSES",
    "LossSpec",
    "get_loss",
    "loss_names",
    "loss_table",
    "register_loss",
    "mse",
    "sigmoid_ce",
    "bradley_terry",
    "ranknet",
    "hinge",
    "margin",
    "lambdarank",
    "lambdaloss",
    "listnet",
    "listmle",
    "approxndcg",
    "neuralndcg",
    "neural_sort",
    "sinkhorn_scaling",
]


def loss_table() -> str:
    """A Markdown table of every registered loss, generated from the registry metadata."""
    rows = [
        "| loss | kind | definition | params | `mean` averages over | source | cross-checked against |",
        "|---|---|---|---|---|---|---|",
    ]
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    for name, spec in LOSSES.items():
        params = ", ".join(f"`{k}={v!r}`" for k, v in spec.params.items()) or "—"
        rows.append(
            f"| `{name}` | {spec.kind} | {cell(spec.summary)} | {params} | {spec.mean_over} | {cell(spec.source)} "
            f"| {cell(spec.peer)} |"
        )
    return "\n".join(rows)
