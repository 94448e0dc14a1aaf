"""Global flags in any position: ``gradebench --json build demo`` == ``gradebench build demo --json``.

Click only accepts an option on the command that declares it, so before parsing,
:func:`normalize` takes every ``--debug`` and ``--json`` out of the arguments (up to a
literal ``--``) and puts them back where they belong:

* ``--debug`` goes to the root (it only switches tracebacks on), and also to the command
  itself if that command declares its own ``--debug``;
* ``--json`` goes right after the name of the command that runs. A command without a
  ``--json`` option gets a one-line error naming the commands that have one. With
  ``--help``, or when the command is missing or unknown, ``--json`` is dropped so that
  click reports the real problem.

Caveat: a string option whose value is literally ``--json`` or ``--debug`` must use the
``--opt=--json`` form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gradebench.errors import InvalidArgumentError

GLOBAL_FLAGS = ("--debug", "--json")


@dataclass
class Normalized:
    """``args`` for click, and which global flags were given."""

    args: list[str]
    debug: bool
    json: bool


def _option_names(cmd: Any) -> set[str]:
    names: set[str] = set()
    for p in getattr(cmd, "params", []):
        if getattr(p, "param_type_name", "") == "option":
            names.update(p.opts)
            names.update(getattr(p, "secondary_opts", []))
    return names


def _takes_value(cmd: Any, token: str) -> bool:
    """Whether option ``token`` of ``cmd`` consumes the next argument."""
    if "=" in token:
        return False
    for p in getattr(cmd, "params", []):
        if token in p.opts or token in getattr(p, "secondary_opts", []):
            return not getattr(p, "is_flag", False) and not getattr(p, "count", False) and p.nargs != 0
    return False


def resolve(root: Any, tokens: list[str]) -> tuple[Any | None, list[str], int]:
    """Follow command names in ``tokens`` from ``root`` down to the command that runs.

    Returns ``(command, names, index)``: the command (``None`` if a name is unknown or
    missing), the names on the way, and the index in ``tokens`` just after the last name.
    """
    cmd, names, i = root, [], 0
    while hasattr(cmd, "commands"):  # a group
        while i < len(tokens) and tokens[i].startswith("-"):
            i += 2 if _takes_value(cmd, tokens[i]) else 1
        if i >= len(tokens):
            return None, names, i
        sub = cmd.commands.get(tokens[i])
        if sub is None:
            return None, names, i
        cmd, names, i = sub, [*names, tokens[i]], i + 1
    return cmd, names, i


def _commands_with(root: Any, flag: str, prefix: tuple[str, ...] = ()) -> list[str]:
    found = []
    for name, cmd in getattr(root, "commands", {}).items():
        if hasattr(cmd, "commands"):
            found += _commands_with(cmd, flag, (*prefix, name))
        elif flag in _option_names(cmd):
            found.append(" ".join((*prefix, name)))
    return found


def normalize(root: Any, argv: list[str], prog: str = "gradebench") -> Normalized:
    """Move global flags in ``argv`` to where ``root`` (the click command tree) expects them.

    Raises:
        InvalidArgumentError: ``--json`` was given to a command that has no ``--json``.
    """
    cut = argv.index("--") if "--" in argv else len(argv)
    head, tail = argv[:cut], argv[cut:]
    debug, as_json = "--debug" in head, "--json" in head
    head = [a for a in head if a not in GLOBAL_FLAGS]
    cmd, names, at = resolve(root, head)
    extra: list[str] = []
    if cmd is not None:
        own = _option_names(cmd)
        if debug and "--debug" in own:
            extra.append("--debug")
        if as_json and "--help" not in head:
            if "--json" not in own:
                have = ", ".join(_commands_with(root, "--json"))
                raise InvalidArgumentError(
                    f"'{prog} {' '.join(names)}' has no --json output",
                    hint=f"drop --json; commands with --json: {have}" if have else "drop --json",
                )
            extra.append("--json")
    args = head[:at] + extra + head[at:] + tail
    if debug:
        args.insert(0, "--debug")
    return Normalized(args=args, debug=debug, json=as_json)
