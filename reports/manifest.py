"""The ingestion's manifest: what the dataset holds of each result file, kept between reports.

``<dataset>/_ingested.json`` maps each ingested file's path to its size, mtime_ns, bundle, the
bundle's parts that hold its rows, counts and bad lines (``FileEntry``). The job (ingest.py) reads it
to decide what to read again; a manifest that is missing, unreadable or of another
``MANIFEST_VERSION`` reads as none, and the dataset is then built again from every file.

A bundle is whole when every part its files name and every one of its partials is on disk
(``is_whole``); a part or partial no entry claims, left by a run that died before saving the
manifest, is deleted (``sweep``).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from reports.dataset_layout import PARTIAL_KINDS, PARTIALS, partial_path

MANIFEST = "_ingested.json"  # "_": Spark's partition discovery and DuckDB's *.parquet globs skip it
MANIFEST_VERSION = 3  # 3: the partials keep each record's client library


@dataclass
class FileEntry:
    """What the manifest keeps per result file; also what a task returns for it."""
    size: int
    mtime_ns: int
    bundle: str
    parts: list[str]  # the bundle's parts holding its rows, relative to the dataset folder, "/"-separated
    records: int
    bad_count: int
    bad: list[list]  # [line, reason, excerpt]; at most BAD_LINE_LIMIT
    parser: str = "fast"  # which of parse.py's paths read it: "fast" (pyarrow) or "slow" (line by line)


def load_manifest(dataset: Path) -> Optional[dict[str, FileEntry]]:
    try:
        data = json.loads((dataset / MANIFEST).read_text(encoding="utf-8"))
        if data.get("version") != MANIFEST_VERSION:
            return None
        return {path: FileEntry(**entry) for path, entry in data["files"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def save_manifest(dataset: Path, entries: dict[str, FileEntry]) -> None:
    temporary = dataset / f".{MANIFEST}.tmp"
    body = {"version": MANIFEST_VERSION, "files": {path: vars(entry) for path, entry in entries.items()}}
    temporary.write_text(json.dumps(body, separators=(",", ":")), encoding="utf-8")
    os.replace(temporary, dataset / MANIFEST)


def empty_dataset(dataset: Path) -> None:
    for child in dataset.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def remove_files(dataset: Path, relatives: Iterable[str]) -> None:
    for relative in relatives:
        try:
            (dataset / relative).unlink()
        except FileNotFoundError:
            pass


def sweep(dataset: Path, claimed: set[str]) -> None:
    """Deletes parts and partials no manifest entry claims and temporary files, then empty folders."""
    for folder, _, names in os.walk(dataset, topdown=False):
        here = Path(folder)
        if here == dataset:
            continue  # the manifest: no part lives at the top
        for name in names:
            if name.startswith(("part-", ".part-", ".")) or (here.name == PARTIALS and name.endswith(".arrow")):
                if (here / name).relative_to(dataset).as_posix() not in claimed:
                    (here / name).unlink()
        if not any(here.iterdir()):
            here.rmdir()


def is_whole(dataset: Path, bundle: str, parts: set[str]) -> bool:
    return all((dataset / relative).is_file() for relative in parts) and all(
        (dataset / partial_path(bundle, kind)).is_file() for kind in PARTIAL_KINDS)
