"""The metadata store interface: a tree of versioned byte values addressed by path, like ZooKeeper.

What this module owns: the contract every backend (memory, sqlite, later ZooKeeper via kazoo)
follows, the path rules, the store errors, and ``open_store(url)``.

- paths (``check_path``) are absolute, ``/``-separated, with no empty segment and no trailing
  ``/``; the root ``/`` always exists and holds no value. Segments are stored as given (the layout
  URL-encodes topic names, Pulsar's TopicResources/NamespaceResources).
- znode semantics. A node has a value (bytes, possibly empty) and a version: 0 when created, +1
  on every write. ``create`` fails if the node exists; ``put`` creates or overwrites; both create
  missing parents with an empty value (Pulsar's metadata store does this).
- ``delete`` removes one node and refuses if it has children; ``delete_recursive`` removes a
  whole subtree. ``expected_version`` (when given) must equal the current version.
- ``children`` returns the child *names* sorted, and ``[]`` for an absent node (Pulsar's
  ``getChildren`` answers an empty list there).
- calls are synchronous. The broker runs them inside the event loop between awaits, so a
  read-check-write sequence in one core call is atomic with respect to other requests.
"""

from __future__ import annotations

import abc

from reference_broker.errors import ConfigError, MetadataStoreError


class NoNode(MetadataStoreError):
    def __init__(self, path: str) -> None:
        super().__init__(f"Node does not exist: {path}")
        self.path = path


class NodeExists(MetadataStoreError):
    def __init__(self, path: str) -> None:
        super().__init__(f"Node already exists: {path}")
        self.path = path


class BadVersion(MetadataStoreError):
    def __init__(self, path: str, expected: int, actual: int | None) -> None:
        super().__init__(f"Version mismatch for {path}: expected {expected}, found {actual}")
        self.path = path


class NotEmptyNode(MetadataStoreError):
    def __init__(self, path: str) -> None:
        super().__init__(f"Node has children: {path}; delete them first or use delete_recursive")
        self.path = path


def check_path(path: str) -> str:
    """Validate a store path (absolute, no empty segment, no trailing ``/``); returns it unchanged."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise MetadataStoreError(f"Invalid metadata path {path!r}: must start with '/'")
    if path != "/" and (path.endswith("/") or "//" in path):
        raise MetadataStoreError(f"Invalid metadata path {path!r}: empty segment or trailing '/'")
    return path


def parent_of(path: str) -> str:
    head, _, _ = path.rpartition("/")
    return head or "/"


def ancestors(path: str) -> list[str]:
    """Proper ancestors of ``path`` from the top down, excluding ``/``."""
    parts = path.strip("/").split("/")
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


class MetadataStore(abc.ABC):
    """Path-based, versioned key/value tree (ZooKeeper-like). See the module rules."""

    @abc.abstractmethod
    def get(self, path: str) -> tuple[bytes, int] | None:
        """The node's ``(value, version)``, or None if it does not exist."""

    @abc.abstractmethod
    def create(self, path: str, value: bytes = b"") -> int:
        """Create a node (and missing parents); raises NodeExists. Returns the version (0)."""

    @abc.abstractmethod
    def put(self, path: str, value: bytes, *, expected_version: int | None = None) -> int:
        """Create or overwrite; returns the new version. BadVersion if expected_version mismatches
        (``expected_version=-1`` means "must not exist")."""

    @abc.abstractmethod
    def delete(self, path: str, *, expected_version: int | None = None) -> None:
        """Delete one childless node; raises NoNode, NotEmptyNode or BadVersion."""

    @abc.abstractmethod
    def children(self, path: str) -> list[str]:
        """Sorted child names; [] when the node is absent."""

    @abc.abstractmethod
    def delete_recursive(self, path: str) -> None:
        """Delete the node and its whole subtree; no error when absent."""

    def exists(self, path: str) -> bool:
        return self.get(path) is not None

    def close(self) -> None:
        """Release resources; the default has none."""


def open_store(url: str) -> MetadataStore:
    """Open a store from a ``metadataStoreUrl``: ``memory:`` or ``sqlite:PATH``."""
    scheme, sep, rest = url.partition(":")
    if sep and scheme == "memory":
        from reference_broker.metadata.memory import MemoryMetadataStore

        return MemoryMetadataStore()
    if sep and scheme == "sqlite":
        if rest.startswith("//"):
            rest = rest[2:]  # accept sqlite://PATH as well as sqlite:PATH
        if not rest:
            raise ConfigError(f"Invalid metadataStoreUrl {url!r}: expected sqlite:PATH")
        from reference_broker.metadata.sqlite import SqliteMetadataStore

        return SqliteMetadataStore(rest)
    if sep and scheme == "zk":
        # A real ZooKeeper, connected with a bounded wait (metadata/zookeeper.py).
        from reference_broker.metadata.zookeeper import ZooKeeperMetadataStore

        return ZooKeeperMetadataStore(url)
    raise ConfigError(
        f"Unsupported metadataStoreUrl {url!r}: expected memory:, sqlite:PATH or zk:HOST:PORT[/chroot]"
    )
