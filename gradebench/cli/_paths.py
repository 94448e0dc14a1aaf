"""Output-path preflight for commands: re-exports :func:`gradebench.paths.check_writable_dir`.

Call it on every output root before the work starts::

    from gradebench.cli._paths import check_writable_dir
    check_writable_dir(out, what="--out")
"""

from gradebench.paths import check_writable_dir, os_error_hint

__all__ = ["check_writable_dir", "os_error_hint"]
