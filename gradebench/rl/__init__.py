"""Policy optimisation on gradebench benchmarks (optional extra ``rl``: TRL 1.12).

* :func:`lipo` -- listwise preference optimisation straight from a benchmark's graded lists
  (any registered ranking loss on ``beta * log-ratio`` scores; no reward model);
* :func:`grpo` -- TRL's ``GRPOTrainer`` rewarded by a gradebench reward;
* :func:`ppo` -- TRL's experimental ``PPOTrainer`` with a gradebench reward behind a
  decode/re-encode reward-model adaptor;
* :func:`pretrain_policy` -- a small GPT-2 policy trained from scratch on a benchmark's
  queries and best candidates (its tokenizer too), a starting point for the three above.

Each takes its options as keyword arguments (or ``options=``: :class:`LipoOptions`,
:class:`GrpoOptions`, :class:`PpoOptions`), writes a run folder (:mod:`gradebench.rl.runs`) and a
policy record (:mod:`gradebench.experiments.store`, ``kind="policy"``). Importing this package
imports neither torch nor TRL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gradebench._lazy import lazy_attributes

# imported on first use: the CLI reads gradebench.rl.options at start-up, and only a policy
# command needs the methods behind it
_LAZY = {
    "PolicyRecord": "gradebench.experiments.policy_record",
    "list_policy_records": "gradebench.experiments.store",
    "read_policy_record": "gradebench.experiments.store",
    "grpo": "gradebench.rl.grpo",
    "lipo": "gradebench.rl.lipo",
    "GrpoOptions": "gradebench.rl.options",
    "LipoOptions": "gradebench.rl.options",
    "PpoOptions": "gradebench.rl.options",
    "ppo": "gradebench.rl.ppo",
    "pretrain_policy": "gradebench.rl.pretrain",
    "PretrainOptions": "gradebench.rl.options",
    "PretrainResult": "gradebench.rl.pretrain",
    "read_pretrain_run": "gradebench.rl.pretrain",
    "PolicyRunResult": "gradebench.rl.runs",
    "read_policy_run": "gradebench.rl.runs",
}

if TYPE_CHECKING:
    from gradebench.experiments.policy_record import PolicyRecord
    from gradebench.experiments.store import list_policy_records, read_policy_record
    from gradebench.rl.grpo import grpo
    from gradebench.rl.lipo import lipo
    from gradebench.rl.options import GrpoOptions, LipoOptions, PpoOptions, PretrainOptions
    from gradebench.rl.ppo import ppo
    from gradebench.rl.pretrain import PretrainResult, pretrain_policy, read_pretrain_run
    from gradebench.rl.runs import PolicyRunResult, read_policy_run

__all__ = ["lipo", "grpo", "ppo", "pretrain_policy", "LipoOptions", "GrpoOptions", "PpoOptions", "PretrainOptions",
           "PolicyRecord", "PolicyRunResult", "PretrainResult", "list_policy_records", "read_policy_record",
           "read_policy_run", "read_pretrain_run"]

__getattr__ = lazy_attributes(__name__, _LAZY, globals())
