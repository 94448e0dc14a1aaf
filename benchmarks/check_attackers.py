"""Independent lexical attackers on built benchmarks: scikit-learn models of families the project
neither filters with (the adversarial step's pairwise ridge members) nor reports in its validity
figures (its ridge probes, BM25 and LightGBM), trained on each benchmark's train split and scored
on its test split, printed beside the benchmark's own validity figures.

The attackers (pairwise agreement, ties 1/2, mean over the test lists with a graded pair):

- ``blind char``: logistic regression on the differences of character 2-5-gram TF-IDF vectors of
  the two candidates of each train pair (a RankSVM-style pairwise model); it never reads the query;
- ``label words``: the same on word 1-2-gram TF-IDF of the candidate, also crossed with the
  query's label (and nothing else of the query);
- ``overlap LR``: the same on dense features of the (query, candidate) pair: word overlaps with
  the hypothesis and the premise, words in neither, length, negations, the cosine of character
  n-gram TF-IDF vectors with the hypothesis and the premise, each crossed with the label;
- ``overlap HGB``: scikit-learn's histogram gradient boosting, pointwise on the grades, on those
  features (another tree learner than LightGBM's lambdarank);
- ``overlap + words LR``: the pairwise model on those features plus hashed shared words (with the
  hypothesis, with the premise) and the label-crossed words.

Checks that the figures are what they claim: a ``random`` row (a sha256 score per candidate id)
must come out near 0.5 and an ``oracle`` row (the grades themselves) at exactly 1.0, and every
attacker is fitted on train lists only (the test split is read after fitting).

    python benchmarks/check_attackers.py gradebench-out/esnli-contrast-v3/35a2c8ff3ecb \\
        gradebench-out/esnli-contrast-v4/f9f79b34aa01 --out benchmarks/results/independent-attackers.json

Needs scikit-learn (installed with sentence-transformers).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import header, load  # noqa: E402

TOKEN = re.compile(r"[a-z0-9']+")
NEGATIONS = {"not", "no", "never", "nothing", "nobody", "none", "cannot", "isn't", "can't", "aren't", "doesn't",
             "without"}
COLUMNS = ["query_id", "candidate_id", "candidate", "relevance", "premise", "hypothesis", "label"]
#: the benchmark's own validity figures printed beside the attackers
OWN = ("query_blind", "label_aware", "bm25", "lexical_ceiling_dense", "lexical_ceiling_strong")


def read_lists(bench: Path, split: str) -> list[list[dict[str, Any]]]:
    import pyarrow.parquet as pq

    files = sorted((bench / "data").glob(f"{split}-*.parquet"))
    if not files:
        raise SystemExit(f"{bench}: no {split} split (data/{split}-*.parquet); give a built benchmark folder")
    lists: dict[str, list[dict[str, Any]]] = {}
    for r in pq.read_table(files, columns=COLUMNS).to_pylist():
        lists.setdefault(r["query_id"], []).append(r)
    return list(lists.values())


def agreement(lists: list[list[dict[str, Any]]], scores: np.ndarray) -> tuple[float, int]:
    """Mean over lists with a graded pair of the share of pairs ordered right (ties 1/2); the lists counted."""
    out, off = [], 0
    for lst in lists:
        g = np.array([r["relevance"] for r in lst])
        x = scores[off:off + len(lst)]
        off += len(lst)
        m = g[:, None] > g[None, :]
        if m.any():
            out.append(float((((x[:, None] > x[None, :]) + 0.5 * (x[:, None] == x[None, :])) * m).sum() / m.sum()))
    assert off == len(scores), "one score per candidate"
    return float(np.mean(out)), len(out)


def train_pairs(lists: list[list[dict[str, Any]]]) -> tuple[np.ndarray, np.ndarray]:
    hi, lo, off = [], [], 0
    for lst in lists:
        for i, a in enumerate(lst):
            for j, b in enumerate(lst):
                if a["relevance"] > b["relevance"]:
                    hi.append(off + i)
                    lo.append(off + j)
        off += len(lst)
    return np.array(hi), np.array(lo)


def pairwise(x_train, x_test, pairs: tuple[np.ndarray, np.ndarray], c: float = 1.0) -> np.ndarray:
    """Logistic regression on the pair differences (both orders), applied to each test candidate."""
    from scipy import sparse
    from sklearn.linear_model import LogisticRegression

    d = x_train[pairs[0]] - x_train[pairs[1]]
    d = sparse.vstack([d, -d]).tocsr() if sparse.issparse(d) else np.vstack([d, -d])
    y = np.r_[np.ones(len(pairs[0])), -np.ones(len(pairs[0]))]
    model = LogisticRegression(C=c, max_iter=3000).fit(d, y)
    return np.asarray(x_test @ model.coef_.ravel()).ravel()


def attack(bench: Path) -> dict[str, Any]:
    from scipy import sparse
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.feature_extraction.text import HashingVectorizer, TfidfVectorizer

    train = read_lists(bench, "train")
    rows_tr = [r for lst in train for r in lst]
    pairs = train_pairs(train)
    labels = sorted({r["label"] for r in rows_tr})
    char = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), min_df=2, sublinear_tf=True)
    char.fit([r["candidate"] for r in rows_tr])
    word = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True).fit([r["candidate"] for r in rows_tr])
    sim = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), min_df=2, sublinear_tf=True)
    sim.fit([r[k] for r in rows_tr for k in ("candidate", "hypothesis", "premise")])
    hashed = HashingVectorizer(n_features=2**16, alternate_sign=False, norm=None)

    def label_words(rows):
        w = word.transform([r["candidate"] for r in rows]).tocsr()
        crossed = [w.multiply(np.array([[r["label"] == x] for r in rows], dtype=float)) for x in labels]
        return sparse.hstack([w, *crossed]).tocsr()

    def dense(rows):
        c_vec, h_vec, p_vec = (sim.transform([r[k] for r in rows]) for k in ("candidate", "hypothesis", "premise"))
        cos_h = np.asarray(c_vec.multiply(h_vec).sum(1)).ravel()
        cos_p = np.asarray(c_vec.multiply(p_vec).sum(1)).ravel()
        out = []
        for r, ch, cp in zip(rows, cos_h, cos_p):
            c_list = TOKEN.findall(r["candidate"].lower())
            c, h, p = set(c_list), set(TOKEN.findall(r["hypothesis"].lower())), set(TOKEN.findall(r["premise"].lower()))
            n = max(len(c_list), 1)
            f = [len(c & h) / max(len(h), 1), len(c & p) / max(len(p), 1), len(c & h) / n, len(c & p) / n,
                 len(c - h - p) / n, len(c & h & p) / n, len(c_list), len(c & NEGATIONS), len(h & NEGATIONS),
                 len((c & NEGATIONS) - h), ch, cp]
            lab = [float(r["label"] == x) for x in labels]
            out.append(f + lab + [a * b for a in f for b in lab])
        return np.array(out)

    def shared(rows):
        docs = []
        for r in rows:
            c = set(TOKEN.findall(r["candidate"].lower()))
            docs.append(" ".join([*("h_" + w for w in sorted(c & set(TOKEN.findall(r["hypothesis"].lower())))),
                                  *("p_" + w for w in sorted(c & set(TOKEN.findall(r["premise"].lower()))))]))
        return hashed.transform(docs)

    d_tr = dense(rows_tr)
    mu, sd = d_tr.mean(0), d_tr.std(0) + 1e-9
    z_tr = (d_tr - mu) / sd
    combo_tr = sparse.hstack([sparse.csr_matrix(z_tr), shared(rows_tr), label_words(rows_tr)]).tocsr()
    grades = np.array([r["relevance"] for r in rows_tr], dtype=float)
    tree = HistGradientBoostingRegressor(max_iter=300, learning_rate=0.05, max_leaf_nodes=31, random_state=0)
    tree.fit(d_tr, grades)
    # every model is fitted above, on train lists only; the test split is read from here on
    test = read_lists(bench, "test")
    rows_te = [r for lst in test for r in lst]
    d_te = dense(rows_te)
    z_te = (d_te - mu) / sd
    scores = {
        "random": np.array([int(hashlib.sha256(r["candidate_id"].encode()).hexdigest()[:12], 16) for r in rows_te],
                           dtype=float),
        "oracle": np.array([r["relevance"] for r in rows_te], dtype=float),
        "blind char": pairwise(char.transform([r["candidate"] for r in rows_tr]),
                               char.transform([r["candidate"] for r in rows_te]), pairs),
        "label words": pairwise(label_words(rows_tr), label_words(rows_te), pairs),
        "overlap LR": pairwise(z_tr, z_te, pairs),
        "overlap HGB": tree.predict(d_te),
        "overlap + words LR": pairwise(combo_tr, sparse.hstack([sparse.csr_matrix(z_te), shared(rows_te),
                                                                label_words(rows_te)]).tocsr(), pairs, c=0.5),
    }
    figures = {}
    for name, s in scores.items():
        figures[name], n_lists = agreement(test, s)
    assert figures["oracle"] == 1.0, "the agreement of the grades with themselves must be 1"
    assert abs(figures["random"] - 0.5) < 0.05, f"a random score must be near chance, got {figures['random']:.3f}"
    manifest = json.loads((bench / "manifest.json").read_text())
    own = (manifest.get("validity") or {})
    return {"benchmark": str(bench), "name": manifest["recipe"]["name"], "fingerprint": manifest["fingerprint"][:12],
            "train_lists": len(train), "train_pairs": int(len(pairs[0])), "test_lists": n_lists,
            "attackers": {k: round(v, 4) for k, v in figures.items()},
            "own_validity": {k: (own.get(k) or {}).get("pairwise_agreement") for k in OWN},
            "own_validity_mode": own.get("mode")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("benchmarks", nargs="+", type=Path, help="built benchmark folders (NAME/FINGERPRINT)")
    ap.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = ap.parse_args(argv)
    info = header("independent lexical attackers (scikit-learn), train -> test, pairwise agreement")
    out = []
    for bench in args.benchmarks:
        t0 = time.perf_counter()
        res = attack(bench)
        res["seconds"] = round(time.perf_counter() - t0, 1)
        out.append(res)
        print(f"\n{res['name']} ({res['fingerprint']}): {res['train_lists']:,} train lists "
              f"({res['train_pairs']:,} pairs), {res['test_lists']:,} test lists, {res['seconds']} s")
        for k, v in res["attackers"].items():
            print(f"  {k:22s} {v:.3f}")
        print("  its own validity figures (" + str(res["own_validity_mode"]) + "): "
              + ", ".join(f"{k} {v:.3f}" for k, v in res["own_validity"].items() if v is not None))
    info["load_at_end"] = load()
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"machine": info, "results": out}, indent=2) + "\n")
        print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
