"""Ingestion: every result file -> the partitioned Parquet dataset, as a Spark job whose tasks parse with pyarrow.

Rule 1: the driver lists the files and hands ``(path, file id)`` pairs to ``sc.parallelize``; each task
        parses its files with pyarrow and writes their Parquet itself, then returns per-file counts and
        bad lines to the driver. The task (``ingest_partition``) is shipped by value (cloudpickle, with this
        module and reports/schema.py) and needs only the standard library and pyarrow, pyspark's own
        dependency: executors need no project code, and the job is the same on ``local[N]`` and on
        ``spark://``. Paths are local paths that the driver and every executor can reach (aggregate.py
        Rule 1).
Rule 2: the rows of one result file go to ``<dataset>/run_date=<d>/target=<t>/part-<file id>.parquet``:
        one Parquet file per partition the result file touches, the partition values escaped as Spark
        escapes them, so ``spark.read.parquet`` discovers the partitions (and so does DuckDB). A row is a
        dataset record (schema.py Rule 4). Each part is written under a hidden name (Spark and DuckDB skip
        ``.``-names) and renamed, so a reader never sees half a file.
Rule 3: fast path: ``pyarrow.json.read_json`` reads the whole file with the explicit schema; Arrow compute
        applies schema.py Rule 1 and each refused row's reason is ``schema.line_problem`` of its line. Row i
        is line i+1 only when the file has no blank line and pyarrow returned one row per line (it skips
        blank lines, and would return two rows for a line holding two objects): otherwise, or when pyarrow
        refuses the file (one truncated or corrupt line fails it whole), the slow path reads the file line
        by line with ``schema.parse_line``, keeps the good lines and names each bad one. Either way the bad
        lines come back with their 1-based number, reason and excerpt from the same pass.
Rule 4: incremental. ``<dataset>/_ingested.json`` (the manifest) maps each ingested file's path to its size,
        mtime_ns, part files, counts and bad lines. A file whose size and mtime_ns are unchanged and whose
        parts are all on disk is not read again; a changed file is ingested again, and its old parts that
        the new ones do not overwrite are deleted; a file no longer among the inputs has its parts deleted;
        a part no entry claims (left by a run that died before saving the manifest) is deleted. So the
        dataset holds exactly the valid records of the current inputs, each once. ``rebuild=True``
        (``--rebuild``), or a missing or unreadable manifest, or one of another ``MANIFEST_VERSION``: the
        dataset is emptied first and every file is ingested.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Optional

from reports.schema import (
    BAD_REASONS, DATASET_TYPES, DERIVED, PARTITIONS, REQUIRED, SCHEMA_VERSION, VERDICTS, line_problem, parse_line,
)

MANIFEST = "_ingested.json"  # "_": Spark's partition discovery and DuckDB's *.parquet globs skip it
MANIFEST_VERSION = 1
BAD_LINE_LIMIT = 10_000  # bad lines kept per file with their excerpt (all are counted)
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
    file_id: str
    parts: list[str]  # relative to the dataset folder, "/"-separated
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
    slow_files: int = 0

    @property
    def records(self) -> int:
        return sum(e.records for e in self.entries.values())

    @property
    def bad_count(self) -> int:
        return sum(e.bad_count for e in self.entries.values())


# -- naming ---------------------------------------------------------------------------------------

def file_id(path: str) -> str:
    """Rule 2: the part name's stable id of a result file: its (readable) stem and a hash of its path."""
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", Path(path).stem)[:60]
    return f"{stem}-{hashlib.sha1(path.encode('utf-8', 'surrogateescape')).hexdigest()[:12]}"


def partition_dir(name: str, value: str) -> str:
    """``name=value`` with ``value`` escaped as Spark's partitioned writer does (Rule 2)."""
    if value is None or value == "":
        return f"{name}=__HIVE_DEFAULT_PARTITION__"
    return name + "=" + "".join(f"%{ord(c):02X}" if c in _ESCAPE else c for c in value)


# -- the task: runs on executors, ships by value (Rule 1) -------------------------------------------

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

    ok = pc.equal(table["schema_version"], SCHEMA_VERSION)
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


def _fast(data: bytes, read_schema):
    """Rule 3's fast path: (table of valid rows with ``line``, bad lines) or None to take the slow path."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    if _has_blank_line(data):
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
    line_count = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    if table.num_rows != line_count:
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
    table = table.append_column("line", pa.array(range(1, table.num_rows + 1), pa.int64()))
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
    ids = pc.dictionary_encode(table["run_id"]).combine_chunks()
    names = ids.dictionary
    looks_like_id = pc.match_substring_regex(pc.utf8_slice_codeunits(names, 0, 9), _RUN_ID_DATE)
    from_id = pc.binary_join_element_wise(pc.utf8_slice_codeunits(names, 0, 4), pc.utf8_slice_codeunits(names, 4, 6),
                                          pc.utf8_slice_codeunits(names, 6, 8), "-")
    by_id = pc.take(from_id, ids.indices)
    if pc.all(looks_like_id).as_py():
        return by_id
    return pc.if_else(pc.take(looks_like_id, ids.indices), by_id, pc.utf8_slice_codeunits(table["timestamp"], 0, 10))


def _write_parts(table, dataset: str, fid: str, written_schema) -> list[str]:
    """Rule 2: one Parquet file per (run_date, target) of the table; returns their relative paths."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    parts = []
    if table.num_rows == 0:
        return parts
    # Partition by the dictionary indices of the two keys (integer compares, not string ones): a result file
    # is one run, so there is one run_date and a few targets.
    days = pc.dictionary_encode(table["run_date"]).combine_chunks()
    targets = pc.dictionary_encode(table["target"]).combine_chunks()
    body = table.select(written_schema.names)
    if body.schema != written_schema:
        body = body.cast(written_schema)
    pairs = sorted((day, target) for day in range(len(days.dictionary)) for target in range(len(targets.dictionary)))
    single_day = len(days.dictionary) == 1
    for day, target in pairs:
        mask = pc.equal(targets.indices, target)
        if not single_day:
            mask = pc.and_(mask, pc.equal(days.indices, day))
        part = body.filter(mask)
        if part.num_rows == 0:
            continue
        folder = f"{partition_dir(PARTITIONS[0], days.dictionary[day].as_py())}/" \
                 f"{partition_dir(PARTITIONS[1], targets.dictionary[target].as_py())}"
        os.makedirs(os.path.join(dataset, folder), exist_ok=True)
        relative = f"{folder}/part-{fid}.parquet"
        temporary = os.path.join(dataset, folder, f".part-{fid}.parquet.{os.getpid()}.tmp")
        # Statistics, page index and the Arrow schema copy cost a third of the write and serve no reader here;
        # dictionaries only where values repeat (ids, names, verdicts), not for timestamps and durations.
        pq.write_table(part, temporary, compression="snappy", use_dictionary=_DICTIONARY, write_statistics=False,
                       write_page_index=False, store_schema=False)
        os.replace(temporary, os.path.join(dataset, relative))
        parts.append(relative)
    return sorted(parts)


def ingest_file(path: str, fid: str, dataset: str, *, force_slow: bool = False) -> dict:
    """Rule 2 and 3 for one result file: writes its parts; returns its manifest entry as a dict, but for
    the size and mtime (the driver's, Rule 4)."""
    import pyarrow as pa

    read_schema, written_schema = _arrow_types()
    with open(path, "rb") as handle:
        data = handle.read()
    done = None if force_slow else _fast(data, read_schema)
    which = "fast"
    if done is None:
        done, which = _slow(data, read_schema), "slow"
    table, bad = done
    table = table.append_column("run_date", _run_date(table))
    table = table.append_column("result_file", pa.array([path] * table.num_rows, pa.string()))
    parts = _write_parts(table, dataset, fid, written_schema)
    return {"file": path, "entry": {"file_id": fid, "parts": parts, "records": table.num_rows,
                                    "bad_count": len(bad), "bad": bad[:BAD_LINE_LIMIT], "parser": which}}


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


def ingest_partition(items: Iterable, dataset: str) -> Iterator[dict]:
    """The Spark task (Rule 1): each ``(path, file id)`` of its slice, one after the other."""
    items = list(items)
    for index, (path, fid) in enumerate(items):
        if index + 1 < len(items):
            _read_ahead(items[index + 1][0])
        yield ingest_file(path, fid, dataset)


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


def _remove(dataset: Path, parts: Iterable[str]) -> None:
    for part in parts:
        try:
            (dataset / part).unlink()
        except FileNotFoundError:
            pass


def _sweep(dataset: Path, claimed: set[str]) -> None:
    """Rule 4: deletes parts no manifest entry claims and temporary files, then empty partition folders."""
    for folder, _, names in os.walk(dataset, topdown=False):
        here = Path(folder)
        if here == dataset:
            continue  # the manifest: no part lives at the top
        for name in names:
            if name.startswith(("part-", ".part-")) and (here / name).relative_to(dataset).as_posix() not in claimed:
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


def slices_for(count: int, parallelism: int) -> int:
    """Spark tasks for ``count`` files: many per core, so that the last tasks end close together (with 4 per
    core, 10M records left one core idle for ~5 s at the end), but not one per file (each task costs a few
    ms of scheduling and of unpickling the task's code)."""
    return max(1, min(count, parallelism * 16))


def ingest(spark, files: list[Path], dataset: Path, *, rebuild: bool = False) -> IngestResult:
    """Rule 4 around Rule 1-3: brings ``dataset`` to the current ``files``; returns every file's entry."""
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
    removed = [path for path in manifest if path not in current]
    for path in removed:
        _remove(dataset, manifest.pop(path).parts)
    result.removed = removed
    todo = []
    for path, stat in current.items():
        entry = manifest.get(path)
        if (entry is not None and entry.size == stat.st_size and entry.mtime_ns == stat.st_mtime_ns
                and all((dataset / part).is_file() for part in entry.parts)):
            result.skipped += 1
            continue
        todo.append((path, entry.file_id if entry else file_id(path)))
    if todo:
        ship_by_value()
        sc = spark.sparkContext
        sc.setJobDescription(f"ingest {len(todo)} result file(s) with pyarrow")
        target = str(dataset)
        rdd = sc.parallelize(todo, slices_for(len(todo), sc.defaultParallelism))
        done = rdd.mapPartitions(lambda items: ingest_partition(items, target)).collect()
        sc.setJobDescription(None)
        for item in done:
            old = manifest.get(item["file"])
            # The size and mtime the driver saw before the job: if the file grew while it was read, the next
            # report sees a change and reads it again rather than keeping a partial read as current.
            stat = current[item["file"]]
            entry = FileEntry(size=stat.st_size, mtime_ns=stat.st_mtime_ns, **item["entry"])
            if old is not None:
                _remove(dataset, set(old.parts) - set(entry.parts))
            manifest[item["file"]] = entry
            result.ingested.append(item["file"])
    result.entries = {path: manifest[path] for path in current}
    result.slow_files = sum(1 for path in result.ingested if manifest[path].parser == "slow")
    _sweep(dataset, {part for entry in result.entries.values() for part in entry.parts})
    _save_manifest(dataset, result.entries)
    return result
