"""Shared helpers for the loss tests: per-loss input rules and unit counts."""

from __future__ import annotations

import torch

from gradebench.losses import LOSSES

ALL = LOSSES.names()
POINTWISE = [n for n in ALL if LOSSES.get(n).kind == "pointwise"]
PAIRWISE = [n for n in ALL if LOSSES.get(n).kind == "pairwise"]
LISTWISE = [n for n in ALL if LOSSES.get(n).kind == "listwise"]
RANKING = PAIRWISE + LISTWISE

#: Losses whose labels must be >= 0 (a gain 2^y - 1 or y), and in [0, 1] for sigmoid_ce.
NONNEG = {"lambdarank", "lambdaloss", "approxndcg", "neuralndcg"}
#: Losses whose value depends on tie-breaking among equal labels (seeded permutation).
TIE_SENSITIVE = {"listmle"}


def fit_labels(name: str, labels: torch.Tensor) -> torch.Tensor:
    """Map non-negative integer-ish labels (0..4) into the range a loss accepts."""
    if name == "sigmoid_ce":
        return labels / 4.0
    return labels


def units(name: str, labels: torch.Tensor, mask: torch.Tensor) -> int:
    """What ``reduction='mean'`` divides by, computed independently of the library."""
    kind = LOSSES.get(name).kind
    if kind == "pointwise":
        return int(mask.sum())
    if kind == "listwise":
        return int(mask.any(-1).sum())
    count = 0
    for b in range(labels.shape[0]):
        ys = [float(v) for v, m in zip(labels[b], mask[b]) if m]
        if name == "bradley_terry":
            best = max(ys) if ys else 0.0
            count += sum(1 for yi in ys for yj in ys if yi == best and yi > yj)
        else:
            count += sum(1 for yi in ys for yj in ys if yi > yj)
    return count
