"""The ingestion's Spark task: a bundle of result files into Parquet parts and summary partials.

- parts (``_write_bundle``, ``_write_part``): a bundle is a run of consecutive result files
  ingested by one task under one id. Its rows go to one Parquet part per partition (run date,
  target) the bundle touches, holding the rows of all its files there (dataset_layout.part_path):
  few large files rather than one small file per result file and partition, which cost more to
  write and to read back. Each part is written under a hidden name (Spark and DuckDB skip
  ``.``-names) and renamed, so a reader never sees half a file.
- the record rule (``ingest_bundle``): the schema's record rule runs once over a bundle's rows; a
  file with a row it refuses is read again on its own (parse.read_one_file) so its bad lines get their
  reasons.
- prune (``prune_bundle``): a prune rewrites a bundle's parts without the rows of the files that
  go (filtered by ``result_file``; a part left empty is deleted) and computes its partials again
  from what stays.
- ``run_item`` is the task, shipped by value (ingest.ship_by_value): it needs only the standard
  library, pyarrow and the modules shipped with it.
"""

from __future__ import annotations

import os

from reports.dataset_layout import part_path, unescape
from reports.parse import arrow_types, parse_fast, parse_slow, read_one_file, read_into, run_date_column, valid_mask, \
    with_file
from reports.partials import PARTIAL_COLUMNS, partial_tables, write_partials
from reports.schema import PARTITIONS

BAD_LINE_LIMIT = 10_000  # bad lines kept per file with their excerpt (all are counted)
_DICTIONARY = ["run_id", "case_id", "row_id", "pip", "table", "grade", "era", "api", "target_version", "driver",
               "verdict", "reason", "source", "result_file"]


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
    """One part, written under a hidden name and renamed, so a reader never sees half a file."""
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
    """The bundle's ``records`` (the rows of ``paths``, ``sizes`` rows each, in that order, with
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


def ingest_bundle(paths: list[str], dataset: str, bundle: str, *, force_slow: bool = False) -> list[dict]:
    """One bundle ingested, the record rule run once over its rows: reads its files, writes their parts and the bundle's partials;
    returns each file's manifest entry as a dict, but for the size and mtime (the driver's: ingest.py keeps those)."""
    import bisect

    import pyarrow as pa
    import pyarrow.compute as pc

    read_schema, written_schema = arrow_types()
    paths = sorted(paths)  # by path: partial_tables takes the records' order as (result_file, line) order
    tables, found, buffer = [], [], [bytearray()]
    for index, path in enumerate(paths):
        if index + 1 < len(paths):
            _read_ahead(paths[index + 1])
        data = read_into(path, buffer)
        table = None if force_slow else parse_fast(data, read_schema)
        if table is None:
            table, bad = parse_slow(bytes(data), read_schema)
            found.append([bad, "slow"])
        else:
            found.append([[], "fast"])
        tables.append(with_file(table, path))
    # The schema's record rule once for the bundle (the slow path's rows hold already). A file with
    # a row it refuses is read again on its own (``read_one_file``): its bad lines get their reasons, or it
    # takes the slow path.
    records = pa.concat_tables(tables)
    refused = pc.indices_nonzero(pc.invert(valid_mask(records))).to_pylist()
    if refused:
        starts = [0]
        for table in tables:
            starts.append(starts[-1] + table.num_rows)
        for index in sorted({bisect.bisect_right(starts, row) - 1 for row in refused}):
            table, bad, which = read_one_file(paths[index], read_schema)
            tables[index], found[index] = table, [bad, which]
        records = pa.concat_tables(tables)
    sizes = [table.num_rows for table in tables]
    del tables
    # The run date once for the bundle: a file is one run, a bundle holds a few hundred distinct ids.
    records = records.append_column(PARTITIONS[0], run_date_column(records))
    parts = _write_bundle(records, paths, sizes, dataset, bundle, written_schema)
    write_partials(partial_tables(records), dataset, bundle)
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
    """``bundle`` without the rows of the files ``drop``: each part rewritten without them (or deleted
    when none stays), and the partials computed again from the rows that stay."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    _, written_schema = arrow_types()
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
    write_partials(partial_tables(records), dataset, bundle)
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
    """The Spark task, shipped by value: one work item, ``("ingest", bundle, paths)`` or ``("prune", bundle, parts,
    drop)``."""
    if item[0] == "prune":
        return {"pruned": prune_bundle(dataset, *item[1:])}
    return {"files": ingest_bundle(item[2], dataset, item[1])}
