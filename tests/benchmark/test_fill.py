"""Filled templates get the words of their parts, joined at the boundaries: always ``words(text)``."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gradebench.datasets.tiers.candidates import _BOUND, _renderer
from gradebench.datasets.tiers.fill import Part, Template, join_words
from gradebench.words import words

# characters that stress the rules: word characters, separators, case changes that leave ASCII
# (Kelvin sign, dotted capital I), the Greek final sigma, and quotes
ALPHABET = st.sampled_from(list("aZ9 _.\"'-") + ["\u212a", "\u0130", "\u03a3", "\u00e9", "\t"])
TEXT = st.text(ALPHABET, max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXT, max_size=6))
def test_joined_parts_have_the_words_of_the_whole(pieces):
    assert join_words([Part.of(p) for p in pieces]) == words("".join(pieces))


@settings(max_examples=200, deadline=None)
@given(TEXT, TEXT, TEXT, TEXT)
def test_filled_template_equals_format(a, b, premise, hypothesis):
    text = f'{a}"{{premise}}"{b}{{hypothesis}}{{label}}{{{{x}}}}'
    values = {"premise": Part.of(premise), "hypothesis": Part.of(hypothesis), "label": Part.of("neutral")}
    t = Template(text)
    filled, got = t.fill(values)
    assert filled == text.format(premise=premise, hypothesis=hypothesis, label="neutral")
    assert got == words(filled)
    assert t.fields == {"premise", "hypothesis", "label"}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["{premise}", "{hypothesis}", "{label}", "100% ", "%s", "{{x}}", " a ", "%%"]),
                max_size=7), TEXT, TEXT)
def test_a_bound_templates_renderer_gives_the_filled_text(pieces, premise, hypothesis):
    """Literal ``%`` and braces, either order, a text quoted twice or not at all."""
    t = Template("".join(pieces))
    values = {"premise": Part.of(premise), "hypothesis": Part.of(hypothesis), "label": Part.of("neutral")}
    assert _renderer(t.pieces, values)(premise, hypothesis) == t.fill(values)[0]


def test_concat_holds_where_no_word_can_cross_a_placeholder():
    assert Template('says "{premise}" and "{hypothesis}".').concat
    assert Template("{premise} / {hypothesis}").concat  # the text's ends count as boundaries
    assert Template("no placeholder").concat
    assert not Template("{premise}{hypothesis}").concat  # two values meet
    assert not Template('a{premise}" b').concat  # a literal ends inside a word
    assert not Template('"{premise}s "').concat  # a literal starts inside a word
    assert not Template("is {label}ish").concat


# words that fire Algorithm 1's flags (label words, keywords, gibberish), braces, and texts
# that start or end inside a word: where the bound templates' shortcut could go wrong
WORDS = st.sampled_from(["entailment", "contradiction", "neutral", "because", "so", "qwerty", "lorem",
                         "A", "man", "Ü", "{x}", "}", "{", "", "9", "ΣΑΣ", "K"])
SENTENCE = st.lists(WORDS, max_size=18).map(" ".join) | TEXT


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(SENTENCE, SENTENCE, SENTENCE), min_size=1, max_size=6),
       st.sampled_from(["esnli", "esnli-fixed", "dnli", "mnli"]))
def test_bound_templates_give_the_rows_of_filling(pairs, recipe):
    """Templates bound to their labels (words of the rest plus the query's, overlap 1, flags of
    the union) give every column that filling and tokenizing each text gives, bit for bit; and
    the filled text's own words, counted from scratch, agree."""
    import numpy as np

    from gradebench.datasets.records import NLIExample
    from gradebench.datasets.tiers.candidates import CandidateBuilder, Query
    from gradebench.recipes import load_recipe

    r = load_recipe(recipe)
    fast, slow = CandidateBuilder(r), CandidateBuilder(r)
    for per_key in slow._templates.values():
        for options in per_key.values():
            for t in options:
                t.concat = False  # every quoting template filled and tokenized
    labels = list(r.labels)
    queries = []
    for i, (premise, hypothesis, expl) in enumerate(pairs):
        ex = NLIExample(premise=premise, hypothesis=hypothesis, label=labels[i % len(labels)],
                        explanations=(expl or "x", "", ""), source_id=f"id{i}", row=i, split="train")
        borrowed = {t.name: ((f"borrowed {i}", f"b{i}"),) for t in r.tiers
                    if t.candidates in ("sibling_explanation", "unrelated_explanation", "negation_flip")}
        queries.append(Query(ex, f"{i:016x}", "train", borrowed))
    a, b = fast.candidate_columns(queries), slow.candidate_columns(queries)
    assert a.ids.to_pylist() == b.ids.to_pylist()
    for name in ("texts", "tiers", "sources", "template_ids", "origins", "counts"):
        assert getattr(a, name) == getattr(b, name), name
    for name in ("scores", "relevance", "human", "n_words", "overlap"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.n_words.tolist() == [len(words(t)) for t in a.texts]
    assert any(e[0] == _BOUND for e in fast._entries.values())  # the shortcut was taken


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 7), st.text(max_size=20)), max_size=20))
def test_batched_picks_are_choice_index(items):
    from gradebench.datasets.tiers.candidates import _picks
    from gradebench.hashing import choice_index

    assert _picks([n for n, _ in items], [text for _, text in items]) == [choice_index(n, text) for n, text in items]


def _with_templates(recipe, good, count):
    """``recipe`` with its ``good`` tier's templates (one list for every label) and count replaced."""
    from gradebench.recipes.loader import recipe_from_dict

    data = recipe.model_dump(mode="json", exclude_none=True)
    for tier in data["tiers"]:
        if tier["name"] == "good":
            tier["templates"] = {label: list(good) for label in tier["templates"]}
            tier["count"] = count
    return recipe_from_dict(data)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(SENTENCE, SENTENCE), min_size=1, max_size=4), st.integers(1, 3))
def test_bound_templates_with_braces_labels_and_repeats(pairs, count):
    """Templates no shipped recipe has: literal braces, the label and the claimed label inside a
    quoting template, a text quoted twice, one that quotes a single text, one where a word can
    cross a placeholder, several variants of a tier a query: bound or not, the rows of filling."""
    import numpy as np

    from gradebench.datasets.records import NLIExample
    from gradebench.datasets.tiers.candidates import CandidateBuilder, Query
    from gradebench.recipes import load_recipe

    good = ['{{x}} "{premise}" is {label}, so "{hypothesis}" {{ and "{premise}" again }}.',
            '"{hypothesis}" because "{premise}"; {label} because (because) {label}.',
            'only "{premise}" is quoted, {label}.',
            'glued{premise} "{hypothesis}".']
    r = _with_templates(load_recipe("esnli"), good, count)
    fast, slow = CandidateBuilder(r), CandidateBuilder(r)
    for t in slow._templates["good"].values():
        for template in t:
            template.concat = False
    labels = list(r.labels)
    queries = [Query(NLIExample(premise=p, hypothesis=h, label=labels[i % 3], explanations=("e x", "", ""),
                                source_id=f"s{i}", row=i, split="train"), f"{i:016x}", "train", {})
               for i, (p, h) in enumerate(pairs)]
    a, b = fast.candidate_columns(queries), slow.candidate_columns(queries)
    assert a.ids.to_pylist() == b.ids.to_pylist() and a.texts == b.texts and a.counts == b.counts
    for name in ("scores", "n_words", "overlap"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.n_words.tolist() == [len(words(t)) for t in a.texts]
    bound = {key[2]: e[0] == _BOUND for key, e in fast._entries.items() if key[0] == "good"}
    assert all(bound[j] == (j < 2) for j in bound)  # the first two bind; one quote, a glued word: filled


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["{premise}", "{hypothesis}", "{label}", "100% ", "%s", "{{x}}", " a ", "%%"]),
                max_size=7), TEXT, TEXT, TEXT)
def test_a_query_template_renders_as_format_does(pieces, premise, hypothesis, label):
    """A recipe's query template: any order, a placeholder twice or not at all, literal ``%`` and braces."""
    from gradebench.datasets.common import query_renderer

    template = "".join(pieces)
    want = template.format(premise=premise, hypothesis=hypothesis, label=label)
    assert query_renderer(template)(premise, hypothesis, label) == want
