"""The dataset card (README.md with a datasheet) written into every benchmark folder."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

WARNING = (
    "**Intended use.** Lower tiers deliberately hold wrong-label, off-topic or irrelevant text. "
    "They exist only as negatives for training and evaluating reward models / rankers; never use "
    "them as explanations, as NLI training data on their own, or as outputs shown to people."
)


def _fmt(x: Any) -> str:
    return "n/a" if x is None else (f"{x:.4f}" if isinstance(x, float) else str(x))


#: figure keys renamed since figures version 1: old key -> current key
RENAMED_FIGURES = {"lexical_ceiling": "lexical_ceiling_dense"}

#: (figure key, ranker, what it reads) of the card's validity table, in order
VALIDITY_ROWS: tuple[tuple[str, str, str], ...] = (
    ("query_blind", "query-blind probe", "the candidate only"),
    ("label_aware", "label-aware blind probe", "the candidate and the query's label"),
    ("bm25", "BM25", "query and candidate"),
    ("lexical_ceiling_dense", "lexical ceiling, dense (LambdaMART)", "14 lexical features"),
    ("lexical_ceiling_strong", "lexical ceiling, strong (LightGBM)",
     "lexical features, hashed candidate/query/shared words, label x word crosses"),
)


def current_figures(v: dict[str, Any]) -> dict[str, Any]:
    """Validity figures with the current keys (a manifest's version-1 ``lexical_ceiling`` is read as ``lexical_ceiling_dense``)."""
    out = dict(v)
    for old, new in RENAMED_FIGURES.items():
        if old in out and new not in out:
            out[new] = out.pop(old)
    return out


def _label_reading(v: dict[str, Any]) -> str | None:
    if "label_aware" not in v:  # figures measured before the label-aware probe existed
        return None
    la = v["label_aware"]
    if not la:
        return f"- No label-aware probe: {v.get('label_aware_skipped') or 'the queries carry no label'}."
    p = la["pairwise_agreement"]
    if p > v.get("warn_label_aware", 0.65):
        return (
            f"- **Warning:** a probe that knows only the query's label and the candidate's text orders {p:.1%} of "
            "candidate pairs correctly: the wording that goes with each label gives the grades away without "
            "reading the premise or hypothesis."
        )
    if p <= 0.55:
        return f"- The label-aware blind probe is at chance ({p:.1%} of pairs): label-specific wording gives nothing away."
    return (
        f"- The label-aware blind probe orders {p:.1%} of pairs from the candidate text and the query's label "
        "alone: some label-specific wording is left, below the warning level."
    )


def validity_reading(v: dict[str, Any]) -> list[str]:
    """Bullet points that say in words what a build's validity figures mean (pure; reads version-1 keys too)."""
    v = current_figures(v)
    q = v["query_blind"]["pairwise_agreement"]
    warn = v.get("warn_query_blind", 0.6)
    out = []
    if q > warn:
        out.append(
            f"- **Warning:** a ranker that never reads the query orders {q:.1%} of candidate pairs correctly: "
            "the candidates' own text (templates, authorship, length, wording) gives their grade away, so a "
            "high score on this benchmark is no evidence that a scorer judges quality."
        )
    elif q <= 0.55:
        out.append(
            f"- The query-blind probe is at chance ({q:.1%} of pairs): a candidate's text alone does not give "
            "its grade away; ranking needs the query."
        )
    else:
        out.append(
            f"- The query-blind probe orders {q:.1%} of pairs from the candidate text alone: some style cue "
            "is left, but well below the warning level."
        )
    label = _label_reading(v)
    if label:
        out.append(label)
    names = (("bm25", "BM25"), ("lexical_ceiling_dense", "LambdaMART"),
             ("lexical_ceiling_strong", "LightGBM on lexical and word features"))
    lexical = [(name, v[key]["pairwise_agreement"]) for key, name in names if v.get(key)]
    if lexical:
        name, best = max(lexical, key=lambda kv: kv[1])
        if best >= 0.99:
            out.append(
                f"- Word matching alone ({name}) orders {best:.1%} of pairs: this benchmark leaves nothing "
                "for understanding to add over lexical features."
            )
            return out
        strong = v.get("lexical_ceiling_strong")
        warned = bool(strong) and strong["pairwise_agreement"] > v.get("warn_lexical_ceiling_strong", 0.85)
        text = (
            f"- {'**Warning:** w' if warned else 'W'}ord matching alone ({name}) orders {best:.1%} of pairs: "
            f"a scorer shows more than lexical matching only by the margin it reaches above {best:.3f}"
        )
        if best >= 0.9:
            text += "; with so little room left, this benchmark barely separates understanding from matching."
        elif best <= 0.8:
            text += f"; the {1 - best:.1%} of pairs that matching gets wrong are where understanding is measured."
        else:
            text += "."
        out.append(text)
    return out


#: how the card's verdict paragraph starts (:func:`with_verdict` finds it by this)
VERDICT_MARK = "**Validity verdict:**"
#: what the build-time card says to do: check a trained reader against the shortcuts
VERDICT_HINT = "gradebench validity BENCHMARK_DIR --run RUN_DIR"


def best_shortcut(v: dict[str, Any]) -> tuple[str, float] | None:
    """(name, pairwise agreement) of the validity figures' best attacker (the first of
    :data:`VALIDITY_ROWS` on a tie), or None without measured figures."""
    v = current_figures(v)
    found = [(name, v[key]["pairwise_agreement"]) for key, name, _ in VALIDITY_ROWS if v.get(key)]
    return max(found, key=lambda kv: kv[1]) if found else None


def build_verdict(v: dict[str, Any]) -> str:
    """The card's verdict paragraph when it is written, before any reader has been evaluated: the
    best shortcut's figure and the command that checks a trained run against the shortcuts."""
    best = best_shortcut(v)
    figure = "" if best is None else (
        f" The best shortcut ({best[0]}) orders {best[1]:.1%} of candidate pairs (pairwise agreement "
        f"{best[1]:.4f}); a reader shows that it reads only by a margin above that.")
    return (f"{VERDICT_MARK} no verdict: no reader evaluated.{figure} Check a trained run against the "
            f"shortcuts with `{VERDICT_HINT}` (BENCHMARK_DIR: this folder; RUN_DIR: the `--out` of "
            "`gradebench train --benchmark BENCHMARK_DIR`).")


def with_verdict(card: str, verdict: str | None) -> str:
    """``card`` with its verdict paragraph (the one starting with :data:`VERDICT_MARK`) replaced by
    ``verdict`` (the leaderboard's, from records), or with ``verdict`` added at the end where the
    card has none; ``card`` as it is when ``verdict`` is None."""
    if verdict is None:
        return card
    paragraph = f"{VERDICT_MARK} {verdict}"
    lines = card.split("\n")
    at = next((i for i, line in enumerate(lines) if line.startswith(VERDICT_MARK)), None)
    if at is None:
        return card.rstrip("\n") + f"\n\n{paragraph}\n"
    return "\n".join([*lines[:at], paragraph, *lines[at + 1:]])


def adversarial_lines(rep: dict[str, Any]) -> list[str]:
    """The card's section on the adversarial step (the manifest's ``adversarial`` report), per round."""
    names = [a["name"] for a in rep["attackers"]]
    lines = ["", "## Adversarial filter", "",
             f"Attackers ({rep['family']}): " + "; ".join(f"`{a['name']}` ({', '.join(a['features'])})"
                                                       for a in rep["attackers"]) + ". Settings: "
             + ", ".join(f"{k} {v}" for k, v in rep["settings"].items()) + ".",
             "Agreement is the share of the members' votes that order a pair right (train lists: only members "
             "that did not learn from them), before and after each round.", "",
             "| round | split | " + " | ".join(f"{n} before | {n} after" for n in names) + " | lists |",
             "|---|---|" + "---|---|" * len(names) + "---|"]
    for r in rep["rounds"]:
        for split in sorted(r["after"]["attackers"]):
            b, a = r["before"]["attackers"].get(split, {}), r["after"]["attackers"][split]
            lines.append(f"| {r['round']} | {split} | " + " | ".join(f"{_fmt(b.get(n))} | {_fmt(a.get(n))}" for n in names)
                         + f" | {r['lists'].get(split, 0)} |")
    if rep["settings"].get("mirror"):
        lines += ["", "Mirrored: every sibling and unrelated candidate is the own explanation of another list of its "
                  "split (a sibling's link goes both ways; an unrelated one is lent to one list at most), so a "
                  "scorer that reads only the candidate orders the own > sibling pairs at chance."]
    lines += ["", "| round | tier pair | before | after |", "|---|---|---|---|"]
    for r in rep["rounds"]:
        for pair, after in r["after"]["tier_pairs"].items():
            lines.append(f"| {r['round']} | {pair} | {_fmt(r['before']['tier_pairs'].get(pair))} | {_fmt(after)} |")
    for r in rep["rounds"]:
        lines.append("")
        lines.append(f"Round {r['round']}: replaced " + (", ".join(f"{k} {v}" for k, v in r["replaced"].items()) or "none")
                     + "; dropped candidates " + (", ".join(f"{k} {v}" for k, v in r["dropped_candidates"].items()) or "none")
                     + "; dropped lists " + (", ".join(f"{k} {v}" for k, v in r["dropped_lists"].items()) or "none")
                     + ("" if "easy_lists" not in r else " (by list_tau: "
                        + (", ".join(f"{k} {v}" for k, v in r["easy_lists"].items()) or "none") + ")") + ".")
    lines += ["", f"Target (every attacker's train agreement <= {rep['settings']['target']}): "
              + ("met." if rep["target_met"] else "NOT met.")]
    return lines


def render_card(manifest: dict[str, Any], builder: Any) -> str:
    r = manifest["recipe"]
    src = r["source"]
    stats = manifest["stats"]
    tiered = builder.tiers() is not None
    b = manifest.get("builder", {})
    lines = [
        "---",
        f"license: {src['license'].splitlines()[0]!r}",
        "task_categories: [text-ranking]",
        f"pretty_name: gradebench {r['name']}",
        "---",
        "",
        f"# gradebench benchmark `{r['name']}` (recipe v{r['version']})",
        "",
        r["description"].strip(),
        "",
        f"- fingerprint: `{manifest['fingerprint']}`",
        f"- builder: `{b.get('name', src['family'])}` v{b.get('version', 1)}",
        f"- gradebench data format v{manifest['data_format_version']}, schema v{manifest['schema_version']}",
        f"- built by gradebench {manifest['gradebench_version']}",
        "",
    ]
    if not builder.redistributable():
        lines += [
            "**Not redistributable.** The source's license forbids republishing its texts: keep this "
            "benchmark for local use; `gradebench publish` refuses it unless explicitly told otherwise.",
            "",
        ]
    if tiered:
        lines += [WARNING, ""]
    lines += ["## Construction", "", *builder.card_section()]
    if r.get("shuffle_candidates", True):
        lines.append("Candidates are ordered within each query by a content hash, not by grade.")
    lines.append("All random choices derive from sha256 of the seed namespace and the content.")
    if r.get("notes"):
        lines += ["", r["notes"].strip()]
    lines += ["", "## Splits", "", "| split | queries | candidates | files |", "|---|---|---|---|"]
    for s, v in manifest["splits"].items():
        lines.append(f"| {s} | {v['queries']} | {v['candidates']} | {len(v['files'])} |")
    if manifest.get("adversarial"):
        lines += adversarial_lines(manifest["adversarial"])
    if manifest["skipped"]:
        lines += ["", "Skipped source rows: " + ", ".join(f"{k} {v}" for k, v in manifest["skipped"].items()) + "."]
    if "all" in stats:
        a = stats["all"]
        lines += [
            "",
            "## Statistics (all splits)",
            "",
            "| ambiguity | score range (mean) | score-grade NDCG@3 | NDCG@5 | Spearman |",
            "|---|---|---|---|---|",
            f"| {_fmt(a['ambiguity'])} | {_fmt(a['score_range_mean'])} | {_fmt(a['tier_ndcg@3'])} | "
            f"{_fmt(a['tier_ndcg@5'])} | {_fmt(a['tier_spearman'])} |",
            "",
            "List sizes: " + ", ".join(f"{k} candidates x {v}" for k, v in a.get("list_sizes", {}).items()) + ".",
            "",
            "| grade | n | score mean | words (mean) | query overlap |",
            "|---|---|---|---|---|",
        ]
        for g, t in sorted(a.get("grades", {}).items(), key=lambda kv: -int(kv[0])):
            lines.append(
                f"| {g} | {t['candidates']} | {_fmt(t['score_mean'])} | {_fmt(t['words_mean'])} "
                f"| {_fmt(t['query_overlap_mean'])} |"
            )
        for k, v in a.items():
            if k.endswith("_mean") and k not in ("score_range_mean",):
                lines += ["", f"Mean {k.removesuffix('_mean')} per query: {_fmt(v)}."]
        if tiered:
            lines += [
                "",
                "| tier | n | score mean [min, max] | words (mean) | query overlap | human share |",
                "|---|---|---|---|---|---|",
            ]
        for name, t in _in_order(a.get("tiers", {}), [n for n, _ in builder.tiers() or ()]):
            if not t.get("candidates"):
                continue
            lines.append(
                f"| {name} | {t['candidates']} | {_fmt(t['score_mean'])} [{_fmt(t['score_min'])}, {_fmt(t['score_max'])}] "
                f"| {_fmt(t['words_mean'])} | {_fmt(t['query_overlap_mean'])} | {_fmt(t['human_share'])} |"
            )
        probes = a["shortcut_probes"]
        lines += [
            "",
            "Shortcut probes (pairwise agreement with the grades of a ranking by one surface feature; "
            "0.5 = no signal, 1.0 = the feature alone solves it): "
            + ", ".join(f"{k} {_fmt(v)}" for k, v in _in_order(probes, PROBE_ORDER))
            + ".",
        ]
    v = manifest.get("validity")
    if v and "query_blind" in v:
        v = current_figures(v)
        lines += [
            "",
            "## Validity: how far shortcuts get",
            "",
            f"Trained on {v['train_lists']} train lists, scored on {v['test_lists']} test lists"
            + (" (splits carved 50/50 by query-id hash for this measurement)" if v.get("carved") else "")
            + "; pairwise agreement with the grades (0.5 = chance) and NDCG@5:",
            "",
            "| ranker | reads | pairwise agreement | NDCG@5 |",
            "|---|---|---|---|",
        ]
        for key, name, reads in VALIDITY_ROWS:
            f = v.get(key)
            if f:
                lines.append(f"| {name} | {reads} | {f['pairwise_agreement']:.4f} | {f['ndcg@5']:.4f} |")
        setup = v.get("lexical_ceiling_strong_setup")
        if v.get("lexical_ceiling_strong") and setup:
            lines += [
                "",
                f"The strong lexical ceiling learned from {setup['train_lists']} train lists and was early-stopped"
                + (" and tuned" if v.get("mode") == "full" else "")
                + f" on {setup['tune_lists']} more carved from the train split (never the test split)"
                + (f"; the label crosses read the column `{v['query_label']}`" if v.get("query_label") else "")
                + ".",
            ]
        lines += ["", "What these figures show:", "", *validity_reading(v)]
    elif v and v.get("skipped"):
        lines += ["", "## Validity: how far shortcuts get", "", f"Not measured: {v['skipped']}."]
    if v:
        lines += ["", build_verdict(v)]
    if r.get("card_notes"):
        lines += ["", r["card_notes"].strip()]
    lines += [
        "",
        "## Source and license",
        "",
        f"- source: {src['homepage'] or 'embedded in gradebench'}",
        f"- license (inherited from the source): {src['license']}",
        "- inputs (sha256): " + ", ".join(f"`{i['file']}` {i['sha256'][:16]}" for i in manifest["inputs"]),
        "",
        "## Citation",
        "",
        "```bibtex",
        src["citation"].strip(),
        "```",
        "",
    ]
    if tiered:
        lines += [
            "The graded construction follows Bailleux, Mukherjee et al., *Explanation Quality Assessment as "
            "Ranking with Listwise Rewards* (arXiv:2604.24176, 2026).",
            "",
        ]
    return "\n".join(lines)


#: the shortcut probes in the order the build stats compute them (a manifest read back from
#: disk has its keys sorted, so the card never follows a dict's order)
PROBE_ORDER = ("length", "query_overlap", "human_authorship")


def probes_in_order(probes: dict[str, Any]) -> list[tuple[str, Any]]:
    """The shortcut probes' items in :data:`PROBE_ORDER` (the same for a fresh build's stats and a
    cached one's, whose manifest JSON has its keys sorted)."""
    return _in_order(probes, PROBE_ORDER)


def _in_order(d: dict[str, Any], order: Sequence[str]) -> list[tuple[str, Any]]:
    """``d``'s items with the keys in ``order`` first, in that order, then the rest sorted."""
    first = [(k, d[k]) for k in order if k in d]
    return first + sorted((k, v) for k, v in d.items() if k not in set(order))
