"""ZooKeeper metadata store (``metadataStoreUrl=zk:HOST:PORT[,HOST:PORT...][/chroot]``) via kazoo.

What this module owns: the mapping of the contract in ``store.py`` onto real znodes, the URL form,
a bounded connect, and the size of a ``getChildren`` reply on the wire (for the PIP-157 bench).

- one store path is one znode, value and version included (``Stat.version`` is the store's
  version: 0 at creation, +1 per write, exactly the store contract). ``create``/``put`` make
  missing parents with an empty value; ``delete`` checks the version before the children, as
  ZooKeeper itself does (NoNode, then BadVersion, then NotEmpty, same as memory/sqlite).
- the root: the store's root ``/`` is the chroot (created on connect when missing). Without a
  chroot ZooKeeper's own ``/zookeeper`` node is hidden from ``children("/")`` and never deleted,
  so the root behaves like the other backends' empty root.
- bounded calls: connect by ``connect_timeout`` (a clear error naming the address), every request
  by ``request_timeout``. A lost connection or timeout becomes ``MetadataStoreError`` naming the
  address; nothing is retried behind the caller's back, so a ``create`` is never replayed into a
  spurious NodeExists.
- sessions (``on_new_session``): a session that ZooKeeper expired takes this store's ephemeral
  nodes with it; kazoo then opens a new session by itself. ``on_new_session(callback)`` calls
  ``callback()`` each time that happens (on kazoo's thread, which must not wait on ZooKeeper:
  hand the work off), so the owner of an ephemeral node can create it again (``ClusterNode``
  registers again).
- reply size: kazoo reads a reply of any length (it has no ``jute.maxbuffer`` check), so a
  listing a Java client would refuse (ZooKeeper's ClientCnxnSocket.readLength "Packet len<N> is
  out of range!") still works here. ``get_children_reply_bytes`` computes what that Java client
  would measure (bench/bucketing.py reports it per folder).
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import Iterable

from reference_broker.errors import ConfigError, MetadataStoreError
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

try:  # kazoo is a declared dependency; the message below is for a broken install only
    from kazoo.client import KazooClient, KazooState
    from kazoo.exceptions import (
        BadVersionError,
        KazooException,
        NodeExistsError,
        NoNodeError,
        NotEmptyError,
    )
    from kazoo.retry import KazooRetry
except ImportError:  # pragma: no cover
    KazooClient = None  # type: ignore[assignment,misc]

log = logging.getLogger("reference_broker.metadata.zookeeper")

DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_REQUEST_TIMEOUT = 30.0
ZK_SYSTEM_NODE = "zookeeper"

# ZooKeeper's default jute.maxbuffer, server and (since 3.6.0) client: 0xfffff (ZooKeeper's ClientCnxnSocket.readLength).
JUTE_MAXBUFFER_DEFAULT = 0xFFFFF
_REPLY_HEADER_BYTES = 16  # ReplyHeader: int xid, long zxid, int err
_STAT_BYTES = 68  # Stat: 6 longs + 5 ints, sent by getChildren2 (Pulsar's ZKMetadataStore uses it)


def get_children_reply_bytes(names: Iterable[str], *, with_stat: bool = False) -> int:
    """The ``len`` a Java ZooKeeper client reads for a getChildren reply and checks against
    ``jute.maxbuffer`` (ZooKeeper's ClientCnxnSocket.readLength): ReplyHeader + vector<ustring> (+ Stat for getChildren2).
    The 4-byte length prefix itself is not counted, as in ``ClientCnxnSocket.readLength``."""
    body = 4 + sum(4 + len(name.encode("utf-8")) for name in names)
    return _REPLY_HEADER_BYTES + body + (_STAT_BYTES if with_stat else 0)


def parse_zk_url(url: str) -> tuple[str, str]:
    """``zk:HOSTS[/chroot]`` (or ``zk://...``) -> (hosts, chroot); chroot "" when none."""
    scheme, sep, rest = url.partition(":")
    if scheme != "zk" or not sep:
        raise ConfigError(f"Invalid metadataStoreUrl {url!r}: expected zk:HOST:PORT[/chroot]")
    if rest.startswith("//"):
        rest = rest[2:]
    hosts, slash, chroot = rest.partition("/")
    chroot = f"/{chroot}".rstrip("/") if slash else ""
    if not hosts or any(not part.rpartition(":")[0] or not part.rpartition(":")[2].isdigit()
                        for part in hosts.split(",")):
        raise ConfigError(f"Invalid metadataStoreUrl {url!r}: expected zk:HOST:PORT[,HOST:PORT...][/chroot]")
    if chroot and "//" in chroot:
        raise ConfigError(f"Invalid metadataStoreUrl {url!r}: the chroot {chroot!r} has an empty segment")
    return hosts, chroot


class ZooKeeperUnavailable(MetadataStoreError, ConfigError):
    """No ZooKeeper answered at the configured address: the broker cannot start on this
    ``metadataStoreUrl``. A store failure and a configuration problem at once."""

    http_status = 500


def _probe(hosts: str, timeout: float) -> str | None:
    """A TCP connect to each host in turn: None when one accepts, else the last error text."""
    error = "no host"
    for part in hosts.split(","):
        host, _, port = part.rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
                return None
        except OSError as exc:
            error = f"{part}: {exc.strerror or exc}"
    return error


class ZooKeeperMetadataStore(MetadataStore):
    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    ) -> None:
        if KazooClient is None:  # pragma: no cover
            raise ConfigError(f"metadataStoreUrl {url!r} needs the kazoo package (pip install kazoo)")
        self.url = url
        self.hosts, self.chroot = parse_zk_url(url)
        self.request_timeout = request_timeout
        self._lock = threading.Lock()
        unreachable = _probe(self.hosts, min(connect_timeout, 5.0))
        if unreachable is not None:
            raise ZooKeeperUnavailable(
                f"Cannot connect to ZooKeeper at {self.hosts} (metadataStoreUrl {url!r}): {unreachable}"
            )
        self._client = KazooClient(
            hosts=self.hosts,
            timeout=max(connect_timeout, 4.0),  # session timeout; ZooKeeper's minimum is 2 ticks
            connection_retry=KazooRetry(max_tries=-1, max_delay=1.0),
        )
        try:
            self._client.start(timeout=connect_timeout)
        except Exception as exc:  # kazoo's timeout class depends on the handler
            raise ZooKeeperUnavailable(
                f"Cannot connect to ZooKeeper at {self.hosts} within {connect_timeout:g} s "
                f"(metadataStoreUrl {url!r}): {exc}"
            ) from None
        if self.chroot:
            self._wait("ensure the chroot", self.chroot, self._client.ensure_path_async(self.chroot))
            self._client.chroot = self.chroot  # from now on every path is under the chroot (the store's root)
        self._session_callbacks: list = []
        self._session_lost = False
        self._client.add_listener(self._state_changed)

    # --- sessions (on_new_session) ------------------------------------------------------------------------

    def on_new_session(self, callback) -> None:
        self._session_callbacks.append(callback)

    def _state_changed(self, state) -> None:
        if state == KazooState.LOST:
            self._session_lost = True
        elif state == KazooState.CONNECTED and self._session_lost:
            self._session_lost = False
            for callback in list(self._session_callbacks):
                try:
                    callback()
                except Exception:  # noqa: BLE001 - one listener's failure must not stop kazoo's thread
                    log.exception("new-session callback failed")

    # --- plumbing (every call bounded) ------------------------------------------------------------------------

    def _fail(self, what: str, path: str, exc: BaseException) -> MetadataStoreError:
        return MetadataStoreError(f"ZooKeeper at {self.hosts}: {what} {path!r} failed: {type(exc).__name__} {exc}")

    def _wait(self, what: str, path: str, async_result):
        try:
            return async_result.get(timeout=self.request_timeout)
        except (NoNodeError, NodeExistsError, BadVersionError, NotEmptyError):
            raise
        except KazooException as exc:
            raise self._fail(what, path, exc) from None
        except Exception as exc:  # the handler's timeout exception
            raise self._fail(what, path, exc) from None

    # --- the contract ---------------------------------------------------------------------------

    def get(self, path: str) -> tuple[bytes, int] | None:
        check_path(path)
        if path == "/":
            return None  # the root holds no value (check_path)
        try:
            value, stat = self._wait("get", path, self._client.get_async(path))
        except NoNodeError:
            return None
        return bytes(value or b""), stat.version

    def create(self, path: str, value: bytes = b"") -> int:
        check_path(path)
        if path == "/":
            raise NodeExists(path)
        try:
            self._wait("create", path, self._client.create_async(path, bytes(value), makepath=True))
        except NodeExistsError:
            raise NodeExists(path) from None
        return 0

    def create_ephemeral(self, path: str, value: bytes = b"") -> int:
        """Create an EPHEMERAL znode (parents persistent): ZooKeeper deletes it when this store's
        session ends. Used for broker registration (reference_broker/cluster.py, PIP-35)."""
        check_path(path)
        try:
            self._wait("create", path, self._client.create_async(path, bytes(value), ephemeral=True, makepath=True))
        except NodeExistsError:
            raise NodeExists(path) from None
        return 0

    def put(self, path: str, value: bytes, *, expected_version: int | None = None) -> int:
        check_path(path)
        if path == "/":
            raise NodeExists(path)
        value = bytes(value)
        if expected_version == -1:
            try:
                return self.create(path, value)
            except NodeExists:
                found = self.get(path)
                raise BadVersion(path, -1, None if found is None else found[1]) from None
        if expected_version is not None:
            try:
                stat = self._wait("set", path, self._client.set_async(path, value, expected_version))
            except NoNodeError:
                raise BadVersion(path, expected_version, None) from None
            except BadVersionError:
                found = self.get(path)
                raise BadVersion(path, expected_version, None if found is None else found[1]) from None
            return stat.version
        while True:  # create or overwrite; a concurrent create/delete just sends us round again
            try:
                return self._wait("set", path, self._client.set_async(path, value, -1)).version
            except NoNodeError:
                pass
            try:
                return self.create(path, value)
            except NodeExists:
                continue

    def delete(self, path: str, *, expected_version: int | None = None) -> None:
        check_path(path)
        if path == "/":
            raise NoNode(path)
        version = -1 if expected_version is None else expected_version
        try:
            self._wait("delete", path, self._client.delete_async(path, version))
        except NoNodeError:
            raise NoNode(path) from None
        except BadVersionError:
            found = self.get(path)
            raise BadVersion(path, version, None if found is None else found[1]) from None
        except NotEmptyError:
            raise NotEmptyNode(path) from None

    def children(self, path: str) -> list[str]:
        check_path(path)
        try:
            names = self._wait("getChildren", path, self._client.get_children_async(path))
        except NoNodeError:
            names = []
        if path == "/" and not self.chroot:
            names = [name for name in names if name != ZK_SYSTEM_NODE]  # /zookeeper is not ours
        return sorted(names)

    def delete_recursive(self, path: str) -> None:
        check_path(path)
        for _ in range(10):  # a node created concurrently below us makes a delete fail: go again
            try:
                self._delete_tree(path)
                return
            except NotEmptyError:
                continue
        raise MetadataStoreError(f"ZooKeeper at {self.hosts}: {path!r} keeps getting new children; not deleted")

    def _delete_tree(self, path: str, batch: int = 500) -> None:
        """Children are deleted optimistically as leaves, ``batch`` per multi-op transaction (one
        request, not one per node); a batch refused because some child has children of its own is
        redone child by child, descending only where needed."""
        prefix = path.rstrip("/")
        children = [f"{prefix}/{child}" for child in self.children(path)]
        batches = [children[i:i + batch] for i in range(0, len(children), batch)]
        pending = []
        for chunk in batches:
            transaction = self._client.transaction()
            for child in chunk:
                transaction.delete(child)
            pending.append((chunk, transaction.commit_async()))
        for chunk, result in pending:
            outcomes = self._wait("multi delete", chunk[0], result)
            if not any(isinstance(outcome, Exception) for outcome in outcomes):
                continue
            for child in chunk:  # rolled back as a whole: redo this batch one node at a time
                try:
                    self._wait("delete", child, self._client.delete_async(child, -1))
                except NoNodeError:
                    pass
                except NotEmptyError:
                    self._delete_tree(child, batch)
        if path == "/":
            return
        try:
            self._wait("delete", path, self._client.delete_async(path, -1))
        except NoNodeError:
            pass

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            try:
                client.stop()
            finally:
                client.close()

    # --- bulk writes, for benchmarks and fixtures -------------------------------------------------

    def create_many(self, paths: Iterable[str], value: bytes = b"", *, batch: int = 500, window: int = 32) -> int:
        """Create many nodes fast: ZooKeeper multi-op transactions of ``batch`` creates, ``window`` of
        them in flight. Parents are made first (one ``ensure_path`` per distinct parent). An existing
        node fails its whole transaction with NodeExists and nothing of that batch is created.
        Returns the number of nodes created."""
        paths = [check_path(p) for p in paths]
        for parent in sorted({parent_of(p) for p in paths} - {"/"}):
            if not self._wait("exists", parent, self._client.exists_async(parent)):
                for ancestor in [*ancestors(parent), parent]:
                    try:
                        self._wait("create", ancestor, self._client.create_async(ancestor, b""))
                    except NodeExistsError:
                        pass
        pending: list[tuple[list[str], object]] = []
        created = 0

        def settle(item) -> int:
            chunk, result = item
            outcomes = self._wait("multi create", chunk[0], result)
            for chunk_path, outcome in zip(chunk, outcomes):
                if isinstance(outcome, NodeExistsError):
                    raise NodeExists(chunk_path)
                if isinstance(outcome, Exception) and not type(outcome).__name__ == "RolledBackError":
                    raise self._fail("multi create", chunk_path, outcome)
            return len(chunk)

        for start in range(0, len(paths), batch):
            chunk = paths[start:start + batch]
            transaction = self._client.transaction()
            for chunk_path in chunk:
                transaction.create(chunk_path, bytes(value))
            pending.append((chunk, transaction.commit_async()))
            if len(pending) >= window:
                created += settle(pending.pop(0))
        while pending:
            created += settle(pending.pop(0))
        return created
