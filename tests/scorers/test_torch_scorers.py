"""The torch scorers query-blind, hashed-mlp and pair-mlp: training, invariances, persistence."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from gradebench.benchmark.lists import Lists
from gradebench.errors import InvalidArgumentError, UnknownNameError
from gradebench.losses import LOSSES
from gradebench.scorers import TrainOptions, get_scorer_class, make_scorer
from tests.conftest import modules_loaded_by

TINY = {"dim": 2**10, "shared_dim": 2**8, "embed_dim": 8, "hidden": 16}
TINY_PAIR = {**TINY, "pair_hidden": 16, "pair_layers": 2}
TINY_BLIND = {"dim": 2**12}
CONFIGS = {"hashed-mlp": TINY, "pair-mlp": TINY_PAIR, "query-blind": TINY_BLIND}


def _opts(**kw) -> TrainOptions:
    base = {"epochs": 2, "batch_queries": 16, "lr": 1e-2, "seed": 1, "patience": 10}
    return TrainOptions(**{**base, **kw})


def _fit(name: str, demo_lists: dict[str, Lists], *, seed: int = 1, config: dict | None = None, **opts):
    scorer = make_scorer(name, CONFIGS[name] if config is None else config, seed=seed)
    history = scorer.fit(demo_lists["train"], demo_lists["validation"], _opts(seed=seed, **opts))
    return scorer, history


def _padded(lists: Lists, extra: int = 2) -> Lists:
    """``lists`` with ``extra`` more padding columns holding junk text and grades."""
    n = lists.n_queries

    def widen(a: np.ndarray, fill) -> np.ndarray:
        return np.concatenate([a, np.full((n, extra), fill, dtype=a.dtype)], axis=1)

    return replace(
        lists, candidate_ids=widen(lists.candidate_ids, "pad"), candidates=widen(lists.candidates, "junk junk"),
        relevance=widen(lists.relevance, 4.0), score=widen(lists.score, 1.0), mask=widen(lists.mask, False),
        extra={},
    )


# -- registry --------------------------------------------------------------------------------------------


def test_registered_with_metadata():
    blind, mlp, pair = (get_scorer_class(n) for n in ("query-blind", "hashed-mlp", "pair-mlp"))
    assert (blind.kind, blind.trainable, blind.uses_loss, blind.default_loss) == ("probe", True, True, "mse")
    assert (mlp.kind, mlp.uses_loss, mlp.default_loss) == ("neural", True, "listnet")
    assert (pair.kind, pair.uses_loss, pair.default_loss) == ("neural", True, "ranknet")
    assert mlp.Config().dim == 2**16 and blind.Config().dim == 2**18


def test_scorer_modules_import_without_torch():
    code = ("import gradebench.scorers.query_blind, gradebench.scorers.hashed_mlp, "
            "gradebench.scorers.pair_mlp, gradebench.scorers.features")
    assert modules_loaded_by(code, "torch", "transformers")[0] == []


# -- hashed-mlp ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("loss", LOSSES.names())
def test_every_loss_trains_hashed_mlp(demo_lists, loss):
    scorer, history = _fit("hashed-mlp", demo_lists, loss=loss, epochs=1)
    assert len(history) == 1 and np.isfinite(history[0]["loss"]) and "eval_ndcg@5" in history[0]
    scores = scorer.score(demo_lists["test"])
    assert scores.shape == demo_lists["test"].mask.shape and np.all(np.isfinite(scores))


def test_listnet_loss_decreases(demo_lists):
    _, history = _fit("hashed-mlp", demo_lists, loss="listnet", epochs=5, batch_queries=8)
    losses = [r["loss"] for r in history]
    assert len(losses) == 5 and losses[-1] < losses[0]


def test_unknown_loss_is_unknown_name_error(demo_lists):
    with pytest.raises(UnknownNameError, match="listnett"):
        _fit("hashed-mlp", demo_lists, loss="listnett")


def test_untrained_scorer_refuses_to_score(demo_lists):
    with pytest.raises(InvalidArgumentError, match="not trained"):
        make_scorer("hashed-mlp", TINY).score(demo_lists["test"])
    with pytest.raises(InvalidArgumentError, match="not trained"):
        make_scorer("query-blind", TINY_BLIND).score(demo_lists["test"])


@pytest.mark.parametrize("name", ["hashed-mlp", "pair-mlp"])
def test_same_seed_same_scores_other_seed_other_scores(demo_lists, name):
    a, history_a = _fit(name, demo_lists, seed=1, epochs=1)
    b, history_b = _fit(name, demo_lists, seed=1, epochs=1)
    c, _ = _fit(name, demo_lists, seed=2, epochs=1)
    assert history_a == history_b
    test = demo_lists["test"]
    np.testing.assert_array_equal(a.score(test), b.score(test))
    assert not np.allclose(a.score(test), c.score(test))


@pytest.mark.parametrize("name", ["hashed-mlp", "pair-mlp", "query-blind"])
def test_save_load_round_trip(demo_lists, name, tmp_path):
    scorer, _ = _fit(name, demo_lists, epochs=1)
    scorer.save(tmp_path / "model")
    loaded = get_scorer_class(name).load(tmp_path / "model")
    assert loaded.config == scorer.config
    np.testing.assert_array_equal(loaded.score(demo_lists["test"]), scorer.score(demo_lists["test"]))
    with pytest.raises(InvalidArgumentError, match="dim"):
        get_scorer_class(name).load(tmp_path / "model", {**CONFIGS[name], "dim": 2**9})
    other = "hashed-mlp" if name != "hashed-mlp" else "pair-mlp"
    with pytest.raises(InvalidArgumentError, match="not"):
        get_scorer_class(other).load(tmp_path / "model")


@pytest.mark.parametrize("name", ["hashed-mlp", "pair-mlp", "query-blind"])
def test_padding_never_changes_real_scores(demo_lists, name):
    scorer, _ = _fit(name, demo_lists, epochs=1)
    test = demo_lists["test"]
    plain = scorer.score(test)
    padded = scorer.score(_padded(test))
    np.testing.assert_allclose(padded[:, : test.list_size], plain, rtol=1e-5, atol=1e-6)
    assert not padded[:, test.list_size:].any()


@pytest.mark.parametrize("name", ["hashed-mlp", "pair-mlp"])
def test_ragged_lists_train_and_masking_equals_removing(demo_lists, name):
    train = demo_lists["train"].subsample(3, seed=0)  # ragged after compaction: every list keeps 3
    mask = demo_lists["train"].mask.copy()
    mask[::2, -2:] = False  # and some lists lose two candidates in place (holes at the end)
    holes = replace(demo_lists["train"], mask=mask)
    for lists in (train, holes):
        scorer = make_scorer(name, CONFIGS[name], seed=1)
        history = scorer.fit(lists, demo_lists["validation"], _opts(epochs=1))
        assert np.isfinite(history[0]["loss"])
    one = demo_lists["test"].take([0])
    dropped = one.mask.copy()
    dropped[0, 1] = False
    masked = scorer.score(replace(one, mask=dropped))
    removed = replace(one, **{k: np.delete(getattr(one, k), 1, axis=1) for k in (
        "candidate_ids", "candidates", "relevance", "score", "mask")}, extra={})
    np.testing.assert_allclose(masked[0, [0, 2, 3, 4]], scorer.score(removed)[0], rtol=1e-5, atol=1e-6)
    assert masked[0, 1] == 0.0


# -- pair-mlp --------------------------------------------------------------------------------------------


def test_pair_mlp_rejects_non_pairwise_losses(demo_lists):
    with pytest.raises(InvalidArgumentError, match="ranknet"):
        _fit("pair-mlp", demo_lists, loss="listnet")
    with pytest.raises(InvalidArgumentError, match="pairwise"):
        _fit("pair-mlp", demo_lists, loss="mse")


@pytest.mark.parametrize("loss", [n for n, s in LOSSES.items() if s.kind == "pairwise"])
def test_pair_mlp_trains_with_every_pairwise_loss(demo_lists, loss):
    _, history = _fit("pair-mlp", demo_lists, loss=loss, epochs=1)
    assert np.isfinite(history[0]["loss"])


def test_pair_mlp_logits_are_antisymmetric_and_scores_are_their_mean(demo_lists):
    import torch

    from gradebench.scorers._torch_common import batch_tensors

    scorer, _ = _fit("pair-mlp", demo_lists, epochs=1)
    test = demo_lists["test"]
    net = scorer.net
    lf = scorer._features(test)
    rows = np.arange(test.n_queries)
    batch = batch_tensors(lf, rows, test.list_size, scorer.parts)
    mask = torch.from_numpy(test.mask.copy())
    with torch.no_grad():
        e = net.encoder(mask, **batch)
        w = test.list_size
        i, j = (t.reshape(-1) for t in torch.meshgrid(torch.arange(w), torch.arange(w), indexing="ij"))
        g = net.pair_logits(e, i, j).reshape(-1, w, w).double().numpy()
    np.testing.assert_allclose(g, -np.transpose(g, (0, 2, 1)), atol=1e-6)
    expected = g.sum(axis=2) / (w - 1)  # the diagonal is 0
    np.testing.assert_allclose(scorer.score(test), expected, rtol=1e-5, atol=1e-5)


# -- query-blind -----------------------------------------------------------------------------------------


def _other_queries(lists: Lists) -> Lists:
    return replace(lists, queries=np.array([f"completely different query {i}" for i in range(lists.n_queries)],
                                           dtype=object))


@pytest.mark.parametrize("loss", ["mse", "listnet"])
def test_query_blind_never_reads_the_query(demo_lists, loss):
    scorer, _ = _fit("query-blind", demo_lists, loss=loss)
    test = demo_lists["test"]
    np.testing.assert_array_equal(scorer.score(test), scorer.score(_other_queries(test)))
    blind = make_scorer("query-blind", TINY_BLIND, seed=1)
    blind.fit(_other_queries(demo_lists["train"]), _other_queries(demo_lists["validation"]), _opts(loss=loss))
    np.testing.assert_array_equal(blind.score(test), scorer.score(test))


def test_query_blind_ridge_matches_closed_form(demo_lists):
    from gradebench.scorers.features import hash_texts

    train = demo_lists["train"]
    config = {"dim": 2**8, "alpha": 3.0, "tol": 1e-12, "max_iter": 10_000}
    scorer = make_scorer("query-blind", config)
    history = scorer.fit(train, None, _opts())
    assert len(history) == 1 and history[0]["alpha"] == 3.0
    x = hash_texts(train.pairs()[1], dim=2**8).toarray().astype(np.float64)
    groups = train.flat_index()[0]
    y = train.relevance[train.mask]
    center = np.eye(len(y)) - (groups[:, None] == groups[None, :]) / np.bincount(groups)[groups][:, None]
    xc, yc = center @ x, center @ y
    w = np.linalg.solve(xc.T @ xc + 3.0 * np.eye(x.shape[1]), xc.T @ yc)
    np.testing.assert_allclose(scorer._w, w, rtol=1e-6, atol=1e-8)


def test_query_blind_picks_alpha_on_validation(demo_lists):
    scorer, history = _fit("query-blind", demo_lists)
    assert [r["alpha"] for r in history] == [100.0, 10.0, 1.0, 0.1]
    best = max(range(len(history)), key=lambda k: history[k]["eval_ndcg@5"])
    from gradebench.training.evaluation import list_metrics

    val = demo_lists["validation"]
    assert list_metrics(scorer.score(val), val)["ndcg@5"] == pytest.approx(history[best]["eval_ndcg@5"])


def test_query_blind_ridge_needs_mse(demo_lists):
    with pytest.raises(InvalidArgumentError, match="solver"):
        _fit("query-blind", demo_lists, config={**TINY_BLIND, "solver": "ridge"}, loss="listnet")
    _, history = _fit("query-blind", demo_lists, config={**TINY_BLIND, "solver": "torch"}, loss="mse", epochs=1)
    assert "learning_rate" in history[0]  # trained by the engine


@pytest.mark.parametrize("name", ["hashed-mlp", "pair-mlp", "query-blind"])
def test_bad_ngram_range_fails_at_config_time(name):
    with pytest.raises(InvalidArgumentError, match="char_ngrams"):
        make_scorer(name, {"char_ngrams": [5, 3]})
    assert make_scorer(name, {"word_ngrams": [0, 0]}).config.word_ngrams == (0, 0)


def test_query_blind_unknown_loss(demo_lists):
    with pytest.raises(UnknownNameError):
        _fit("query-blind", demo_lists, config={**TINY_BLIND, "solver": "ridge"}, loss="msee")
