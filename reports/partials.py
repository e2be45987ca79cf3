"""The summary partials: each bundle's records reduced to what the report's summaries need.

Computed inside the ingestion's Spark tasks (bundles.py) while a bundle's records are in memory, and
computed again whenever the bundle's rows change (a prune), so they always describe the bundle's
parts; the summaries (aggregate.summarize) then never read the dataset again but for the records of
each target's two latest runs.

Three Arrow IPC files per bundle (dataset_layout.partial_path): ``runs`` (per target x run x run
date: first and last timestamp, counts per verdict, latest target version), ``versions`` (per target
x target version x case x driver x client library: counts per verdict, first and last seen, the pip and
grade of the earliest record and the verdict and known divergence of the latest, with the file and line
that break timestamp ties)
and ``durations`` (case and duration_s of every executed record with a duration, one record batch
per target: the exact percentiles need them all, kept as a dictionary column and a double).
"""

from __future__ import annotations

import json
import os

from reports.dataset_layout import PARTIAL_KINDS, PARTIALS, partial_path
from reports.parse import line_numbers
from reports.schema import VERDICTS

PARTIAL_COLUMNS = ("target", "run_id", "run_date", "timestamp", "target_version", "case_id", "driver", "client", "pip",
                   "grade", "verdict", "known_divergence", "duration_s", "result_file", "line")


def partial_tables(records) -> dict:
    """A bundle's records (``PARTIAL_COLUMNS``, in file and line order) reduced to its partials."""
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
    position = line_numbers(records.num_rows)  # 1-based
    verdict = records["verdict"]
    flags = {name: pc.equal(verdict, name) for name in VERDICTS}
    counts = [*[(name, "sum") for name in VERDICTS], ("position", "min"), ("position", "max"), ([], "count_all")]
    work = pa.table({name: records[name] for name in ("target", "run_id", "run_date", "target_version", "case_id",
                                                      "driver", "client")} | {"position": position} | flags)

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
    versions = work.group_by(["target", "target_version", "case_id", "driver", "client"],
                             use_threads=False).aggregate(counts)
    first, last = versions["position_min"], versions["position_max"]
    versions = pa.table({
        "target": versions["target"], "target_version": versions["target_version"], "case_id": versions["case_id"],
        "driver": versions["driver"], "client": versions["client"], "pip": at("pip", first), "grade": at("grade", first),
        **tally(versions), "first_seen": at("timestamp", first), "last_seen": at("timestamp", last),
        "last_verdict": at("verdict", last), "last_known": at("known_divergence", last),
        "first_file": at("result_file", first), "first_line": at("line", first),
        "last_file": at("result_file", last), "last_line": at("line", last)}).rename_columns(
        ["target", "target_version", "case_id", "driver", "client", "pip", "grade", "runs", *VERDICTS, "first_seen",
         "last_seen", "last_verdict", "last_known", "first_file", "first_line", "last_file", "last_line"])
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


def write_partials(tables: dict, dataset: str, bundle: str) -> None:
    """The three partials as Arrow IPC files (no compression: they are read once per report, mapped)."""
    import pyarrow as pa

    os.makedirs(os.path.join(dataset, PARTIALS), exist_ok=True)
    for kind in PARTIAL_KINDS:
        target = os.path.join(dataset, partial_path(bundle, kind))
        temporary = f"{os.path.dirname(target)}/.{os.path.basename(target)}.{os.getpid()}.tmp"
        with pa.OSFile(temporary, "wb") as sink, pa.ipc.new_file(sink, tables[kind].schema) as writer:
            for batch in tables[kind].to_batches():  # durations: one batch per target (partial_tables)
                writer.write_batch(batch)
        os.replace(temporary, target)
