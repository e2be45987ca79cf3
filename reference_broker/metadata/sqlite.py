"""SQLite metadata store (``metadataStoreUrl=sqlite:PATH``): survives a broker restart.

Owns the on-disk form of the contract in ``store.py``: one table ``nodes`` with a row per
node (path, parent, value, version). Every write runs in one ``BEGIN IMMEDIATE`` transaction, so
a parent chain and its node appear together or not at all, also across processes sharing the file.

Rule: a subtree is selected by the half-open range ``[path + "/", path + "0")``; ``0`` is the
character after ``/``, so this matches exactly the descendants, and unlike ``LIKE`` it is not
confused by the ``%`` that URL-encoded topic names contain.
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager
from typing import Iterator

from reference_broker.errors import MetadataStoreError
from reference_broker.metadata.store import (
    BadVersion,
    MetadataStore,
    NodeExists,
    NoNode,
    NotEmptyNode,
    ancestors,
    check_path,
    parent_of,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS nodes (
    path    TEXT PRIMARY KEY,
    parent  TEXT NOT NULL,
    value   BLOB NOT NULL,
    version INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS nodes_parent ON nodes(parent);
"""


class SqliteMetadataStore(MetadataStore):
    def __init__(self, filename: str) -> None:
        try:
            self._conn = sqlite3.connect(filename, isolation_level=None, check_same_thread=False, timeout=10)
            self._conn.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise MetadataStoreError(f"Cannot open sqlite metadata store {filename!r}: {exc}") from None
        self._lock = threading.Lock()
        self.filename = filename

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")

    def _row(self, conn: sqlite3.Connection, path: str) -> tuple[bytes, int] | None:
        row = conn.execute("SELECT value, version FROM nodes WHERE path = ?", (path,)).fetchone()
        return None if row is None else (bytes(row[0]), int(row[1]))

    def get(self, path: str) -> tuple[bytes, int] | None:
        check_path(path)
        with self._lock:
            return self._row(self._conn, path)

    def create(self, path: str, value: bytes = b"") -> int:
        check_path(path)
        if path == "/":
            raise NodeExists(path)
        with self._write() as conn:
            if self._row(conn, path) is not None:
                raise NodeExists(path)
            self._insert_with_parents(conn, path, bytes(value))
        return 0

    def put(self, path: str, value: bytes, *, expected_version: int | None = None) -> int:
        check_path(path)
        if path == "/":
            raise NodeExists(path)
        with self._write() as conn:
            row = self._row(conn, path)
            if expected_version is not None:
                actual = None if row is None else row[1]
                if (expected_version == -1 and row is not None) or (expected_version != -1 and actual != expected_version):
                    raise BadVersion(path, expected_version, actual)
            if row is None:
                self._insert_with_parents(conn, path, bytes(value))
                return 0
            conn.execute("UPDATE nodes SET value = ?, version = ? WHERE path = ?", (bytes(value), row[1] + 1, path))
            return row[1] + 1

    def delete(self, path: str, *, expected_version: int | None = None) -> None:
        check_path(path)
        with self._write() as conn:
            row = self._row(conn, path)
            if row is None:
                raise NoNode(path)
            if expected_version is not None and row[1] != expected_version:
                raise BadVersion(path, expected_version, row[1])
            if conn.execute("SELECT 1 FROM nodes WHERE parent = ? LIMIT 1", (path,)).fetchone():
                raise NotEmptyNode(path)
            conn.execute("DELETE FROM nodes WHERE path = ?", (path,))

    def children(self, path: str) -> list[str]:
        check_path(path)
        with self._lock:
            rows = self._conn.execute("SELECT path FROM nodes WHERE parent = ?", (path,)).fetchall()
        return sorted(row[0].rpartition("/")[2] for row in rows)

    def delete_recursive(self, path: str) -> None:
        check_path(path)
        prefix = "/" if path == "/" else path + "/"
        upper = prefix[:-1] + "0"
        with self._write() as conn:
            conn.execute("DELETE FROM nodes WHERE path >= ? AND path < ?", (prefix, upper))
            conn.execute("DELETE FROM nodes WHERE path = ?", (path,))

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _insert_with_parents(self, conn: sqlite3.Connection, path: str, value: bytes) -> None:
        for ancestor in ancestors(path):
            conn.execute(
                "INSERT OR IGNORE INTO nodes (path, parent, value, version) VALUES (?, ?, ?, 0)",
                (ancestor, parent_of(ancestor), b""),
            )
        conn.execute(
            "INSERT INTO nodes (path, parent, value, version) VALUES (?, ?, ?, 0)", (path, parent_of(path), value)
        )
