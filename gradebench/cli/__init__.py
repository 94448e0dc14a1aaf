"""Command line: thin commands over the library API.

Every command's ``--json`` prints exactly the object its Python function returns. Any
:class:`~gradebench.errors.GradebenchError` becomes one line on stderr and exit code 2
(a traceback only with ``--debug``). Commands live in one module per group; importing this
package registers them all on :data:`app`.
"""

from __future__ import annotations

from gradebench.cli import build_cmds as _build_cmds  # noqa: F401  (registers commands)
from gradebench.cli.app import app, emit, parse_resplit
from gradebench.cli.main import main

for _module in (
    "gradebench.cli.harness_cmds",
    "gradebench.cli.results_cmds",
    "gradebench.cli.validity_cmds",
    "gradebench.cli.report_cmds",
    "gradebench.cli.reward_cmds",
    "gradebench.cli.rl_cmds",
    "gradebench.cli.hub_cmds",
):
    try:
        __import__(_module)
    except ModuleNotFoundError as _e:
        if _e.name != _module:
            raise

__all__ = ["app", "emit", "main", "parse_resplit"]
