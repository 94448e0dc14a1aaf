"""The dataset card (README.md with a datasheet) written into every benchmark folder."""

from __future__ import annotations

from typing import Any

WARNING = (
    "**Intended use.** Lower tiers deliberately hold wrong-label, off-topic or irrelevant text. "
    "They exist only as negatives for training and evaluating reward models / rankers; never use "
    "them as explanations, as NLI training data on their own, or as outputs shown to people."
)


def _fmt(x: Any) -> str:
    return "n/a" if x is None else (f"{x:.4f}" if isinstance(x, float) else str(x))


def validity_reading(v: dict[str, Any]) -> list[str]:
    """Bullet points that say in words what a build's validity figures mean (pure)."""
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
    lexical = [(name, v[key]["pairwise_agreement"]) for key, name in (("bm25", "BM25"), ("lexical_ceiling", "LambdaMART"))
               if v.get(key)]
    if lexical:
        name, best = max(lexical, key=lambda kv: kv[1])
        if best >= 0.99:
            out.append(
                f"- Word matching alone ({name}) orders {best:.1%} of pairs: this benchmark leaves nothing "
                "for understanding to add over lexical features."
            )
            return out
        text = (
            f"- Word matching alone ({name}) orders {best:.1%} of pairs: a scorer shows more than lexical "
            f"matching only by the margin it reaches above {best:.3f}"
        )
        if best >= 0.9:
            text += "; with so little room left, this benchmark barely separates understanding from matching."
        elif best <= 0.8:
            text += f"; the {1 - best:.1%} of pairs that matching gets wrong are where understanding is measured."
        else:
            text += "."
        out.append(text)
    return out


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
        for name, t in a.get("tiers", {}).items():
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
            + ", ".join(f"{k} {_fmt(v)}" for k, v in probes.items())
            + ".",
        ]
    v = manifest.get("validity")
    if v and "query_blind" in v:
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
        rows = [("query-blind probe", "the candidate only", v["query_blind"]),
                ("BM25", "query and candidate", v["bm25"]),
                ("lexical ceiling (LambdaMART)", "14 lexical features", v.get("lexical_ceiling"))]
        for name, reads, f in rows:
            if f:
                lines.append(f"| {name} | {reads} | {f['pairwise_agreement']:.4f} | {f['ndcg@5']:.4f} |")
        lines += ["", "What these figures show:", "", *validity_reading(v)]
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
