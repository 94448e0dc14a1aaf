"""The source read and keyed in the workers (issue 29, item 2): the building process only indexes the
e-SNLI line files; workers read slices of them and key the rows, then build from the rows they keyed
(a worker given a batch of rows it did not key reads them). The same lines, examples, decisions,
errors, files and fingerprint as reading here."""

from __future__ import annotations

import itertools
import json
import os
import random
from collections import Counter
from pathlib import Path

import pytest

from gradebench.benchmark import engine as pipeline
from gradebench.benchmark.workers import NOT_YET, _pick, run_batches
from gradebench.datasets import get_builder
from gradebench.datasets.base import SelectionKeys, ShardedSelection
from gradebench.datasets.esnli import reader
from gradebench.datasets.tiers import builder as tiers_builder
from gradebench.datasets.tiers import select as tiers_select
from gradebench.errors import SourceFormatError, SourceNotFoundError
from gradebench.experiments.build import build
from gradebench.io.lineindex import LineSlice, index_lines, read_slice
from gradebench.io.textio import decode_utf8, split_lines
from gradebench.recipes import load_recipe
from tests.benchmark.test_streamed_select import _same_texts_other_explanations, _tricky
from tests.conftest import shared_data

TEXTS = [
    b"",
    b"\n",
    b"\n\n",
    b"one",
    b"one\n",
    b"one\ntwo",
    b"one\n\ntwo\n",
    b"\xef\xbb\xbfbom first\nsecond\n",
    b"\xef\xbb\xbf",
    b"crlf\r\nlines\r\n",
    b"lone\rreturn\nand \xe2\x80\xa8 a line separator\xc2\x85\n",
    "unicode caf\u00e9 \u4e2d\u6587\nemoji \U0001f600\n  padded  \n".encode(),
]


@pytest.mark.parametrize("data", TEXTS)
def test_a_slice_reads_the_lines_splitting_the_whole_text_gives(tmp_path, data):
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    want = split_lines(decode_utf8(path, data))
    index = index_lines(path, "a text file")
    assert index.n_lines == len(want)
    for a, b in itertools.combinations_with_replacement(range(len(want) + 1), 2):
        assert read_slice(LineSlice.of([index], a, b)) == [want[a:b]]


@pytest.mark.parametrize("change", ["shorter", "same size", "replaced", "gone"])
def test_a_file_changed_after_indexing_is_an_error(tmp_path, change):
    path = tmp_path / "f.txt"
    path.write_bytes(b"one\ntwo\nthree\n")
    s = LineSlice.of([index_lines(path, "a text file")], 1, 3)
    before = path.stat()
    if change == "shorter":
        path.write_bytes(b"one\ntwo three\n")
    elif change == "same size":  # a label edited in place: only the modification time tells
        path.write_bytes(b"one\nTWO\nthree\n")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
    elif change == "replaced":  # another file of the same size and time moved over it
        other = tmp_path / "g.txt"
        other.write_bytes(b"one\nTWO\nthree\n")
        os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
        other.replace(path)
    else:
        path.unlink()
    with pytest.raises(SourceNotFoundError if change == "gone" else SourceFormatError,
                       match="not found" if change == "gone" else "changed while it was read"):
        read_slice(s)


class _FakePart:
    def __init__(self, split, n=10 * tiers_builder.SLICE_ROWS):
        self.split, self.key, self.n = split, (split, "x"), n

    def slice(self, a, b):
        return (a, b)


def test_a_batch_reads_its_rows_not_the_dropped_rows_between():
    """Kept rows far apart (everything between repeated) are read as two slices, not one long one."""
    dev, test = _FakePart("validation"), _FakePart("test", n=4)
    far = tiers_builder.SLICE_ROWS + 1
    refs = [tiers_builder.RowRef(dev, r, f"q{r}") for r in (0, 1, 5, 5 + far, 6 + far)]
    refs += [tiers_builder.RowRef(test, r, f"t{r}") for r in (0, 3)]
    groups = tiers_builder._slices_of(refs).groups
    rows = tiers_builder.SLICE_ROWS
    assert groups == [
        (dev.key, (0, 6), [0, 1, 5], ["q0", "q1", "q5"], (0, rows), 0),
        (dev.key, (5 + far, 7 + far), [0, 1], [f"q{5 + far}", f"q{6 + far}"], (rows, 2 * rows), 6),
        (test.key, (0, 4), [0, 3], ["t0", "t3"], (0, 4), 0),
    ]


def test_a_batch_s_rows_are_cut_where_the_selection_tasks_are():
    """Adjacent rows of two selection tasks are two runs, each naming its task's slice (a worker
    that keyed the task takes its rows from there) and where the run starts in it."""
    part = _FakePart("validation", n=2 * tiers_builder.SLICE_ROWS + 3)
    rows = tiers_builder.SLICE_ROWS
    refs = [tiers_builder.RowRef(part, r, f"q{r}") for r in (rows - 2, rows - 1, rows, 2 * rows + 1)]
    assert tiers_builder._slices_of(refs).groups == [
        (part.key, (rows - 2, rows), [0, 1], [f"q{rows - 2}", f"q{rows - 1}"], (0, rows), rows - 2),
        (part.key, (rows, rows + 1), [0], [f"q{rows}"], (rows, 2 * rows), 0),
        (part.key, (2 * rows + 1, 2 * rows + 2), [0], [f"q{2 * rows + 1}"], (2 * rows, 2 * rows + 3), 1),
    ]


def _write_split(folder: Path, suffix: str, rows: list[tuple[str, ...]], *, bom: bool = False) -> None:
    """Line files of one split: rows of (premise, hypothesis, label, expl 1, expl 2, expl 3)."""
    folder.mkdir(parents=True, exist_ok=True)
    for k, stem in enumerate(["s1", "s2", "labels", "preproc1_expl_1", "preproc1_expl_2", "preproc1_expl_3"]):
        text = "\n".join(r[k] for r in rows) + "\n"
        (folder / f"{stem}.{suffix}").write_bytes((b"\xef\xbb\xbf" if bom and k == 0 else b"") + text.encode())


def _rows(rng: random.Random, n: int) -> list[tuple[str, ...]]:
    """Pairs with repeated rows, skip reasons, padding and unicode, as the line files hold them."""
    premises = ["A man runs .", "Two kids play in the park .", "  A woman sings \u00e9 .  ", "A dog barks ."]
    hyps = ["Someone moves .", "Nobody plays .", "A person is outside .", "caf\u00e9 \u4e2d", " "]
    labels = ["entailment", "neutral", "contradiction", "-", "maybe"]
    out = []
    for i in range(n):
        if out and rng.random() < 0.15:
            out.append(out[rng.randrange(len(out))])  # a repeated row (another line, another source id)
            continue
        expl = rng.choice(["because it says so", "", "the man runs", " so \u4e2d "])
        out.append((rng.choice(premises), f"{rng.choice(hyps)} {i % 7}", rng.choice(labels), expl,
                    "second", "third"))
    return out


@pytest.fixture
def source(tmp_path) -> Path:
    rng = random.Random(29)
    folder = tmp_path / "src"
    _write_split(folder, "dev", _rows(rng, 230), bom=True)
    _write_split(folder, "test", _rows(rng, 170))
    return folder


@pytest.mark.parametrize("limit", [None, 1, 57, 1000])
def test_the_slices_read_the_examples_the_whole_files_give(source, limit):
    parsed = reader.parse_esnli_preprocessed(source)
    for part in reader.index_esnli_preprocessed(source, limit=limit):
        want = parsed[part.split][:limit]
        assert part.n == len(want)
        got = [ex for a in range(0, part.n, 23)
               for ex in reader.read_esnli_slice(part.split, part.suffix, part.slice(a, min(part.n, a + 23)))]
        assert got == want


def test_the_slices_read_the_real_dev_split():
    folder = shared_data("esnli", "eSNLI")
    want = reader.parse_esnli_preprocessed(folder)["validation"]
    (part,) = reader.index_esnli_preprocessed(folder)
    got = [ex for a in range(0, part.n, 4096)
           for ex in reader.read_esnli_slice(part.split, part.suffix, part.slice(a, min(part.n, a + 4096)))]
    assert got == want


def _error(fn, folder):
    try:
        fn(folder)
    except (SourceFormatError, SourceNotFoundError) as e:
        return type(e), str(e), getattr(e, "hint", None)
    return None


BREAKAGES = {
    "misaligned": lambda f: (f / "s2.test").write_text("one line\n"),
    "missing": lambda f: (f / "labels.dev").unlink(),
    "third without second": lambda f: (f / "preproc1_expl_2.test").unlink(),
    "not utf-8": lambda f: (f / "s2.dev").write_bytes(b"fine\n" * 5 + b"caf\xe9\n" + b"x\n" * 224),
    "binary": lambda f: (f / "labels.test").write_bytes(b"entailment\n\0\n"),
    "gzip": lambda f: (f / "s1.test").write_bytes(b"\x1f\x8b" + b"\n" * 169),
    "two broken": lambda f: ((f / "s2.test").write_bytes(b"\xff\n" * 170), (f / "s1.dev").write_text("x\n")),
    # the files of a split are indexed at once: the first problem in file order is still the one raised
    "misaligned, then a later file broken": lambda f: (
        (f / "s2.dev").write_text("one line\n"), (f / "preproc1_expl_1.dev").write_bytes(b"\x1f\x8b\n")),
    "a broken file, then a misaligned one": lambda f: (
        (f / "s2.dev").write_bytes(b"fine\n" * 5 + b"caf\xe9\n"), (f / "labels.dev").write_text("x\n")),
}


@pytest.mark.parametrize("broken", sorted(BREAKAGES))
def test_a_bad_source_gives_the_error_reading_it_whole_gives(source, broken):
    BREAKAGES[broken](source)
    want = _error(reader.parse_esnli_preprocessed, source)
    assert want is not None
    assert _error(reader.index_esnli_preprocessed, source) == want
    assert _error(reader.parse_esnli_preprocessed, source / "nowhere") == _error(
        reader.index_esnli_preprocessed, source / "nowhere")


def test_a_splits_files_are_indexed_at_once_within_the_memory_budget(source, monkeypatch):
    """Each file is read whole to be indexed: as many at once as INDEX_AT_ONCE bytes hold, the same index."""
    import threading
    import time

    import numpy as np

    lock, active, peak = threading.Lock(), [0], [0]
    real = reader.index_lines

    def tracking(*args, **kwargs):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.05)
        try:
            return real(*args, **kwargs)
        finally:
            with lock:
                active[0] -= 1

    def flat(parts):
        return [(p.split, p.n, [(f.path, f.starts.tolist()) for f in p.files]) for p in parts]

    monkeypatch.setattr(reader, "index_lines", tracking)
    monkeypatch.setattr(reader, "available_cores", lambda: 4)
    at_once = flat(reader.index_esnli_preprocessed(source))
    assert peak[0] > 1
    peak[0] = 0
    monkeypatch.setattr(reader, "INDEX_AT_ONCE", 1)  # no file fits: one at a time
    assert flat(reader.index_esnli_preprocessed(source)) == at_once and peak[0] == 1
    assert np.array_equal(reader.index_esnli_preprocessed(source)[0].files[0].starts,
                          real(source / "s1.dev", "x").starts)


@pytest.mark.parametrize("cut", [1, 2, 3, 5, 100])
@pytest.mark.parametrize("examples", [_tricky, _same_texts_other_explanations])
def test_keys_found_slice_by_slice_give_the_streams_decisions(examples, cut):
    """Short slices take both ways: a slice whose rows meet no other row is kept whole (the sets
    grown at once), the others row by row; the decisions are the stream's either way."""
    recipe = load_recipe("esnli")
    queries, want_skipped = tiers_select.stream(recipe, examples(), limit=None)
    want = [(q.split, q.example.row, q.query_id) for q in queries]
    skipped = type(want_skipped)()
    keyed = tiers_select.KeyedStream(skipped)
    whole = keyed._all_fresh
    ways = []
    keyed._all_fresh = lambda *args: ways.append(whole(*args)) or ways[-1]
    got = []
    for split, rows in sorted(examples().items()):
        for a in range(0, len(rows), cut):
            keys = tiers_select.row_keys(recipe, rows[a:a + cut])
            got += [(split, row, qid) for row, qid in keyed.kept(split, a, keys)]
    assert got == want and skipped == want_skipped
    if cut <= 2:
        assert any(w is None for w in ways) and any(w is not None for w in ways)


@pytest.mark.parametrize("repeat", ["row", "source id", "query id"])
def test_a_fresh_slice_with_a_repeat_inside_leaves_the_sets_as_they_were(repeat):
    """The sets grow whole and a repeat within the slice is then seen in their sizes: every key of the
    slice is taken out again, and the row-by-row decisions are the stream's."""
    import dataclasses

    from gradebench.datasets.records import NLIExample

    recipe = load_recipe("esnli")
    rows = [NLIExample(premise=f"A man runs {i} .", hypothesis=f"He moves {i} .", label="entailment",
                       explanations=(f"running is moving {i}", "", ""), source_id=f"id{i}", row=i, split="train")
            for i in range(6)]
    if repeat == "row":  # the same texts, label and explanations under another source id
        rows[4] = dataclasses.replace(rows[1], source_id="id4", row=4)
    elif repeat == "source id":  # other texts under a source id already in the slice
        rows[4] = dataclasses.replace(rows[4], source_id=rows[2].source_id)
    else:  # the same source id and texts, another explanation: its query id again
        rows[4] = dataclasses.replace(rows[2], explanations=("another reason", "", ""), row=4)
    keyed = tiers_select.KeyedStream(Counter())
    first = keyed.kept("train", 0, tiers_select.row_keys(recipe, rows[:2]))
    before = (set(keyed._seen_rows), dict(keyed._texts_of), set(keyed._seen))
    keys = tiers_select.row_keys(recipe, rows[2:])
    assert keyed._all_fresh(keys, 2) is None
    assert (keyed._seen_rows, keyed._texts_of, keyed._seen) == before
    got = first + keyed.kept("train", 2, keys)
    queries, want_skipped = tiers_select.stream(recipe, {"train": rows}, limit=None)
    assert got == [(q.example.row, q.query_id) for q in queries] and keyed.skipped == want_skipped
    assert len(got) == 5


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(("limit", "resplit"), [(None, None), (120, None), (None, "60/20/20")])
def test_a_build_that_reads_in_the_workers_writes_the_same_benchmark(source, tmp_path, monkeypatch, limit, resplit):
    monkeypatch.setattr(pipeline, "BATCH_QUERIES", 16)  # several batches, each over several slices
    monkeypatch.setattr(tiers_builder, "SLICE_ROWS", 7)
    calls = []
    select_sharded = tiers_builder.TieredNLIBuilder.select_sharded

    def spy(self, *args, **kwargs):
        got = select_sharded(self, *args, **kwargs)
        calls.append(got is not None)
        return got

    monkeypatch.setattr(tiers_builder.TieredNLIBuilder, "select_sharded", spy)
    kw = {"source": source, "validity": False, "limit": limit, "resplit": resplit}
    here = build("esnli", out=tmp_path / "one", workers=1, **kw)
    there = build("esnli", out=tmp_path / "two", workers=2, **kw)
    assert calls == [True]  # one worker reads here; two read in the workers
    assert "workers.select" in there.timings and "workers.select" not in here.timings
    assert there.fingerprint == here.fingerprint
    assert _files(Path(there.path)) == _files(Path(here.path))
    manifest = json.loads((Path(there.path) / "manifest.json").read_text())
    assert manifest["skipped"] == json.loads((Path(here.path) / "manifest.json").read_text())["skipped"]
    assert {"duplicate_row", "no_gold_label", "unknown_label", "empty_explanation"} <= set(manifest["skipped"])


@pytest.mark.parametrize(("slice_rows", "sharded"), [(200, False), (57, True)])
def test_a_small_source_is_read_here(source, tmp_path, monkeypatch, slice_rows, sharded):
    """A source of fewer than SHARDED_MIN_TASKS slices is read by the building process (quicker
    than the round trip): 230 + 170 rows in two splits are 2 + 1 slices of 200, 5 + 3 of 57."""
    monkeypatch.setattr(tiers_builder, "SLICE_ROWS", slice_rows)
    assert pipeline.SHARDED_MIN_TASKS == 4
    result = build("esnli", source=source, out=tmp_path / "out", workers=2, validity=False)
    assert ("workers.select" in result.timings) is sharded


def test_the_csv_release_and_borrowing_recipes_are_read_here(source, tmp_path):
    recipe = load_recipe("esnli")
    b = tiers_builder.TieredNLIBuilder.__subclasses__()
    assert b  # the e-SNLI builder among them
    esnli = get_builder("esnli")
    files = esnli(recipe).locate(source)
    assert esnli(recipe).select_sharded(files, limit=None) is not None
    assert esnli(load_recipe("esnli-human")).select_sharded(files, limit=None) is None  # borrows
    demo = get_builder("esnli")(load_recipe("demo"))
    from gradebench.datasets.base import InputFile

    csv = [InputFile(str(tmp_path / "esnli_dev.csv"), "esnli-csv:validation", "validation")]
    assert demo.select_sharded(csv, limit=None) is None


def test_a_worker_takes_the_rows_it_keyed_and_reads_the_others(source, monkeypatch):
    """A batch whose rows this builder keyed takes them from there (each row is read once, when
    keyed), the same units a builder that keyed nothing reads from the files, for runs that
    start inside their task too; what is kept is let go once no later batch can need it."""
    monkeypatch.setattr(tiers_builder, "SLICE_ROWS", 7)
    recipe = load_recipe("esnli")
    cls = get_builder(recipe.source.family)
    keyer, other = cls(recipe), cls(recipe)
    reads: Counter = Counter()
    read_part = cls.read_part

    def counted(self, key, s):
        reads[id(self)] += s.n
        return read_part(self, key, s)

    monkeypatch.setattr(cls, "read_part", counted)
    parts = reader.index_esnli_preprocessed(source)
    sharded = tiers_builder._ShardedTiers(parts)
    got, want = [], []
    for task in sharded.tasks:
        refs = sharded.add(keyer.selection_keys(task))
        for batch in (refs[:2], refs[2:]):  # the second run starts inside its task
            packed = keyer.pack_units(batch)
            want += other.unpack_units(packed)
            got += keyer.unpack_units(packed)
    assert reads[id(keyer)] == sum(p.n for p in parts)  # every row once
    assert reads[id(other)] > 0 and got == want
    queries, _ = tiers_select.stream(recipe, reader.parse_esnli_preprocessed(source), limit=None)
    assert [(q.example, q.query_id, q.split) for q in got] == [(q.example, q.query_id, q.split) for q in queries]
    # a task whose last row without a skip reason was dropped (a repeat) goes once a later task's rows are taken
    assert len(keyer.__dict__["_kept_reads"]) <= 1


def test_a_build_in_one_process_reads_each_row_once(source, monkeypatch):
    """The engine's sharded selection run in this process (one worker): tasks and batches alternate,
    so every batch finds its rows kept from its keys, and the units are the stream's."""
    monkeypatch.setattr(tiers_builder, "SLICE_ROWS", 7)
    monkeypatch.setattr(pipeline, "BATCH_QUERIES", 16)
    recipe = load_recipe("esnli")
    cls = get_builder(recipe.source.family)
    rows = []
    read_part = cls.read_part
    monkeypatch.setattr(cls, "read_part", lambda self, key, s: rows.append(s.n) or read_part(self, key, s))
    parts = reader.index_esnli_preprocessed(source)
    selected = pipeline._Selected(tiers_builder._ShardedTiers(parts), Counter(), None, ahead=4)
    timer = pipeline.PhaseTimer()
    built = []
    for result, _ in run_batches(cls.name, recipe.model_dump_json(), selected.batches(), 1, home=selected.home):
        if isinstance(result, SelectionKeys):
            selected.add(result, timer)
        else:
            for rows_of_split, _ in result.values():
                built += rows_of_split.column("query_id").to_pylist()
    assert sum(rows) == sum(p.n for p in parts)
    queries, _ = tiers_select.stream(recipe, reader.parse_esnli_preprocessed(source), limit=None)
    assert list(dict.fromkeys(built)) == [q.query_id for q in queries]


class _Counted(ShardedSelection):
    """Tasks that keep a given number of units each (their keys are the task's number)."""

    unique_ids = True

    def __init__(self, kept: list[int]) -> None:
        self.kept, self.tasks, self.skipped = kept, list(range(len(kept))), Counter()

    def add(self, keys):
        return [tiers_builder.RowRef(_FakePart("train"), i, f"t{keys.keys}-{i}") for i in range(self.kept[keys.keys])]


def _drive(selected: pipeline._Selected, lag: int) -> list:
    """What ``batches()`` gives, each task's keys added ``lag`` items later (at once where 0)."""
    given, pending = [], []
    for item in selected.batches():
        if item is NOT_YET:
            assert pending, "waited with no keys to come"
            selected.add(SelectionKeys(pending.pop(0)), pipeline.PhaseTimer())
            continue
        units, splits = item
        given.append(f"T{units}" if splits is None else [u.query_id for u in units])
        if splits is None:
            pending.append(units)
        while pending and (len(pending) > lag):
            selected.add(SelectionKeys(pending.pop(0)), pipeline.PhaseTimer())
    return given


def test_tasks_and_batches_alternate_and_a_batch_goes_home(monkeypatch):
    """At most ``ahead`` tasks not yet all in batches; a task where nothing else can go (a batch
    waits for rows); a batch's home is the task that gave it most units (the first of equals)."""
    monkeypatch.setattr(pipeline, "BATCH_QUERIES", 8)
    selected = pipeline._Selected(_Counted([8, 8, 3, 3, 10, 0, 8]), Counter(), None, ahead=2)
    given = _drive(selected, lag=0)
    assert [g if isinstance(g, str) else "B" for g in given] == [
        "T0", "T1", "B", "T2", "B", "T3", "T4", "B", "T5", "T6", "B", "B"]
    assert given[7] == [f"t2-{i}" for i in range(3)] + [f"t3-{i}" for i in range(3)] + ["t4-0", "t4-1"]
    homes = {n: selected.home(n) for n, g in enumerate(given)}
    assert homes == {0: None, 1: None, 2: 0, 3: None, 4: 1, 5: None, 6: None, 7: 3, 8: None, 9: None, 10: 6, 11: 9}
    for lag in (1, 2, 3):  # keys that come back later: the same batches, never a wait for nothing
        again = _drive(pipeline._Selected(_Counted([8, 8, 3, 3, 10, 0, 8]), Counter(), None, ahead=2), lag)
        assert [g for g in again if not isinstance(g, str)] == [g for g in given if not isinstance(g, str)]


def test_an_idle_worker_takes_its_own_batch_then_a_task_then_any():
    ready = [(5, b"", 2), (6, b"", None), (7, b"", 3), (8, b"", 9)]
    ran_on = {2: 1, 3: 0}  # seq 9 has not run yet: a batch that prefers it prefers nobody yet
    assert _pick(ready, 0, 9, ran_on) == 2
    assert _pick(ready, 1, 9, ran_on) == 0
    assert _pick(ready, 0, 7, ran_on) == 1  # its own is beyond the limit: the task
    assert _pick(ready[:1], 0, 9, ran_on) is None  # only another's batch: not unless anyone may take it
    assert _pick(ready[:1], 0, 9, ran_on, anyone=True) == 0
    assert _pick(ready[:1], 0, 5, ran_on, anyone=True) is None  # nothing before the limit
    assert _pick(ready[3:], 1, 9, ran_on) == 0
