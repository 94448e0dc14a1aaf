"""``hashed-mlp``: hashed n-grams of query and candidate plus their interaction -> MLP -> one score.

Features (:mod:`gradebench.scorers.features`): word 1-2-grams and character 3-5-grams of the
query and of the candidate hashed into ``dim`` columns (one shared ``EmbeddingBag``, so the
query and candidate vectors ``q``, ``c`` live in one space), the hashed words they share
(``shared_dim`` columns, their own bag) and nine dense overlap/length features. The MLP reads
``[c, q * c, |q - c|, shared, dense]`` and outputs one score per candidate; a candidate's score
never depends on the other candidates of its list.

Trained through :func:`gradebench.training.engine.fit_torch_scorer` with any registered loss
(default ``listnet``), AdamW at ``lr = 1e-3`` unless ``--lr``; batches of whole lists.

Example::

    scorer = make_scorer("hashed-mlp", {"embed_dim": 32}, seed=1)
    scorer.fit(train, validation, TrainOptions(loss="lambdarank", epochs=5, seed=1), run_dir=run)
    scores = scorer.score(test)
"""

from __future__ import annotations

from typing import Any, ClassVar

from gradebench.scorers import register_scorer
from gradebench.scorers._hashed_base import HashedConfig, HashedNeuralScorer
from gradebench.scorers.base import ScorerConfig


class HashedMLPConfig(HashedConfig):
    """``hashed-mlp`` settings (all of :class:`HashedConfig`)."""


@register_scorer("hashed-mlp")
class HashedMLP(HashedNeuralScorer):
    """Hashed query/candidate/interaction features -> MLP -> score (any gradebench loss)."""

    version = 1
    default_loss = "listnet"
    default_lr = 1e-3
    summary = "MLP over hashed n-grams of query, candidate and shared words; trains with any loss"
    Config: ClassVar[type[ScorerConfig]] = HashedMLPConfig

    def _net_spec(self) -> tuple[type, dict[str, Any]]:
        from gradebench.scorers._torch_nets import HashedMLPNet

        return HashedMLPNet, self._encoder_kwargs()
