"""Reading one result file into Arrow rows, with every line the schema refuses named.

Runs inside the ingestion's Spark tasks (bundles.py), shipped by value: the standard library, pyarrow
and reports/schema.py only.

- two paths (``parse_fast``, ``parse_slow``): on the fast path ``pyarrow.json.read_json`` reads the
  whole file with the explicit schema; Arrow compute applies the schema's record rule
  (``valid_mask``) and each refused row's reason is ``schema.line_problem`` of its line. Row i is
  line i+1 only when the file has no blank line and pyarrow returned one row per line (it skips
  blank lines, and would return two rows for a line holding two objects): otherwise, or when
  pyarrow refuses the file (one truncated or corrupt line fails it whole), the slow path reads the
  file line by line with ``schema.parse_line``, keeps the good lines and names each bad one.
  Either way the bad lines come back with their 1-based number, reason and excerpt.
- where a record came from: its ``result_file`` and ``line`` (``with_file``), and its ``run_date``
  is derived from its run id (``run_date_column``).
"""

from __future__ import annotations

import json
import os
import re
from typing import Optional

from reports.schema import BAD_REASONS, DATASET_TYPES, DERIVED, PARTITIONS, READABLE_VERSIONS, REQUIRED, VERDICTS, \
    line_problem, parse_line

_RUN_ID_DATE = "^[0-9]{8}T"  # a run id of the form 20260722T101500Z-... (schema.py, run ids)

def arrow_types():
    import pyarrow as pa

    kinds = {"bigint": pa.int64(), "string": pa.string(), "double": pa.float64(),
             "array<string>": pa.list_(pa.string())}
    read = pa.schema([pa.field(name, kinds[kind]) for name, kind in DATASET_TYPES.items()])
    written = pa.schema([f for f in read if f.name not in PARTITIONS]
                        + [pa.field(name, kinds[kind]) for name, kind in DERIVED.items() if name not in PARTITIONS])
    return read, written


def valid_mask(table):
    """The schema's record rule (schema.line_problem) as Arrow compute over a table pyarrow read with the
    explicit schema (types already hold)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ok = pc.is_in(table["schema_version"], value_set=pa.array(READABLE_VERSIONS, pa.int64()))
    ok = pc.and_kleene(ok, pc.is_in(table["verdict"], value_set=pa.array(VERDICTS)))
    for name in REQUIRED:
        column = table[name]
        ok = pc.and_kleene(ok, pc.and_kleene(pc.is_valid(column), pc.not_equal(column, "")))
    duration = table["duration_s"]
    ok = pc.and_kleene(ok, pc.or_kleene(pc.is_null(duration), pc.is_finite(duration)))
    return pc.fill_null(ok, False)


def _lines(data: bytes) -> list[bytes]:
    """The file's lines as the old line locator numbered them: split on \\n, none after a final \\n."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r\n")


_BLANK_INSIDE = re.compile(rb"\n[ \t\r]*\n")  # starts with a literal: scanned at memchr speed
_BLANK = re.compile(rb"[ \t\r]*")


def _has_blank_line(data: bytes) -> bool:
    """A line holding only whitespace, or nothing (pyarrow skips those: row numbers would shift)."""
    end = len(data) - 1 if data.endswith(b"\n") else len(data)  # positions, not a slice: no 2 MB copy
    if end <= 0:
        return True
    first_end = data.find(b"\n", 0, end)
    last_start = data.rfind(b"\n", 0, end) + 1
    return (_BLANK.fullmatch(data, 0, end if first_end < 0 else first_end) is not None
            or _BLANK.fullmatch(data, last_start, end) is not None
            or _BLANK_INSIDE.search(data, 0, end) is not None)


def line_numbers(count: int):
    """1, 2, ... ``count`` as an int64 array, made in Arrow (a Python range costs ~0.3 ms per result file)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), count))


def _line_count(data) -> Optional[int]:
    """The file's line count (as ``_lines`` numbers them) when no line can be blank, else None: every line
    starts with ``{``, or ``_has_blank_line`` says none is blank. One pass in Arrow over the file, rather than
    a count and a search in Python (two passes: the fast path's largest cost after the JSON parsing)."""
    import struct

    import pyarrow as pa
    import pyarrow.compute as pc

    size = len(data)
    whole = pa.Array.from_buffers(pa.large_binary(), 1, [None, pa.py_buffer(struct.pack("<qq", 0, size)),
                                                          pa.py_buffer(data)])
    lines = pc.split_pattern(whole, b"\n").values
    count = len(lines) - (1 if data[size - 1:] == b"\n" else 0)
    if count == 0:
        return None
    if not pc.all(pc.starts_with(lines.slice(0, count), pattern=b"{")).as_py() and _has_blank_line(bytes(data)):
        return None
    return count


def parse_fast(data, read_schema):
    """The fast path, its first half (``data``: the file's bytes or a view of them): every row pyarrow
    reads, with ``line``, or None to take the slow path. The schema's record rule is not applied yet
    (``_fast`` applies it per file, bundles.ingest_bundle per bundle)."""
    import pyarrow as pa
    import pyarrow.json as pj

    line_count = _line_count(data)
    if line_count is None:
        return None
    try:
        table = pj.read_json(
            pa.BufferReader(data),
            # One block for the whole file: a line longer than a block would fail the read.
            read_options=pj.ReadOptions(use_threads=False, block_size=max(1 << 20, len(data) + 1)),
            parse_options=pj.ParseOptions(explicit_schema=read_schema, unexpected_field_behavior="ignore",
                                          newlines_in_values=False))
    except pa.ArrowException:  # a line it cannot read fails the whole file: the slow path finds which
        return None
    if table.num_rows != line_count:
        return None
    return table.append_column("line", line_numbers(table.num_rows))


def _fast(data: bytes, read_schema):
    """The fast path: (table of valid rows with ``line``, bad lines) or None to take the slow path."""
    import pyarrow.compute as pc

    table = parse_fast(data, read_schema)
    if table is None:
        return None
    ok = valid_mask(table)
    bad = []
    refused = pc.indices_nonzero(pc.invert(ok)).to_pylist()
    if refused:
        lines = _lines(data)
        for index in refused:
            text = _text(lines[index])
            reason = line_problem(text)
            if reason is None:  # Arrow and Python disagree on this line: the slow path decides
                return None
            bad.append([index + 1, reason, text[:120]])
    return (table.filter(ok) if refused else table), bad


def _as_text(value):
    """A JSON value read into a string field: a string stays, anything else becomes its JSON text (as Spark's
    JSON reader did)."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_INT64 = (-(1 << 63), (1 << 63) - 1)


def _row(data: dict, types: dict) -> Optional[dict]:
    """A valid record (parse_line) as a row of the read schema; None when a value cannot be stored (an
    integer beyond 64 bits: Spark's reader refused those too)."""
    row = {}
    for name, kind in types.items():
        value = data.get(name)
        if kind == "string":
            value = _as_text(value)
        elif kind == "array<string>" and value is not None:
            value = [_as_text(v) for v in value]
        elif kind == "bigint" and value is not None and not _INT64[0] <= value <= _INT64[1]:
            return None
        row[name] = value
    return row


def parse_slow(data: bytes, read_schema):
    """The slow path: line by line in Python; (table of valid rows with ``line``, bad lines)."""
    import pyarrow as pa

    rows, numbers, bad = [], [], []
    for number, raw in enumerate(_lines(data), start=1):
        text = _text(raw)
        record, problem = parse_line(text)
        if record is None and problem is None:
            continue  # blank: not a record
        row = _row(record, DATASET_TYPES) if problem is None else None
        if row is None:
            bad.append([number, problem or BAD_REASONS["json"], text[:120]])
            continue
        rows.append(row)
        numbers.append(number)
    try:
        table = pa.Table.from_pylist(rows, schema=read_schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeError):
        # A value Arrow cannot hold (a lone surrogate from a \\ud800 escape, ...): find the rows, one by one.
        lines = _lines(data)
        kept, kept_numbers = [], []
        for row, number in zip(rows, numbers):
            try:
                pa.Table.from_pylist([row], schema=read_schema)
            except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeError):
                bad.append([number, BAD_REASONS["json"], _text(lines[number - 1])[:120]])
                continue
            kept.append(row)
            kept_numbers.append(number)
        bad.sort(key=lambda b: b[0])
        table, numbers = pa.Table.from_pylist(kept, schema=read_schema), kept_numbers
    return table.append_column("line", pa.array(numbers, pa.int64())), bad


def run_date_column(table):
    """The run date as schema.py defines it, in Arrow compute: the run id's date when it has the
    form, else the timestamp's."""
    import pyarrow.compute as pc

    # A result file is one run: the rule runs on the distinct run ids (usually one), then spreads by index.
    ids = pc.dictionary_encode(table["run_id"].combine_chunks())
    names = ids.dictionary
    looks_like_id = pc.match_substring_regex(pc.utf8_slice_codeunits(names, 0, 9), _RUN_ID_DATE)
    from_id = pc.binary_join_element_wise(pc.utf8_slice_codeunits(names, 0, 4), pc.utf8_slice_codeunits(names, 4, 6),
                                          pc.utf8_slice_codeunits(names, 6, 8), "-")
    by_id = pc.take(from_id, ids.indices)
    if pc.all(looks_like_id).as_py():
        return by_id
    return pc.if_else(pc.take(looks_like_id, ids.indices), by_id,
                      pc.utf8_slice_codeunits(table["timestamp"].combine_chunks(), 0, 10))


def read_into(path: str, buffer: list):
    """The file's bytes as a view of ``buffer[0]``, a bytearray the task reuses (grown as needed): a fresh
    2 MB ``bytes`` per file cost twice the kernel time (page faults), and pyarrow's JSON reader copies what
    it keeps, so nothing refers to the buffer once a file is parsed. Read, not mapped: a file truncated
    while mapped would kill the worker (SIGBUS)."""
    with open(path, "rb", buffering=0) as handle:
        size = os.fstat(handle.fileno()).st_size
        if len(buffer[0]) <= size:
            buffer[0] = bytearray(size + (size >> 2) + 4096)
        view, done = memoryview(buffer[0]), 0
        while done < len(view):
            got = handle.readinto(view[done:])
            if not got:
                return view[:done]
            done += got
        return bytes(view) + handle.read()  # it grew past the buffer while being read: the rest as it is now


def with_file(table, path: str):
    import pyarrow as pa

    return table.append_column("result_file", pa.repeat(pa.scalar(path, pa.string()), table.num_rows))


def read_one_file(path: str, read_schema):
    """The fast path, else the slow one, for one result file on its own: (table of its valid rows with ``line`` and ``result_file``, bad
    lines, which path read it)."""
    with open(path, "rb") as handle:
        data = handle.read()
    done = _fast(data, read_schema)
    which = "fast"
    if done is None:
        done, which = parse_slow(data, read_schema), "slow"
    table, bad = done
    return with_file(table, path), bad, which
