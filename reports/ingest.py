"""Ingestion: every result file -> the partitioned Parquet dataset and its summary partials, as a Spark job
whose tasks parse with pyarrow.

Rule 1: the driver lists the files and hands work items to ``sc.parallelize``, one per task: a *bundle* of
        result files to ingest, or a bundle to prune (Rule 4). Each task does its item with pyarrow, writes
        the Parquet and the partials itself, and returns per-file counts and bad lines to the driver. The
        task (``run_item``) is shipped by value (cloudpickle, with this module and reports/schema.py) and
        needs only the standard library and pyarrow, pyspark's own dependency: executors need no project
        code, and the job is the same on ``local[N]`` and on ``spark://``. Paths are local paths that the
        driver and every executor can reach (aggregate.py Rule 1).
Rule 2: a bundle is a run of consecutive result files (in path order; about ``BUNDLE_BYTES`` of JSON at
        most, a few per core: ``bundles_for``) ingested by one task under one id. Its rows go to
        ``<dataset>/run_date=<d>/target=<t>/part-<bundle>.parquet``: one Parquet file per partition the
        bundle touches, holding the rows of all its files there. Few large files rather than one small file
        per result file and partition (16,668 at 10M records): writing those cost ~5 ms per result file
        against ~1.3 ms now, and reading them back was half of the summaries' work. The partition values are
        escaped as Spark escapes them, so ``spark.read.parquet`` discovers the partitions (and so does
        DuckDB). A row is a dataset record (schema.py Rule 4); its ``result_file`` and ``line`` say where it
        came from. Each part is written under a hidden name (Spark and DuckDB skip ``.``-names) and renamed,
        so a reader never sees half a file.
Rule 3: fast path: ``pyarrow.json.read_json`` reads the whole file with the explicit schema; Arrow compute
        applies schema.py Rule 1 (once over the bundle's rows) and each refused row's reason is
        ``schema.line_problem`` of its line (a file with a refused row is read again on its own to name
        them). Row i is line i+1 only when the file has no blank line and pyarrow returned one row per line
        (it skips blank lines, and would return two rows for a line holding two objects): otherwise, or when
        pyarrow refuses the file (one truncated or corrupt line fails it whole), the slow path reads the
        file line by line with ``schema.parse_line``, keeps the good lines and names each bad one. Either
        way the bad lines come back with their 1-based number, reason and excerpt.
Rule 4: incremental. ``<dataset>/_ingested.json`` (the manifest) maps each ingested file's path to its size,
        mtime_ns, bundle, the bundle's parts that hold its rows, counts and bad lines. A file whose size and
        mtime_ns are unchanged and whose bundle is whole on disk (every part and partial) is not read again.
        A changed file, or one no longer among the inputs, is *pruned* from its bundle: a task rewrites the
        bundle's parts without the file's rows (filtered by ``result_file``; a part left empty is deleted)
        and computes the bundle's partials again from what stays; a bundle all of whose files go is deleted
        whole. A changed or new file is then ingested in a new bundle. A bundle with a part or partial
        missing is deleted and its files ingested again; a part or partial no entry claims (left by a run
        that died before saving the manifest) is deleted. So the dataset holds exactly the valid records of
        the current inputs, each once. ``rebuild=True`` (``--rebuild``), or a missing or unreadable
        manifest, or one of another ``MANIFEST_VERSION``: the dataset is emptied first and every file is
        ingested.
Rule 5: the summary partials. While a bundle's rows are in memory the task also reduces them to what the
        report's summaries need (aggregate.py ``summarize``) and writes them as Arrow IPC files
        ``<dataset>/_partials/<bundle>.<kind>.arrow`` (``_``: Spark's partition discovery skips the folder;
        DuckDB's ``*.parquet`` globs do not see it): ``runs`` (per target x run x run date: first and last
        timestamp, counts per verdict, latest target version), ``versions`` (per target x target version x
        case x driver: counts per verdict, first and last seen, the pip and grade of the earliest record and
        the verdict of the latest, with the file and line that break timestamp ties) and ``durations``
        (case and duration_s of every executed record with a duration, one record batch per target: the
        exact percentiles need them all, kept as a dictionary column and a double). They are computed again
        whenever the bundle's rows change (Rule 4), so they always describe the bundle's parts, and the
        summaries never read the dataset again but for the records of each target's two latest runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from reports.schema import (
    BAD_REASONS, DATASET_TYPES, DERIVED, PARTITIONS, READABLE_VERSIONS, REQUIRED, VERDICTS, line_problem, parse_line,
)

MANIFEST = "_ingested.json"  # "_": Spark's partition discovery and DuckDB's *.parquet globs skip it
MANIFEST_VERSION = 2
PARTIALS = "_partials"  # Rule 5
PARTIAL_KINDS = ("runs", "versions", "durations")
BAD_LINE_LIMIT = 10_000  # bad lines kept per file with their excerpt (all are counted)
# Rule 2: about the most JSON per bundle. A task holds its bundle's records in memory: its worker's RSS was
# ~1.3 times the bundle's JSON at 10M records.
BUNDLE_BYTES = 256 << 20
BUNDLES_PER_CORE = 4
# Spark's ExternalCatalogUtils.escapePathName escapes these in partition folder names (and \x00, which no
# path may hold: Spark's unescape reads any %XX back).
_ESCAPE = frozenset([chr(c) for c in range(0, 0x20)] + list("\"#%'*/:=?\\\x7f{[]^"))
_RUN_ID_DATE = "^[0-9]{8}T"  # schema.py Rule 3: a run id of the form 20260722T101500Z-...
_DICTIONARY = ["run_id", "case_id", "row_id", "pip", "table", "grade", "era", "api", "target_version", "driver",
               "verdict", "reason", "source", "result_file"]


@dataclass
class FileEntry:
    """What the manifest keeps per result file (Rule 4); also what a task returns for it."""
    size: int
    mtime_ns: int
    bundle: str
    parts: list[str]  # the bundle's parts holding its rows, relative to the dataset folder, "/"-separated
    records: int
    bad_count: int
    bad: list[list]  # [line, reason, excerpt]; at most BAD_LINE_LIMIT
    parser: str = "fast"  # which of Rule 3's paths read it: "fast" (pyarrow) or "slow" (line by line)


@dataclass
class IngestResult:
    entries: dict[str, FileEntry]  # every current input file, in input order
    ingested: list[str] = field(default_factory=list)
    skipped: int = 0
    removed: list[str] = field(default_factory=list)
    pruned: int = 0  # bundles rewritten without a changed or removed file's rows
    slow_files: int = 0

    @property
    def records(self) -> int:
        return sum(e.records for e in self.entries.values())

    @property
    def bad_count(self) -> int:
        return sum(e.bad_count for e in self.entries.values())

    @property
    def bundles(self) -> list[str]:
        return sorted({e.bundle for e in self.entries.values()})


# -- naming ---------------------------------------------------------------------------------------

def file_id(path: str) -> str:
    """A readable, stable id of a path: its stem and a hash of it."""
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", Path(path).stem)[:60]
    return f"{stem}-{hashlib.sha1(path.encode('utf-8', 'surrogateescape')).hexdigest()[:12]}"


def bundle_id(paths: list[str], salt: str) -> str:
    """Rule 2: a new bundle's id: its first file's stem and a hash of its paths and ``salt`` (the report's
    start, so that the same files bundled again by a later report get another id)."""
    stem = file_id(paths[0]).rsplit("-", 1)[0]
    digest = hashlib.sha1("\n".join([*paths, salt]).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f"{stem}-{digest}"


def partition_dir(name: str, value: str) -> str:
    """``name=value`` with ``value`` escaped as Spark's partitioned writer does (Rule 2)."""
    if value is None or value == "":
        return f"{name}=__HIVE_DEFAULT_PARTITION__"
    return name + "=" + "".join(f"%{ord(c):02X}" if c in _ESCAPE else c for c in value)


def unescape(value: str) -> str:
    """A partition folder's value as Spark reads it back (ExternalCatalogUtils.unescapePathName)."""
    return re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), value)


def part_path(bundle: str, run_date: str, target: str) -> str:
    """Rule 2: the part of ``bundle`` in partition (``run_date``, ``target``), relative to the dataset."""
    return f"{partition_dir(PARTITIONS[0], run_date)}/{partition_dir(PARTITIONS[1], target)}/part-{bundle}.parquet"


def partial_path(bundle: str, kind: str) -> str:
    """Rule 5: a partial of ``bundle``, relative to the dataset."""
    return f"{PARTIALS}/{bundle}.{kind}.arrow"


# -- the tasks: run on executors, ship by value (Rule 1) --------------------------------------------

def _arrow_types():
    import pyarrow as pa

    kinds = {"bigint": pa.int64(), "string": pa.string(), "double": pa.float64(),
             "array<string>": pa.list_(pa.string())}
    read = pa.schema([pa.field(name, kinds[kind]) for name, kind in DATASET_TYPES.items()])
    written = pa.schema([f for f in read if f.name not in PARTITIONS]
                        + [pa.field(name, kinds[kind]) for name, kind in DERIVED.items() if name not in PARTITIONS])
    return read, written


def _valid_mask(table):
    """schema.py Rule 1 as Arrow compute over a table pyarrow read with the explicit schema (types already hold)."""
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


def _line_numbers(count: int):
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


def _parse(data, read_schema):
    """Rule 3's fast path, its first half (``data``: the file's bytes or a view of them): every row pyarrow
    reads, with ``line``, or None to take the slow path. Rule 1 of schema.py is not yet applied (``_fast`` does it per file, ``ingest_bundle`` per bundle)."""
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
    return table.append_column("line", _line_numbers(table.num_rows))


def _fast(data: bytes, read_schema):
    """Rule 3's fast path: (table of valid rows with ``line``, bad lines) or None to take the slow path."""
    import pyarrow.compute as pc

    table = _parse(data, read_schema)
    if table is None:
        return None
    ok = _valid_mask(table)
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


def _slow(data: bytes, read_schema):
    """Rule 3's slow path: line by line in Python; (table of valid rows with ``line``, bad lines)."""
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


def _run_date(table):
    """schema.py Rule 3 as Arrow compute: the run id's date when it has the form, else the timestamp's."""
    import pyarrow as pa
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


def _read_into(path: str, buffer: list):
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


def _with_file(table, path: str):
    import pyarrow as pa

    return table.append_column("result_file", pa.repeat(pa.scalar(path, pa.string()), table.num_rows))


def _read_file(path: str, read_schema):
    """Rule 3 for one result file on its own: (table of its valid rows with ``line`` and ``result_file``, bad
    lines, which path read it)."""
    with open(path, "rb") as handle:
        data = handle.read()
    done = _fast(data, read_schema)
    which = "fast"
    if done is None:
        done, which = _slow(data, read_schema), "slow"
    table, bad = done
    return _with_file(table, path), bad, which


def _pieces(table, codes, count: int) -> list[list]:
    """The rows of ``table`` per value of ``codes`` (ints 0..count-1), in table order: lists of tables.
    Slices (no copy) when equal codes come in long runs, as a file's rows of one target usually do; one
    ``take`` otherwise."""
    import pyarrow.compute as pc

    pieces: list[list] = [[] for _ in range(count)]
    runs = pc.run_end_encode(codes)
    ends, values = runs.run_ends.to_pylist(), runs.values.to_pylist()
    if len(ends) * 64 <= len(codes):
        start = 0
        for end, value in zip(ends, values):
            pieces[value].append(table.slice(start, end - start))
            start = end
        return pieces
    order = pc.sort_indices(codes)  # stable: table order within a code
    ordered, start = table.take(order), 0
    for value, size in enumerate(_counts(codes, count)):
        if size:
            pieces[value].append(ordered.slice(start, size))
        start += size
    return pieces


def _counts(codes, count: int) -> list[int]:
    import pyarrow.compute as pc

    found = pc.value_counts(codes)
    sizes = [0] * count
    for value, size in zip(found.field("values").to_pylist(), found.field("counts").to_pylist()):
        sizes[value] = size
    return sizes


def _write_part(table, dataset: str, relative: str) -> None:
    """Rule 2: one part, written under a hidden name and renamed."""
    import pyarrow.parquet as pq

    folder, name = relative.rsplit("/", 1)
    os.makedirs(os.path.join(dataset, folder), exist_ok=True)
    temporary = os.path.join(dataset, folder, f".{name}.{os.getpid()}.tmp")
    # Statistics, page index and the Arrow schema copy cost a third of the write and serve no reader here;
    # dictionaries only where values repeat (ids, names, verdicts), not for timestamps and durations.
    pq.write_table(table, temporary, compression="snappy", use_dictionary=_DICTIONARY, write_statistics=False,
                   write_page_index=False, store_schema=False)
    os.replace(temporary, os.path.join(dataset, relative))


def _write_bundle(records, paths: list[str], sizes: list[int], dataset: str, bundle: str, written_schema) -> dict:
    """Rule 2: the bundle's ``records`` (the rows of ``paths``, ``sizes`` rows each, in that order, with
    ``run_date``) as one part per partition; returns each file's parts."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts_of: dict = {path: [] for path in paths}
    if records.num_rows == 0:
        return parts_of
    # Partition by the dictionary indices of the two keys (integer compares, not string ones).
    days = pc.dictionary_encode(records["run_date"].combine_chunks())
    targets = pc.dictionary_encode(records["target"].combine_chunks())
    width = len(targets.dictionary)
    codes = pc.add(pc.multiply(days.indices, width), targets.indices) if len(days.dictionary) > 1 \
        else targets.indices
    names = [(days.dictionary[code // width].as_py(), targets.dictionary[code % width].as_py())
             for code in range(len(days.dictionary) * width)]
    start = 0
    for path, size in zip(paths, sizes):
        if size:
            parts_of[path] = sorted(part_path(bundle, *names[code])
                                    for code in pc.unique(codes.slice(start, size)).to_pylist())
        start += size
    body = records.select(written_schema.names)
    for code, pieces in sorted(enumerate(_pieces(body, codes, len(names))), key=lambda item: names[item[0]]):
        if pieces:
            part = pa.concat_tables(pieces).combine_chunks()
            if part.schema != written_schema:
                part = part.cast(written_schema)
            _write_part(part, dataset, part_path(bundle, *names[code]))
    return parts_of


PARTIAL_COLUMNS = ("target", "run_id", "run_date", "timestamp", "target_version", "case_id", "driver", "pip",
                   "grade", "verdict", "duration_s", "result_file", "line")


def partial_tables(records) -> dict:
    """Rule 5: a bundle's records (``PARTIAL_COLUMNS``, in file and line order) reduced to its partials."""
    import pyarrow as pa
    import pyarrow.compute as pc

    records = records.select(list(PARTIAL_COLUMNS))
    stamps = records["timestamp"]
    # "First" and "last" are by (timestamp, result_file, line): the records' order when the timestamps do not
    # go back (a run's records are written as its cases end), else a sort makes it so.
    if records.num_rows > 1 and not pc.all(pc.greater_equal(stamps[1:], stamps[:-1])).as_py():
        records = records.take(pc.sort_indices(records, sort_keys=[("timestamp", "ascending"),
                                                                   ("result_file", "ascending"),
                                                                   ("line", "ascending")]))
    # Each group's first and last record are those at its least and greatest position in that order: two
    # integer aggregates, then one ``take`` per column, rather than a string aggregate per column.
    position = _line_numbers(records.num_rows)  # 1-based
    verdict = records["verdict"]
    flags = {name: pc.equal(verdict, name) for name in VERDICTS}
    counts = [*[(name, "sum") for name in VERDICTS], ("position", "min"), ("position", "max"), ([], "count_all")]
    work = pa.table({name: records[name] for name in ("target", "run_id", "run_date", "target_version", "case_id",
                                                      "driver")} | {"position": position} | flags)

    def at(column: str, positions):
        return records[column].take(pc.subtract(positions, 1))

    def tally(grouped) -> dict:
        return {"records": grouped["count_all"],
                **{name: pc.cast(grouped[f"{name}_sum"], pa.int64()) for name in VERDICTS}}

    runs = work.group_by(["target", "run_id", "run_date"], use_threads=False).aggregate(
        [*counts, ("target_version", "max")])
    runs = pa.table({"target": runs["target"], "run_id": runs["run_id"], "run_date": runs["run_date"],
                     "started": at("timestamp", runs["position_min"]),
                     "finished": at("timestamp", runs["position_max"]),
                     **tally(runs), "target_version": runs["target_version_max"]})
    versions = work.group_by(["target", "target_version", "case_id", "driver"], use_threads=False).aggregate(counts)
    first, last = versions["position_min"], versions["position_max"]
    versions = pa.table({
        "target": versions["target"], "target_version": versions["target_version"], "case_id": versions["case_id"],
        "driver": versions["driver"], "pip": at("pip", first), "grade": at("grade", first),
        **tally(versions), "first_seen": at("timestamp", first), "last_seen": at("timestamp", last),
        "last_verdict": at("verdict", last), "first_file": at("result_file", first), "first_line": at("line", first),
        "last_file": at("result_file", last), "last_line": at("line", last)}).rename_columns(
        ["target", "target_version", "case_id", "driver", "pip", "grade", "runs", *VERDICTS, "first_seen",
         "last_seen", "last_verdict", "first_file", "first_line", "last_file", "last_line"])
    # Executed cases (unsupported ones never ran) with a duration; the samples (null durations too) are
    # the versions' runs less their unsupported. One record batch per target (the schema's metadata names
    # them), the case ids a dictionary shared by the batches: a target's summary maps its batch, no filter.
    timed = pc.and_(pc.not_equal(verdict, "unsupported"), pc.is_valid(records["duration_s"]))
    cases = pc.dictionary_encode(records["case_id"].filter(timed).combine_chunks())
    seconds = records["duration_s"].filter(timed).combine_chunks()
    targets = pc.dictionary_encode(records["target"].filter(timed).combine_chunks())
    names = targets.dictionary.to_pylist()
    schema = pa.schema([pa.field("case_id", cases.type), pa.field("duration_s", pa.float64())],
                       metadata={"targets": json.dumps(names)})
    batches = []
    for index in range(len(names)):
        mine = pc.equal(targets.indices, index)
        batches.append(pa.record_batch([pa.DictionaryArray.from_arrays(cases.indices.filter(mine), cases.dictionary),
                                        seconds.filter(mine)], schema=schema))
    return {"runs": runs, "versions": versions, "durations": pa.Table.from_batches(batches, schema=schema)}


def _write_partials(tables: dict, dataset: str, bundle: str) -> None:
    """Rule 5: the partials as Arrow IPC files (no compression: they are read once per report, mapped)."""
    import pyarrow as pa

    os.makedirs(os.path.join(dataset, PARTIALS), exist_ok=True)
    for kind in PARTIAL_KINDS:
        target = os.path.join(dataset, partial_path(bundle, kind))
        temporary = f"{os.path.dirname(target)}/.{os.path.basename(target)}.{os.getpid()}.tmp"
        with pa.OSFile(temporary, "wb") as sink, pa.ipc.new_file(sink, tables[kind].schema) as writer:
            for batch in tables[kind].to_batches():  # durations: one batch per target (partial_tables)
                writer.write_batch(batch)
        os.replace(temporary, target)


def ingest_bundle(paths: list[str], dataset: str, bundle: str, *, force_slow: bool = False) -> list[dict]:
    """Rules 2, 3 and 5 for one bundle: reads its files, writes their parts and the bundle's partials;
    returns each file's manifest entry as a dict, but for the size and mtime (the driver's, Rule 4)."""
    import bisect

    import pyarrow as pa
    import pyarrow.compute as pc

    read_schema, written_schema = _arrow_types()
    paths = sorted(paths)  # by path: partial_tables takes the records' order as (result_file, line) order
    tables, found, buffer = [], [], [bytearray()]
    for index, path in enumerate(paths):
        if index + 1 < len(paths):
            _read_ahead(paths[index + 1])
        data = _read_into(path, buffer)
        table = None if force_slow else _parse(data, read_schema)
        if table is None:
            table, bad = _slow(bytes(data), read_schema)
            found.append([bad, "slow"])
        else:
            found.append([[], "fast"])
        tables.append(_with_file(table, path))
    # schema.py Rule 1 once for the bundle (the slow path's rows hold already). A file with a row it refuses
    # is read again on its own (``_read_file``): its bad lines get their reasons, or it takes the slow path.
    records = pa.concat_tables(tables)
    refused = pc.indices_nonzero(pc.invert(_valid_mask(records))).to_pylist()
    if refused:
        starts = [0]
        for table in tables:
            starts.append(starts[-1] + table.num_rows)
        for index in sorted({bisect.bisect_right(starts, row) - 1 for row in refused}):
            table, bad, which = _read_file(paths[index], read_schema)
            tables[index], found[index] = table, [bad, which]
        records = pa.concat_tables(tables)
    sizes = [table.num_rows for table in tables]
    del tables
    # Rule 3 of schema.py once for the bundle: a file is one run, a bundle holds a few hundred distinct ids.
    records = records.append_column(PARTITIONS[0], _run_date(records))
    parts = _write_bundle(records, paths, sizes, dataset, bundle, written_schema)
    _write_partials(partial_tables(records), dataset, bundle)
    return [{"file": path, "entry": {"bundle": bundle, "parts": parts[path], "records": size, "bad_count": len(bad),
                                     "bad": bad[:BAD_LINE_LIMIT], "parser": which}}
            for path, size, (bad, which) in zip(paths, sizes, found)]


def _empty_records(written_schema):
    import pyarrow as pa

    return pa.table({name: pa.array([], written_schema.field(name).type if name in written_schema.names
                                     else pa.string()) for name in PARTIAL_COLUMNS})


def ingest_file(path: str, bundle: str, dataset: str, *, force_slow: bool = False) -> dict:
    """One file as a bundle of its own (tests, and the fast and slow paths compared)."""
    return ingest_bundle([path], dataset, bundle, force_slow=force_slow)[0]


def prune_bundle(dataset: str, bundle: str, parts: list[str], drop: list[str]) -> dict:
    """Rule 4: ``bundle`` without the rows of the files ``drop``: each part rewritten without them (or deleted
    when none stays), and the partials computed again from the rows that stay."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    _, written_schema = _arrow_types()
    gone = pa.array(sorted(drop), pa.string())
    kept, deleted = [], []
    for relative in sorted(parts):
        path = os.path.join(dataset, relative)
        table = pq.read_table(path, schema=written_schema, use_threads=False)
        keep = pc.invert(pc.is_in(table["result_file"], value_set=gone))
        if not pc.all(keep).as_py():
            table = table.filter(keep)
            if table.num_rows:
                _write_part(table, dataset, relative)
            else:
                os.unlink(path)
                deleted.append(relative)
        if table.num_rows:
            day, target = (unescape(folder.split("=", 1)[1]) for folder in relative.split("/")[:2])
            kept.append(table.append_column(PARTITIONS[0], pa.repeat(pa.scalar(day), table.num_rows))
                        .append_column(PARTITIONS[1], pa.repeat(pa.scalar(target), table.num_rows)))
    # In file and line order, as ingest_bundle computes them (partial_tables sorts when timestamps go back).
    records = pa.concat_tables(kept) if kept else _empty_records(written_schema)
    if kept:
        records = records.take(pc.sort_indices(records, sort_keys=[("result_file", "ascending"),
                                                                   ("line", "ascending")]))
    _write_partials(partial_tables(records), dataset, bundle)
    return {"bundle": bundle, "deleted": deleted}


def _read_ahead(path: str) -> None:
    """Asks the kernel to start reading ``path`` now, so the next file is in memory when its turn comes
    (parsing is CPU work: the disk would otherwise idle while it runs, and the CPU while the disk reads)."""
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return  # the read proper will say what is wrong
    try:
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_WILLNEED)
    except (OSError, AttributeError):
        pass  # no such advice on this system: only slower
    finally:
        os.close(descriptor)


def run_item(item: tuple, dataset: str) -> dict:
    """The Spark task (Rule 1): one work item, ``("ingest", bundle, paths)`` or ``("prune", bundle, parts,
    drop)``."""
    if item[0] == "prune":
        return {"pruned": prune_bundle(dataset, *item[1:])}
    return {"files": ingest_bundle(item[2], dataset, item[1])}


# -- the driver -----------------------------------------------------------------------------------

def _load_manifest(dataset: Path) -> Optional[dict[str, FileEntry]]:
    try:
        data = json.loads((dataset / MANIFEST).read_text(encoding="utf-8"))
        if data.get("version") != MANIFEST_VERSION:
            return None
        return {path: FileEntry(**entry) for path, entry in data["files"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _save_manifest(dataset: Path, entries: dict[str, FileEntry]) -> None:
    temporary = dataset / f".{MANIFEST}.tmp"
    body = {"version": MANIFEST_VERSION, "files": {path: vars(entry) for path, entry in entries.items()}}
    temporary.write_text(json.dumps(body, separators=(",", ":")), encoding="utf-8")
    os.replace(temporary, dataset / MANIFEST)


def _empty(dataset: Path) -> None:
    for child in dataset.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def _remove(dataset: Path, relatives: Iterable[str]) -> None:
    for relative in relatives:
        try:
            (dataset / relative).unlink()
        except FileNotFoundError:
            pass


def _sweep(dataset: Path, claimed: set[str]) -> None:
    """Rule 4: deletes parts and partials no manifest entry claims and temporary files, then empty folders."""
    for folder, _, names in os.walk(dataset, topdown=False):
        here = Path(folder)
        if here == dataset:
            continue  # the manifest: no part lives at the top
        for name in names:
            if name.startswith(("part-", ".part-", ".")) or (here.name == PARTIALS and name.endswith(".arrow")):
                if (here / name).relative_to(dataset).as_posix() not in claimed:
                    (here / name).unlink()
        if not any(here.iterdir()):
            here.rmdir()


def ship_by_value(*modules) -> None:
    """Rule 1: cloudpickle sends the functions of this module, schema.py and ``modules`` as code, not as
    imports that executors could not resolve."""
    from pyspark import cloudpickle

    from reports import schema

    for module in (sys.modules[__name__], schema, *modules):
        cloudpickle.register_pickle_by_value(module)


def bundles_for(sizes: list[int], parallelism: int) -> list[tuple[int, int]]:
    """Rule 2: ``sizes`` (bytes of consecutive files) cut into bundles ``[start, end)``: ``BUNDLES_PER_CORE``
    per core, so that each task's fixed costs (scheduling, unpickling its code, writing its parts) are paid
    a few times, not per file; more when a bundle would hold more than ``BUNDLE_BYTES``. Of about equal
    bytes, but for the last ones: the last ``parallelism`` bundles get half the bytes of the others and the
    ``parallelism`` before them three quarters, so that the cores run out of work close together (equal
    bundles left one core idle for half a bundle's time on average)."""
    total = sum(sizes)
    count = max(1, min(len(sizes), max(parallelism * BUNDLES_PER_CORE, -(-total // BUNDLE_BYTES))))
    weights = [1.0] * count
    if count >= 3 * parallelism:
        weights[count - 2 * parallelism:] = [0.75] * parallelism + [0.5] * parallelism
    goals, reached = [], 0.0
    for weight in weights[:-1]:
        reached += weight
        goals.append(total * reached / sum(weights))
    bounds, start, seen = [], 0, 0
    for index, size in enumerate(sizes):
        seen += size
        left = count - 1 - len(bounds)  # cuts still to make
        if left > 0 and (seen >= goals[len(bounds)] or len(sizes) - index - 1 <= left):
            bounds.append((start, index + 1))
            start = index + 1
    if start < len(sizes):
        bounds.append((start, len(sizes)))
    return bounds


def _whole(dataset: Path, bundle: str, parts: set[str]) -> bool:
    return all((dataset / relative).is_file() for relative in parts) and all(
        (dataset / partial_path(bundle, kind)).is_file() for kind in PARTIAL_KINDS)


def ingest(spark, files: list[Path], dataset: Path, *, rebuild: bool = False) -> IngestResult:
    """Rule 4 around Rules 1-3 and 5: brings ``dataset`` to the current ``files``; returns every file's entry."""
    dataset = Path(dataset)
    dataset.mkdir(parents=True, exist_ok=True)
    manifest = None if rebuild else _load_manifest(dataset)
    if manifest is None:
        _empty(dataset)
        manifest = {}
    current: dict[str, os.stat_result] = {}
    for path in files:
        try:
            current[str(path)] = os.stat(path)
        except OSError as exc:
            from reports.aggregate import ReportError

            raise ReportError(f"cannot read result file {path}: {exc}") from exc
    result = IngestResult(entries={})
    members: dict[str, list[str]] = {}
    for path, entry in manifest.items():
        members.setdefault(entry.bundle, []).append(path)
    result.removed = [path for path in manifest if path not in current]
    todo, drop = [], {}  # drop: bundle -> its files whose rows go
    for path, stat in current.items():
        entry = manifest.get(path)
        if entry is not None and entry.size == stat.st_size and entry.mtime_ns == stat.st_mtime_ns:
            continue
        todo.append(path)
        if entry is not None:
            drop.setdefault(entry.bundle, []).append(path)
    for path in result.removed:
        drop.setdefault(manifest[path].bundle, []).append(path)
    items = []
    for bundle, paths in sorted(members.items()):
        parts = {relative for path in paths for relative in manifest[path].parts}
        gone = set(drop.get(bundle, ()))
        if not _whole(dataset, bundle, parts):  # damaged: every file of it is read again
            todo.extend(path for path in paths if path in current and path not in gone)
            gone = set(paths)
        if not gone:
            continue
        for path in gone:
            del manifest[path]
        if gone == set(paths):
            _remove(dataset, [*parts, *(partial_path(bundle, kind) for kind in PARTIAL_KINDS)])
        else:
            items.append(("prune", bundle, sorted(parts), sorted(gone)))
    result.pruned = len(items)
    result.skipped = len(current) - len(set(todo))
    todo = sorted(set(todo))
    salt = str(time.time_ns())
    for start, end in bundles_for([current[path].st_size for path in todo],
                                  spark.sparkContext.defaultParallelism if todo else 1):
        items.append(("ingest", bundle_id(todo[start:end], salt), todo[start:end]))
    if items:
        ship_by_value()
        sc = spark.sparkContext
        sc.setJobDescription(f"ingest {len(todo)} result file(s) with pyarrow ({result.pruned} bundle(s) pruned)")
        target = str(dataset)
        done = sc.parallelize(items, len(items)).map(lambda item: run_item(item, target)).collect()
        sc.setJobDescription(None)
        for outcome in done:
            for item in outcome.get("files", ()):
                # The size and mtime the driver saw before the job: if the file grew while it was read, the
                # next report sees a change and reads it again rather than keeping a partial read as current.
                stat = current[item["file"]]
                manifest[item["file"]] = FileEntry(size=stat.st_size, mtime_ns=stat.st_mtime_ns, **item["entry"])
                result.ingested.append(item["file"])
            if "pruned" in outcome:
                deleted = set(outcome["pruned"]["deleted"])
                for entry in manifest.values():
                    if entry.bundle == outcome["pruned"]["bundle"] and deleted & set(entry.parts):
                        entry.parts = [part for part in entry.parts if part not in deleted]
    result.entries = {path: manifest[path] for path in current}
    result.slow_files = sum(1 for path in result.ingested if manifest[path].parser == "slow")
    claimed = {relative for entry in result.entries.values() for relative in entry.parts}
    claimed |= {partial_path(bundle, kind) for bundle in result.bundles for kind in PARTIAL_KINDS}
    _sweep(dataset, claimed)
    _save_manifest(dataset, result.entries)
    return result
