"""Feature hashing (gradebench.scorers.features): closed-form counts, values, stability, padding."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from gradebench.errors import InvalidArgumentError
from gradebench.scorers.features import (
    DENSE_FEATURES,
    expand_rows,
    hash_texts,
    interaction,
    list_features,
)

#: pinned columns of "The cat sat." at dim 2**18: a change here changes every saved model
PINNED = [2182, 26532, 32518, 35333, 35369, 48850, 50517, 53973]


def test_entry_counts_and_values_closed_form():
    # " the cat sat. ": 3 unigrams + 2 bigrams; 12 + 11 + 10 character 3/4/5-grams
    x = hash_texts(["The cat sat."], dim=2**18)
    assert x.shape == (1, 2**18) and x.nnz == 38
    # all counts are 1: words share sqrt(1/2) over 5 columns, characters over 33
    assert np.isclose(np.sort(x.data)[0], math.sqrt(0.5) / math.sqrt(33), rtol=1e-6)
    assert np.isclose(np.sort(x.data)[-1], math.sqrt(0.5) / math.sqrt(5), rtol=1e-6)
    assert np.isclose(np.sqrt((x.data.astype(np.float64) ** 2).sum()), 1.0, rtol=1e-6)


def test_repeated_words_get_one_plus_log_count():
    x = hash_texts(["a a b"], dim=2**20, word_ngrams=(1, 1), char_ngrams=(0, 0))
    assert x.nnz == 2
    expected = np.array([1 + math.log(2), 1.0])
    expected = expected / np.linalg.norm(expected) * math.sqrt(0.5)
    assert np.allclose(np.sort(x.data)[::-1], expected, rtol=1e-6)


def test_pinned_columns_are_stable():
    x = hash_texts(["The cat sat."], dim=2**18)
    assert x.indices[:8].tolist() == PINNED


@pytest.mark.parametrize("seed", ["0", "12345"])
def test_same_columns_in_another_process_whatever_pythonhashseed(seed):
    code = ("from gradebench.scorers.features import hash_texts; "
            "print(hash_texts(['The cat sat.'], dim=2**18).indices[:8].tolist())")
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == str(PINNED)


def test_repeated_texts_get_the_rows_each_text_gets_alone():
    """Each distinct text is hashed once and its row repeated: bit for bit the rows of hashing
    every text on its own, in order, sorted as promised (and the same with no repeat at all)."""
    texts = ["The cat sat.", "a dog", "The cat sat.", "", "a dog", "The cat sat.", "ünï cödé", ""]
    x = hash_texts(texts, dim=2**12)
    alone = [hash_texts([t], dim=2**12) for t in texts]
    assert x.shape == (len(texts), 2**12) and x.has_sorted_indices and x.dtype == np.float32
    for i, row in enumerate(alone):
        got = x[i]
        assert got.indices.tolist() == row.indices.tolist() and got.data.tobytes() == row.data.tobytes()
    distinct = hash_texts(list(dict.fromkeys(texts)), dim=2**12)
    assert (x[[0, 1, 3, 6]] != distinct).nnz == 0


def test_case_and_spacing_are_normalised_and_empty_text_is_empty():
    x = hash_texts(["A cat  sleeps", "a CAT sleeps", "", "  "], dim=2**16)
    assert (x[0] != x[1]).nnz == 0
    assert x[2].nnz == 0 and x[3].nnz == 0


def test_indices_sorted_and_within_dim():
    x = hash_texts(["one two three", "déjà vu, naïve café", "x"], dim=97)
    assert x.has_sorted_indices
    assert x.indices.min() >= 0 and x.indices.max() < 97


def test_bad_dim_and_ranges_raise():
    with pytest.raises(InvalidArgumentError):
        hash_texts(["a"], dim=0)
    with pytest.raises(InvalidArgumentError):
        hash_texts(["a"], dim=16, char_ngrams=(5, 3))


def test_interaction_closed_form():
    shared, dense = interaction(["a cat sleeps on the mat"], ["the cat sleeps"], dim=2**12)
    f = dict(zip(DENSE_FEATURES, dense[0].tolist()))
    assert f["overlap_candidate"] == pytest.approx(1.0)  # the, cat, sleeps all in the query
    assert f["overlap_query"] == pytest.approx(3 / 6)
    assert f["jaccard"] == pytest.approx(3 / 6)
    assert f["bigram_overlap"] == pytest.approx(1 / 2)  # (cat, sleeps) of {(the, cat), (cat, sleeps)}
    assert f["log_words_candidate"] == pytest.approx(math.log(4))
    assert f["log_words_query"] == pytest.approx(math.log(7))
    assert f["log_length_ratio"] == pytest.approx(math.log(4 / 7))
    assert f["contained"] == 1.0
    assert f["log_new_words"] == 0.0
    assert shared.nnz == 3 and np.allclose(shared.data, 1 / math.sqrt(3))


def test_interaction_with_nothing_shared():
    shared, dense = interaction(["dogs bark"], ["cats meow loudly"], dim=64)
    assert shared.nnz == 0
    assert dense[0, DENSE_FEATURES.index("overlap_candidate")] == 0.0
    assert dense[0, DENSE_FEATURES.index("contained")] == 0.0


def test_expand_rows_places_rows_and_leaves_others_empty():
    m = hash_texts(["a b", "c d"], dim=64)
    e = expand_rows(m, np.array([1, 4]), 6)
    assert e.shape == (6, 64)
    assert (e[1] != m[0]).nnz == 0 and (e[4] != m[1]).nnz == 0
    assert all(e[i].nnz == 0 for i in (0, 2, 3, 5))


def test_list_features_padding_rows_are_empty(demo_lists):
    lists = demo_lists["validation"]
    mask = lists.mask.copy()
    mask[0, 2] = False  # drop one candidate
    ragged = replace(lists, mask=mask)
    lf = list_features(ragged, dim=2**10, shared_dim=2**8)
    assert lf.candidate[0 * lists.list_size + 2].nnz == 0
    assert lf.shared[0 * lists.list_size + 2].nnz == 0
    assert not lf.dense[0, 2].any()
    assert lf.candidate[0 * lists.list_size + 1].nnz > 0


def test_candidate_only_features_ignore_queries(demo_lists):
    lists = demo_lists["validation"]
    other = replace(lists, queries=np.array(["something else entirely"] * lists.n_queries, dtype=object))
    a = list_features(lists, dim=2**12, with_query=False)
    b = list_features(other, dim=2**12, with_query=False)
    assert a.query is None and (a.candidate != b.candidate).nnz == 0
