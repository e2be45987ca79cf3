"""The result record as the reports stage sees it: fields, types, the dataset's columns, verdict groups, Allure.

The field list is conformance/results.py's (an earlier layer); everything here is derived from it, and
``SPARK_TYPES`` must name exactly those fields (checked at import, so a schema change breaks loudly here
rather than silently in a report).

- valid record (``parse_line``, ``line_problem``): a line is a *valid record* when it parses as
  one JSON object whose values fit SPARK_TYPES, has a ``schema_version`` of READABLE_VERSIONS, a
  known ``verdict``, non-empty ``run_id``, ``case_id``, ``target`` and ``timestamp``, and a finite
  ``duration_s`` (or none). Any other non-blank line is a *bad line*: counted and reported with its
  file and line number, never fatal (``BAD_REASONS`` names why). ``line_problem`` is the record
  rule in Python; reports/parse.py applies it with Arrow compute on the files pyarrow parses and
  takes this function's reason for every line it refuses, so both give the same verdict and
  reason.
- pass rate = passed / (passed + failed) (``OUTCOMES``). ``unsupported``, ``indefinite``,
  ``broken`` and ``target-error`` are counted in their own columns and are never in the
  denominator (conformance/verdicts.py: ``unsupported`` means the target lacks the capability).
- run date: ``run_date`` (the dataset's partition key) is the UTC date of the run: taken from the
  run id (``20260722T101500Z-...``, results.new_run_id) when it has that form, else from the
  record's timestamp.
- dataset record: a *dataset record* (the Parquet dataset's row) is a valid record without
  ``OUTCOME_FIELDS`` (``expected``/``actual``: outcome objects of varying shape, left in the result
  file) plus ``DERIVED``: ``run_date`` (the run date), ``result_file`` (the file's absolute path)
  and ``line`` (the record's 1-based line in it), so the full record is one
  ``sed -n '<line>p' <result_file>`` away. ``run_date`` and ``target`` are the partition keys:
  folder names, not columns of the files.
"""

from __future__ import annotations

from conformance.results import FIELDS, READABLE_VERSIONS, SCHEMA_VERSION, VERDICTS

__all__ = ["FIELDS", "SCHEMA_VERSION", "VERDICTS", "SPARK_TYPES", "DATASET_TYPES", "spark_schema", "ALLURE_STATUS",
           "line_problem", "parse_line"]

PASSED, FAILED, UNSUPPORTED, INDEFINITE, BROKEN = "passed", "failed", "unsupported", "indefinite", "broken"
TARGET_ERROR = "target-error"  # schema 3: the target could not start or stopped serving
assert set(VERDICTS) == {PASSED, FAILED, UNSUPPORTED, INDEFINITE, BROKEN, TARGET_ERROR}, VERDICTS
# Pass rate: the two verdicts a pass rate is made of; a regression or a fix is a move between them (diff).
OUTCOMES = (PASSED, FAILED)

# Spark SQL DDL type of every field. ``expected``/``actual`` are outcome objects of varying shape: any JSON
# value fits "string" (a valid record), but they are not in the dataset (OUTCOME_FIELDS).
SPARK_TYPES: dict[str, str] = {
    "schema_version": "bigint",
    "run_id": "string",
    "timestamp": "string",
    "case_id": "string",
    "row_id": "string",
    "pip": "string",
    "table": "string",
    "grade": "string",
    "era": "string",
    "api": "string",
    "target": "string",
    "target_version": "string",
    "driver": "string",
    "verdict": "string",
    "reason": "string",
    "expected": "string",
    "actual": "string",
    "failing_step": "bigint",
    "duration_s": "double",
    "source": "array<string>",
    "namespace": "string",
    "known_divergence": "string",
    "client": "string",
}
if tuple(SPARK_TYPES) != FIELDS:
    raise ImportError(f"reports/schema.py is out of date with conformance/results.py: fields {FIELDS} "
                      f"vs Spark types for {tuple(SPARK_TYPES)}; update SPARK_TYPES")

REQUIRED = ("run_id", "case_id", "target", "timestamp")
# Schema 1 records lack namespace and known_divergence (conformance/results.py: ``known_divergence``); they are read
# with both null, schema 2 records as they are (schema 3 only adds a verdict), and records before schema 4
# with a null client, so earlier runs stay in the reports. READABLE_VERSIONS is results.py's.
BAD_REASONS = {
    "json": "not a JSON object (truncated or corrupt line)",
    "schema_version": f"schema_version is not one of {', '.join(map(str, READABLE_VERSIONS))}",
    "verdict": f"verdict is not one of {', '.join(VERDICTS)}",
    "missing": f"one of {', '.join(REQUIRED)} is missing or empty",
    "duration": "duration_s is not a finite number",
}

# The dataset record's columns.
OUTCOME_FIELDS = ("expected", "actual")
DATASET_TYPES: dict[str, str] = {name: kind for name, kind in SPARK_TYPES.items() if name not in OUTCOME_FIELDS}
DERIVED = {"run_date": "string", "result_file": "string", "line": "bigint"}
PARTITIONS = ("run_date", "target")


def spark_schema():
    """The record as a pyspark StructType (built in Python: needs no running JVM)."""
    from pyspark.sql.types import ArrayType, DoubleType, LongType, StringType, StructField, StructType

    kinds = {"bigint": LongType(), "string": StringType(), "double": DoubleType(),
             "array<string>": ArrayType(StringType())}
    return StructType([StructField(name, kinds[kind], True) for name, kind in SPARK_TYPES.items()])


# verdict -> (Allure status, category name). Mirrors conformance/plugin.py's verdict -> pytest outcome: unsupported is a skip,
# indefinite and broken are "broken" with the verdict as the message's first word.
ALLURE_STATUS = {
    PASSED: ("passed", None),
    FAILED: ("failed", "Failed: the target diverges from the spec"),
    UNSUPPORTED: ("skipped", "Unsupported: the case could not be attempted on the target"),
    INDEFINITE: ("broken", "Indefinite: a bounded wait ended without an answer"),
    BROKEN: ("broken", "Broken: harness error"),
    TARGET_ERROR: ("broken", "Target error: the target could not start or stopped serving"),
}


def line_problem(text: str):
    """The record rule for one line, in Python: None for a valid record or a blank line, else a BAD_REASONS text."""
    return parse_line(text)[1]


def parse_line(text: str):
    """The record rule for one line: ``(record dict, None)`` for a valid record, ``(None, BAD_REASONS text)`` for a bad
    line, ``(None, None)`` for a blank line.

    Shipped to Spark executors by value (ingest.ship_by_value): it must use only the standard library
    and this module's plain values.
    """
    import json
    import math

    if not text.strip():
        return None, None
    try:
        data = json.loads(text)
    except ValueError:
        return None, BAD_REASONS["json"]
    if not isinstance(data, dict) or not _types_ok(data):
        return None, BAD_REASONS["json"]
    if data.get("schema_version") not in READABLE_VERSIONS or isinstance(data.get("schema_version"), bool):
        return None, BAD_REASONS["schema_version"]
    if data.get("verdict") not in VERDICTS:
        return None, BAD_REASONS["verdict"]
    if any(data.get(name) in (None, "") for name in REQUIRED):
        return None, BAD_REASONS["missing"]
    duration = data.get("duration_s")
    if isinstance(duration, str) or (isinstance(duration, float) and not math.isfinite(duration)):
        # Spark's JSON reader took "NaN"/"Infinity" strings as doubles; they were refused then, and still are.
        return None, BAD_REASONS["duration"]
    return data, None


NON_NUMERIC = ("NaN", "Infinity", "INF")  # strings Spark's JSON reader took as doubles


def _types_ok(data: dict) -> bool:
    """False for a value that does not fit SPARK_TYPES (the rule Spark's JSON reader applied when it read the
    results: such a line was corrupt)."""
    for name, kind in SPARK_TYPES.items():
        value = data.get(name)
        if value is None or kind == "string":
            continue
        if kind == "bigint" and not (isinstance(value, int) and not isinstance(value, bool)):
            return False
        if kind == "double" and not (isinstance(value, (int, float)) and not isinstance(value, bool)):
            if not (isinstance(value, str) and value.lstrip("+-") in NON_NUMERIC):
                return False
        if kind == "array<string>" and not isinstance(value, list):
            return False
    return True
