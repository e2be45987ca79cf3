"""Reports bench: N synthetic result rows, then the Spark job over them, timed cold and incremental; DuckDB.

    .venv/bin/python bench/report.py [--rows N] [--master local[2]] [--data DIR] [--keep] [--reuse] [--no-duckdb]

What it does:
1. writes N result rows (conformance/results.py schema v1) as one ``<run_id>.jsonl`` file per run, like
   ``python -m conformance run`` does: ``--cases`` cases x ``--targets`` targets per run, as many runs as
   it takes, run ids and timestamps spread over days, verdicts drawn per (case, target) from fixed
   profiles (always passes, always fails, unsupported, flaky, ...), realistic field sizes (~700 bytes a
   line, as real records), and ``--corrupt`` truncated lines. Not timed.
2. times ``python -m reports --results DATA --master M --out OUT --no-allure`` as a subprocess: the whole
   job, JVM start-up included (JSONL -> partitioned Parquet -> matrix, history, flaky, diff, percentiles,
   CSV, HTML, Markdown), into an empty OUT: the *cold* figure (``spark_*``), split into the ingestion
   (``spark_ingest_*``: JSONL -> dataset) and the tables (``spark_tables_*``: dataset -> per-target
   summaries -> tables); the rest is the JVM's start (``session_s``) and the pages (``pages_s``).
3. writes one more run (a file in a folder of its own, so that ``--reuse`` finds DATA unchanged) and times
   the job again over DATA and it, into the same OUT: the *incremental* figure (``incremental_*``), where
   only the new file is ingested and the tables are made from the whole dataset again.
4. times the same computation in DuckDB (``duckdb_job``: same input files, same partitioned Parquet
   output, same aggregates), for scale.
Prints one JSON line with the figures: wall seconds, CPU seconds (user + system, all threads, the JVM's
Python workers included: on a machine shared with other work the wall time grows, the CPU time much less),
the load average around the run, and ``input_cached``, the share of the input in the page cache before the
cold run (files read from disk cost kernel time and wall time).
"""

from __future__ import annotations

import argparse
import ast
import json
import multiprocessing
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reports.schema import SCHEMA_VERSION  # noqa: E402

TARGETS = ["reference", "pulsar-lite", "pulsar-3.3", "pulsar-4.0", "pulsar-4.1", "oxia-broker"]
PIPS = [("344", "pip-344/upstream-get-partition-metadata-test"), ("157", "pip-157/topic-buckets"),
        ("35", "pip-35/namespace-bundles"), ("2", "pip-2/non-persistent-topics")]
APIS = [("binary", "wire"), ("rest", "rest"), ("client-binary", "client")]
GRADES = ["MUST"] * 8 + ["SHOULD"] * 3 + ["MAY"]
# (weight, {verdict: probability}) per (case, target)
PROFILES = [
    (55, {"passed": 1.0}),
    (10, {"failed": 1.0}),
    (20, {"unsupported": 1.0}),
    (6, {"passed": 0.93, "failed": 0.07}),
    (4, {"passed": 0.6, "failed": 0.35, "indefinite": 0.05}),
    (3, {"indefinite": 0.5, "passed": 0.5}),
    (2, {"passed": 0.98, "broken": 0.02}),
]
EXPECTED = '{"kind": "ServerError", "error": "TopicNotFound", "message": ""}'
ACTUAL = '{"kind": "Partitions", "partitions": 0}'


def _cases(count: int, rng: random.Random) -> list[dict]:
    cases = []
    for index in range(count):
        pip, table = PIPS[index % len(PIPS)]
        api, driver = APIS[index % len(APIS)]
        row = f"pip{pip}-gen-{index // len(APIS):04d}-allow-{'true' if index % 2 else 'false'}-param-metadata"
        cases.append({"case_id": f"{row}[{api}]", "row_id": row, "pip": pip, "table": table,
                      "grade": rng.choice(GRADES), "era": "pip344", "api": api, "driver": driver,
                      "source": json.dumps([f"upstream/{table}/Test#case{index}", f"facts-{index % 9}.{index % 7}"])})
    return cases


def _profile(rng: random.Random) -> list[tuple[str, float]]:
    pick = rng.choices(PROFILES, weights=[w for w, _ in PROFILES])[0][1]
    return list(pick.items())


def _draw(profile: list[tuple[str, float]], rng: random.Random) -> str:
    roll, acc = rng.random(), 0.0
    for verdict, p in profile:
        acc += p
        if roll < acc:
            return verdict
    return profile[-1][0]


def _write_runs(args: tuple) -> int:
    """One worker: runs [first, last) written to data/<run_id>.jsonl; returns rows written."""
    data, first, last, cases_n, targets_n, rows_total, seed, corrupt_every = args
    rng = random.Random(seed)
    case_rng = random.Random(7)  # same cases and profiles in every worker
    cases = _cases(cases_n, case_rng)
    targets = TARGETS[:targets_n]
    profiles = {(c["case_id"], t): _profile(case_rng) for c in cases for t in targets}
    start = datetime(2026, 6, 1, tzinfo=timezone.utc)
    per_run = cases_n * targets_n
    written = 0
    for run in range(first, last):
        when = start + timedelta(minutes=37 * run)
        run_id = when.strftime("%Y%m%dT%H%M%SZ") + f"-{run:06x}"
        rows_here = min(per_run, rows_total - run * per_run)
        lines = []
        for i in range(rows_here):
            target = targets[i // cases_n]
            case = cases[i % cases_n]
            verdict = _draw(profiles[(case["case_id"], target)], rng)
            version = f"{target}-1.{run // 500}.0"
            stamp = (when + timedelta(milliseconds=40 * i)).isoformat(timespec="milliseconds")
            duration = round(rng.lognormvariate(-4.5, 1.2), 4)
            failed = verdict != "passed"
            reason = {"passed": "", "failed": "action step 1 (GetPartitionedMetadata): expected ServerError("
                      "error='TopicNotFound', message=''), got Partitions(partitions=0)",
                      "unsupported": "row judges pre-PIP-344 Apache Pulsar releases; the target is held to the "
                      "current spec", "indefinite": "no answer within 10.0 s", "broken": "harness: KeyError 'x'"}[verdict]
            lines.append(
                f'{{"schema_version": {SCHEMA_VERSION}, "run_id": "{run_id}", "timestamp": "{stamp}", '
                f'"case_id": "{case["case_id"]}", "row_id": "{case["row_id"]}", "pip": "{case["pip"]}", '
                f'"table": "{case["table"]}", "grade": "{case["grade"]}", "era": "{case["era"]}", '
                f'"api": "{case["api"]}", "target": "{target}", "target_version": "{version}", '
                f'"driver": "{case["driver"]}", "verdict": "{verdict}", "reason": "{reason}", '
                f'"expected": {EXPECTED}, "actual": {ACTUAL if failed else EXPECTED}, '
                f'"failing_step": {1 if failed else "null"}, "duration_s": {duration}, "source": {case["source"]}}}')
            if corrupt_every and (run * per_run + i) % corrupt_every == corrupt_every // 2:
                lines[-1] = lines[-1][: len(lines[-1]) // 2]  # truncated, as a killed writer leaves it
        (Path(data) / f"{run_id}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        written += rows_here
    return written


def generate(data: Path, rows: int, *, cases: int = 600, targets: int = 4, corrupt: int = 10,
             workers: int = 2) -> dict:
    """Writes ``rows`` synthetic result rows under ``data``; returns what it wrote."""
    data.mkdir(parents=True, exist_ok=True)
    per_run = cases * targets
    runs = -(-rows // per_run)
    corrupt_every = rows // corrupt if corrupt else 0
    bounds = [runs * k // workers for k in range(workers + 1)]
    jobs = [(str(data), bounds[k], bounds[k + 1], cases, targets, rows, 1000 + k, corrupt_every)
            for k in range(workers) if bounds[k] < bounds[k + 1]]
    with multiprocessing.get_context("fork").Pool(len(jobs)) as pool:
        written = sum(pool.map(_write_runs, jobs))
    size = sum(p.stat().st_size for p in data.glob("*.jsonl"))
    return {"rows": written, "runs": runs, "files": runs, "bytes": size, "corrupt_lines": corrupt if corrupt else 0}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_spark(data: list[Path], out: Path, master: str, memory: str, prefix: str = "spark") -> dict:
    """Wall and CPU seconds of the whole job as a subprocess (JVM start-up included), and its stage timings."""
    command = [sys.executable, "-m", "reports", *[arg for folder in data for arg in ("--results", str(folder))],
               "--master", master, "--out", str(out), "--no-allure", "--quiet", "--driver-memory", memory]
    cpu, started = _children_cpu(), time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=3600)
    elapsed, cpu = time.perf_counter() - started, _children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"bench: the Spark job failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    stages = next((line.split("timings ", 1)[1] for line in done.stderr.splitlines() if "timings " in line), "{}")
    stages = ast.literal_eval(stages)
    print(done.stdout.strip().splitlines()[-1], file=sys.stderr)
    # The JVM is pyspark's child, not reaped by us: its CPU (and its Python workers') is the job's own figure.
    figures = {f"{prefix}_s": round(elapsed, 1), f"{prefix}_cpu_s": round(cpu + stages.pop("spark_cpu_s", 0.0), 1)}
    # The split: ingestion (JSONL -> dataset) and tables (dataset -> summaries -> tables); the rest of the
    # wall time is the JVM's start, the pages and the interpreter's.
    for part, steps in (("ingest", ("dataset",)), ("tables", ("summaries", "tables"))):
        figures[f"{prefix}_{part}_s"] = round(sum(stages.get(f"{step}_s", 0.0) for step in steps), 1)
        if all(f"{step}_cpu_s" in stages for step in steps):
            figures[f"{prefix}_{part}_cpu_s"] = round(sum(stages[f"{step}_cpu_s"] for step in steps), 1)
    figures[f"{prefix}_stages"] = stages
    return figures


def cached_fraction(files: list[Path]) -> float | None:
    """How much of ``files`` is in the page cache (``fincore``; None without it). A cold report over files the
    kernel must read from disk costs more CPU (kernel time) and wall time than one over cached files: on this
    project's machine the kernel pages out cache that has been idle for a while, so the bench says which."""
    if not files or shutil.which("fincore") is None:
        return None
    cached = 0
    for start in range(0, len(files), 1000):
        done = subprocess.run(["fincore", "--bytes", "--noheadings", "--raw", "--output", "RES",
                               *map(str, files[start:start + 1000])], capture_output=True, text=True)
        if done.returncode != 0:
            return None
        cached += sum(int(line) for line in done.stdout.split())
    return round(cached / max(1, sum(p.stat().st_size for p in files)), 2)


def one_more_run(data: Path, into: Path, *, cases: int = 600, targets: int = 4) -> Path:
    """A run after the last one in ``data`` (same cases and targets), written to ``into``; its file."""
    runs = len(list(data.glob("*.jsonl")))
    into.mkdir(parents=True, exist_ok=True)
    per_run = cases * targets
    _write_runs((str(into), runs, runs + 1, cases, targets, (runs + 1) * per_run, 99, 0))
    return next(into.glob("*.jsonl"))


def _duckdb_cpu(run) -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    before = usage.ru_utime + usage.ru_stime
    elapsed = run()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return elapsed, usage.ru_utime + usage.ru_stime - before


def duckdb_job(data: Path, out: Path, threads: int = 2) -> float:
    """The job's computation in DuckDB: JSONL -> partitioned Parquet, then the same aggregates."""
    import duckdb

    started = time.perf_counter()
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    con.execute("SET preserve_insertion_order = false")
    columns = ("{schema_version: 'BIGINT', run_id: 'VARCHAR', timestamp: 'VARCHAR', case_id: 'VARCHAR', "
               "row_id: 'VARCHAR', pip: 'VARCHAR', \"table\": 'VARCHAR', grade: 'VARCHAR', era: 'VARCHAR', "
               "api: 'VARCHAR', target: 'VARCHAR', target_version: 'VARCHAR', driver: 'VARCHAR', "
               "verdict: 'VARCHAR', reason: 'VARCHAR', expected: 'JSON', actual: 'JSON', failing_step: 'BIGINT', "
               "duration_s: 'DOUBLE', source: 'VARCHAR[]'}")
    # As the Spark job: JSONL -> partitioned Parquet in one pass, then every table from the Parquet dataset.
    con.execute(f"""
        COPY (SELECT *, substr(run_id, 1, 4) || '-' || substr(run_id, 5, 2) || '-' || substr(run_id, 7, 2) AS run_date
              FROM read_json('{data}/*.jsonl', format = 'newline_delimited', columns = {columns},
                             ignore_errors = true, filename = 'result_file')
              WHERE schema_version = {SCHEMA_VERSION} AND verdict IS NOT NULL AND run_id IS NOT NULL)
        TO '{out}/dataset' (FORMAT parquet, PARTITION_BY (run_date, target), OVERWRITE_OR_IGNORE)""")
    con.execute(f"""CREATE VIEW r AS SELECT * FROM read_parquet('{out}/dataset/*/*/*.parquet', hive_partitioning = true)""")
    con.execute("""
        CREATE TABLE history AS SELECT case_id, target, driver, count(*) AS runs,
          count(*) FILTER (verdict = 'passed') AS passed, count(*) FILTER (verdict = 'failed') AS failed,
          arg_max(verdict, timestamp) AS last_verdict FROM r GROUP BY ALL""")
    con.execute("""
        CREATE TABLE flaky AS SELECT case_id, target, driver, target_version,
          count(*) FILTER (verdict = 'passed') AS p, count(*) FILTER (verdict = 'failed') AS f
        FROM r GROUP BY ALL HAVING p > 0 AND f > 0""")
    con.execute("""
        CREATE TABLE runs AS SELECT *, row_number() OVER (PARTITION BY target ORDER BY started DESC) AS k
        FROM (SELECT target, run_id, run_date, min(timestamp) AS started, count(*) AS records,
                     count(*) FILTER (verdict = 'passed') AS passed, count(*) FILTER (verdict = 'failed') AS failed
              FROM r GROUP BY target, run_id, run_date)""")
    con.execute("""
        CREATE TABLE matrix AS SELECT r.target, pip, grade,
          count(*) FILTER (verdict = 'passed') AS passed, count(*) FILTER (verdict = 'failed') AS failed,
          count(*) FILTER (verdict = 'unsupported') AS unsupported,
          count(*) FILTER (verdict = 'indefinite') AS indefinite, count(*) FILTER (verdict = 'broken') AS broken
        FROM r JOIN (SELECT target, run_id FROM runs WHERE k = 1) USING (target, run_id) GROUP BY ALL""")
    con.execute("""
        CREATE TABLE diff AS SELECT a.case_id, a.target, a.driver, b.verdict AS before, a.verdict AS after
        FROM (SELECT r.* FROM r JOIN runs USING (target, run_id) WHERE k = 1) a
        JOIN (SELECT r.* FROM r JOIN runs USING (target, run_id) WHERE k = 2) b USING (case_id, target, driver)
        WHERE a.verdict <> b.verdict""")
    con.execute("""CREATE TABLE dcase AS SELECT case_id, target, quantile_disc(duration_s, 0.5) AS p50,
                   quantile_disc(duration_s, 0.99) AS p99 FROM r WHERE verdict <> 'unsupported' GROUP BY ALL""")
    con.execute("""CREATE TABLE dtarget AS SELECT target, quantile_disc(duration_s, 0.5) AS p50,
                   quantile_disc(duration_s, 0.99) AS p99 FROM r WHERE verdict <> 'unsupported' GROUP BY ALL""")
    for table in ("runs", "matrix", "history", "flaky", "diff", "dcase", "dtarget"):
        con.execute(f"COPY {table} TO '{out}/{table}.csv' (HEADER)")
    con.close()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--cases", type=int, default=600)
    parser.add_argument("--targets", type=int, default=4)
    parser.add_argument("--corrupt", type=int, default=10, help="truncated lines to plant (default 10)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="6g")
    parser.add_argument("--data", type=Path, help="where to write the rows (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the data and outputs")
    parser.add_argument("--reuse", action="store_true", help="reuse the rows already in --data")
    parser.add_argument("--no-duckdb", action="store_true")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="report-bench-"))
    data = args.data or work / "results"
    try:
        if args.reuse and any(data.glob("*.jsonl")):
            written = {"rows": None, "bytes": sum(p.stat().st_size for p in data.glob("*.jsonl"))}
        else:
            if data.exists():
                shutil.rmtree(data)
            started = time.perf_counter()
            written = generate(data, args.rows, cases=args.cases, targets=args.targets, corrupt=args.corrupt)
            written["generate_s"] = round(time.perf_counter() - started, 1)
        print(f"bench: data {json.dumps(written)}", file=sys.stderr, flush=True)
        load_before = os.getloadavg()[0]
        figures = {"rows": args.rows, **written, "spark_master": args.master, "cpus": os.cpu_count(),
                   "input_cached": cached_fraction(sorted(data.glob("*.jsonl"))),
                   **time_spark([data], work / "spark-out", args.master, args.driver_memory)}
        one_more_run(data, work / "new-run", cases=args.cases, targets=args.targets)
        figures.update(time_spark([data, work / "new-run"], work / "spark-out", args.master, args.driver_memory,
                                  prefix="incremental"))
        if not args.no_duckdb:
            (work / "duckdb-out").mkdir()
            elapsed, cpu = _duckdb_cpu(lambda: duckdb_job(data, work / "duckdb-out"))
            figures.update(duckdb_s=round(elapsed, 1), duckdb_cpu_s=round(cpu, 1))
        # Other work on the machine slows both: the 1-minute load average says how much there was.
        figures["load_average"] = [round(load_before, 1), round(os.getloadavg()[0], 1)]
        print(json.dumps(figures))
    finally:
        if args.keep:
            print(f"bench: kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
