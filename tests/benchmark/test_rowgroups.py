"""Row groups encoded apart and joined (issue 29): the same bytes as pyarrow's ParquetWriter."""

from __future__ import annotations

import struct

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gradebench.benchmark import rowgroups
from gradebench.benchmark.rowgroups import ShardFile, decode, encode, encode_struct
from gradebench.benchmark.workers import Encoding, build_batch
from gradebench.benchmark.writer import BenchmarkWriter, parquet_target
from gradebench.datasets import get_builder
from gradebench.datasets.tiers.builder import TIERED_COLUMNS
from gradebench.recipes import load_recipe

META = {"gradebench.fingerprint": "f" * 64, "gradebench.recipe": "t", "gradebench.version": "0"}


def _table(n: int, offset: int) -> pa.Table:
    """Rows of every core and tiered column: repeats (dictionaries), nulls, empty and long text, unicode."""
    q = [f"q{(offset + i) // 5}" for i in range(n)]
    return pa.table({
        "query_id": q, "query": [f"premise: é {x} ☃" for x in q],
        "candidate_id": [f"{offset + i:016x}" for i in range(n)],
        "candidate": ["" if i % 11 == 0 else "long " * (i % 300) + str(offset + i) for i in range(n)],
        "score": [((offset + i) * 37 % 101) / 100 for i in range(n)],
        "relevance": pa.array([(offset + i) % 5 for i in range(n)], pa.int16()),
        "tier": [["gold", "good", "fair", "poor", None][(offset + i) % 5] for i in range(n)],
        "split": ["test"] * n,
        "premise": [f"p{(offset + i) // 15}" for i in range(n)], "hypothesis": q,
        "label": [["entailment", "neutral"][i % 2] for i in range(n)], "source_id": q,
        "source_row": pa.array([(offset + i) // 5 for i in range(n)], pa.int64()),
        "candidate_source_id": [None if i % 3 else q[i] for i in range(n)],
        "template_id": [None if i % 5 == 0 else f"t/{i % 7}" for i in range(n)],
        "origin": [["human", "template"][i % 5 != 0] for i in range(n)],
    })


def _footer(data: bytes) -> bytes:
    n = struct.unpack_from("<I", data, len(data) - 8)[0]
    return data[len(data) - 8 - n:len(data) - 8]


@pytest.mark.parametrize("sizes", [[1], [7, 1, 40], [3] * 20, [20_000, 5, 30_000]])
def test_joined_row_groups_are_the_writers_bytes(tmp_path, sizes):
    """Twenty groups need the long form of a list header; 20,000 rows make several pages a chunk."""
    schema, options = parquet_target(TIERED_COLUMNS, META)
    tables = [_table(n, sum(sizes[:i])) for i, n in enumerate(sizes)]
    with pq.ParquetWriter(tmp_path / "want.parquet", schema, **options) as w:
        for t in tables:
            w.write_table(t.cast(schema), row_group_size=t.num_rows)
    shard = ShardFile(tmp_path / "got.parquet")
    for t in tables:
        shard.append(encode(t, schema, options))
    shard.close()
    want, got = (tmp_path / "want.parquet").read_bytes(), (tmp_path / "got.parquet").read_bytes()
    assert got == want
    assert pq.read_table(tmp_path / "got.parquet").equals(pa.concat_tables([t.cast(schema) for t in tables]))


def test_the_footer_codec_writes_back_what_it_read(tmp_path):
    schema, options = parquet_target(TIERED_COLUMNS, META)
    with pq.ParquetWriter(tmp_path / "a.parquet", schema, **options) as w:
        for i in range(3):
            w.write_table(_table(50, 50 * i).cast(schema), row_group_size=50)
    footer = _footer((tmp_path / "a.parquet").read_bytes())
    fields = decode(footer)
    assert encode_struct(fields) == footer
    assert {f.id for f in fields} >= {1, 2, 3, 4}  # version, schema, num_rows, row_groups


def test_a_shard_refuses_a_row_group_of_another_schema(tmp_path):
    schema, options = parquet_target(TIERED_COLUMNS, META)
    other, _ = parquet_target(TIERED_COLUMNS, {**META, "gradebench.recipe": "other"})
    shard = ShardFile(tmp_path / "x.parquet")
    shard.append(encode(_table(5, 0), schema, options))
    with pytest.raises(ValueError, match="another schema"):
        shard.append(encode(_table(5, 5), other, options))
    shard.abort()


def test_a_worker_with_another_pyarrow_hands_back_tables_and_the_file_is_the_same(tmp_path):
    recipe = load_recipe("demo")
    builder = get_builder(recipe.source.family)(recipe)
    from gradebench.benchmark.inputs import locate_source

    sel = builder.select(builder.read(locate_source(builder, recipe, None)), limit=None)
    units = sel.units[:20]
    splits = ["test"] * len(units)
    encoded, seconds = build_batch(builder, units, splits, Encoding(META))
    plain, _ = build_batch(builder, units, splits, Encoding(META, pyarrow="0.0.0"))
    assert isinstance(encoded["test"][0], rowgroups.RowGroup) and "workers.encode" in seconds
    assert isinstance(plain["test"][0], pa.Table)
    files = []
    for name, result in (("a", encoded), ("b", plain)):
        writer = BenchmarkWriter(tmp_path / name / "fp", builder.columns, META)
        writer.write("test", result["test"][0])
        writer.write("test", result["test"][0])
        (shard,) = writer.close_shards()["test"]
        files.append((writer.tmp / shard).read_bytes())
        writer.abort()
    assert files[0] == files[1]


def test_options_that_put_offsets_inside_the_chunks_are_refused():
    schema, options = parquet_target(TIERED_COLUMNS, META)
    with pytest.raises(ValueError, match="write_page_index"):
        encode(_table(5, 0), schema, {**options, "write_page_index": True})


def test_an_abort_that_cannot_flush_still_removes_the_folder(tmp_path):
    """A full disk refuses a shard's buffered bytes when it is closed: the staging folder goes all the same."""
    schema, options = parquet_target(TIERED_COLUMNS, META)
    writer = BenchmarkWriter(tmp_path / "demo" / "fp", TIERED_COLUMNS, META)
    writer.write("test", encode(_table(5, 0), schema, options))
    shard = writer._writers["test"]

    class FullDisk:
        closed = False

        def close(self):
            raise OSError(28, "No space left on device")

    real, shard._f = shard._f, FullDisk()
    writer.abort()
    real.close()
    assert not writer.tmp.exists() and not (tmp_path / "demo" / ".staging").exists()
