"""The papers' figures the report compares with, as data, each with where it is printed.

These are the only numbers in the report that do not come from records. Each is copied from
the paper named (``/work/shared/seeds``: 000 the core paper, 001 WorldTree ratings, 002 rank
over class, 003 L2R2, 004 LiPO) or, for ChaosNLI, from the scoreboard of its repository
(easonnie/ChaosNLI README); ``tests/results/test_reproduction_papers.py`` checks them
against the paper texts where those are present.
"""

from __future__ import annotations

from gradebench.experiments.figures import WORLDTREE_TOP_K as FIGURES_TOP_K

#: seeds/000 Table 3 (RoBERTa-base): loss -> (NDCG@5, Spearman, separation ratio)
TABLE3_SOURCE = "seeds/000, Table 3 (RoBERTa-base)"
TABLE3: dict[str, tuple[float, float, float]] = {
    "mse": (0.789, 0.512, 0.089),
    "bradley_terry": (0.815, 0.547, 0.124),  # "Binary classification" (Bradley-Terry, footnote 1)
    "ranknet": (0.856, 0.682, 0.341),
    "approxndcg": (0.874, 0.721, 0.523),
    "listnet": (0.996, 0.920, 0.920),
}
#: the order Table 3 asserts, lowest first
TABLE3_ORDER: tuple[str, ...] = ("mse", "bradley_terry", "ranknet", "approxndcg", "listnet")

#: seeds/000 Table 7: reward model -> (separation ratio, PPO steps to converge or None, quality /5, error share)
TABLE7_SOURCE = "seeds/000, Table 7 (PPO, GPT-2 medium policy)"
TABLE7: dict[str, tuple[float, int | None, float, float]] = {
    "mse": (0.089, None, 2.9, 0.34),
    "bradley_terry": (0.124, 3200, 3.2, 0.18),
    "listnet": (0.920, 1000, 4.1, 0.09),
}

#: seeds/001 Table 4: model -> (MAP WT2 gold, MAP experts >= extra (1), MAP experts >= important (2), NDCG)
WORLDTREE_SOURCE = "seeds/001, Table 4 (expert ratings vs the WT2 gold explanation)"
WORLDTREE_TABLE4: dict[str, tuple[float, float, float, float]] = {
    "BERT (exhaustive)": (0.54, 0.66, 0.58, 0.75),
    "RoBERTa (exhaustive)": (0.57, 0.68, 0.61, 0.78),
    "TFR-BERT (rerank K=100)": (0.49, 0.58, 0.63, 0.81),
}
#: seeds/001 §6.1: TFR-BERT's whole explanation is its top K = 8 facts (the stored figures use it)
WORLDTREE_TOP_K = FIGURES_TOP_K

#: seeds/002 Table 4 (tweet sentiment, 5 balanced classes): accuracy of the best classifier and
#: of the converted rankings (lowest, highest)
RANK_CLASS_SOURCE = "seeds/002, Table 4 (tweet sentiment, 5 classes)"
RANK_CLASS_BEST_CLASSIFIER = 0.692
RANK_CLASS_CONVERTED = (0.872, 0.916)

#: seeds/003 Table 1, RoBERTa row (ART dev accuracy, %): gradebench loss -> figure; "classification"
#: is the paper's double-choice classifier (no gradebench loss is the same)
L2R2_SOURCE = "seeds/003, Table 1 (RoBERTa, ART dev accuracy)"
L2R2_ROBERTA: dict[str, float] = {
    "classification": 85.64,
    "ranknet": 87.86,  # Logistic
    "hinge": 87.92,
    "lambdarank": 87.79,
    "listnet": 88.45,  # KLD
    "listmle": 88.12,  # Likelihood
    "approxndcg": 86.55,
}

#: seeds/004 Figure 3 (Reddit TL;DR): a plot, no figure is printed in the text
LIPO_SOURCE = "seeds/004, Figure 3 (list-size ablation; plotted, no numbers printed)"

#: the ChaosNLI scoreboard (easonnie/ChaosNLI README), RoBERTa-large: (JSD, KL, accuracy)
CHAOSNLI_SOURCE = "ChaosNLI scoreboard (easonnie/ChaosNLI README), RoBERTa-large"
CHAOSNLI_ROBERTA_LARGE: dict[str, tuple[float, float, float]] = {
    "chaosnli-snli": (0.221, 0.494, 0.749),
    "chaosnli-mnli": (0.311, 0.870, 0.674),
}
