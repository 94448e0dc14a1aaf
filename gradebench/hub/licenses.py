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

#: a Hub license identifier: lower-case letters, digits, dots, dashes and plus signs
_ID = re.compile(r"^[a-z0-9][a-z0-9.+-]*$")
#: the Hub's license identifiers, as its documentation lists them
#: (https://huggingface.co/docs/hub/repositories-licenses); :func:`known_ids` adds the ``hub`` ids
#: of the shipped source specs
HUB_LICENSE_IDS = (
    "apache-2.0", "mit", "openrail", "bigscience-openrail-m", "creativeml-openrail-m", "bigscience-bloom-rail-1.0",
    "bigcode-openrail-m", "afl-3.0", "artistic-2.0", "bsl-1.0", "bsd", "bsd-2-clause", "bsd-3-clause",
    "bsd-3-clause-clear", "c-uda", "cc", "cc0-1.0", "cc-by-2.0", "cc-by-2.5", "cc-by-3.0", "cc-by-4.0",
    "cc-by-sa-3.0", "cc-by-sa-4.0", "cc-by-nc-2.0", "cc-by-nc-3.0", "cc-by-nc-4.0", "cc-by-nd-4.0",
    "cc-by-nc-nd-3.0", "cc-by-nc-nd-4.0", "cc-by-nc-sa-2.0", "cc-by-nc-sa-3.0", "cc-by-nc-sa-4.0",
    "cdla-sharing-1.0", "cdla-permissive-1.0", "cdla-permissive-2.0", "wtfpl", "ecl-2.0", "epl-1.0", "epl-2.0",
    "etalab-2.0", "eupl-1.1", "agpl-3.0", "gfdl", "gpl", "gpl-2.0", "gpl-3.0", "lgpl", "lgpl-2.1", "lgpl-3.0",
    "isc", "lppl-1.3c", "ms-pl", "mpl-2.0", "odc-by", "odbl", "openrail++", "osl-3.0", "postgresql", "ofl-1.1",
    "ncsa", "unlicense", "zlib", "pddl", "lgpl-lr", "deepfloyd-if-license", "llama2", "gemma", "unknown", "other",
)


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


def known_ids() -> list[str]:
    """The license ids ``publish(license=...)`` accepts, sorted: :data:`HUB_LICENSE_IDS` and the
    ``hub`` ids of every registered family's source spec."""
    from gradebench.datasets import builder_names
    from gradebench.datasets.source import family_source

    ids = set(HUB_LICENSE_IDS)
    for name in builder_names():
        spec = family_source(name)
        if spec is not None:
            for lic in spec.licenses():
                ids.update(lic.hub)
    return sorted(ids)


def check_ids(ids: Sequence[str]) -> list[str]:
    """``ids`` checked against the Hub's license identifiers (:func:`known_ids`), duplicates removed.

    Raises:
        InvalidArgumentError: an id that is not a string of the Hub's shape, or that the Hub does
            not list (with the closest ids), or no id at all.
    """
    from gradebench.errors import InvalidArgumentError
    from gradebench.registry import suggest

    out: list[str] = []
    known: list[str] | None = None
    for i in ids:
        if not isinstance(i, str) or not _ID.match(i):
            raise InvalidArgumentError(
                f"license {i!r} is not a Hub license identifier",
                hint="use ids such as mit, apache-2.0, cc-by-sa-4.0 or other "
                "(https://huggingface.co/docs/hub/repositories-licenses)",
            )
        known = known_ids() if known is None else known
        if i not in known:
            raise InvalidArgumentError(
                f"license {i!r} is not a Hub license identifier" + suggest(i, known, cutoff=0.6),
                hint="use an id the Hub lists (https://huggingface.co/docs/hub/repositories-licenses), or 'other' "
                "for terms without one; omit --license to derive the ids from the recipes' licenses",
            )
        if i not in out:
            out.append(i)
    if not out:
        raise InvalidArgumentError("license is empty", hint="omit it to derive the ids from the recipes' licenses")
    return out
