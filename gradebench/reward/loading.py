"""``load()``: a trained scorer as a reward function ``reward(prompts, completions, **columns) -> list[float]``.

The callable follows TRL's reward-function protocol (``GRPOTrainer``/``RLOOTrainer`` 1.12 call
``f(prompts=..., completions=..., completion_ids=..., trainer_state=..., log_extra=...,
log_metric=..., **dataset_columns)`` and expect one float per completion), so it can be put
straight into ``reward_funcs``. It is a plain object, not a ``torch.nn.Module`` (TRL would
otherwise treat it as a sequence-classification model and tokenize ``prompt + completion`` as
one text, which is not the pair encoding a cross-encoder was trained on).

How a call is scored:

* **text**: a prompt or completion is a string, or a conversational list of
  ``{"role", "content"}`` messages (``content`` a string or a list of ``{"type": "text",
  "text"}`` parts). The query is the last ``user`` message of a conversational prompt
  (``prompt_text="all"``: every message joined by newlines); the candidate is the text of the
  completion's ``assistant`` messages (all messages if none has that role). With
  ``query_column="query"`` the query comes from that dataset column instead of the prompt
  (useful when the policy's prompt template differs from the benchmark's query format).
* **lists**: completions of the same query form one list, in order of first appearance (as
  GRPO groups its generations), so scorers that read a list as a whole (``pair-mlp``,
  ``lambdamart``'s list features) see the group; pointwise scorers do not depend on it. Lists
  are scored in chunks of at most ``batch_size`` candidates (a list is never split).
* **output**: the scorer's raw score per completion, or ``(raw - mean) / std`` with the
  calibration stored at export when ``normalize=True``. Scoring is deterministic: the same
  call gives the same floats.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gradebench.errors import InvalidArgumentError
from gradebench.hashing import sha256_json
from gradebench.reward.meta import (
    REWARD_FILE,
    RewardError,
    calibration_stats,
    is_reward_dir,
    read_metadata,
    standardize,
)

PROMPT_TEXT = ("last_user", "all")


# -- scorers -------------------------------------------------------------------------------------
def load_scorer(model_dir: Path, name: str, version: int, config: dict[str, Any], *, seed: int,
                device: str | None = None) -> Any:
    """A registered scorer loaded from ``model_dir`` (``Scorer.load``), on ``device`` when it has one.

    Raises:
        RewardError: the scorer is not trainable (nothing to load), of another version, or its
            files cannot be loaded.
        UnknownNameError: the scorer is not registered here.
    """
    from gradebench.errors import GradebenchError
    from gradebench.scorers import get_scorer_class

    cls = get_scorer_class(name)
    if cls.version != version:
        raise RewardError(f"the model was trained with {name} v{version}, this gradebench has v{cls.version}",
                          path=model_dir, hint="train and export it again with this gradebench version")
    if not cls.trainable:
        raise RewardError(f"scorer {name!r} is not trained, so there is no model to load", path=model_dir,
                          hint="export a trained run (gradebench train ... then gradebench export-reward RUN_DIR)")
    cfg = dict(config)
    if device is not None:
        if "device" not in cls.Config.model_fields:
            raise InvalidArgumentError(f"scorer {name!r} has no device setting", key="device",
                                       hint="drop device=; this scorer runs where it was built")
        cfg["device"] = device
    try:
        return cls.load(model_dir, cfg, seed=seed)
    except GradebenchError:
        raise
    except Exception as e:  # noqa: BLE001 - corrupt model files raise anything
        raise RewardError(f"cannot load the {name} model ({type(e).__name__}: {e})", path=model_dir,
                          hint="the folder is corrupt or incomplete; export the reward again") from None


def _from_run(run_dir: Path, *, device: str | None) -> tuple[Any, dict[str, Any]]:
    """A run folder as ``(scorer, metadata-like dict)`` (no calibration until asked for)."""
    from gradebench.experiments.runs import MODEL_DIR, read_run_info

    info = read_run_info(run_dir)
    model = run_dir / MODEL_DIR
    if not model.is_dir():
        raise RewardError("the run has no model/ folder", path=run_dir, hint="train the run again")
    scorer = load_scorer(model, info.scorer, info.scorer_version, info.config, seed=info.seed, device=device)
    meta = {
        "scorer": {"name": info.scorer, "version": info.scorer_version, "config": info.config},
        "loss": {"name": info.loss, "params": info.loss_params}, "seed": info.seed,
        "benchmark": {"name": info.benchmark, "fingerprint": info.benchmark_fingerprint,
                      "path": info.benchmark_path},
        "run": {"run_dir": str(run_dir), "run_fingerprint": info.run_fingerprint},
        "calibration": None,
    }
    return scorer, meta


def calibrate(scorer: Any, benchmark: str | Path, *, fingerprint: str | None = None,
              split: str | None = None) -> dict[str, Any]:
    """The calibration of ``scorer`` on ``split`` of ``benchmark`` (default: validation, else train).

    Raises:
        RewardError: the benchmark's fingerprint is not ``fingerprint`` (it was rebuilt differently).
        BenchmarkError / UnknownNameError: no such benchmark folder or split.
    """
    from gradebench.benchmark.lists import OPTIONAL_COLUMNS, open_benchmark
    from gradebench.scorers.base import check_scores

    bench = open_benchmark(benchmark)
    if fingerprint is not None and bench.fingerprint != fingerprint:
        raise RewardError(f"the benchmark at this path is {bench.fingerprint[:12]}, the run trained on "
                          f"{fingerprint[:12]}", path=bench.path,
                          hint="rebuild the run's benchmark with the same recipe and inputs")
    if split is None:
        split = "validation" if "validation" in bench.files else "train"
    extra = scorer.list_columns() if callable(getattr(scorer, "list_columns", None)) else ()
    lists = bench.lists(split, columns=(*OPTIONAL_COLUMNS, *extra))
    if lists.n_candidates == 0:
        raise RewardError(f"split {split!r} of {bench.name} has no candidates to calibrate on", path=bench.path,
                          hint="choose another calibration split")
    scores = check_scores(scorer.score(lists), lists, who=getattr(scorer, "name", "scorer"))
    return {"split": split, "n_queries": lists.n_queries, **calibration_stats(scores[lists.mask])}


# -- texts ---------------------------------------------------------------------------------------
def _content(message: Any) -> str:
    if not isinstance(message, dict) or "content" not in message:
        raise InvalidArgumentError(f"a conversational message must be a dict with 'content', got {message!r:.80}",
                                   hint="pass strings or lists of {'role': ..., 'content': ...} messages")
    content = message["content"]
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type", "text") == "text")
    if content is None:
        return ""
    raise InvalidArgumentError(f"message content must be a string or a list of parts, got {type(content).__name__}")


def _messages(x: Any) -> list[dict[str, Any]]:
    if isinstance(x, dict):
        return [x]
    if isinstance(x, (list, tuple)):
        return list(x)
    raise InvalidArgumentError(f"expected a string or a list of messages, got {type(x).__name__}",
                               hint="TRL passes strings (standard) or lists of {'role','content'} (conversational)")


def prompt_to_text(prompt: Any, mode: str = "last_user") -> str:
    """A prompt (string or conversational messages) as the scorer's query text (see the module docstring).

        >>> prompt_to_text([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why?"}])
        'Why?'
    """
    if isinstance(prompt, str):
        return prompt
    msgs = _messages(prompt)
    if mode == "all":
        return "\n".join(_content(m) for m in msgs)
    users = [m for m in msgs if isinstance(m, dict) and m.get("role") == "user"]
    return _content((users or msgs)[-1]) if (users or msgs) else ""


def completion_to_text(completion: Any) -> str:
    """A completion (string or conversational messages) as the scorer's candidate text.

        >>> completion_to_text([{"role": "assistant", "content": "Because it rains."}])
        'Because it rains.'
    """
    if isinstance(completion, str):
        return completion
    msgs = _messages(completion)
    said = [m for m in msgs if isinstance(m, dict) and m.get("role") == "assistant"] or msgs
    return "".join(_content(m) for m in said)


# -- scoring -------------------------------------------------------------------------------------
def pairs_to_lists(queries: Sequence[str], candidates: Sequence[str], *, benchmark: str = "reward",
                   fingerprint: str = "") -> tuple[Any, np.ndarray, np.ndarray]:
    """Group pairs by query (first-appearance order) into dense :class:`~gradebench.benchmark.lists.Lists`.

    Returns ``(lists, rows, cols)``: pair ``i`` sits at ``lists[rows[i], cols[i]]``. Ids are
    sha256 of the texts (and of the position within the list for candidates), never ``hash()``.
    """
    from gradebench.benchmark.lists import Lists

    order: dict[str, int] = {}
    rows = np.empty(len(queries), dtype=np.int64)
    cols = np.empty(len(queries), dtype=np.int64)
    sizes: list[int] = []
    for i, q in enumerate(queries):
        r = order.setdefault(q, len(order))
        if r == len(sizes):
            sizes.append(0)
        rows[i], cols[i] = r, sizes[r]
        sizes[r] += 1
    n, width = len(order), max(sizes, default=0)
    cands = np.full((n, width), "", dtype=object)
    cand_ids = np.full((n, width), "", dtype=object)
    mask = np.zeros((n, width), dtype=bool)
    qtexts = np.array(list(order), dtype=object)
    qids = np.array([sha256_json(["reward-query", q])[:16] for q in qtexts], dtype=object)
    for i, c in enumerate(candidates):
        cands[rows[i], cols[i]] = c
        cand_ids[rows[i], cols[i]] = sha256_json(["reward-candidate", qtexts[rows[i]], c, int(cols[i])])[:16]
        mask[rows[i], cols[i]] = True
    zeros = np.zeros((n, width), dtype=np.float64)
    lists = Lists(benchmark=benchmark, fingerprint=fingerprint, split="reward", query_ids=qids, queries=qtexts,
                  candidate_ids=cand_ids, candidates=cands, relevance=zeros, score=zeros.copy(), mask=mask)
    return lists, rows, cols


class RewardFn:
    """A trained scorer as a TRL-compatible reward function (see the module docstring).

    Attributes:
        scorer: the loaded :class:`~gradebench.scorers.Scorer`.
        metadata: the reward folder's ``gradebench-reward.json`` (for a run folder: the same
            fields from ``run.json``, with the calibration computed when first needed).
        normalize: whether calls return standardised rewards.
        __name__: ``gradebench_<scorer>`` (TRL logs rewards under the function's name).
    """

    def __init__(self, scorer: Any, metadata: dict[str, Any], *, normalize: bool = False, batch_size: int = 512,
                 query_column: str | None = None, prompt_text: str = "last_user") -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        if prompt_text not in PROMPT_TEXT:
            raise InvalidArgumentError(f"prompt_text must be one of {', '.join(PROMPT_TEXT)}, got {prompt_text!r}")
        self.scorer = scorer
        self.metadata = metadata
        self.normalize = bool(normalize)
        self.batch_size = batch_size
        self.query_column = query_column
        self.prompt_text = prompt_text
        self.__name__ = f"gradebench_{metadata['scorer']['name']}".replace("-", "_")
        if self.normalize:
            standardize(0.0, self.calibration)  # fail now, not in the middle of training

    @property
    def calibration(self) -> dict[str, Any]:
        """The stored calibration (computed on the run's benchmark for a run folder)."""
        if self.metadata.get("calibration") is None:
            bench = self.metadata["benchmark"]
            self.metadata["calibration"] = calibrate(self.scorer, bench["path"], fingerprint=bench["fingerprint"])
        return self.metadata["calibration"]

    @property
    def fingerprint(self) -> str:
        """sha256 of what determines the rewards: the run, the scorer, and (when normalising) the calibration,
        plus how texts are read (``query_column``, ``prompt_text``)."""
        run = self.metadata.get("run") or {}
        return sha256_json({
            "run_fingerprint": run.get("run_fingerprint"),
            "scorer": {k: self.metadata["scorer"].get(k) for k in ("name", "version", "config")},
            "normalize": self.normalize, "calibration": self.calibration if self.normalize else None,
            "query_column": self.query_column, "prompt_text": self.prompt_text,
        })

    def __repr__(self) -> str:
        loss = (self.metadata.get("loss") or {}).get("name")
        return (f"RewardFn({self.metadata['scorer']['name']}{' + ' + loss if loss else ''}, "
                f"normalize={self.normalize})")

    def score_texts(self, queries: Sequence[str], candidates: Sequence[str]) -> np.ndarray:
        """``[n]`` float64 rewards of ``n`` (query, candidate) text pairs, in input order."""
        from gradebench.scorers.base import check_scores

        if len(queries) != len(candidates):
            raise InvalidArgumentError(f"{len(queries)} prompts but {len(candidates)} completions",
                                       hint="pass one prompt per completion (TRL repeats each prompt per generation)")
        if not len(queries):
            return np.zeros(0, dtype=np.float64)
        lists, rows, cols = pairs_to_lists(list(queries), list(candidates),
                                           fingerprint=str(self.metadata["benchmark"].get("fingerprint", "")))
        out = np.empty(len(queries), dtype=np.float64)
        for chunk in _chunks(lists.lengths, self.batch_size):
            part = lists.take(chunk)
            scores = check_scores(self.scorer.score(part), part, who=self.metadata["scorer"]["name"])
            full = np.zeros(lists.mask.shape, dtype=np.float64)
            full[chunk, : part.list_size] = scores
            sel = np.isin(rows, chunk)
            out[sel] = full[rows[sel], cols[sel]]
        return standardize(out, self.calibration) if self.normalize else out

    def __call__(self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] | None = None,
                 **columns: Any) -> list[float]:
        """One float per completion; extra keywords (``completion_ids``, ``trainer_state``, dataset
        columns...) are accepted and ignored, except ``query_column`` when set."""
        if completions is None:
            raise InvalidArgumentError("no completions given", hint="call reward(prompts=[...], completions=[...])")
        if self.query_column is not None:
            if self.query_column not in columns:
                raise InvalidArgumentError(f"query_column {self.query_column!r} is not among the call's columns",
                                           hint=f"columns given: {', '.join(sorted(columns)) or '(none)'}")
            queries = [str(q) for q in columns[self.query_column]]
        elif prompts is None:
            raise InvalidArgumentError("no prompts given", hint="pass prompts=[...] or load with query_column=")
        else:
            queries = [prompt_to_text(p, self.prompt_text) for p in prompts]
        texts = [completion_to_text(c) for c in completions]
        return [float(x) for x in self.score_texts(queries, texts)]


def _chunks(lengths: np.ndarray, budget: int) -> list[np.ndarray]:
    """Consecutive list indices in chunks of at most ``budget`` candidates (one list may exceed it alone)."""
    out: list[np.ndarray] = []
    start, total = 0, 0
    for i, n in enumerate(lengths.tolist()):
        if total and total + n > budget:
            out.append(np.arange(start, i))
            start, total = i, 0
        total += n
    if start < len(lengths):
        out.append(np.arange(start, len(lengths)))
    return out


def load(source: str | Path, *, normalize: bool = False, device: str | None = None, batch_size: int = 512,
         query_column: str | None = None, prompt_text: str = "last_user") -> RewardFn:
    """A reward folder (``gradebench export-reward``) or a finished run folder as a :class:`RewardFn`.

    Args:
        source: a reward folder (has ``gradebench-reward.json``) or a run folder (has ``run.json``).
        normalize: return ``(raw - mean) / std`` with the calibration (for a run folder it is
            computed on the run's benchmark, validation split, at load).
        device: where a model-backed scorer runs (e.g. ``"cuda"``, ``"cpu"``); default: its own choice.
        batch_size: most candidates per scorer call.
        query_column: take the query from this dataset column (a keyword of the call) instead of the prompt.
        prompt_text: ``last_user`` or ``all`` (how a conversational prompt becomes the query).

    Raises:
        RewardError: not a reward/run folder, another reward schema version, an incomplete folder,
            or ``normalize`` with a constant calibration.
        RunError: an unfinished or corrupt run folder.
    """
    path = Path(source)
    if not path.is_dir():
        raise RewardError("no such reward or run folder", path=path,
                          hint="give the --out folder of `gradebench export-reward` or of `gradebench train`")
    if is_reward_dir(path):
        meta = read_metadata(path)
        sc = meta["scorer"]
        scorer = load_scorer(path / meta["model_dir"], sc["name"], sc["version"], sc["config"], seed=meta["seed"],
                             device=device)
    elif (path / "run.json").is_file() or (path / "run-config.json").is_file():
        scorer, meta = _from_run(path, device=device)
    else:
        raise RewardError(f"neither a reward folder ({REWARD_FILE}) nor a run folder (run.json)", path=path,
                          hint="give the --out folder of `gradebench export-reward` or of `gradebench train`")
    return RewardFn(scorer, meta, normalize=normalize, batch_size=batch_size, query_column=query_column,
                    prompt_text=prompt_text)
