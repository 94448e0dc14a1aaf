"""Source specs (gradebench/datasets/<family>/source.yaml): every family's validates, recipes resolve
from them to exactly what they were before the specs existed, overrides win, bad specs fail naming
the file, line and key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gradebench.datasets import builder_names

BUILTIN = builder_names()  # every registered builder (no plugins are installed in the tests)
from gradebench.datasets.source import (
    SOURCE_FILE,
    FamilySource,
    License,
    family_source,
    license_for,
    read_source_spec,
    source_spec_path,
)
from gradebench.errors import RecipeError
from gradebench.recipes import load_recipe, recipe_names, recipes_dir

PINNED = json.loads((Path(__file__).parent / "resolved_recipes_c35a736.json").read_text(encoding="utf-8"))["recipes"]
DATASETS = Path(__file__).resolve().parents[2] / "gradebench" / "datasets"
SPEC_KEYS = ("homepage", "license", "citation", "base_url", "files", "embedded")

#: family -> {variant (None: the top level): (Hub ids, redistributable)}
LICENSES = {
    "esnli": {None: (["mit", "cc-by-sa-4.0"], True), "demo": (["apache-2.0"], True)},
    "dnli": {None: (["mit", "cc-by-sa-4.0", "cc-by-4.0"], True)},
    "dnli-natural": {None: (["mit", "cc-by-sa-4.0", "cc-by-4.0"], True)},
    "winowhy": {None: (["mit"], True)},
    "mnli": {None: (["cc-by-sa-3.0", "cc-by-3.0", "other"], True)},
    "nli-table": {None: (["other"], False)},
    "chaosnli": {"snli": (["cc-by-nc-4.0", "cc-by-sa-4.0"], True),
                 "mnli": (["cc-by-nc-4.0", "cc-by-sa-3.0", "cc-by-3.0", "other"], True)},
    "anli": {None: (["cc-by-nc-4.0", "other"], False)},
    "worldtree": {None: (["cc-by-sa-4.0", "mit", "other"], False)},
    "preferences": {None: (["other"], False), "rewardbench": (["odc-by", "other"], True)},
    "best-of-n": {None: (["other"], False), "rewardbench-2": (["odc-by", "other"], True)},
    "ratings": {None: (["other"], False), "ultrafeedback": (["mit"], True), "helpsteer": (["cc-by-4.0"], True),
                "helpsteer2": (["cc-by-4.0"], True)},
}


# ---------------------------------------------------------------- every family's spec


def test_every_builtin_family_has_a_valid_spec():
    assert sorted(BUILTIN) == sorted(LICENSES)
    for family in BUILTIN:
        path = source_spec_path(family)
        assert path is not None and path.name == SOURCE_FILE, family
        assert isinstance(read_source_spec(path), FamilySource)
        assert family_source(family) == read_source_spec(path)
    # one spec per folder, none orphaned: every source.yaml belongs to a builder's folder
    folders = {source_spec_path(f).parent for f in BUILTIN}
    assert {p.parent for p in DATASETS.glob(f"*/{SOURCE_FILE}")} == folders
    assert source_spec_path("dnli-natural") == source_spec_path("dnli")  # one folder, two builders


@pytest.mark.parametrize("family", sorted(LICENSES))
def test_license_mapping_of_every_family(family):
    spec = family_source(family)
    found = {}
    for variant in [None, *spec.variants] if spec.license is not None else list(spec.variants):
        lic = spec.release(variant).license
        found[variant] = (lic.hub, lic.redistributable)
        # the text names the structured license back, whatever its line breaks
        assert license_for(family, lic.text) == lic
        assert license_for(family, "\n  ".join(lic.text.split())) == lic
        assert (lic.id == "other") == ("other" in lic.hub)
    assert found == LICENSES[family]


def test_a_license_text_no_spec_states_is_other_with_its_familys_flag():
    mine = license_for("esnli", "CC0-1.0 (my own copy)")
    assert (mine.id, mine.hub, mine.text, mine.redistributable) == ("other", ["other"], "CC0-1.0 (my own copy)", True)
    assert license_for("worldtree", "something else").redistributable is False  # the Mercury questions stay in
    assert license_for("chaosnli", "other terms").redistributable is True


# ---------------------------------------------------------------- recipes resolve as before


#: recipes shipped after c35a736 (they never resolved without the source specs, so the pin cannot hold them;
#: esnli-contrast-v2 came later still)
ADDED_AFTER_PIN = ("best-of-n", "esnli-contrast-v2", "esnli-contrast-v3", "esnli-contrast-v4", "multi-ratings",
                   "multi-ratings-flat", "preference-pairs")


def test_the_pin_covers_every_shipped_recipe():
    assert sorted(PINNED) == sorted(set(recipe_names()) - set(ADDED_AFTER_PIN))
    assert set(ADDED_AFTER_PIN) <= set(recipe_names())


@pytest.mark.parametrize("name", sorted(PINNED))
def test_every_shipped_recipe_resolves_as_at_c35a736(name):
    """The dicts in the fixture were dumped by the code at c35a736; fingerprints hash these.

    The documentation-only keys (``card_notes``: the card's prose, outside the fingerprint) may
    be reworded since; everything the fingerprint hashes must resolve exactly as pinned.
    """
    from gradebench.benchmark.engine import DOC_ONLY_KEYS

    now = load_recipe(name).model_dump(mode="json")
    assert {k: v for k, v in now.items() if k not in DOC_ONLY_KEYS} == {
        k: v for k, v in PINNED[name].items() if k not in DOC_ONLY_KEYS}
    assert set(now) == set(PINNED[name])


@pytest.mark.parametrize("name", sorted(PINNED) + list(ADDED_AFTER_PIN))
def test_shipped_recipes_reference_the_spec_instead_of_copying_it(name):
    source = yaml.safe_load((recipes_dir() / f"{name}.yaml").read_text(encoding="utf-8")).get("source", {})
    assert not set(source) & set(SPEC_KEYS), f"{name} copies {sorted(set(source) & set(SPEC_KEYS))}"


def test_variant_is_consumed_not_dumped():
    r = load_recipe("chaosnli-snli")
    assert r.source.variant == "snli" and "variant" not in r.model_dump(mode="json")["source"]
    assert "variant" not in json.loads(r.model_dump_json())["source"]
    assert [f.filename for f in r.source.files] == ["chaosNLI_snli.jsonl"]
    assert [f.filename for f in load_recipe("chaosnli-mnli").source.files] == ["chaosNLI_mnli_m.jsonl"]
    demo = load_recipe("demo")
    assert (demo.source.variant, demo.source.embedded, demo.source.files) == ("demo", "data/demo", [])
    assert demo.source.license_terms.hub == ["apache-2.0"]


def test_a_resolved_recipe_read_back_keeps_its_structured_license():
    from gradebench.recipes.loader import recipe_from_json

    for name in ("chaosnli-mnli", "demo", "worldtree"):
        r = load_recipe(name)
        back = recipe_from_json(r.model_dump_json())
        assert back.model_dump() == r.model_dump() and back.source.variant is None
        assert back.source.license_terms == r.source.license_terms


# ---------------------------------------------------------------- recipes overriding the spec


def _recipe(tmp_path: Path, source: dict, base: str = "esnli") -> Path:
    p = tmp_path / "mine.yaml"
    p.write_text(yaml.safe_dump({"extends": base, "name": "mine", "seed_namespace": "me/mine", "source": source}))
    return p


def test_a_recipe_overrides_spec_fields(tmp_path):
    r = load_recipe(_recipe(tmp_path, {"homepage": "https://example.org/esnli-mirror",
                                       "citation": "@misc{mine}", "default": "path"}))
    spec = family_source("esnli").release()
    assert (r.source.homepage, r.source.citation, r.source.default) == ("https://example.org/esnli-mirror",
                                                                          "@misc{mine}", "path")
    # the keys it leaves out still come from the spec, license included
    assert r.source.files == spec.files and r.source.base_url == spec.base_url
    assert r.source.license == spec.license.text and r.source.license_terms == spec.license
    # a license of its own: the text is kept, the structure is unknown
    r = load_recipe(_recipe(tmp_path, {"license": "CC0-1.0 (my re-annotation)"}))
    assert r.source.license == "CC0-1.0 (my re-annotation)" and r.source.license_terms.hub == ["other"]
    # files of its own are checked like the spec's
    with pytest.raises(RecipeError, match=r"key 'source.files\[0\]'.*no checksum"):
        load_recipe(_recipe(tmp_path, {"files": [{"filename": "x.csv", "split": "test"}]}))


def test_unknown_or_missing_variant(tmp_path):
    with pytest.raises(RecipeError, match=r"source.variant 'snlii' is not a variant of family 'chaosnli'; "
                                          r"did you mean 'snli'\? \(its source.yaml has: mnli, snli\)"):
        load_recipe(_recipe(tmp_path, {"variant": "snlii"}, base="chaosnli-snli"))
    data = yaml.safe_load((recipes_dir() / "chaosnli-snli.yaml").read_text(encoding="utf-8"))
    del data["source"]["variant"]
    p = tmp_path / "novariant.yaml"
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(RecipeError, match=r"novariant.yaml:\d+, key 'source': family 'chaosnli' has several "
                                          r"releases: name one with source.variant \(mnli, snli\)"):
        load_recipe(p)


# ---------------------------------------------------------------- bad specs


GOOD = {
    "homepage": "https://example.org",
    "license": {"id": "MIT", "hub": ["mit"], "name": "MIT", "text": "MIT (mine)", "redistributable": True},
    "citation": "@misc{x}",
}


def _spec(tmp_path: Path, data: dict) -> Path:
    p = tmp_path / SOURCE_FILE
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


def _bad(tmp_path: Path, data: dict, match: str) -> RecipeError:
    p = _spec(tmp_path, data)
    with pytest.raises(RecipeError, match=match) as e:
        read_source_spec(p)
    assert str(p) in str(e.value) and "hint:" in str(e.value)
    return e.value


def test_a_good_spec_reads(tmp_path):
    spec = read_source_spec(_spec(tmp_path, GOOD))
    assert spec.release().recipe_fields() == {"homepage": "https://example.org", "license": "MIT (mine)",
                                              "citation": "@misc{x}", "base_url": None, "files": [],
                                              "embedded": None}


def test_a_bad_spec_key_names_the_key_and_line(tmp_path):
    e = _bad(tmp_path, {**GOOD, "licence": "MIT"}, r"unknown key 'licence'")
    assert e.key == "licence" and e.line == 10  # homepage (1), license (2-9), licence
    lines = _spec(tmp_path, {**GOOD, "licence": "MIT"}).read_text().splitlines()
    assert lines[e.line - 1].startswith("licence:")
    e = _bad(tmp_path, {**GOOD, "license": {**GOOD["license"], "spdx": "MIT"}}, r"unknown key 'spdx'")
    assert e.key == "license.spdx"
    e = _bad(tmp_path, {**GOOD, "variants": {"v": {"homepag": "x"}}}, r"unknown key 'homepag'")
    assert e.key == "variants.v.homepag"


@pytest.mark.parametrize(("change", "match"), [
    ({"license": {**GOOD["license"], "id": "mit"}}, r"canonical form: 'MIT'"),
    ({"license": {**GOOD["license"], "id": "MIT-ish"}}, r"not an SPDX license expression"),
    ({"license": {**GOOD["license"], "hub": ["mit", "cc-by-4.0"]}}, r"does not match id 'MIT'"),
    ({"license": {**GOOD["license"], "hub": ["MIT"]}}, r"'MIT' is not a Hub license id"),
    ({"license": {**GOOD["license"], "hub": ["cc-by-sa4.0"]}}, r"'cc-by-sa4.0' is not a Hub license id"),
    ({"license": {**GOOD["license"], "id": "other", "hub": ["mit"]}}, r"id 'other' needs 'other' in hub"),
    ({"license": {**GOOD["license"], "id": "other", "hub": ["other", "mit"]}}, r"put 'other' last"),
    ({"license": {**GOOD["license"], "redistributable": False}}, r"forbids republishing needs 'other'"),
    ({"license": {k: v for k, v in GOOD["license"].items() if k != "redistributable"}},
     r"missing required key 'redistributable'"),
    ({"files": [{"filename": "a.csv", "split": "test"}]}, r"no checksum"),
    ({"files": [{"filename": "a.csv", "split": "dev", "sha256": "0" * 64}]}, r"'train', 'validation' or 'test'"),
    ({"variants": {"v": {"license": {**GOOD["license"], "name": "other name"}}}}, r"text must name one license"),
])
def test_bad_spec_values(tmp_path, change, match):
    _bad(tmp_path, {**GOOD, **change}, match)


def test_a_spec_of_variants_only_needs_each_complete(tmp_path):
    only = {"homepage": "https://example.org", "variants": {"a": {"citation": "@misc{a}", "license": GOOD["license"]},
                                                              "b": {"citation": "@misc{b}"}}}
    _bad(tmp_path, only, r"variant 'b' is not a complete release: missing required key 'license'")
    _bad(tmp_path, {"homepage": "x"}, r"needs license: \(or variants: that each have one\)")
    _bad(tmp_path, {**GOOD, "homepage": ["x"]}, r"key 'homepage'")


def test_a_builder_folder_without_a_spec_resolves_nothing(monkeypatch):
    """A third-party builder with no source.yaml: its recipes state every key themselves, as before."""
    import gradebench.datasets as datasets
    from gradebench.datasets.source import resolve_source

    class Elsewhere:
        __module__ = "json.decoder"  # a package (json) with no source.yaml

    monkeypatch.setattr(datasets, "get_builder", lambda name: Elsewhere)
    assert source_spec_path("mine") is None and family_source("mine") is None
    block = {"family": "mine", "formats": ["x"], "default": "path", "license": "MIT", "citation": "c"}
    assert resolve_source(block) == block
    assert license_for("mine", "MIT") == License.unknown("MIT", redistributable=True)
    with pytest.raises(ValueError, match="family 'mine' has no source.yaml with variants"):
        resolve_source({**block, "variant": "v"})
