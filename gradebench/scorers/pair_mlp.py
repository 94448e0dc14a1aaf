"""``pair-mlp``: a pairwise ranker after Atapour-Abarghouei et al., "Rank over Class" (seed 002).

The paper embeds two passages with a shared Transformer, concatenates the two vectors and lets a
four-layer "context-aggregating" MLP (Linear-BatchNorm-PReLU-Dropout 0.2) output ranking scores
for the pair, trained end to end with a margin ranking loss. Here:

* the shared encoder is ``hashed-mlp``'s (hashed n-grams of query and candidate, shared words,
  dense overlap features -> MLP), so each candidate is embedded *with its query*;
* the context-aggregating MLP reads ``[e_i, e_j, e_i - e_j, e_i * e_j]`` through ``pair_layers``
  Linear-PReLU-Dropout blocks to one value ``h(i, j)``; the pair logit
  ``g(i, j) = h(i, j) - h(j, i)`` is antisymmetric, ``P(i > j) = sigmoid(g(i, j))``.
  BatchNorm is left out so a candidate's score does not depend on the other lists of a batch;
* training applies a registered **pairwise** loss (default ``ranknet``; ``margin`` with
  ``loss_params={"margin": 2.0}`` is the paper's loss) to every pair ``i < j`` of a list with
  different grades, as a two-item list with scores ``[g/2, -g/2]``, so the loss sees the pair
  logit ``g(i, j)`` as its score difference. Pointwise and listwise losses are rejected with an
  error that lists the pairwise ones;
* a list is scored by aggregating preferences: ``s_i = mean_{j != i} g(i, j)`` over the other
  real candidates of its list (the mean logit of ``i`` beating each of them; 0 for a list of
  one). Padding never enters the mean.

Cost: ``L * (L - 1) / 2`` pairs per list in training and ``L**2`` in scoring (batched so that
``queries * L**2 <= 2**16``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from gradebench.scorers import register_scorer
from gradebench.scorers._hashed_base import HashedConfig, HashedNeuralScorer
from gradebench.scorers.base import ScorerConfig


class PairMLPConfig(HashedConfig):
    """``pair-mlp`` settings: the encoder's (:class:`HashedConfig`) plus the pair MLP's."""

    pair_hidden: int = Field(128, ge=1, le=8192, description="width of the context-aggregating MLP")
    pair_layers: int = Field(3, ge=1, le=8, description="Linear-PReLU-Dropout blocks before the output layer")
    dropout: float = Field(0.1, ge=0.0, lt=1.0)


@register_scorer("pair-mlp")
class PairMLP(HashedNeuralScorer):
    """Shared hashed encoder + context-aggregating pair MLP (P(i > j)); lists scored by mean pair logit."""

    version = 1
    default_loss = "ranknet"
    default_lr = 1e-3
    summary = "pairwise context-aggregating MLP over hashed encodings (seed 002); mean pair logit per candidate"
    Config: ClassVar[type[ScorerConfig]] = PairMLPConfig
    loss_kinds: ClassVar[tuple[str, ...]] = ("pairwise",)
    max_cells: ClassVar[int | None] = 2**16
    extra_arch_keys: ClassVar[tuple[str, ...]] = ("pair_hidden", "pair_layers")

    def _net_spec(self) -> tuple[type, dict[str, Any]]:
        from gradebench.scorers._torch_nets import PairMLPNet

        c = self.config
        return PairMLPNet, dict(pair_hidden=c.pair_hidden, pair_layers=c.pair_layers, **self._encoder_kwargs())
