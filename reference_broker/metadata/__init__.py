"""The broker's metadata store: one path-based interface (store.py), memory and sqlite backends, and
Pulsar's path layout (layout.py). ``open_store(url)`` picks the backend from ``metadataStoreUrl``."""

from reference_broker.metadata.store import MetadataStore, open_store

__all__ = ["MetadataStore", "open_store"]
