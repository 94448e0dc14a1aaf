"""The errors of publishing to and loading from the Hugging Face Hub (defined in :mod:`gradebench.errors`)."""

from __future__ import annotations

from gradebench.errors import HubError, NotRedistributableError

__all__ = ["HubError", "NotRedistributableError"]
