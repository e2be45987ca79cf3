"""In-memory metadata store: the default backend (``metadataStoreUrl=memory:``).

Owns nothing beyond the contract in ``store.py``; data lives as long as the process. A dict maps
each path to ``[value, version]`` and a second dict keeps each node's child names, so
``children`` does not scan the whole tree.
"""

from __future__ import annotations

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


class MemoryMetadataStore(MetadataStore):
    def __init__(self) -> None:
        self._nodes: dict[str, list] = {}  # path -> [value, version]
        self._children: dict[str, set[str]] = {"/": set()}

    def get(self, path: str) -> tuple[bytes, int] | None:
        node = self._nodes.get(check_path(path))
        return None if node is None else (node[0], node[1])

    def create(self, path: str, value: bytes = b"") -> int:
        check_path(path)
        if path == "/" or path in self._nodes:
            raise NodeExists(path)
        self._make_parents(path)
        self._add(path, bytes(value))
        return 0

    def put(self, path: str, value: bytes, *, expected_version: int | None = None) -> int:
        check_path(path)
        if path == "/":
            raise NodeExists(path)
        node = self._nodes.get(path)
        if expected_version is not None:
            actual = None if node is None else node[1]
            if (expected_version == -1 and node is not None) or (expected_version != -1 and actual != expected_version):
                raise BadVersion(path, expected_version, actual)
        if node is None:
            self._make_parents(path)
            self._add(path, bytes(value))
            return 0
        node[0], node[1] = bytes(value), node[1] + 1
        return node[1]

    def delete(self, path: str, *, expected_version: int | None = None) -> None:
        check_path(path)
        node = self._nodes.get(path)
        if node is None:
            raise NoNode(path)
        if expected_version is not None and node[1] != expected_version:
            raise BadVersion(path, expected_version, node[1])
        if self._children.get(path):
            raise NotEmptyNode(path)
        self._remove(path)

    def children(self, path: str) -> list[str]:
        return sorted(self._children.get(check_path(path), ()))

    def delete_recursive(self, path: str) -> None:
        check_path(path)
        if path != "/" and path not in self._nodes:
            return
        for child in list(self._children.get(path, ())):
            self.delete_recursive(f"{path.rstrip('/')}/{child}")
        if path != "/":
            self._remove(path)

    # --- internals ------------------------------------------------------------------------------

    def _make_parents(self, path: str) -> None:
        for ancestor in ancestors(path):
            if ancestor not in self._nodes:
                self._add(ancestor, b"")

    def _add(self, path: str, value: bytes) -> None:
        self._nodes[path] = [value, 0]
        self._children.setdefault(path, set())
        self._children[parent_of(path)].add(path.rpartition("/")[2])

    def _remove(self, path: str) -> None:
        del self._nodes[path]
        self._children.pop(path, None)
        self._children[parent_of(path)].discard(path.rpartition("/")[2])
