"""Hub license identifiers from the structured licenses of the sources a repo holds.

Every source's license is data: ``license`` in its family's ``source.yaml``
(:class:`~gradebench.datasets.source.License`), with the Hub ids that cover it (``hub``) and
whether it may be republished (``redistributable``). A built benchmark names its license by the
free-text statement its recipe carries (``source.license``, part of the fingerprint), which
:func:`~gradebench.datasets.source.license_for` maps back to the structured one; a statement no
spec knows (a recipe that overrides it) counts as ``other``. :func:`hub_license_ids` merges the
ids of several sources for the README's ``license:`` field
(https://huggingface.co/docs/hub/repositories-licenses). The full statement always travels
with the data (the card's "Source and license" section, ``LICENSE.md`` and ``gradebench.json``);
``publish(license=[...])`` overrides the ids.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from gradebench.datasets.source import License

#: a Hub license identifier: lower-case letters, digits, dots and dashes
_ID = re.compile(r"^[a-z0-9][a-z0-9.-]*$")


def hub_license_ids(licenses: Iterable[tuple[License, bool]]) -> list[str]:
    """The ``license:`` list for a repo holding sources with ``(license, redistributable)``.

    Each license's Hub ids in order of first appearance, each once, and ``other`` last when a
    license lists it or a source may not be redistributed (open ids alone would misstate the
    terms).

    Example:
        >>> mit = License(id="MIT", hub=["mit"], name="MIT", text="MIT", redistributable=True)
        >>> hub_license_ids([(mit, True)])
        ['mit']
        >>> hub_license_ids([(mit, False)])
        ['mit', 'other']
    """
    ids: list[str] = []
    other = False
    for lic, redistributable in licenses:
        ids += [i for i in lic.hub if i != "other" and i not in ids]
        other = other or "other" in lic.hub or not redistributable or not lic.redistributable
    return [*ids, "other"] if other else ids


def check_ids(ids: Sequence[str]) -> list[str]:
    """``ids`` checked for the shape of Hub identifiers (lower case, no spaces), duplicates removed."""
    from gradebench.errors import InvalidArgumentError

    out: list[str] = []
    for i in ids:
        if not isinstance(i, str) or not _ID.match(i):
            raise InvalidArgumentError(
                f"license {i!r} is not a Hub license identifier",
                hint="use ids such as mit, apache-2.0, cc-by-sa-4.0 or other "
                "(https://huggingface.co/docs/hub/repositories-licenses)",
            )
        if i not in out:
            out.append(i)
    if not out:
        raise InvalidArgumentError("license is empty", hint="omit it to derive the ids from the recipes' licenses")
    return out
