"""Parquet row groups encoded by the build workers, joined into shard files by the building process.

A Parquet file is ``PAR1``, its row groups' column chunks one after another, then the footer
(Thrift-encoded ``FileMetaData``: the schema, one ``RowGroup`` per row group with the file
offsets of its chunks, the key-value metadata), the footer's length and ``PAR1``. A column chunk
holds no offset: it is the same bytes wherever in a file it lies. So a worker encodes its batch
(dictionaries, pages, zstd) as a one-row-group file in memory (:func:`encode`) and sends its chunk
bytes and its ``RowGroup``; the building process appends the bytes to the shard file and, when
the shard is closed, writes the footer with every ``RowGroup``, its offsets moved to where its
bytes now lie (:class:`ShardFile`). The file is byte for byte what ``pyarrow.parquet.ParquetWriter``
writes for the same tables (tested), and the building process no longer encodes anything.

The footer is read and written with a small codec of Thrift's compact protocol (the Parquet
format's encoding): values keep their wire types and field order, so whatever the codec does not
change is written back as it was read.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

MAGIC = b"PAR1"

# compact-protocol wire types
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(1, 13)


@dataclass
class Field:
    """One field of a Thrift struct as read: its id, wire type and value (a list is ``(elem type, values)``)."""

    id: int
    type: int
    value: Any


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, t: int) -> Any:
        if t in (_TRUE, _FALSE):  # only inside a list: one byte
            return self.byte() == 1
        if t == _BYTE:
            b = self.byte()
            return b - 256 if b > 127 else b
        if t in (_I16, _I32, _I64):
            return self.zigzag()
        if t == _DOUBLE:
            v = struct.unpack_from("<d", self.data, self.pos)[0]
            self.pos += 8
            return v
        if t == _BINARY:
            n = self.varint()
            v = self.data[self.pos:self.pos + n]
            self.pos += n
            return v
        if t in (_LIST, _SET):
            head = self.byte()
            size, elem = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            return elem, [self.value(elem) for _ in range(size)]
        if t == _STRUCT:
            return self.struct()
        raise ValueError(f"unsupported Thrift compact type {t} in a Parquet footer")

    def struct(self) -> list[Field]:
        fields: list[Field] = []
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return fields
            delta, t = head >> 4, head & 0x0F
            fid = last + delta if delta else self.zigzag()
            if t in (_TRUE, _FALSE):
                fields.append(Field(fid, t, t == _TRUE))
            else:
                fields.append(Field(fid, t, self.value(t)))
            last = fid


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def varint(self, n: int) -> None:
        while True:
            if n < 0x80:
                self.out.append(n)
                return
            self.out.append((n & 0x7F) | 0x80)
            n >>= 7

    def zigzag(self, n: int) -> None:
        self.varint((n << 1) ^ (n >> 63))

    def value(self, t: int, v: Any) -> None:
        if t in (_TRUE, _FALSE):
            self.out.append(1 if v else 2)
        elif t == _BYTE:
            self.out.append(v & 0xFF)
        elif t in (_I16, _I32, _I64):
            self.zigzag(v)
        elif t == _DOUBLE:
            self.out += struct.pack("<d", v)
        elif t == _BINARY:
            self.varint(len(v))
            self.out += v
        elif t in (_LIST, _SET):
            elem, values = v
            if len(values) < 15:
                self.out.append(len(values) << 4 | elem)
            else:
                self.out.append(0xF0 | elem)
                self.varint(len(values))
            for x in values:
                self.value(elem, x)
        elif t == _STRUCT:
            self.struct(v)
        else:
            raise ValueError(f"unsupported Thrift compact type {t}")

    def struct(self, fields: list[Field]) -> None:
        last = 0
        for f in fields:
            t = (_TRUE if f.value else _FALSE) if f.type in (_TRUE, _FALSE) else f.type
            delta = f.id - last
            if 0 < delta <= 15:
                self.out.append(delta << 4 | t)
            else:
                self.out.append(t)
                self.zigzag(f.id)
            if t not in (_TRUE, _FALSE):
                self.value(t, f.value)
            last = f.id
        self.out.append(0)


def decode(data: bytes) -> list[Field]:
    """A Thrift compact-protocol struct (the whole of ``data``)."""
    r = _Reader(data)
    fields = r.struct()
    if r.pos != len(data):
        raise ValueError(f"{len(data) - r.pos} bytes after the Thrift struct")
    return fields


def encode_struct(fields: list[Field]) -> bytes:
    w = _Writer()
    w.struct(fields)
    return bytes(w.out)


def _get(fields: list[Field], fid: int) -> Field | None:
    return next((f for f in fields if f.id == fid), None)


# parquet.thrift field ids
_FMD_NUM_ROWS, _FMD_ROW_GROUPS = 3, 4
_RG_COLUMNS, _RG_FILE_OFFSET, _RG_ORDINAL = 1, 5, 7
_CC_FILE_OFFSET, _CC_META = 2, 3
_CC_OFFSETS = (4, 6)  # offset index, column index: only with a page index
_CMD_OFFSETS = (9, 10, 11, 14)  # data page, index page, dictionary page, bloom filter


def _shift(rg: list[Field], by: int, ordinal: int) -> list[Field]:
    """A copy of a ``RowGroup`` with every file offset moved by ``by`` and its ``ordinal`` set."""
    out = []
    for f in rg:
        if f.id == _RG_COLUMNS:
            elem, chunks = f.value
            f = Field(f.id, f.type, (elem, [_shift_chunk(c, by) for c in chunks]))
        elif f.id == _RG_FILE_OFFSET:
            f = Field(f.id, f.type, _moved(f.value, by))
        elif f.id == _RG_ORDINAL:
            f = Field(f.id, f.type, ordinal)
        out.append(f)
    return out


def _moved(value: int, by: int) -> int:
    """An offset moved by ``by``; 0 is not an offset (nothing lies at byte 0 but ``PAR1``) and stays:
    Arrow writes the deprecated ``ColumnChunk.file_offset`` as 0."""
    return value + by if value else value


def _shift_chunk(cc: list[Field], by: int) -> list[Field]:
    out = []
    for f in cc:
        if f.id == _CC_FILE_OFFSET or f.id in _CC_OFFSETS:
            f = Field(f.id, f.type, _moved(f.value, by))
        elif f.id == _CC_META:
            f = Field(f.id, f.type, [Field(g.id, g.type, _moved(g.value, by)) if g.id in _CMD_OFFSETS else g
                                     for g in f.value])
        out.append(f)
    return out


@dataclass
class RowGroup:
    """One encoded row group: its column chunks' bytes, its ``RowGroup`` struct (offsets as in a
    file where the bytes start at byte 4), its rows, and the footer it came with (every shard of a
    split has the same footer but for the row groups)."""

    chunks: bytes
    meta: list[Field]
    num_rows: int
    footer: list[Field]


def encode(table: pa.Table, schema: pa.Schema, options: dict[str, Any]) -> RowGroup:
    """``table`` (cast to ``schema``) as one row group, encoded as ``ParquetWriter(**options)`` would.

    Options that put absolute offsets inside the chunks' region (a page index, bloom filters) are
    refused: :class:`ShardFile` moves only the footer's offsets.
    """
    unsupported = [k for k in ("write_page_index", "bloom_filter_options") if options.get(k)]
    if unsupported:
        raise ValueError(f"row groups encoded apart cannot carry {', '.join(unsupported)}")
    sink = pa.BufferOutputStream()  # Arrow's own buffer: the writer's many small writes stay native
    with pq.ParquetWriter(sink, schema, **options) as writer:
        writer.write_table(table.cast(schema), row_group_size=max(1, table.num_rows))
    data = sink.getvalue()
    n = struct.unpack_from("<I", data, data.size - 8)[0]
    start = data.size - 8 - n
    footer = decode(data.slice(start, n).to_pybytes())
    _, groups = _get(footer, _FMD_ROW_GROUPS).value
    if len(groups) != 1:
        raise ValueError(f"expected one row group, the writer made {len(groups)}")
    return RowGroup(chunks=data.slice(4, start - 4).to_pybytes(), meta=groups[0], num_rows=table.num_rows,
                    footer=footer)


def _rest(footer: list[Field]) -> list[Field]:
    """A footer but for what the row groups make (their number of rows, their structs)."""
    return [f for f in footer if f.id not in (_FMD_NUM_ROWS, _FMD_ROW_GROUPS)]


class ShardFile:
    """A Parquet file written from encoded row groups: ``PAR1``, their bytes in order, then the footer."""

    def __init__(self, path: os.PathLike | str) -> None:
        self.path = path
        self._f = open(path, "wb")  # noqa: SIM115 - closed by close()
        self._f.write(MAGIC)
        self._pos = len(MAGIC)
        self._groups: list[list[Field]] = []
        self._rows = 0
        self._footer: list[Field] | None = None

    def append(self, group: RowGroup) -> None:
        if self._footer is not None and _rest(group.footer) != _rest(self._footer):
            raise ValueError(f"{self.path}: a row group encoded with another schema, metadata or writer")
        self._f.write(group.chunks)
        self._groups.append(_shift(group.meta, self._pos - len(MAGIC), len(self._groups)))
        self._pos += len(group.chunks)
        self._rows += group.num_rows
        if self._footer is None:
            self._footer = group.footer

    def close(self) -> None:
        if self._f.closed:
            return
        if self._footer is None:
            raise ValueError("a shard needs at least one row group")
        footer = []
        for f in self._footer:
            if f.id == _FMD_NUM_ROWS:
                f = Field(f.id, f.type, self._rows)
            elif f.id == _FMD_ROW_GROUPS:
                f = Field(f.id, f.type, (f.value[0], self._groups))
            footer.append(f)
        data = encode_struct(footer)
        self._f.write(data + struct.pack("<I", len(data)) + MAGIC)
        self._f.close()

    def abort(self) -> None:
        """Close the file without a footer, best effort (a full disk may refuse the buffered bytes:
        the folder is removed all the same)."""
        try:
            self._f.close()
        except OSError:
            pass
