"""The broker's metadata store: one path-based interface (store.py), memory, sqlite and ZooKeeper
backends, and Pulsar's path layout (layout.py). ``open_store(url)`` picks the backend from
``metadataStoreUrl``: ``memory:``, ``sqlite:PATH`` or ``zk:HOST:PORT[,HOST:PORT...][/chroot]``."""

from __future__ import annotations

from reference_broker.metadata.store import MetadataStore, open_store

__all__ = ["MetadataStore", "open_store"]
