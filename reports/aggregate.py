"""The PySpark job: every result file of every run -> a Parquet dataset -> the report's tables.

Rule 1: the same code runs on ``local[N]`` and on any ``spark://`` master; only ``--master`` differs.
        No Python UDF is used, so executors need no project code. Inputs and outputs are paths every
        executor can reach (the local filesystem of a one-machine cluster, or a shared mount).
Rule 2: the dataset (``<out>/dataset``) holds every valid record (schema.py Rule 1) with ``run_date`` and
        ``result_file`` added, partitioned by ``run_date`` and ``target``; it is rebuilt from all inputs on
        every run (overwrite), so it never holds a record twice.
Rule 3: bad lines never stop the job. Spark counts them and names their files in the same pass that
        writes the dataset (an ``Observation``); the driver then rereads only those files to give each bad
        line's number and reason. No result file at all, or no valid record, is a ``ReportError``.
Rule 4: the tables, small enough for the driver, written as ``<out>/tables/<name>.parquet`` and
        ``<out>/csv/<name>.csv``:
        ``runs``      one row per run x target: when it started, counts per verdict;
        ``matrix``    target x PIP x grade over each target's *latest* run: counts per verdict and pass
                      rate (schema.py Rule 2);
        ``history``   per target x case x driver over all runs: counts per verdict, first/last seen, last
                      verdict, pass rate with its 95% Wilson interval, flaky or not;
        ``flaky``     per target x target version x case x driver with both passed and failed: pass rate
                      and its 95% Wilson interval;
        ``diff``      per target, the cases whose verdict differs between its last two runs: regression
                      (passed -> failed), fix (failed -> passed), changed (any other move, e.g. to
                      indefinite or unsupported: those are kept apart), added, removed;
        ``durations_case`` / ``durations_target``  p50 and p99 of duration_s over executed cases
                      (unsupported cases never ran and are left out).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional
from urllib.parse import unquote, urlparse

from reports import schema as S

DEFAULT_MASTER = "local[2]"
Z95 = 1.959963984540054
RUN_ID_DATE = re.compile(r"^(\d{4})(\d{2})(\d{2})T")
TABLES = ("runs", "matrix", "history", "flaky", "diff", "durations_case", "durations_target")
VERDICT_COLUMNS = S.VERDICTS  # one count column per verdict, in this order


class ReportError(Exception):
    """Input the job cannot report on (exit code 2); the message says what to do."""


@dataclass(frozen=True)
class BadLine:
    file: str
    line: int  # 1-based; 0 when the line could not be located
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


def spark_session(master: str = DEFAULT_MASTER, *, driver_memory: Optional[str] = None,
                  executor_memory: Optional[str] = None, conf: Optional[dict] = None):
    """A SparkSession for ``master``, tuned for this job; quiet, no web UI, UTC.

    With a local or loopback master the driver binds to 127.0.0.1, so nothing listens beyond this machine.
    """
    if _loopback(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    log_conf = Path(tempfile.gettempdir()) / "pulsar-conformance-reports-log4j2.properties"
    if not log_conf.exists():
        log_conf.write_text("rootLogger.level = error\nrootLogger.appenderRef.stderr.ref = console\n"
                            "appender.console.type = Console\nappender.console.name = console\n"
                            "appender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\n"
                            "appender.console.layout.pattern = spark: %p %c{1}: %m%n%ex\n", encoding="utf-8")
    settings = {
        "spark.app.name": "pulsar-conformance-report",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.adaptive.enabled": "true",
        # Throughput collector: the job is batch work, pauses do not matter.
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log_conf} -XX:+UseParallelGC",
        "spark.executor.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log_conf}",
        # Partitioned writes: rows arrive grouped by run (one file = one run), so each task writes a few
        # partitions at once instead of sorting all its rows first.
        "spark.sql.optimizer.plannedWrite.enabled": "false",
        "spark.sql.maxConcurrentOutputFileWriters": "64",
        "spark.hadoop.mapreduce.fileoutputcommitter.algorithm.version": "2",
        "spark.hadoop.parquet.enable.summary-metadata": "false",
        "spark.sql.parquet.compression.codec": "snappy",
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


def driver_cpu_seconds(spark) -> Optional[float]:
    """User + system CPU seconds of the driver JVM so far (all its threads: all the work on local[N])."""
    try:
        pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except Exception:  # noqa: BLE001 - not on Linux, or no JVM handle: no figure
        return None


# -- the job --------------------------------------------------------------------------------------

def _file_date(path: Path) -> str:
    match = RUN_ID_DATE.match(path.name)
    return "".join(match.groups()) if match else ""


def _read(spark, files: list[Path]):
    """All records with ``_corrupt`` and ``result_file``; one scan per run date (see Rule 2's write)."""
    from pyspark.sql import functions as F

    schema = S.spark_schema().add("_corrupt", "string")
    groups: dict[str, list[str]] = {}
    for path in files:
        groups.setdefault(_file_date(path), []).append(str(path))
    frames = []
    for _, paths in sorted(groups.items()):
        frame = (spark.read.schema(schema).option("mode", "PERMISSIVE")
                 .option("columnNameOfCorruptRecord", "_corrupt").json(paths)
                 .withColumn("result_file", F.col("_metadata.file_path")))
        frames.append(frame)
    frame = frames[0]
    for other in frames[1:]:
        frame = frame.unionByName(other)
    return frame


def _bad_condition():
    from pyspark.sql import functions as F

    bad = F.col("_corrupt").isNotNull() | F.col("schema_version").isNull()
    bad = bad | (F.col("schema_version") != S.SCHEMA_VERSION)
    bad = bad | F.col("verdict").isNull() | ~F.col("verdict").isin(*S.VERDICTS)
    for name in S.REQUIRED:
        bad = bad | F.col(name).isNull() | (F.col(name) == "")
    duration = F.col("duration_s")
    return bad | F.isnan(duration) | duration.isin(float("inf"), float("-inf"))


def _run_date():
    from pyspark.sql import functions as F

    run_id = F.col("run_id")
    from_id = F.concat_ws("-", F.substring(run_id, 1, 4), F.substring(run_id, 5, 2), F.substring(run_id, 7, 2))
    # Byte tests, not a regex: this runs once per record.
    digits = F.substring(run_id, 1, 8).cast("int").isNotNull() & ~F.substring(run_id, 1, 1).isin("+", "-", " ")
    looks_like_id = (F.substring(run_id, 9, 1) == "T") & digits
    return F.when(looks_like_id, from_id).otherwise(F.substring(F.col("timestamp"), 1, 10))


def write_dataset(spark, files: list[Path], dataset: Path) -> tuple[int, list[str]]:
    """Rule 2 and 3: writes the partitioned dataset; returns (bad line count, files holding bad lines)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    records = _read(spark, files)
    bad = _bad_condition()
    observation = Observation("bad_lines")
    observed = records.observe(observation, F.count(F.when(bad, 1)).alias("bad"),
                               F.collect_set(F.when(bad, F.col("result_file"))).alias("files"))
    good = observed.filter(~bad).drop("_corrupt").withColumn("run_date", _run_date())
    good.write.mode("overwrite").partitionBy(*S.PARTITIONS).parquet(str(dataset))
    metrics = observation.get
    return int(metrics.get("bad") or 0), sorted(metrics.get("files") or [])


def _local_path(uri: str) -> Path:
    parsed = urlparse(uri)
    return Path(unquote(parsed.path)) if parsed.scheme in ("file", "") else Path(uri)


def locate_bad_lines(files: Iterable[str], limit: int = 10_000) -> list[BadLine]:
    """Rule 3: each bad line of the named files, with its 1-based number and reason (same rules as Spark)."""
    found: list[BadLine] = []
    for uri in files:
        path = _local_path(uri)
        try:
            handle = open(path, "rb")
        except OSError as exc:
            found.append(BadLine(str(path), 0, f"cannot reread the file to locate bad lines: {exc}", ""))
            continue
        with handle:
            for number, raw in enumerate(handle, start=1):
                text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                problem = S.line_problem(text)
                if problem is not None:
                    found.append(BadLine(str(path), number, problem, text[:120]))
                    if len(found) >= limit:
                        return found
    return found


def _counts(column: str = "verdict") -> list:
    from pyspark.sql import functions as F

    return [F.count(F.when(F.col(column) == name, 1)).alias(name) for name in VERDICT_COLUMNS]


def _rate_columns(frame, passed: str = "passed", failed: str = "failed"):
    """Adds ``pass_rate``, ``wilson_low`` and ``wilson_high`` (95%) from two count columns."""
    from pyspark.sql import functions as F

    n = F.col(passed) + F.col(failed)
    p = F.col(passed) / n
    z2 = Z95 * Z95
    denom = 1 + F.lit(z2) / n
    centre = (p + F.lit(z2) / (2 * n)) / denom
    half = F.lit(Z95) * F.sqrt(p * (1 - p) / n + F.lit(z2) / (4 * n * n)) / denom
    nothing = n == 0
    return (frame.withColumn("pass_rate", F.when(nothing, None).otherwise(F.round(p, 6)))
            .withColumn("wilson_low", F.when(nothing, None).otherwise(F.round(F.greatest(F.lit(0.0), centre - half), 6)))
            .withColumn("wilson_high", F.when(nothing, None).otherwise(F.round(F.least(F.lit(1.0), centre + half), 6))))


def compute_tables(spark, dataset: Path) -> dict:
    """Rule 4: every table as a DataFrame, from the dataset on disk."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    columns = ["target", "run_id", "run_date", "timestamp", "target_version", "case_id", "driver", "pip", "grade",
               "verdict", "duration_s"]
    ds = spark.read.option("basePath", str(dataset)).parquet(str(dataset)).select(*columns)
    tables = {}

    runs = (ds.groupBy("target", "run_id", "run_date")
            .agg(F.min("timestamp").alias("started"), F.max("timestamp").alias("finished"),
                 F.count(F.lit(1)).alias("records"), *_counts(),
                 F.max("target_version").alias("target_version")))
    rank = Window.partitionBy("target").orderBy(F.col("started").desc(), F.col("run_id").desc())
    runs = runs.withColumn("recency", F.row_number().over(rank)).cache()
    tables["runs"] = runs.orderBy("target", "started", "run_id")
    latest = F.broadcast(runs.filter("recency <= 2").select("target", "run_id", "recency"))
    recent = ds.join(latest, ["target", "run_id"]).cache()

    matrix = (recent.filter("recency = 1").groupBy("target", "pip", "grade")
              .agg(F.count(F.lit(1)).alias("total"), *_counts(), F.first("run_id").alias("run_id")))
    tables["matrix"] = _rate_columns(matrix).orderBy("target", "pip", "grade")

    per_version = (ds.groupBy("target", "target_version", "case_id", "driver")
                   .agg(F.first("pip").alias("pip"), F.first("grade").alias("grade"),
                        F.count(F.lit(1)).alias("runs"), *_counts(),
                        F.min("timestamp").alias("first_seen"), F.max("timestamp").alias("last_seen"),
                        F.max_by("verdict", "timestamp").alias("last_verdict")))
    per_version = _rate_columns(per_version).withColumn("flaky", (F.col("passed") > 0) & (F.col("failed") > 0))
    per_version = per_version.cache()
    tables["flaky"] = (per_version.filter("flaky").drop("flaky", "first_seen", "last_seen", "last_verdict")
                       .orderBy("wilson_low", "target", "case_id", "driver"))
    history = (per_version.groupBy("target", "case_id", "driver")
               .agg(F.first("pip").alias("pip"), F.first("grade").alias("grade"),
                    F.sum("runs").alias("runs"), *[F.sum(v).alias(v) for v in VERDICT_COLUMNS],
                    F.min("first_seen").alias("first_seen"), F.max("last_seen").alias("last_seen"),
                    F.max_by("last_verdict", "last_seen").alias("last_verdict"),
                    F.max_by("target_version", "last_seen").alias("last_version"),
                    F.max("flaky").alias("flaky")))
    tables["history"] = _rate_columns(history).orderBy("target", "case_id", "driver")

    keys = ["target", "case_id", "driver"]
    last = recent.filter("recency = 1").select(*keys, F.col("run_id").alias("after_run"),
                                                 F.col("verdict").alias("after"))
    prev = recent.filter("recency = 2").select(*keys, F.col("run_id").alias("before_run"),
                                                 F.col("verdict").alias("before"))
    both = last.join(prev, keys, "full_outer")
    change = (F.when(F.col("before").isNull(), "added").when(F.col("after").isNull(), "removed")
              .when((F.col("before") == S.PASSED) & (F.col("after") == S.FAILED), "regression")
              .when((F.col("before") == S.FAILED) & (F.col("after") == S.PASSED), "fix")
              .otherwise("changed"))
    # A target with a single run has no diff: its "added" rows would only repeat the run.
    two_runs = runs.filter("recency = 2").select("target").distinct()
    diff = (both.join(F.broadcast(two_runs), "target").filter(~F.col("before").eqNullSafe(F.col("after")))
            .withColumn("change", change))
    tables["diff"] = diff.select("target", "case_id", "driver", "change", "before", "after", "before_run",
                                 "after_run").orderBy("target", "change", "case_id", "driver")

    # One pass for both duration tables: grouping sets (target, case_id) and (target).
    executed = ds.filter(F.col("verdict") != S.UNSUPPORTED).select("target", "case_id", "duration_s")
    quantiles = F.percentile_approx("duration_s", [0.5, 0.99], 10000)
    durations = (executed.rollup("target", "case_id")
                 .agg(F.count(F.lit(1)).alias("samples"), quantiles.alias("q"), F.grouping_id().alias("level"))
                 .filter(F.col("target").isNotNull())
                 .select("target", "case_id", "samples", F.col("q")[0].alias("p50_s"), F.col("q")[1].alias("p99_s"),
                         "level")
                 .cache())
    tables["durations_case"] = (durations.filter("level = 0").drop("level")
                                .orderBy(F.col("p99_s").desc(), "target", "case_id"))
    tables["durations_target"] = durations.filter("level = 1").drop("level", "case_id").orderBy("target")
    return tables


def write_parquet(rows: list[dict], schema, path: Path) -> Path:
    """A small table, already on the driver, as one Parquet file (pyarrow: no Spark job for a few rows)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import types as T

    kinds = {T.StringType: pa.string(), T.LongType: pa.int64(), T.IntegerType: pa.int32(),
             T.DoubleType: pa.float64(), T.BooleanType: pa.bool_()}
    fields = [pa.field(f.name, kinds.get(type(f.dataType), pa.string())) for f in schema.fields]
    table = pa.Table.from_pylist(rows, schema=pa.schema(fields))
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


def _plain(value):
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def run_job(spark, result_paths: Iterable[Path], out_dir: Path) -> JobResult:
    """The whole job: dataset, bad lines, tables (Parquet, CSV); returns the tables as Python rows."""
    import csv
    import time

    clock = time.perf_counter()
    files = find_result_files(result_paths)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    dataset = out_dir / "dataset"
    bad_count, bad_files = write_dataset(spark, files, dataset)
    written = time.perf_counter()
    bad_lines = locate_bad_lines(bad_files) if bad_count else []
    result = JobResult(files=[str(p) for p in files], records=0, bad_count=bad_count, bad_lines=bad_lines,
                       out_dir=out_dir)
    result.timings["dataset_s"] = round(written - clock, 2)
    result.timings["bad_lines_s"] = round(time.perf_counter() - written, 2)
    if not (dataset / "_SUCCESS").exists() or not any(dataset.glob("run_date=*")):
        raise ReportError(f"no valid result record in {len(files)} result file(s) ({bad_count} bad line(s), "
                          f"e.g. {bad_lines[0].where() + ': ' + bad_lines[0].reason if bad_lines else 'none'}); "
                          "check that the files are conformance results of schema_version "
                          f"{S.SCHEMA_VERSION}")
    frames = compute_tables(spark, dataset)
    csv_dir = out_dir / "csv"
    csv_dir.mkdir(exist_ok=True)
    for name in TABLES:
        started = time.perf_counter()
        rows = [{k: _plain(v) for k, v in row.asDict().items()} for row in frames[name].collect()]
        write_parquet(rows, frames[name].schema, out_dir / "tables" / f"{name}.parquet")
        rows = _sorted(name, rows)
        result.tables[name] = rows
        columns = list(frames[name].columns)
        with open(csv_dir / f"{name}.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
        result.timings[f"{name}_s"] = round(time.perf_counter() - started, 2)
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
    """Removes what a previous job wrote (the dataset is rebuilt from all inputs: Rule 2)."""
    for name in ("dataset", "tables", "csv"):
        shutil.rmtree(Path(out_dir) / name, ignore_errors=True)
