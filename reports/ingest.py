"""Ingestion: every result file -> the partitioned Parquet dataset and its summary partials, as a
Spark job whose tasks parse with pyarrow.

- tasks: the driver lists the files and hands work items to ``sc.parallelize``, one per task: a
  bundle of result files to ingest, or a bundle to prune (bundles.run_item). Each task does its
  item with pyarrow, writes the Parquet and the partials itself, and returns per-file counts and
  bad lines to the driver. The task's code is shipped by value (``ship_by_value``), so executors
  need no project code and the job is the same on ``local[N]`` and on ``spark://``. Paths are
  local paths that the driver and every executor can reach (aggregate.py says so for the whole
  job).
- bundles are consecutive files in path order, a few per core and about ``BUNDLE_BYTES`` of JSON
  at most (``bundles_for``).
- incremental (``ingest``, manifest.py). A file whose size and mtime_ns are unchanged and whose
  bundle is whole on disk is not read again. A changed file, or one no longer among the inputs,
  is pruned from its bundle; a bundle all of whose files go is deleted whole. A changed or new
  file is then ingested in a new bundle. A bundle with a part or partial missing is deleted and
  its files ingested again. So the dataset holds exactly the valid records of the current inputs,
  each once. ``rebuild=True`` (``--rebuild``), or no usable manifest: the dataset is emptied first
  and every file is ingested.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from reports import bundles, dataset_layout, parse, partials, schema
from reports.bundles import run_item
from reports.dataset_layout import PARTIAL_KINDS, bundle_id, partial_path
from reports.errors import ReportError
from reports.manifest import FileEntry, empty_dataset, is_whole, load_manifest, remove_files, save_manifest, sweep

# About the most JSON per bundle. A task holds its bundle's records in memory: its worker's RSS was
# ~1.3 times the bundle's JSON at 10M records.
BUNDLE_BYTES = 256 << 20
BUNDLES_PER_CORE = 4


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


# The modules whose functions run on executors: the task and everything it calls.
TASK_MODULES = (bundles, parse, partials, dataset_layout, schema)


def ship_by_value(*modules) -> None:
    """Shipping by value: cloudpickle sends the functions of this module, ``TASK_MODULES`` and ``modules`` as code,
    not as imports that executors could not resolve."""
    from pyspark import cloudpickle

    for module in (sys.modules[__name__], *TASK_MODULES, *modules):
        cloudpickle.register_pickle_by_value(module)


def bundles_for(sizes: list[int], parallelism: int) -> list[tuple[int, int]]:
    """``sizes`` (bytes of consecutive files) cut into bundles ``[start, end)``: ``BUNDLES_PER_CORE``
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


def ingest(spark, files: list[Path], dataset: Path, *, rebuild: bool = False) -> IngestResult:
    """The incremental ingestion, in tasks over bundles: brings ``dataset`` to the current ``files``; returns every
    file's entry."""
    dataset = Path(dataset)
    dataset.mkdir(parents=True, exist_ok=True)
    manifest = None if rebuild else load_manifest(dataset)
    if manifest is None:
        empty_dataset(dataset)
        manifest = {}
    current: dict[str, os.stat_result] = {}
    for path in files:
        try:
            current[str(path)] = os.stat(path)
        except OSError as exc:
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
        if not is_whole(dataset, bundle, parts):  # damaged: every file of it is read again
            todo.extend(path for path in paths if path in current and path not in gone)
            gone = set(paths)
        if not gone:
            continue
        for path in gone:
            del manifest[path]
        if gone == set(paths):
            remove_files(dataset, [*parts, *(partial_path(bundle, kind) for kind in PARTIAL_KINDS)])
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
    sweep(dataset, claimed)
    save_manifest(dataset, result.entries)
    return result
