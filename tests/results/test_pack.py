"""Packed results folders (gradebench.experiments.pack): the pack gives back the loose tables' values bit
for bit, packing is idempotent and crash-consistent, the report figures are the predictions' own, and
a missing predictions table is one line saying what to do."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from gradebench.errors import QueryError, RecordError
from gradebench.experiments.figures import FIGURE_SETS, dense_predictions, query_figures
from gradebench.experiments.pack import PACK_NAME, UNPACKED, pack_results, read_loose
from gradebench.experiments.store import list_records, read_per_query, read_per_query_arrays, read_query_figures
from tests.conftest import run_cli
from tests.results.reproduction_records import PAPER_TIERS, good_share, make_bench, ranked, write

N = 12


@pytest.fixture()
def loose(tmp_path):
    """Loose records (as ``gradebench eval`` writes them) on benchmarks with and without figure sets."""
    res = tmp_path / "results"
    rel = np.tile(np.arange(4, -1, -1.0), (N, 1))
    esnli = make_bench(tmp_path, "esnli", rel, tiers=PAPER_TIERS)
    for loss, share in (("mse", 1.0), ("ranknet", 0.5)):
        write(res, esnli, ranked(rel, good_share(N, share)), loss=loss)
    wrel = np.tile(np.array([5, 5, 4, 4, 3, 2, 1, 1, 0, 0.0]), (N, 1))
    winowhy = make_bench(tmp_path, "winowhy", wrel)
    write(res, winowhy, ranked(wrel, good_share(N, 0.7)), loss="listnet")
    arel = np.tile(np.array([1, 0.0]), (N, 1))
    write(res, make_bench(tmp_path, "anli", arel), ranked(arel, good_share(N, 0.6)), loss="mse")
    return res


def _snapshot(res):
    return {p.relative_to(res).as_posix(): p.read_bytes() for p in sorted(res.rglob("*")) if p.is_file()}


def test_pack_round_trip_gives_the_loose_values_bit_for_bit(loose):
    records = list_records(loose)
    before = {r.id: (read_per_query_arrays(r), read_query_figures(r), read_per_query(r)) for r in records}
    result = pack_results(loose)
    assert result.packed == len(records) == result.loose_removed
    assert not list(loose.rglob("*.queries.parquet"))
    for r in list_records(loose):
        arrays, figures, df = before[r.id]
        packed = read_per_query_arrays(r)
        assert list(packed) == [m for m in arrays if m not in UNPACKED]
        for m, (ids, values) in packed.items():
            assert ids == arrays[m][0]
            assert values.tobytes() == arrays[m][1].tobytes()
        assert read_query_figures(r)[0] == figures[0]
        assert {k: v.tobytes() for k, v in read_query_figures(r)[1].items()} == \
            {k: v.tobytes() for k, v in figures[1].items()}
        got = read_per_query(r)
        want = df[~df["metric"].astype(str).isin(UNPACKED)]
        assert got["query_id"].tolist() == want["query_id"].tolist()
        assert got["value"].to_numpy().tobytes() == want["value"].to_numpy().tobytes()


def test_eval_writes_the_figures_the_predictions_give(loose):
    for r in list_records(loose):
        ids, figures = read_query_figures(r)
        dense = dense_predictions(r.predictions_path)
        assert ids == list(dense.query_ids)
        expected = query_figures(r.benchmark.name, dense)
        assert sorted(figures) == sorted(expected)
        for k in expected:
            assert figures[k].tobytes() == expected[k].tobytes()
    names = {r.benchmark.name: sorted(read_query_figures(r)[1]) for r in list_records(loose)}
    assert names["anli"] == []
    assert names["winowhy"] == sorted(FIGURE_SETS["winowhy"].column_names())


def test_packing_is_idempotent_and_json_is_compact(loose):
    pack_results(loose)
    first = _snapshot(loose)
    again = pack_results(loose)
    assert (again.added, again.json_rewritten, again.loose_removed, again.figures_computed) == (0, 0, 0, 0)
    assert _snapshot(loose) == first
    for f in loose.rglob("*.json"):
        text = f.read_text(encoding="utf-8")
        assert text.count("\n") == 1 and json.dumps(json.loads(text), sort_keys=True, separators=(",", ":")) + "\n" == text


def test_old_layout_records_get_their_figures_from_the_predictions(loose):
    """Records written before the figures existed: packing computes them from the predictions, and a
    record added later to a packed folder is merged into its pack."""
    for f in loose.rglob("*.queries.parquet"):  # strip the figure rows, as the old writer wrote them
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        t = pq.read_table(f)
        keep = pc.invert(pc.starts_with(t["metric"].cast("string"), "figure:"))
        pq.write_table(t.filter(keep), f)
        assert not read_loose(f).figures
        doc = json.loads(f.with_name(f.name.replace(".queries.parquet", ".json")).read_text())
        doc["files"] = {k: v for k, v in doc["files"].items() if not k.endswith("_sha256")}  # nor digests
        f.with_name(f.name.replace(".queries.parquet", ".json")).write_text(json.dumps(doc))
    esnli = loose / "esnli"
    late = sorted(esnli.glob("*.json"))[0]
    aside = loose.parent / "aside"
    aside.mkdir()
    for p in esnli.glob(late.name.split(".")[0] + ".*"):
        shutil.move(p, aside / p.name)
    first = pack_results(loose)
    assert first.figures_computed == 2 and not first.without_figures  # esnli (one aside) and winowhy
    for p in aside.iterdir():  # a new record in the old layout, brought into the packed folder
        shutil.move(p, esnli / p.name)
    second = pack_results(loose)
    assert (second.added, second.figures_computed, second.loose_removed) == (1, 1, 1)
    for r in list_records(loose):
        ids, figures = read_query_figures(r)
        expected = query_figures(r.benchmark.name, dense_predictions(r.predictions_path))
        assert {k: v.tobytes() for k, v in figures.items()} == {k: v.tobytes() for k, v in expected.items()}


def test_a_killed_pack_is_finished_by_running_it_again(loose, monkeypatch):
    import gradebench.experiments.pack as P

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(P, "write_pack", boom)
    with pytest.raises(KeyboardInterrupt):
        pack_results(loose)
    monkeypatch.undo()
    assert list(loose.rglob("*.queries.parquet"))  # nothing folded before its pack was written
    assert pack_results(loose).loose_removed == 4
    assert sorted(p.name for p in (loose / "esnli").iterdir() if not p.name.endswith((".json", ".parquet"))) == []


def test_missing_predictions_give_one_line_with_what_to_do(loose, capsys, tmp_path):
    pack_results(loose)
    for f in loose.rglob("*.predictions.parquet"):
        f.unlink()
    from gradebench.experiments.query import run_query

    with pytest.raises(QueryError) as e:
        run_query("select count(*) from predictions", results_dir=loose)
    assert "predictions" in str(e.value) and "\n" not in str(e.value)
    assert "evaluate the record again" in e.value.hint
    # the other views still work from the pack
    rows = run_query("select metric, count(*) from per_query group by all order by 1", results_dir=loose).rows
    assert ["kendall", 3 * N + N] in [list(r) for r in rows]
    assert run_query("select count(*) from query_figures where figure like 'figure:separation.%'",
                     results_dir=loose).rows == [[2 * N * 5]]
    code, out, err = run_cli(capsys, "query", "select * from predictions", "--results-dir", loose)
    assert code == 2 and len(err.strip().splitlines()) <= 2 and "evaluate the record again" in err
    rid = list_records(loose)[0].id
    code, out, err = run_cli(capsys, "plot", "--record", rid[:12], "--out", tmp_path / "p.png", "--results-dir", loose)
    assert code == 2 and "predictions" in err and "evaluate the record again" in err
    with pytest.raises(RecordError):
        from gradebench.experiments.store import read_predictions

        read_predictions(list_records(loose)[0])


def test_pack_file_is_in_each_benchmark_folder(loose):
    pack_results(loose)
    assert sorted(p.parent.name for p in loose.rglob(PACK_NAME)) == ["anli", "esnli", "winowhy"]


def test_each_float_column_takes_the_smaller_encoding_and_old_packs_are_rewritten(loose):
    """Values that repeat stay a dictionary, values that rarely repeat are stored byte-stream-split;
    the values read back are the same bit for bit, and a pack written by an older rule (no
    ``gradebench.pack.encoding`` in its metadata) is written again by the next pack run."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from gradebench.experiments.pack import PACK_ENCODING, column_encodings, pack_encoding

    rng = np.random.default_rng(0)
    table = pa.table({"ndcg": rng.choice([1.0, 0.5, 1 / 3, 0.0], size=1200), "sum_pred": rng.normal(size=1200),
                      "query_id": [f"q{i}" for i in range(1200)]})
    assert column_encodings(table) == ["sum_pred"]

    pack_results(loose)
    folder = loose / "esnli"
    pack = folder / PACK_NAME
    assert pack_encoding(folder) == PACK_ENCODING
    values = {r.id: read_per_query_arrays(r) for r in list_records(loose)}
    old = pq.read_table(pack)
    meta = {k: v for k, v in old.schema.metadata.items() if k != b"gradebench.pack.encoding"}
    pq.write_table(old.replace_schema_metadata(meta), pack, compression="zstd")  # as an older rule wrote it
    assert pack_encoding(folder) is None
    pack_results(loose)
    assert pack_encoding(folder) == PACK_ENCODING
    for r in list_records(loose):
        for m, (ids, v) in read_per_query_arrays(r).items():
            assert ids == values[r.id][m][0] and v.tobytes() == values[r.id][m][1].tobytes()
    before = pack.read_bytes()
    pack_results(loose)
    assert pack.read_bytes() == before  # packed by this rule: left as it is
    newer = old.replace_schema_metadata({**meta, b"gradebench.pack.encoding": b"99"})
    pq.write_table(newer, pack, compression="zstd")  # as a newer gradebench wrote it: not written back
    before = pack.read_bytes()
    pack_results(loose)
    assert pack.read_bytes() == before and pack_encoding(folder) == "99"
