"""Canonical names, parse_metric round trips, and the metric registry."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradebench.errors import DuplicateNameError, InvalidArgumentError, UnknownNameError
from gradebench.metrics import (
    MAP,
    METRICS,
    NDCG,
    CompB,
    KendallTau,
    MetricSpec,
    SeparationRatio,
    TierEta2,
    parse_metric,
)
from gradebench.metrics.spec import field_kind, register


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        (NDCG(k=5), "ndcg@5"),
        (NDCG(), "ndcg"),
        (NDCG(k=5, gain="linear", ties="trec"), "ndcg@5[gain=linear,ties=trec]"),
        (NDCG(k=3, no_relevant="exclude"), "ndcg@3[no_relevant=exclude]"),
        (MAP(threshold=2), "map[threshold=2]"),
        (MAP(threshold=0.5, k=10), "map@10[threshold=0.5]"),
        (KendallTau(), "kendall"),
        (SeparationRatio(), "separation_ratio"),
        (TierEta2(center="query"), "tier_eta2[center=query]"),
        (CompB(k=8), "compb@8"),
        (CompB(k=8, important_threshold=3), "compb@8[important_threshold=3]"),
    ],
)
def test_canonical_names(spec, name):
    assert spec.name == name == str(spec)
    assert parse_metric(name) == spec


def test_parse_is_lenient_about_case_and_spaces_but_names_are_canonical():
    spec = parse_metric(" NDCG@5 [ ties=trec , gain=linear ] ")
    assert spec == NDCG(k=5, gain="linear", ties="trec")
    assert spec.name == "ndcg@5[gain=linear,ties=trec]"
    assert parse_metric("ndcg@5[gain=exp2]").name == "ndcg@5"  # defaults are not shown
    assert parse_metric("map[threshold=1e-1]") == MAP(threshold=0.1)


def _spec_strategy(cls: type[MetricSpec]):
    kwargs = {}
    for f in dataclasses.fields(cls):
        kind, choices = field_kind(cls, f.name)
        if kind == "choice":
            kwargs[f.name] = st.sampled_from(choices)
        elif kind == "k":
            required = f.default is dataclasses.MISSING
            ks = st.integers(1, 1000)
            kwargs[f.name] = ks if required else st.one_of(st.none(), ks)
        elif kind == "int":  # pragma: no cover - no such field today
            kwargs[f.name] = st.integers(1, 1000)
        else:
            kwargs[f.name] = st.floats(allow_nan=False, allow_infinity=False, width=64)
    return st.builds(cls, **kwargs)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(METRICS.names()).flatmap(lambda n: _spec_strategy(METRICS.get(n))))
def test_every_spec_round_trips(spec):
    parsed = parse_metric(spec.name)
    assert parsed == spec
    assert parsed.name == spec.name
    assert hash(parsed) == hash(spec)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("ndcg@5[gian=linear]", "has no parameter 'gian'; did you mean 'gain'"),
        ("ndcg@5[gain=log]", "gain must be one of"),
        ("ndcg@5[gain]", "malformed parameter"),
        ("ndcg@5[gain=linear,gain=exp2]", "given twice"),
        ("map[threshold=abc]", "must be a number"),
        ("map[threshold=nan]", "finite"),
        ("kendall@5", "takes no cutoff"),
        ("relevance", "needs a cutoff"),
        ("ndcg@5]", "malformed metric name"),
        ("", "malformed"),
        ("ndcg@5[k=3]", "has no parameter 'k'"),
    ],
)
def test_parse_errors(text, match):
    with pytest.raises(InvalidArgumentError, match=match):
        parse_metric(text)


def test_parse_refuses_non_strings():
    with pytest.raises(InvalidArgumentError):
        parse_metric(NDCG())  # type: ignore[arg-type]


def test_unknown_family_suggests_close_matches():
    for text, close in [("ndgc@5", "ndcg"), ("spearmen", "spearman"), ("pairwise_agreemnt", "pairwise_agreement")]:
        with pytest.raises(UnknownNameError, match=f"did you mean '{close}'"):
            parse_metric(text)
    with pytest.raises(UnknownNameError) as err:
        parse_metric("bleu@4")
    assert "did you mean" not in str(err.value)
    assert ", ".join(METRICS.names()) in str(err.value)


def test_registry_holds_spec_classes_and_refuses_duplicates():
    assert METRICS.get("ndcg") is NDCG
    assert all(issubclass(cls, MetricSpec) for _, cls in METRICS.items())
    assert all(cls.family == name for name, cls in METRICS.items())

    @dataclasses.dataclass(frozen=True)
    class Again(MetricSpec):
        family = "ndcg"

    with pytest.raises(DuplicateNameError):
        register(Again)


def test_specs_are_frozen_and_hashable():
    spec = NDCG(k=5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.k = 3  # type: ignore[misc]
    assert {spec: 1}[NDCG(k=5)] == 1


def test_public_names_and_facade():
    import gradebench
    import gradebench.metrics as gm

    assert gm.Spearman is gm.SpearmanRho  # the short name other modules use
    assert all(hasattr(gm, name) for name in gm.__all__)
    assert gradebench.evaluate is gm.evaluate and gradebench.parse_metric is gm.parse_metric


def test_as_metric_keeps_specs_and_parses_names_once():
    from gradebench.metrics import as_metric

    spec = NDCG(k=5, gain="linear")
    assert as_metric(spec) is spec
    assert as_metric("NDCG@5[gain=linear]") == spec
    assert as_metric("kendall") == KendallTau()
    with pytest.raises(UnknownNameError, match="did you mean 'ndcg'"):
        as_metric("ndgc@5")
    with pytest.raises(InvalidArgumentError):
        as_metric(5)  # type: ignore[arg-type]
