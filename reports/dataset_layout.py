"""Where the ingestion's files live in the dataset folder, and the ids they are named by.

A bundle's rows of one partition are ``<dataset>/run_date=<d>/target=<t>/part-<bundle>.parquet``
(``part_path``), the partition values escaped as Spark escapes them, so ``spark.read.parquet``
discovers the partitions (and so does DuckDB); its summary partials are
``<dataset>/_partials/<bundle>.<kind>.arrow`` (``partial_path``: ``_`` keeps Spark's partition
discovery and DuckDB's ``*.parquet`` globs out). Pure functions of names: the Spark tasks, the
job's driver and the summaries all use them (shipped to executors by value, ingest.ship_by_value).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from reports.schema import PARTITIONS

PARTIALS = "_partials"
PARTIAL_KINDS = ("runs", "versions", "durations")
# Spark's ExternalCatalogUtils.escapePathName escapes these in partition folder names (and \x00, which no
# path may hold: Spark's unescape reads any %XX back).
_ESCAPE = frozenset([chr(c) for c in range(0, 0x20)] + list("\"#%'*/:=?\\\x7f{[]^"))


def file_id(path: str) -> str:
    """A readable, stable id of a path: its stem and a hash of it."""
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", Path(path).stem)[:60]
    return f"{stem}-{hashlib.sha1(path.encode('utf-8', 'surrogateescape')).hexdigest()[:12]}"


def bundle_id(paths: list[str], salt: str) -> str:
    """A new bundle's id: its first file's stem and a hash of its paths and ``salt`` (the report's
    start, so that the same files bundled again by a later report get another id)."""
    stem = file_id(paths[0]).rsplit("-", 1)[0]
    digest = hashlib.sha1("\n".join([*paths, salt]).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f"{stem}-{digest}"


def partition_dir(name: str, value: str) -> str:
    """``name=value`` with ``value`` escaped as Spark's partitioned writer does."""
    if value is None or value == "":
        return f"{name}=__HIVE_DEFAULT_PARTITION__"
    return name + "=" + "".join(f"%{ord(c):02X}" if c in _ESCAPE else c for c in value)


def unescape(value: str) -> str:
    """A partition folder's value as Spark reads it back (ExternalCatalogUtils.unescapePathName)."""
    return re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), value)


def part_path(bundle: str, run_date: str, target: str) -> str:
    """The part of ``bundle`` in partition (``run_date``, ``target``), relative to the dataset."""
    return f"{partition_dir(PARTITIONS[0], run_date)}/{partition_dir(PARTITIONS[1], target)}/part-{bundle}.parquet"


def partial_path(bundle: str, kind: str) -> str:
    """A summary partial of ``bundle``, relative to the dataset."""
    return f"{PARTIALS}/{bundle}.{kind}.arrow"
