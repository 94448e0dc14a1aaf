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


def render_card(manifest: dict[str, Any]) -> str:
    r = manifest["recipe"]
    src = r["source"]
    stats = manifest["stats"]
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
        f"- gradebench data format v{manifest['data_format_version']}, schema v{manifest['schema_version']}",
        f"- built by gradebench {manifest['gradebench_version']}",
        "",
        WARNING,
        "",
        "## Construction",
        "",
        f"Each query is one source pair (`{r['query_template']}`); its candidates are:",
        "",
        "| tier | relevance | score range | candidates from | per query |",
        "|---|---|---|---|---|",
    ]
    for t in r["tiers"]:
        lo, hi = t["score_range"]
        what = t["description"] or t["candidates"]
        lines.append(f"| {t['name']} | {t['relevance']} | [{lo:.2f}, {hi:.2f}] | {what} | {t['count']} |")
    sc = r["scoring"]
    lines += [
        "",
        f"Scores: `{sc['mode']}`"
        + (
            " (seeds/000 Algorithm 1: content-seeded uniform draw in the tier range, then label-word, "
            "reasoning-keyword and query-overlap bonuses, short and gibberish penalties, clipped to [0, 1])."
            if sc["mode"] == "algorithm1"
            else " (content-seeded uniform draw in the tier range)." if sc["mode"] == "uniform"
            else " (relevance divided by the highest relevance)."
        ),
        "Candidates are ordered within each query by a content hash, not by tier.",
        "All random choices derive from sha256 of the seed namespace and the content.",
    ]
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
            "| ambiguity | score range (mean) | tier NDCG@3 | tier NDCG@5 | tier Spearman |",
            "|---|---|---|---|---|",
            f"| {_fmt(a['ambiguity'])} | {_fmt(a['score_range_mean'])} | {_fmt(a['tier_ndcg@3'])} | "
            f"{_fmt(a['tier_ndcg@5'])} | {_fmt(a['tier_spearman'])} |",
            "",
            "| tier | n | score mean [min, max] | words (mean) | query overlap | human share |",
            "|---|---|---|---|---|---|",
        ]
        for name, t in a["tiers"].items():
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
        "The graded construction follows Bailleux, Mukherjee et al., *Explanation Quality Assessment as "
        "Ranking with Listwise Rewards* (arXiv:2604.24176, 2026).",
        "",
    ]
    return "\n".join(lines)
