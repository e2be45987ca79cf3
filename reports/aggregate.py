"""The PySpark job: every result file of every run -> a Parquet dataset -> the report's tables.

- any master: the same code runs on ``local[N]`` and on any ``spark://`` master; only ``--master``
  differs. The work over records runs on executors as two Spark jobs whose tasks use pyarrow: the
  ingestion (reports/ingest.py), which also reduces each bundle of result files to summary
  partials, and the per-target summaries (``summarize``), which merge those partials. Their task
  functions are shipped by value and need only pyarrow, so executors need no project code. Inputs
  and outputs are paths the driver and every executor can reach (the local filesystem of a
  one-machine cluster, or a shared mount).
- the dataset (``<out>/dataset``) holds every valid record of the current inputs as a dataset
  record (schema.py: a valid record, then a dataset record), partitioned by ``run_date`` and
  ``target``, each record once: it is kept between reports and brought up to date incrementally
  (reports/ingest.py, reports/manifest.py): files already ingested and unchanged are not read
  again, changed files have their records replaced, and files no longer among the inputs have
  their records removed. ``--rebuild`` ingests everything again.
- bad lines never stop the job. The ingestion finds them, with their line number and reason, in
  the same pass that writes the dataset (reports/parse.py); the manifest keeps those of files not
  read again, so every report names all bad lines of all current inputs. No result file at all,
  or no valid record, is a ``ReportError``.
- the tables, made on the driver from the per-target summaries (``compute_tables`` says why and
  how), written as ``<out>/tables/<name>.parquet`` and ``<out>/csv/<name>.csv``:

      ``runs``      one row per run x target: when it started, counts per verdict;
      ``matrix``    target x PIP x grade over each target's *latest* run: counts per verdict, how
                    many failures are known divergences (``expected_failure``), and pass rate
                    (schema.py: passed / (passed + failed));
      ``history``   per target x case x driver over all runs: counts per verdict, first/last seen,
                    last verdict, pass rate with its 95% Wilson interval, flaky or not;
      ``flaky``     per target x target version x case x driver with both passed and failed: pass
                    rate and its 95% Wilson interval;
      ``diff``      per target, the cases whose verdict differs between its last two runs:
                    regression (passed -> failed), fix (failed -> passed), intermittent (a move
                    between the two of a case whose known divergence says it fails in some runs
                    only), changed (any other move, e.g. to indefinite or unsupported: those are
                    kept apart), added, removed;
      ``durations_case`` / ``durations_target``  p50 and p99 of duration_s over executed cases
                    (unsupported cases never ran and are left out);
      ``clients``   client library x broker release: the latest verdict of each case a client
                    library performed on a target of that release (reports/clients.py).
"""

from __future__ import annotations

import atexit
import functools
import json
import math
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional
from urllib.parse import urlparse

from reports import schema as S
from reports import ingest
from reports.dataset_layout import part_path, partial_path, unescape  # shipped by value with the tasks
from reports.clients import CLIENT_COLUMNS, client_matrix
from reports.errors import ReportError

DEFAULT_MASTER = "local[2]"
Z95 = 1.959963984540054
TABLES = ("runs", "matrix", "history", "flaky", "diff", "durations_case", "durations_target", "clients")
VERDICT_COLUMNS = S.VERDICTS  # one count column per verdict, in this order
# In the matrix: how many of the failed cases are known divergences (spec/divergences/); failed counts
# every failure, so the pass rate is unchanged by what is known.
EXPECTED_FAILURE = "expected_failure"
BAD_LINE_LIMIT = 10_000  # bad lines listed (csv/bad_lines.csv); all are counted


@dataclass(frozen=True)
class BadLine:
    file: str
    line: int  # 1-based
    reason: str
    excerpt: str

    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass
class JobResult:
    files: list[str]
    records: int
    bad_count: int
    bad_lines: list[BadLine]
    tables: dict[str, list[dict]] = field(default_factory=dict)
    out_dir: Optional[Path] = None
    timings: dict[str, float] = field(default_factory=dict)


# -- inputs ----------------------------------------------------------------------------------------

def find_result_files(paths: Iterable[Path]) -> list[Path]:
    """Every ``*.jsonl`` under each path (a file, a results folder, or a run's out folder)."""
    found: list[Path] = []
    paths = [Path(p) for p in paths]
    for path in paths:
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(sorted(p for p in path.rglob("*.jsonl") if p.is_file()))
        else:
            raise ReportError(f"results path {path} does not exist; pass the folder a conformance run wrote "
                              "(e.g. --results reports/out/results)")
    if not found:
        where = ", ".join(str(p) for p in paths)
        raise ReportError(f"no result files (*.jsonl) in {where}: run `python -m conformance run --target reference "
                          "--out reports/out` first, or pass --results with the folder holding <run_id>.jsonl files")
    return sorted(set(p.resolve() for p in found))


def wilson(passed: int, total: int, z: float = Z95) -> tuple[Optional[float], Optional[float]]:
    """The Wilson score interval of a pass rate (None, None when nothing was counted)."""
    if total <= 0:
        return None, None
    p = passed / total
    denom = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denom
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


# -- the Spark session ----------------------------------------------------------------------------

def _loopback(master: str) -> bool:
    if master.startswith("local"):
        return True
    host = urlparse(master).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


_LOG_CONF: list[Path] = []
_LOG_SETTINGS = ("rootLogger.level = error\nrootLogger.appenderRef.stderr.ref = console\n"
                 "appender.console.type = Console\nappender.console.name = console\n"
                 "appender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\n"
                 "appender.console.layout.pattern = spark: %p %c{1}: %m%n%ex\n")


def _log_conf_file() -> Path:
    """Spark's log4j2 settings, in a file of this process removed at its exit: the JVM reads it at
    start-up, and no other process's file is shared or left behind."""
    if not _LOG_CONF:
        handle, name = tempfile.mkstemp(prefix="pulsar-conformance-reports-log4j2-", suffix=".properties")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(_LOG_SETTINGS)
        _LOG_CONF.append(Path(name))
        atexit.register(_LOG_CONF[0].unlink, missing_ok=True)
    return _LOG_CONF[0]


def spark_session(master: str = DEFAULT_MASTER, *, driver_memory: Optional[str] = None,
                  executor_memory: Optional[str] = None, conf: Optional[dict] = None):
    """A SparkSession for ``master``, tuned for this job; quiet, no web UI, UTC.

    With a local or loopback master the driver binds to 127.0.0.1, so nothing listens beyond this machine.
    """
    if _loopback(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers run the ingestion (pyarrow): they must be this interpreter, not whatever "python3" is on
    # PATH (pyspark's default). A cluster whose machines keep Python elsewhere sets PYSPARK_PYTHON itself.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    log_conf = _log_conf_file()
    settings = {
        "spark.app.name": "pulsar-conformance-report",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        # Throughput collector: the job is batch work, pauses do not matter. C1 only: the JVM's share of the
        # work is small (pyarrow tasks in Python workers do the heavy part) and short-lived, and C2's
        # compiling of Spark's code cost more CPU than it saved (1M records: 17-20 CPU-s for the whole job
        # with C1 only, 23-27 with C2).
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log_conf} -XX:+UseParallelGC "
                                         "-XX:TieredStopAtLevel=1",
        "spark.executor.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log_conf}",
    }
    if _loopback(master):
        settings["spark.driver.host"] = "127.0.0.1"
        settings["spark.driver.bindAddress"] = "127.0.0.1"
    if driver_memory:
        settings["spark.driver.memory"] = driver_memory
    if executor_memory:
        settings["spark.executor.memory"] = executor_memory
    settings.update(conf or {})
    builder = SparkSession.builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def spark_cpu_seconds(spark) -> Optional[float]:
    """User + system CPU seconds so far of the driver JVM and every process under it: on local[N] that is all
    the job's work, the JVM's threads and the Python workers the ingestion runs in (pyspark's daemon forks
    them; the times of those already ended are in the daemon's children times). Linux only, else None."""
    try:
        root = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
        ticks = os.sysconf("SC_CLK_TCK")
        stats = {}
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue  # ended meanwhile
                # fields[1] is the parent pid; [11..14] utime, stime, cutime, cstime.
                stats[int(entry.name)] = (int(fields[1]), sum(int(v) for v in fields[11:15]))
        tree, grew = {root}, True
        while grew:
            grown = {pid for pid, (parent, _) in stats.items() if parent in tree} - tree
            tree |= grown
            grew = bool(grown)
        total = sum(stats[pid][1] for pid in tree if pid in stats)
        return total / ticks
    except Exception:  # noqa: BLE001 - not on Linux, or no JVM handle: no figure
        return None


# -- per-target summaries: from the ingestion's partials, in pyarrow tasks on executors (the tables' first step)

QUANTILES = (0.5, 0.99)
QUANTILE_COLUMNS = ("p50_s", "p99_s")
RECENT_COLUMNS = ("run_id", "case_id", "driver", "pip", "grade", "verdict", "known_divergence")
VERSION_KEYS = ("target_version", "case_id", "driver", "client")
UNSUPPORTED = S.UNSUPPORTED


def _nearest_rank(count: int, quantile: float) -> int:
    """The 0-based index of the nearest-rank quantile in ``count`` sorted values: the smallest value with at
    least ``quantile`` of the values at or below it. percentile_approx returns the same value when its
    summary is exact (ceil(quantile * count), in doubles, as Spark's QuantileSummaries computes it)."""
    return max(0, math.ceil(quantile * count) - 1)


def _order_statistics(values) -> list:
    """The QUANTILES of ``values`` (unsorted, no nulls) by nearest rank, or Nones when there are none. Arrow's
    ``quantile`` with ``lower`` takes the value at index floor(q * (n - 1)) by selection, not by sorting: q is
    chosen so that this index is the nearest rank's (half an index away from any rounding)."""
    import pyarrow.compute as pc

    count = len(values)
    if count == 0:
        return [None] * len(QUANTILES)
    ranks = [_nearest_rank(count, q) for q in QUANTILES]
    at = [min(1.0, (rank + 0.5) / (count - 1)) if count > 1 else 0.0 for rank in ranks]
    return pc.quantile(values, q=at, interpolation="lower").to_pylist()


def _partial(dataset: str, bundle: str, kind: str, target: str):
    """One bundle's partial (reports/partials.py), its rows of ``target`` only (None when it has none)."""
    import json as _json
    import os as _os

    import pyarrow as pa
    import pyarrow.compute as pc

    with pa.memory_map(_os.path.join(dataset, partial_path(bundle, kind))) as source:
        reader = pa.ipc.open_file(source)
        if kind == "durations":  # one batch per target, named in the schema's metadata: mapped, not filtered
            names = _json.loads(reader.schema.metadata[b"targets"])
            if target not in names:
                return None
            return reader.get_batch(names.index(target)).replace_schema_metadata(None)
        table = reader.read_all()
    return table.filter(pc.equal(table["target"], target))


def summarize_target(dataset: str, target: str, bundles: list[str]) -> dict:
    """Every record of one target reduced to what the tables need, from the partials of the ``bundles``
    holding its records (reports/partials.py): ``runs`` (per run: first/last timestamp, counts per
    verdict, latest version, and ``recency``: 1 for the target's latest run by start, then by run id),
    ``recent`` (the records of its two latest runs, the only ones read from the dataset), ``per_version``
    (per target version x case x driver: counts, first/last seen, last verdict) and ``durations_case`` and
    ``durations_target`` (samples and exact nearest-rank p50/p99).

    A Spark task, one per target: the percentiles need all of a target's durations in one place, and the
    latest runs are per target. Shipped by value like the ingestion's task, needing only pyarrow
    (ingest.ship_by_value). "First" and "last" are by (timestamp, result_file, line): the record that
    came first or last, a tie of timestamps broken by the file's path and then the line.
    """
    import os as _os

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    def read(kind: str, **extra):
        tables = []
        for bundle in bundles:
            table = _partial(dataset, bundle, kind, target)
            for name, value in extra.items():
                table = table.append_column(name, pa.repeat(pa.scalar(value(bundle)), table.num_rows))
            tables.append(table)
        return pa.concat_tables(tables)

    # runs: a run may span bundles (a run id in two files): sums, minima and maxima again.
    runs_table = read("runs", bundle=lambda b: b).group_by(["run_id", "run_date"], use_threads=False).aggregate(
        [("started", "min"), ("finished", "max"), ("records", "sum"), *[(v, "sum") for v in VERDICT_COLUMNS],
         ("target_version", "max"), ("bundle", "distinct")])
    runs = [{"run_id": run_id, "run_date": run_date, "started": started, "finished": finished, "records": n,
             **dict(zip(VERDICT_COLUMNS, by_verdict)), "target_version": version, "bundles": sorted(held)}
            for run_id, run_date, started, finished, n, *by_verdict, version, held in zip(
                *[runs_table[c].to_pylist() for c in ("run_id", "run_date", "started_min", "finished_max",
                                                      "records_sum", *[f"{v}_sum" for v in VERDICT_COLUMNS],
                                                      "target_version_max", "bundle_distinct")])]
    # Latest first: by start, then by run id, both descending (Python's str order is UTF-8 byte order, as
    # Spark's); ``recency`` numbers them from 1.
    runs.sort(key=lambda run: (run["started"], run["run_id"]), reverse=True)
    for number, run in enumerate(runs, start=1):
        run["recency"] = number
    # recent: the two latest runs' records, from the parts of the bundles that hold them, in file and line order.
    recent = []
    for run in runs[:2]:
        tables = []
        for bundle in run["bundles"]:
            table = pq.ParquetFile(_os.path.join(dataset, part_path(bundle, run["run_date"], target)),
                                   pre_buffer=False).read(columns=[*RECENT_COLUMNS, "result_file", "line"],
                                                          use_threads=False)
            tables.append(table.filter(pc.equal(table["run_id"], run["run_id"])))
        rows = pa.concat_tables(tables)
        rows = rows.take(pc.sort_indices(rows, sort_keys=[("result_file", "ascending"), ("line", "ascending")]))
        recent.extend({**row, "recency": run["recency"]} for row in rows.select(list(RECENT_COLUMNS)).to_pylist())
    for run in runs:
        del run["bundles"]

    # per_version: the bundles' rows of a key merged. Sorted by the key, then by when the first (last) record
    # came, "first" ("last") of each group is the earliest (latest) record's; both group in key order. Rows
    # in the order their first record came, as one group_by over all records in that order would list them.
    versions = read("versions")
    keys = [(name, "ascending") for name in VERSION_KEYS]
    by_first = versions.take(pc.sort_indices(versions, sort_keys=[
        *keys, ("first_seen", "ascending"), ("first_file", "ascending"), ("first_line", "ascending")]))
    keep_nulls = pc.ScalarAggregateOptions(skip_nulls=False)
    merged = by_first.group_by(list(VERSION_KEYS), use_threads=False).aggregate(
        [("pip", "first", keep_nulls), ("grade", "first", keep_nulls), ("runs", "sum"),
         *[(v, "sum") for v in VERDICT_COLUMNS], ("first_seen", "min"), ("last_seen", "max"),
         ("first_file", "first"), ("first_line", "first")])
    by_last = versions.take(pc.sort_indices(versions, sort_keys=[
        *keys, ("last_seen", "ascending"), ("last_file", "ascending"), ("last_line", "ascending")]))
    last = by_last.group_by(list(VERSION_KEYS), use_threads=False).aggregate(
        [("last_verdict", "last", keep_nulls), ("last_known", "last", keep_nulls)])
    merged = merged.append_column("last_verdict", last["last_verdict_last"])
    merged = merged.append_column("last_known", last["last_known_last"])
    merged = merged.take(pc.sort_indices(merged, sort_keys=[
        ("first_seen_min", "ascending"), ("first_file_first", "ascending"), ("first_line_first", "ascending")]))
    per_version = pa.table({
        **{name: merged[name] for name in VERSION_KEYS}, "pip": merged["pip_first"], "grade": merged["grade_first"],
        "runs": merged["runs_sum"], **{v: merged[f"{v}_sum"] for v in VERDICT_COLUMNS},
        "first_seen": merged["first_seen_min"], "last_seen": merged["last_seen_max"],
        "last_verdict": merged["last_verdict"], "last_known": merged["last_known"]}).to_pylist()

    # Executed cases only (unsupported ones never ran): samples count them all (the versions' runs less their
    # unsupported), the percentiles rank the durations that are not null.
    samples: dict = {}
    for row in per_version:
        executed = row["runs"] - row[UNSUPPORTED]
        if executed:
            samples[row["case_id"]] = samples.get(row["case_id"], 0) + executed
    # Per case: the durations grouped by case (a sort of small integers), then each case's order statistics
    # by selection; the same over all of the target's durations.
    batches = [batch for batch in (_partial(dataset, bundle, "durations", target) for bundle in bundles)
               if batch is not None and batch.num_rows]
    timed = pa.Table.from_batches(batches).unify_dictionaries().combine_chunks() if batches else None
    per_case = {}
    durations = pa.array([], pa.float64())
    if timed is not None:
        cases, durations = timed["case_id"].chunk(0), timed["duration_s"].chunk(0)
        order = pc.sort_indices(cases.indices)
        grouped, start = durations.take(order), 0
        runs_of = pc.run_end_encode(cases.indices.take(order))
        for end, case in zip(runs_of.run_ends.to_pylist(), runs_of.values.to_pylist()):
            per_case[cases.dictionary[case].as_py()] = _order_statistics(grouped.slice(start, end - start))
            start = end
    nothing = [None] * len(QUANTILES)
    durations_case = [{"case_id": case, "samples": n, **dict(zip(QUANTILE_COLUMNS, per_case.get(case, nothing)))}
                      for case, n in samples.items()]
    durations_target = [{"samples": sum(samples.values()),
                         **dict(zip(QUANTILE_COLUMNS, _order_statistics(durations)))}]
    return {"target": target, "runs": runs, "recent": recent, "per_version": per_version,
            "durations_case": durations_case, "durations_target": durations_target if samples else []}


def summarize(spark, dataset: Path, entries: dict) -> list[dict]:
    """The tables' first step: ``summarize_target`` for every target of the dataset, as a Spark job. ``entries``:
    the ingestion's manifest entries (reports/manifest.py), which say which bundles hold which target."""

    by_target: dict[str, set] = {}
    for entry in entries.values():
        for relative in entry.parts:
            by_target.setdefault(unescape(relative.split("/")[1].split("=", 1)[1]), set()).add(entry.bundle)
    ingest.ship_by_value(sys.modules[__name__])
    sc = spark.sparkContext
    sc.setJobDescription(f"summarize {len(by_target)} target(s) with pyarrow")
    root = str(dataset)
    items = sorted(((target, sorted(bundles)) for target, bundles in by_target.items()), key=lambda item: -len(item[1]))
    done = sc.parallelize(items, len(items)).map(lambda item: summarize_target(root, *item)).collect()
    sc.setJobDescription(None)
    return done


# -- the tables, from the summaries, on the driver -----------------------------------------------

def _round6(value: float) -> float:
    """Spark SQL's round(value, 6) of a double (what the tables were first made with): half up, on the
    value's decimal form."""
    from decimal import ROUND_HALF_UP, Decimal

    return float(Decimal(repr(value)).quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP))


def _rates(row: dict) -> dict:
    """``row`` with ``pass_rate``, ``wilson_low`` and ``wilson_high`` (95%, rounded to 6 places) from its
    ``passed`` and ``failed`` counts (passed / (passed + failed)); None when nothing was passed or failed."""
    return {**row, **_rate_values(row["passed"], row["failed"])}


@functools.lru_cache(maxsize=65536)
def _rate_values(passed: int, failed: int) -> dict:
    """``_rates`` of one (passed, failed) pair; cached: tens of thousands of rows share a few hundred pairs."""
    n = passed + failed
    if n == 0:
        return {"pass_rate": None, "wilson_low": None, "wilson_high": None}
    low, high = wilson(passed, n)
    return {"pass_rate": _round6(passed / n), "wilson_low": _round6(low), "wilson_high": _round6(high)}


def _ordered(rows: list[dict], *keys: str, descending: str = "") -> list[dict]:
    """Sorted as Spark SQL's ORDER BY ``keys``: ascending, nulls first, strings by code point (i.e. by UTF-8
    bytes, as Spark). With ``descending`` (a numeric key): ORDER BY descending DESC NULLS LAST, keys."""
    rows = sorted(rows, key=lambda r: tuple((r[k] is not None, r[k] if r[k] is not None else "") for k in keys))
    if descending:
        rows = sorted(rows, key=lambda r: (r[descending] is None, -r[descending] if r[descending] is not None else 0))
    return rows


def _max_by(rows: list[dict], value: str, by: str):
    """Spark's max_by: ``value`` of the row with the largest ``by`` (the first such row on a tie)."""
    best = None
    for row in rows:
        if row[by] is not None and (best is None or row[by] > best[by]):
            best = row
    return None if best is None else best[value]


TABLE_COLUMNS = {  # every table's columns and their types, as the tables have always had them
    "runs": ["target:s", "run_id:s", "run_date:s", "started:s", "finished:s", "records:i", *[f"{v}:i" for v in
             VERDICT_COLUMNS], "target_version:s", "recency:i32"],
    "matrix": ["target:s", "pip:s", "grade:s", "total:i", *[f"{v}:i" for v in VERDICT_COLUMNS], "expected_failure:i",
               "run_id:s",
               "pass_rate:d", "wilson_low:d", "wilson_high:d"],
    "history": ["target:s", "case_id:s", "driver:s", "pip:s", "grade:s", "runs:i", *[f"{v}:i" for v in
                VERDICT_COLUMNS], "first_seen:s", "last_seen:s", "last_verdict:s", "last_version:s", "flaky:b",
                "pass_rate:d", "wilson_low:d", "wilson_high:d"],
    "flaky": ["target:s", "target_version:s", "case_id:s", "driver:s", "pip:s", "grade:s", "runs:i",
              *[f"{v}:i" for v in VERDICT_COLUMNS], "pass_rate:d", "wilson_low:d", "wilson_high:d"],
    "diff": ["target:s", "case_id:s", "driver:s", "change:s", "before:s", "after:s", "before_run:s", "after_run:s"],
    "durations_case": ["target:s", "case_id:s", "samples:i", "p50_s:d", "p99_s:d"],
    "durations_target": ["target:s", "samples:i", "p50_s:d", "p99_s:d"],
    "clients": CLIENT_COLUMNS,
}


def _arrow(name: str, rows: list[dict]):
    import pyarrow as pa

    kinds = {"s": pa.string(), "i": pa.int64(), "i32": pa.int32(), "d": pa.float64(), "b": pa.bool_()}
    schema = pa.schema([pa.field(column, kinds[kind]) for column, kind in
                        (spec.split(":") for spec in TABLE_COLUMNS[name])])
    return pa.Table.from_pylist([{k: row[k] for k in schema.names} for row in rows], schema=schema)


def compute_tables(summaries: list[dict]) -> dict:
    """Every table as a pyarrow Table, rows in the order of the table's definition below.

    Three steps. The row-level work (every record) is done by the ingestion's tasks while a bundle's
    records are in memory: each bundle reduced to its partials (reports/partials.py). ``summarize``, a
    Spark job, merges them: one pyarrow task per target reads the target's partials and the records of its
    two latest runs, and reduces them to its runs, those records, per-version counts and duration
    percentiles. The tables are then made here, on the driver, from those summaries: thousands of rows,
    not millions. (Measured at 10M records: reading the dataset's part files back for the summaries cost
    ~25 CPU-s, the partials ~4 CPU-s to make and ~2 to merge. At 1M records Spark SQL over the dataset took
    37 s, against 1.1 s for a pyarrow pass over it: its Parquet reader paid ~1.7 ms for each part file,
    and it aggregated the string minima and maxima by sorting every record. Spark SQL over the summaries
    alone still cost 7-9 s of a fresh JVM's warm-up, against 0.2 s here.)

    The definitions are those of the Spark SQL the tables were first made with: pass rate and Wilson bounds
    in doubles rounded half up to 6 places, ``first`` and ``max_by`` as Spark's, nulls first in ascending
    order; "first" and "last" of a group are its earliest and latest record by (timestamp, result_file,
    line). p50_s and p99_s are exact: the nearest-rank value (the smallest duration with at least 50% / 99%
    of the case's or target's durations at or below it), which is what percentile_approx returned while its
    summary was exact (up to ~10,000 samples); beyond that it was off by up to 1/10,000 of the ranks. Null
    durations are not ranked but are counted in ``samples``.
    """
    def rows_of(part: str) -> list[dict]:
        return [{"target": s["target"], **row} for s in summaries for row in s[part]]

    tables = {}
    runs = rows_of("runs")
    tables["runs"] = _ordered(runs, "target", "started", "run_id")

    # matrix: target x PIP x grade over each target's latest run.
    recent = rows_of("recent")
    cells: dict = {}
    for row in recent:
        if row["recency"] == 1:
            cells.setdefault((row["target"], row["pip"], row["grade"]), []).append(row)
    tables["matrix"] = _ordered([_rates({
        "target": target, "pip": pip, "grade": grade, "total": len(rows),
        **{v: sum(r["verdict"] == v for r in rows) for v in VERDICT_COLUMNS},
        EXPECTED_FAILURE: sum(r["verdict"] == S.FAILED and bool(r.get("known_divergence")) for r in rows),
        "run_id": rows[0]["run_id"]})
        for (target, pip, grade), rows in cells.items()], "target", "pip", "grade")

    # flaky and history, from the per-version counts.
    per_version = [{**_rates(row), "flaky": row["passed"] > 0 and row["failed"] > 0}
                   for row in rows_of("per_version")]
    tables["flaky"] = _ordered([row for row in per_version if row["flaky"]],
                               "wilson_low", "target", "case_id", "driver")
    cases: dict = {}
    for row in per_version:
        cases.setdefault((row["target"], row["case_id"], row["driver"]), []).append(row)
    tables["history"] = _ordered([_rates({
        "target": target, "case_id": case_id, "driver": driver, "pip": rows[0]["pip"], "grade": rows[0]["grade"],
        "runs": sum(r["runs"] for r in rows), **{v: sum(r[v] for r in rows) for v in VERDICT_COLUMNS},
        "first_seen": min(r["first_seen"] for r in rows), "last_seen": max(r["last_seen"] for r in rows),
        "last_verdict": _max_by(rows, "last_verdict", "last_seen"),
        "last_version": _max_by(rows, "target_version", "last_seen"), "flaky": any(r["flaky"] for r in rows)})
        for (target, case_id, driver), rows in cases.items()], "target", "case_id", "driver")

    # diff: a full outer join of each target's last run (after) with the one before (before) on target x
    # case x driver, as SQL joins: a key holding a null matches nothing. A target with a single run has no
    # diff (its "added" rows would only repeat the run).
    two_runs = {row["target"] for row in runs if row["recency"] == 2}
    sides: dict = {1: {}, 2: {}}
    unmatched = []
    for row in recent:
        key = (row["target"], row["case_id"], row["driver"])
        if row["target"] not in two_runs:
            continue
        if None in key:
            unmatched.append((row, None) if row["recency"] == 1 else (None, row))
        else:
            sides[row["recency"]].setdefault(key, []).append(row)
    pairs = list(unmatched)
    for key in {**sides[1], **sides[2]}:
        pairs.extend((after, before) for after in sides[1].get(key, [None]) for before in sides[2].get(key, [None]))
    diff = []
    for after, before in pairs:
        any_side = after or before
        was, now = before and before["verdict"], after and after["verdict"]
        if was == now:
            continue
        # a passed record names a divergence only when its entry is intermittent: the same entry on
        # both sides is that entry passing or failing by timing, not a fix nor a regression
        same_entry = bool(before and after and before.get("known_divergence")
                          and before.get("known_divergence") == after.get("known_divergence"))
        change = ("added" if was is None else "removed" if now is None
                  else "intermittent" if same_entry
                  else "regression" if (was, now) == (S.PASSED, S.FAILED)
                  else "fix" if (was, now) == (S.FAILED, S.PASSED) else "changed")
        diff.append({"target": any_side["target"], "case_id": any_side["case_id"], "driver": any_side["driver"],
                     "change": change, "before": was, "after": now,
                     "before_run": before and before["run_id"], "after_run": after and after["run_id"]})
    tables["diff"] = _ordered(diff, "target", "change", "case_id", "driver")

    tables["durations_case"] = _ordered(rows_of("durations_case"), "target", "case_id", descending="p99_s")
    tables["durations_target"] = _ordered(rows_of("durations_target"), "target")
    tables["clients"] = client_matrix(rows_of("per_version"))
    return {name: _arrow(name, rows) for name, rows in tables.items()}


# -- the job --------------------------------------------------------------------------------------

class _Clock:
    """Wall and CPU seconds per step of the job. CPU: the driver's Python, plus on a local master the JVM and
    its Python workers (spark_cpu_seconds); on a cluster the executors' CPU is not seen from here."""

    def __init__(self, spark):
        import time

        self._time = time
        self._spark = spark if spark.sparkContext.master.startswith("local") else None
        self._wall, self._cpu = time.perf_counter(), self._cpu_now()

    def _cpu_now(self) -> Optional[float]:
        spark_cpu = spark_cpu_seconds(self._spark) if self._spark is not None else None
        return None if spark_cpu is None else spark_cpu + self._time.process_time()

    def lap(self, timings: dict, name: str) -> None:
        wall, cpu = self._time.perf_counter(), self._cpu_now()
        timings[f"{name}_s"] = round(wall - self._wall, 2)
        if cpu is not None and self._cpu is not None:
            timings[f"{name}_cpu_s"] = round(cpu - self._cpu, 1)
        self._wall, self._cpu = wall, cpu


def run_job(spark, result_paths: Iterable[Path], out_dir: Path, *, rebuild: bool = False) -> JobResult:
    """The whole job: dataset, bad lines, tables (Parquet, CSV); returns the tables as Python rows."""
    import csv
    import time

    import pyarrow.parquet as pq

    clock = _Clock(spark)
    files = find_result_files(result_paths)
    # Absolute (any master): executors resolve a relative path against their own working directory.
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    dataset = out_dir / "dataset"
    ingested = ingest.ingest(spark, files, dataset, rebuild=rebuild)
    bad_lines = [BadLine(path, line, reason, excerpt) for path, entry in ingested.entries.items()
                 for line, reason, excerpt in entry.bad][:BAD_LINE_LIMIT]
    result = JobResult(files=[str(p) for p in files], records=0, bad_count=ingested.bad_count, bad_lines=bad_lines,
                       out_dir=out_dir)
    clock.lap(result.timings, "dataset")
    result.timings.update(files_ingested=len(ingested.ingested), files_unchanged=ingested.skipped,
                          files_removed=len(ingested.removed), files_slow_path=ingested.slow_files)
    if ingested.records == 0:
        raise ReportError(f"no valid result record in {len(files)} result file(s) ({ingested.bad_count} bad line(s), "
                          f"e.g. {bad_lines[0].where() + ': ' + bad_lines[0].reason if bad_lines else 'none'}); "
                          "check that the files are conformance results of schema_version "
                          f"{S.SCHEMA_VERSION}")
    summaries = summarize(spark, dataset, ingested.entries)
    clock.lap(result.timings, "summaries")
    tables = compute_tables(summaries)
    csv_dir = out_dir / "csv"
    csv_dir.mkdir(exist_ok=True)
    (out_dir / "tables").mkdir(exist_ok=True)
    for name in TABLES:
        started = time.perf_counter()
        pq.write_table(tables[name], out_dir / "tables" / f"{name}.parquet")
        rows = _sorted(name, tables[name].to_pylist())
        result.tables[name] = rows
        with open(csv_dir / f"{name}.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=tables[name].column_names)
            writer.writeheader()
            writer.writerows(rows)
        result.timings[f"{name}_s"] = round(time.perf_counter() - started, 2)
    clock.lap(result.timings, "tables")
    result.records = sum(r["records"] for r in result.tables["runs"])
    with open(csv_dir / "bad_lines.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["file", "line", "reason", "excerpt"])
        for bad in bad_lines:
            writer.writerow([bad.file, bad.line, bad.reason, bad.excerpt])
    (out_dir / "report.json").write_text(json.dumps(summary_json(result), indent=1) + "\n", encoding="utf-8")
    return result


_ORDER = {
    "runs": ("target", "started", "run_id"),
    "matrix": ("target", "pip", "grade"),
    "history": ("target", "case_id", "driver"),
    "flaky": ("target", "case_id", "driver", "target_version"),
    "diff": ("target", "change", "case_id", "driver"),
    "durations_case": ("target", "case_id"),
    "durations_target": ("target",),
    "clients": ("client", "target_version", "target"),
}


def _sorted(name: str, rows: list[dict]) -> list[dict]:
    keys = _ORDER[name]
    return sorted(rows, key=lambda r: tuple("" if r.get(k) is None else str(r[k]) for k in keys))


def summary_json(result: JobResult) -> dict:
    return {
        "files": len(result.files), "records": result.records, "bad_lines": result.bad_count,
        "bad_line_list": [{"file": b.file, "line": b.line, "reason": b.reason} for b in result.bad_lines[:1000]],
        "targets": sorted({r["target"] for r in result.tables.get("runs", [])}),
        "runs": len({r["run_id"] for r in result.tables.get("runs", [])}),
        "matrix": result.tables.get("matrix", []),
        "diff": result.tables.get("diff", []),
        "flaky": len(result.tables.get("flaky", [])),
    }


def clear_outputs(out_dir: Path) -> None:
    """Removes the tables a previous job wrote; the dataset stays, the ingestion brings it up to date (incrementally)."""
    for name in ("tables", "csv"):
        shutil.rmtree(Path(out_dir) / name, ignore_errors=True)
