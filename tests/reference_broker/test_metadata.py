"""reference_broker.metadata: both store backends pass the same contract tests; layout paths follow Pulsar's TopicResources/NamespaceResources."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_naming.names import NamespaceName, TopicName
from reference_broker.errors import ConfigError, MetadataStoreError
from reference_broker.metadata import layout, open_store
from reference_broker.metadata.memory import MemoryMetadataStore
from reference_broker.metadata.sqlite import SqliteMetadataStore
from reference_broker.metadata.store import BadVersion, NodeExists, NoNode, NotEmptyNode


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    if request.param == "memory":
        made = MemoryMetadataStore()
    else:
        made = SqliteMetadataStore(str(tmp_path / "meta.db"))
    yield made
    made.close()


# --- the contract (store.py rules) ---------------------------------------------------------------


def test_absent_node(store):
    assert store.get("/a") is None
    assert not store.exists("/a")
    assert store.children("/a") == []


def test_create_then_get(store):
    assert store.create("/a/b/c", b"v") == 0
    assert store.get("/a/b/c") == (b"v", 0)
    assert store.get("/a/b") == (b"", 0)  # parents created, empty
    with pytest.raises(NodeExists):
        store.create("/a/b/c", b"w")
    with pytest.raises(NodeExists):
        store.create("/", b"")


def test_put_creates_then_bumps_version(store):
    assert store.put("/x/y", b"1") == 0
    assert store.put("/x/y", b"2") == 1
    assert store.get("/x/y") == (b"2", 1)
    assert store.put("/x/y", b"3", expected_version=1) == 2
    with pytest.raises(BadVersion):
        store.put("/x/y", b"4", expected_version=1)
    with pytest.raises(BadVersion):
        store.put("/x/y", b"4", expected_version=-1)  # -1: must not exist
    assert store.put("/x/z", b"new", expected_version=-1) == 0
    with pytest.raises(BadVersion):
        store.put("/x/w", b"new", expected_version=0)  # absent node has no version 0
    assert store.get("/x/y") == (b"3", 2)


def test_children_are_sorted_names(store):
    for name in ["b", "a", "c%20d", "a-partition-1", "a-partition-0"]:
        store.put(f"/p/{name}", b"")
    store.put("/p/a/deeper", b"")
    assert store.children("/p") == ["a", "a-partition-0", "a-partition-1", "b", "c%20d"]
    assert store.children("/") == ["p"]


def test_delete(store):
    store.put("/d/e", b"")
    with pytest.raises(NotEmptyNode):
        store.delete("/d")
    with pytest.raises(BadVersion):
        store.delete("/d/e", expected_version=3)
    store.delete("/d/e", expected_version=0)
    assert store.children("/d") == []
    store.delete("/d")
    assert store.children("/") == []
    with pytest.raises(NoNode):
        store.delete("/d")


def test_delete_recursive_removes_exactly_the_subtree(store):
    for path in ["/r/t", "/r/t/a", "/r/t/a/b", "/r/t%41", "/r/t0", "/r/t-x", "/r/tt"]:
        store.put(path, b"v")
    store.delete_recursive("/r/t")
    assert store.children("/r") == ["t%41", "t-x", "t0", "tt"]
    assert store.get("/r/t/a/b") is None
    store.delete_recursive("/r/absent")  # no error
    store.delete_recursive("/")
    assert store.children("/") == []


@pytest.mark.parametrize("path", ["", "a", "/a/", "/a//b", None])
def test_invalid_paths(store, path):
    with pytest.raises(MetadataStoreError, match="Invalid metadata path"):
        store.put(path, b"")


def test_sqlite_reopen_keeps_data(tmp_path):
    filename = str(tmp_path / "meta.db")
    first = SqliteMetadataStore(filename)
    first.put("/admin/policies/public", b"{}")
    first.put("/admin/policies/public", b'{"x":1}')
    first.close()
    second = open_store(f"sqlite:{filename}")
    assert second.get("/admin/policies/public") == (b'{"x":1}', 1)
    assert second.children("/admin/policies") == ["public"]
    second.close()


def test_open_store_urls(tmp_path):
    assert isinstance(open_store("memory:"), MemoryMetadataStore)
    assert isinstance(open_store("memory:local"), MemoryMetadataStore)
    assert isinstance(open_store(f"sqlite:{tmp_path / 'a.db'}"), SqliteMetadataStore)
    assert isinstance(open_store(f"sqlite://{tmp_path / 'b.db'}"), SqliteMetadataStore)
    for bad in ["sqlite:", "memory", "rocksdb://x"]:
        with pytest.raises(ConfigError, match="metadataStoreUrl"):
            open_store(bad)


def test_sqlite_unopenable_file(tmp_path):
    with pytest.raises(MetadataStoreError, match="Cannot open sqlite metadata store"):
        SqliteMetadataStore(str(tmp_path / "no-such-dir" / "x.db"))


# --- both backends agree on any sequence of operations -------------------------------------------

_paths = st.lists(st.sampled_from(["a", "b", "a%2F", "c-partition-0"]), min_size=1, max_size=3).map(
    lambda parts: "/" + "/".join(parts)
)
_ops = st.lists(
    st.tuples(st.sampled_from(["create", "put", "delete", "delete_recursive"]), _paths, st.binary(max_size=3)),
    max_size=25,
)


def _apply(store, op, path, value):
    try:
        if op == "create":
            return store.create(path, value)
        if op == "put":
            return store.put(path, value)
        if op == "delete":
            return store.delete(path)
        return store.delete_recursive(path)
    except MetadataStoreError as exc:
        return type(exc).__name__


def _dump(store, path="/"):
    out = {path: store.get(path) if path != "/" else None}
    for child in store.children(path):
        out.update(_dump(store, f"{path.rstrip('/')}/{child}"))
    return out


@settings(max_examples=60, deadline=None)
@given(_ops)
def test_backends_agree(tmp_path_factory, ops):
    memory = MemoryMetadataStore()
    sqlite = SqliteMetadataStore(str(tmp_path_factory.mktemp("agree") / "m.db"))
    try:
        for op, path, value in ops:
            assert _apply(memory, op, path, value) == _apply(sqlite, op, path, value), (op, path)
        assert _dump(memory) == _dump(sqlite)
    finally:
        sqlite.close()


# --- layout (Pulsar's TopicResources/NamespaceResources) -------------------------------------------------------------------------


def test_layout_paths():
    ns = NamespaceName("public", "default")
    topic = TopicName.parse("persistent://public/default/my topic")
    assert layout.cluster_path("standalone") == "/admin/clusters/standalone"
    assert layout.tenant_path("public") == "/admin/policies/public"
    assert layout.namespace_path(ns) == "/admin/policies/public/default"
    assert layout.partitioned_topic_path(topic) == "/admin/partitioned-topics/public/default/persistent/my%20topic"
    assert layout.partitioned_topic_path(TopicName.parse("non-persistent://public/default/np")) == (
        "/admin/partitioned-topics/public/default/non-persistent/np"
    )
    assert layout.managed_ledger_path(topic.partition(2)) == (
        "/managed-ledgers/public/default/persistent/my%20topic-partition-2"
    )
    assert layout.managed_ledgers_dir(ns) == "/managed-ledgers/public/default/persistent"


def test_non_persistent_topics_have_no_managed_ledger():
    with pytest.raises(ValueError, match="non-persistent"):
        layout.managed_ledger_path(TopicName.parse("non-persistent://public/default/np"))


def test_listed_children_decode_back_to_topic_names():
    ns = NamespaceName("public", "default")
    topic = layout.topic_from_child(ns, "persistent", "my%20topic-partition-0")
    assert str(topic) == "persistent://public/default/my topic-partition-0"
    assert topic.partition_index == 0


def test_json_codec():
    assert layout.decode_json(layout.encode_json({"partitions": 3})) == {"partitions": 3}
    assert layout.encode_json({"b": 1, "a": 2}) == b'{"a":2,"b":1}'
    assert layout.decode_json(b"") == {}
