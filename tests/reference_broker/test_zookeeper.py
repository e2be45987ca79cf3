"""reference_broker.metadata.zookeeper against a REAL ZooKeeper: the store contract (the same tests as memory
and sqlite), agreement with the memory store, URLs and bounded connects, and the getChildren reply size
checked against the real Java client's jute.maxbuffer check (ZooKeeper's ClientCnxnSocket.readLength)."""

from __future__ import annotations

import socket
import subprocess
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings

from reference_broker.errors import ConfigError, MetadataStoreError
from reference_broker.metadata import open_store
from reference_broker.metadata.memory import MemoryMetadataStore
from reference_broker.metadata.zookeeper import (
    JUTE_MAXBUFFER_DEFAULT,
    ZooKeeperMetadataStore,
    get_children_reply_bytes,
    parse_zk_url,
)

from .test_metadata import _apply, _dump, _ops
# The store contract tests, collected again here with this module's ``store`` fixture (a ZooKeeper store).
from .test_metadata import (  # noqa: F401
    test_absent_node,
    test_children_are_sorted_names,
    test_create_then_get,
    test_delete,
    test_delete_recursive_removes_exactly_the_subtree,
    test_invalid_paths,
    test_put_creates_then_bumps_version,
)
from .zookeeper_server import ZooKeeperServer, find_classpath, zookeeper_server  # noqa: F401

pytestmark = pytest.mark.slow


@pytest.fixture
def store(zookeeper_server):  # noqa: F811
    made = open_store(zookeeper_server.unique_url())
    yield made
    made.close()


def test_open_store_gives_a_zookeeper_store_under_a_fresh_chroot(zookeeper_server):  # noqa: F811
    url = zookeeper_server.unique_url()
    chroot = url.rpartition(":")[2].partition("/")[2]
    first = open_store(url)
    try:
        assert isinstance(first, ZooKeeperMetadataStore)
        assert first.children("/") == []  # the chroot was created, empty
        first.put("/admin/policies/public", b"{}")
        whole = open_store(zookeeper_server.url())  # no chroot: sees the chroot as a node
        try:
            assert whole.get(f"/{chroot}/admin/policies/public") == (b"{}", 0)
        finally:
            whole.close()
    finally:
        first.close()


def test_reopening_the_same_chroot_keeps_data(zookeeper_server):  # noqa: F811
    url = zookeeper_server.unique_url()
    first = open_store(url)
    first.put("/admin/policies/public", b"{}")
    first.put("/admin/policies/public", b'{"x":1}')
    first.close()
    second = open_store(url)
    try:
        assert second.get("/admin/policies/public") == (b'{"x":1}', 1)
        assert second.children("/admin/policies") == ["public"]
    finally:
        second.close()


def test_root_without_chroot_hides_and_keeps_the_zookeeper_node():
    """The store's root on a bare server (``ZooKeeperMetadataStore``): the root's children are only ours; ``/zookeeper`` survives."""
    with ZooKeeperServer() as server:
        bare = open_store(server.url())
        try:
            assert bare.children("/") == []
            bare.put("/a/b", b"v")
            assert bare.children("/") == ["a"]
            bare.delete_recursive("/")
            assert bare.children("/") == []
            assert bare.get("/") is None
            assert bare._client.exists("/zookeeper") is not None
        finally:
            bare.close()


@pytest.mark.parametrize("url,hosts,chroot", [
    ("zk:127.0.0.1:2181", "127.0.0.1:2181", ""),
    ("zk://127.0.0.1:2181", "127.0.0.1:2181", ""),
    ("zk:a:1,b:2/pulsar/x", "a:1,b:2", "/pulsar/x"),
    ("zk:localhost:2181/", "localhost:2181", ""),
])
def test_parse_zk_url(url, hosts, chroot):
    assert parse_zk_url(url) == (hosts, chroot)


@pytest.mark.parametrize("url", ["zk:", "zk:host", "zk:host:port", "zk:/chroot", "zk:h:1/a//b"])
def test_bad_zk_urls_are_config_errors(url):
    with pytest.raises(ConfigError, match="metadataStoreUrl"):
        open_store(url)


def test_unreachable_zookeeper_fails_fast_naming_the_address():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(MetadataStoreError, match=f"Cannot connect to ZooKeeper at 127.0.0.1:{port}"):
        open_store(f"zk:127.0.0.1:{port}")
    assert time.monotonic() - started < 30  # bounded; generous for a loaded machine


def test_connect_is_bounded_when_the_peer_never_speaks_zookeeper():
    """A socket that accepts but never answers the handshake: the connect gives up after its timeout."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    address = f"127.0.0.1:{listener.getsockname()[1]}"
    started = time.monotonic()
    try:
        with pytest.raises(MetadataStoreError, match=f"Cannot connect to ZooKeeper at {address} within 1 s"):
            ZooKeeperMetadataStore(f"zk:{address}", connect_timeout=1.0)
        assert time.monotonic() - started < 30  # bounded; generous for a loaded machine
    finally:
        stop.set()
        thread.join(5)
        for conn in accepted:
            conn.close()
        listener.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_ops)
def test_zookeeper_agrees_with_memory(zookeeper_server, ops):  # noqa: F811
    memory = MemoryMetadataStore()
    zk = open_store(zookeeper_server.unique_url())
    try:
        for op, path, value in ops:
            assert _apply(memory, op, path, value) == _apply(zk, op, path, value), (op, path)
        assert _dump(memory) == _dump(zk)
    finally:
        zk.close()


def test_create_many_in_transactions(store):
    paths = [f"/ml/t/ns/persistent/$ {i % 3}/topic-{i}".replace(" ", "") for i in range(2500)]
    assert store.create_many(paths, b"{}", batch=200, window=4) == 2500
    assert sorted(store.children("/ml/t/ns/persistent")) == ["$0", "$1", "$2"]
    assert len(store.children("/ml/t/ns/persistent/$1")) == 833
    assert store.get("/ml/t/ns/persistent/$0/topic-0") == (b"{}", 0)
    with pytest.raises(MetadataStoreError, match="already exists"):
        store.create_many(["/ml/t/ns/persistent/$0/new", "/ml/t/ns/persistent/$0/topic-0"])
    assert store.get("/ml/t/ns/persistent/$0/new") is None  # the whole transaction rolled back


# --- the reply size, checked against the real Java client (ZooKeeper's ClientCnxnSocket.readLength) -------------------------------


def test_reply_size_formula():
    assert get_children_reply_bytes([]) == 16 + 4
    assert get_children_reply_bytes(["ab", "ü"]) == 16 + 4 + (4 + 2) + (4 + 2)
    assert get_children_reply_bytes(["ab"], with_stat=True) == 16 + 4 + 6 + 68
    assert JUTE_MAXBUFFER_DEFAULT == 1_048_575


def _java_ls(server, chroot: str, path: str, maxbuffer: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["java", "-cp", find_classpath(), f"-Djute.maxbuffer={maxbuffer}",
         "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
         "org.apache.zookeeper.ZooKeeperMain", "-server", f"{server.address}{chroot}", "ls", path],
        capture_output=True, text=True, timeout=60)


def test_reply_size_is_what_the_java_client_checks(zookeeper_server):  # noqa: F811
    """The Java client's ``ls`` (getChildren2) is refused with "Packet len N is out of range!" exactly when
    N > jute.maxbuffer, and N is our formula with the Stat: the bench's figures are the real ones."""
    url = zookeeper_server.unique_url()
    chroot = "/" + url.rpartition("/")[2]
    zk = open_store(url)
    try:
        names = [f"topic-{i}" for i in range(200)] + ["ünïcødé", "a%2Fb"]
        zk.create_many([f"/p/{name}" for name in names])
        listed = zk.children("/p")
        assert sorted(listed) == sorted(names) and get_children_reply_bytes(listed) == get_children_reply_bytes(names)
        expected = get_children_reply_bytes(listed, with_stat=True)
        refused = _java_ls(zookeeper_server, chroot, "/p", expected - 1)
        assert f"Packet len {expected} is out of range!" in refused.stderr, refused.stderr[-2000:]
        accepted = _java_ls(zookeeper_server, chroot, "/p", expected)
        assert "out of range" not in accepted.stderr and "topic-199" in accepted.stdout, accepted.stderr[-2000:]
    finally:
        zk.close()
