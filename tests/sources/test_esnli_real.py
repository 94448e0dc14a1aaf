"""Integration: the real preprocessed e-SNLI dev release in ../shared/data (skipped if absent)."""

from __future__ import annotations

from collections import Counter

import pytest

from gradebench.datasets.records import NLIExample
from gradebench.datasets.esnli.reader import read_esnli, read_esnli_preprocessed
from tests.conftest import shared_data

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def dev():
    return read_esnli_preprocessed(shared_data("esnli", "eSNLI"))


def test_counts(dev):
    rows = dev.examples["validation"]
    assert list(dev.examples) == ["validation"]
    assert len(rows) == 9842
    assert Counter(r.label for r in rows) == {"entailment": 3329, "neutral": 3235, "contradiction": 3278}
    assert all(len(r.explanations) == 3 for r in rows)
    assert [r.row for r in rows] == list(range(9842))


def test_pinned_records(dev):
    rows = dev.examples["validation"]
    assert rows[0] == NLIExample(
        split="validation",
        row=0,
        source_id="s1.dev:1",
        premise="Two women are embracing while holding to go packages .",
        hypothesis="The sisters are hugging goodbye while holding to go packages after just eating lunch .",
        label="neutral",
        explanations=(
            "the to go packages may not be from lunch .",
            "just because two women are embracing , does not mean they are sisters ;  two women that are "
            "embracing are not necessarily hugging goodbye .",
            "two women do not have to be sisters ;  embracing does not mean hugging goodbye ;  the women do "
            "not have to have just finished lunch to be embracing .",
        ),
    )
    assert rows[9] == NLIExample(
        split="validation",
        row=9,
        source_id="s1.dev:10",
        premise="Two young boys of opposing teams play football , while wearing full protection uniforms and helmets .",
        hypothesis="boys play football",
        label="entailment",
        explanations=(
            "if the boys of opposing teams play football then the boys play football .",
            "two boys of opposing teams play football",
            "`` two young boys of opposing teams play football '' is a more descriptive way of saying "
            "`` boys play football '' .",
        ),
    )
    assert rows[-1] == NLIExample(
        split="validation",
        row=9841,
        source_id="s1.dev:9842",
        premise="A young girl with blue and pink ribbons in her braids , without a top and a woman with a white "
        "t-shirt and a zebra skirt wading in a public water fountain .",
        hypothesis="A young mother tries to grab her topless child from a water foutain before she attracts attention",
        label="neutral",
        explanations=(
            "a woman is not necessarily assumed to be a mother ;  wading in the fountain does not imply that the "
            "mother tries to grab the child before she attracts attention .",
            "the woman with the girl may not be her mother ;  there is no indication of whether there are people "
            "there , so there is no way to know if the girl will attract attention .",
            "just because a woman is with a girl does not mean she is her mother ;  just because she grabs the "
            "child does not mean it is before she attracts attention .",
        ),
    )


def test_file_hashes_match_source_notes(dev):
    # sha256[:16] as listed in ../shared/data/esnli/SOURCE.md
    assert {f.role: f.sha256[:16] for f in dev.files} == {
        "esnli-preproc:s1.dev": "28a398b5478b10b4",
        "esnli-preproc:s2.dev": "a8c59709630b64ba",
        "esnli-preproc:labels.dev": "d164d72435c3289f",
        "esnli-preproc:preproc1_expl_1.dev": "55a502fdb187ea76",
        "esnli-preproc:preproc1_expl_2.dev": "44032ffb894e2ed0",
        "esnli-preproc:preproc1_expl_3.dev": "18933041c16a55c9",
    }


def test_detected_from_parent_folder():
    # ../shared/data/esnli holds the release under eSNLI/
    data = read_esnli(shared_data("esnli"))
    assert data.format == "esnli-preprocessed" and len(data.examples["validation"]) == 9842
