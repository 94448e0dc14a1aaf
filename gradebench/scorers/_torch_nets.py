"""The torch modules of the hashed-feature scorers (imported only when one is built).

Inputs are sparse bags in ``nn.EmbeddingBag`` form (``*_idx`` column ids, ``*_off`` row
offsets, ``*_w`` values; see :func:`gradebench.scorers._torch_common.batch_tensors`) plus
``dense [B, W, n_dense]`` and ``mask [B, W]``; every module returns ``[B, W]`` scores. No
BatchNorm anywhere: a candidate's score depends only on its own list (and for ``pair-mlp`` on the
real candidates of that list), never on the other lists of a batch or on padding.
"""

from __future__ import annotations

import torch
from torch import nn


class LinearBag(nn.Module):
    """``score = w . x_candidate + b``: a linear model over hashed candidate features (query-blind)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.weight = nn.EmbeddingBag(dim, 1, mode="sum")
        self.bias = nn.Parameter(torch.zeros(()))

    def forward(self, mask: torch.Tensor, c_idx: torch.Tensor, c_off: torch.Tensor, c_w: torch.Tensor,
                **_: torch.Tensor) -> torch.Tensor:
        b, w = mask.shape
        return self.weight(c_idx, c_off, per_sample_weights=c_w).view(b, w) + self.bias


class HashedEncoder(nn.Module):
    """Query, candidate and interaction features of each candidate -> a ``hidden``-dim vector.

    ``q`` and ``c`` share one text ``EmbeddingBag`` (so ``q * c`` compares them in one space);
    shared words have their own bag; the dense features a linear projection. The MLP reads
    ``[c, q * c, |q - c|, shared, dense]`` (``5 * embed_dim``) through ``layers`` blocks of
    Linear-ReLU-Dropout.
    """

    def __init__(self, *, dim: int, shared_dim: int, n_dense: int, embed_dim: int, hidden: int,
                 layers: int, dropout: float) -> None:
        super().__init__()
        self.text = nn.EmbeddingBag(dim, embed_dim, mode="sum")
        self.shared = nn.EmbeddingBag(shared_dim, embed_dim, mode="sum")
        self.dense = nn.Linear(n_dense, embed_dim)
        blocks: list[nn.Module] = []
        width = 5 * embed_dim
        for _ in range(layers):
            blocks += [nn.Linear(width, hidden), nn.ReLU(), nn.Dropout(dropout)]
            width = hidden
        self.mlp = nn.Sequential(*blocks)
        self.out_dim = width

    def forward(self, mask: torch.Tensor, q_idx: torch.Tensor, q_off: torch.Tensor, q_w: torch.Tensor,
                c_idx: torch.Tensor, c_off: torch.Tensor, c_w: torch.Tensor, s_idx: torch.Tensor,
                s_off: torch.Tensor, s_w: torch.Tensor, dense: torch.Tensor) -> torch.Tensor:
        b, w = mask.shape
        q = self.text(q_idx, q_off, per_sample_weights=q_w)[:, None, :]
        c = self.text(c_idx, c_off, per_sample_weights=c_w).view(b, w, -1)
        s = self.shared(s_idx, s_off, per_sample_weights=s_w).view(b, w, -1)
        d = self.dense(dense)
        q = q.expand_as(c)
        return self.mlp(torch.cat([c, q * c, (q - c).abs(), s, d], dim=-1))


class HashedMLPNet(nn.Module):
    """``hashed-mlp``: :class:`HashedEncoder` then a linear score."""

    def __init__(self, **encoder: int | float) -> None:
        super().__init__()
        self.encoder = HashedEncoder(**encoder)
        self.score = nn.Linear(self.encoder.out_dim, 1)

    def forward(self, mask: torch.Tensor, **features: torch.Tensor) -> torch.Tensor:
        return self.score(self.encoder(mask, **features)).squeeze(-1)


class PairMLPNet(nn.Module):
    """``pair-mlp``: a shared encoder, then a context-aggregating MLP over candidate pairs.

    ``h(i, j) = MLP([e_i, e_j, e_i - e_j, e_i * e_j])`` (``pair_layers`` blocks of
    Linear-PReLU-Dropout, then Linear to one value); the pair logit
    ``g(i, j) = h(i, j) - h(j, i)`` is antisymmetric, so ``P(i > j) = sigmoid(g(i, j)) =
    1 - P(j > i)`` exactly. A candidate's score is its mean logit against the other real
    candidates of its list, ``s_i = mean_{j != i, mask_j} g(i, j)`` (0 for a list of one).
    """

    def __init__(self, *, pair_hidden: int, pair_layers: int, **encoder: int | float) -> None:
        super().__init__()
        self.encoder = HashedEncoder(**encoder)
        e = self.encoder.out_dim
        dropout = float(encoder["dropout"])
        blocks: list[nn.Module] = []
        width = 4 * e
        for _ in range(pair_layers):
            blocks += [nn.Linear(width, pair_hidden), nn.PReLU(), nn.Dropout(dropout)]
            width = pair_hidden
        blocks.append(nn.Linear(width, 1))
        self.head = nn.Sequential(*blocks)

    def _h(self, ei: torch.Tensor, ej: torch.Tensor) -> torch.Tensor:
        return self.head(torch.cat([ei, ej, ei - ej, ei * ej], dim=-1)).squeeze(-1)

    def pair_logits(self, e: torch.Tensor, i: torch.Tensor, j: torch.Tensor) -> torch.Tensor:
        """``g(i, j)`` for index vectors ``i``, ``j`` over the list axis: ``[B, len(i)]``."""
        ei, ej = e[:, i], e[:, j]
        h = self._h(torch.cat([ei, ej], dim=1), torch.cat([ej, ei], dim=1))  # both orders in one pass
        return h[:, : len(i)] - h[:, len(i):]

    def forward(self, mask: torch.Tensor, **features: torch.Tensor) -> torch.Tensor:
        e = self.encoder(mask, **features)
        b, w, _ = e.shape
        ei = e[:, :, None, :].expand(b, w, w, -1)
        ej = e[:, None, :, :].expand(b, w, w, -1)
        h = self._h(ei, ej)  # [B, W, W]: h[b, i, j] = h(i, j)
        g = h - h.transpose(1, 2)
        others = mask[:, None, :] & ~torch.eye(w, dtype=torch.bool, device=mask.device)
        total = torch.where(others, g, torch.zeros_like(g)).sum(-1)
        return total / others.sum(-1).clamp(min=1).to(g.dtype)

    def loss_inputs(self, labels: torch.Tensor, mask: torch.Tensor,
                    **features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Each unordered pair ``i < j`` as a two-item list: scores ``[g/2, -g/2]``, labels ``[y_i, y_j]``.

        A pairwise loss on such a list sees exactly one pair with score difference ``g(i, j)``
        (e.g. RankNet: ``-log sigmoid(g)`` when ``y_i > y_j``); pairs with a padded member or
        equal labels contribute nothing. Returns ``[B * P, 2]`` scores, labels and mask.
        """
        e = self.encoder(mask, **features)
        w = e.shape[1]
        i, j = torch.triu_indices(w, w, offset=1, device=e.device)
        g = self.pair_logits(e, i, j)
        scores = torch.stack([g / 2, -g / 2], dim=-1).reshape(-1, 2)
        pair_labels = torch.stack([labels[:, i], labels[:, j]], dim=-1).reshape(-1, 2)
        pair_mask = torch.stack([mask[:, i], mask[:, j]], dim=-1).reshape(-1, 2)
        return scores, pair_labels, pair_mask
