"""``python -m reports``: the reports stage over every conformance run's results.

  python -m reports [--results DIR ...] [--master local[2]|spark://HOST:7077] [--out reports/out]
                    [--allure-results DIR | --no-allure] [--driver-memory 4g] [--rebuild]

Writes under --out: dataset/ (Parquet, partitioned by run_date and target; kept between reports and brought
up to date: only new or changed result files are read, see reports/ingest.py), tables/ (Parquet), csv/,
matrix.png, summary.html, summary.md (also printed), report.json and, unless --no-allure, allure-report/
index.html (one file). Exit codes: 0 done (bad lines are reported, not fatal); 2 no usable input, a Spark
or Allure failure.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

DEFAULT_OUT = Path("reports/out")
EXIT_OK, EXIT_ERROR = 0, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m reports", description=__doc__.splitlines()[0])
    parser.add_argument("--results", action="append", type=Path, metavar="DIR",
                        help="a folder of <run_id>.jsonl result files, or a file; repeatable "
                             "(default: <out>/results)")
    parser.add_argument("--master", default="local[2]", help="Spark master: local[N] (default local[2]) or spark://HOST:PORT")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    parser.add_argument("--allure-results", type=Path, metavar="DIR",
                        help="allure-pytest results to render (default: <out>/allure-results when it exists)")
    parser.add_argument("--no-allure", action="store_true", help="do not render the Allure report")
    parser.add_argument("--allure-cli", type=Path, help="the allure CLI (default node_modules/.bin/allure)")
    parser.add_argument("--driver-memory", default=None, help="spark.driver.memory, e.g. 4g (local masters)")
    parser.add_argument("--executor-memory", default=None, help="spark.executor.memory on a cluster")
    parser.add_argument("--rebuild", action="store_true",
                        help="ingest every result file again (default: only the files new or changed since the "
                             "last report)")
    parser.add_argument("--quiet", action="store_true", help="do not print the Markdown summary")
    return parser


def main(argv: list[str] | None = None, spark=None) -> int:
    """The CLI. ``spark``: an existing SparkSession to use and leave running (tests share one)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    from reports import aggregate, matrix, needs
    from reports import allure as allure_report

    started = time.perf_counter()
    out = args.out
    results = args.results or [out / "results"]
    try:
        files = aggregate.find_result_files(results)
    except aggregate.ReportError as exc:
        print(f"reports: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    own_session = spark is None
    problems = needs.spark_problems() if own_session else []
    if problems:
        print("reports: error: the Spark job cannot start here:\n" + "\n".join(f"  - {p}" for p in problems),
              file=sys.stderr)
        return EXIT_ERROR
    try:
        if own_session:
            spark = aggregate.spark_session(args.master, driver_memory=args.driver_memory,
                                            executor_memory=args.executor_memory)
        session_s = time.perf_counter() - started  # the JVM's start, when this call starts it
        aggregate.clear_outputs(out)
        result = aggregate.run_job(spark, files, out, rebuild=args.rebuild)
        result.timings["session_s"] = round(session_s, 2)
        cpu = aggregate.spark_cpu_seconds(spark)
        if cpu is not None and args.master.startswith("local"):
            # The JVM and its Python workers: the driver Python's own CPU is its process's, not in here.
            result.timings["spark_cpu_s"] = round(cpu, 1)
    except aggregate.ReportError as exc:
        print(f"reports: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - Py4J/Spark errors: say what failed, exit 2
        print(f"reports: error: the Spark job failed on {args.master}: {type(exc).__name__}: "
              f"{str(exc).splitlines()[0] if str(exc) else ''}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        if own_session and spark is not None:
            spark.stop()

    allure_href = None
    code = EXIT_OK
    allure_dir = args.allure_results or out / "allure-results"
    if not args.no_allure and (args.allure_results or allure_dir.is_dir()):
        try:
            index = allure_report.render(allure_dir, out, result_files=[Path(f) for f in result.files],
                                         cli=args.allure_cli, clients=result.tables.get("clients", []))
            allure_href = Path(os.path.relpath(index.resolve(), out.resolve())).as_posix()
            print(f"reports: Allure report {index}")
        except allure_report.AllureError as exc:
            print(f"reports: error: {exc}", file=sys.stderr)
            code = EXIT_ERROR
    paging = time.perf_counter()
    pages = matrix.write_summaries(result, out, allure_href=allure_href)
    result.timings["pages_s"] = round(time.perf_counter() - paging, 2)
    if not args.quiet:
        print(pages["markdown"].read_text(encoding="utf-8"))
    print(f"reports: timings {result.timings}", file=sys.stderr)
    for bad in result.bad_lines[:20]:
        print(f"reports: bad line {bad.where()}: {bad.reason}", file=sys.stderr)
    print(f"reports: {result.records} records from {len(result.files)} file(s), {result.bad_count} bad line(s); "
          f"wrote {out}/dataset, {out}/csv, {pages['html']} in {time.perf_counter() - started:.1f} s")
    return code


if __name__ == "__main__":
    sys.exit(main())
