"""Generated documentation: README tables rendered from the code so they cannot drift.

``python -m gradebench.docs`` rewrites the blocks between ``<!-- BEGIN name -->`` and
``<!-- END name -->`` in README.md; a test fails when the README is out of date.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from gradebench.catalog import list_recipes


def recipes_table() -> str:
    lines = ["| recipe | tiers | scores | source formats | license |", "|---|---|---|---|---|"]
    for r in list_recipes():
        lines.append(
            f"| `{r['name']}` v{r['version']} | {' > '.join(r['tiers'])} | {r['scoring']} | "
            f"{', '.join(r['formats'])} ({r['default_source']} by default) | {r['license']} |"
        )
    return "\n".join(lines)


def losses_table() -> str:
    from gradebench.losses import loss_table

    return loss_table().strip()


def scorers_table() -> str:
    from gradebench.scorers import scorer_table

    lines = ["| scorer | kind | trains | default loss | what it is | config (defaults) |", "|---|---|---|---|---|---|"]
    for r in scorer_table():
        cfg = ", ".join(f"`{k}={v!r}`" for k, v in r["config"].items()) or "—"
        lines.append(
            f"| `{r['name']}` v{r['version']} | {r['kind']} | {'yes' if r['trainable'] else 'no'} | "
            f"{r['default_loss'] or '—'} | {r['summary']} | {cfg} |"
        )
    return "\n".join(lines)


BLOCKS = {"recipes": recipes_table, "losses": losses_table, "scorers": scorers_table}


def render(text: str) -> str:
    for name, fn in BLOCKS.items():
        pattern = re.compile(rf"(<!-- BEGIN {name} -->\n)(?:.*?\n)?(<!-- END {name} -->)", re.S)
        text = pattern.sub(lambda m, fn=fn: m.group(1) + fn() + "\n" + m.group(2), text)
    return text


def main() -> int:
    readme = Path(__file__).resolve().parents[1] / "README.md"
    old = readme.read_text(encoding="utf-8")
    new = render(old)
    if new != old:
        readme.write_text(new, encoding="utf-8")
        print(f"updated {readme}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
