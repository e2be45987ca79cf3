"""Metadata driver: white-box reads of a target's metadata store (PIP-157 layout rows).

A target that exposes its store (``Target.metadata_store_url``, e.g. the reference-zk target's
``zk:127.0.0.1:PORT/chroot``) lets the harness check WHERE a topic's managed ledger lives, not
only what the APIs answer. The driver reads the znodes itself with kazoo; it shares no code with
the broker (conformance may not import reference_broker, tests/test_import_order.py).

``MetadataDriver.perform`` answers ``ReadTopicLayout(topic)``: it lists
``/managed-ledgers/{tenant}/{ns}/{domain}`` and, for each child that is a bucket folder (``$k``; a
topic child never starts with ``$`` because URL encoding turns it into ``%24``), that folder's
children; every child whose URL-decoded name (Pulsar's ``Codec.decode``, Pulsar's
TopicResources/NamespaceResources) is the topic's local name is reported, as its full path. The
answer is ``LedgerPaths`` with every path found, so a ledger stored twice, or in the wrong bucket,
or nowhere, shows as such. The bucket is never computed here: the model computes the expected
path (model/buckets.py), the driver only reads.

A target without an exposed store makes every such op ``Unsupported`` with the reason ``target
does not expose its metadata store`` (``NO_STORE``); a store that is not ZooKeeper is unsupported
too, naming its URL (``zk_hosts``).

Every call is bounded by ``timeout``; a connect or read that does not answer raises
``Indefinite``. A missing folder is an empty one (``children``: the namespace has no topic yet).
"""

from __future__ import annotations

import urllib.parse
from typing import Callable, Optional

from conformance.drivers.base import DEFAULT_TIMEOUT
from conformance.errors import Indefinite, Unsupported
from conformance.transcript import Transcript
from model import ops
from pulsar_naming.names import TopicName
from model.outcomes import LedgerPaths

NO_STORE = "target does not expose its metadata store"
MANAGED_LEDGERS_ROOT = "/managed-ledgers"
BUCKET_PREFIX = "$"


def zk_hosts(store_url: str) -> str:
    """``zk:HOST:PORT[,HOST:PORT][/chroot]`` (or ``zk://...``) -> kazoo's hosts string with chroot."""
    scheme, sep, rest = store_url.partition(":")
    if scheme != "zk" or not sep or not rest.strip("/"):
        raise Unsupported("no-metadata-store", f"metadata store {store_url!r} is not a ZooKeeper URL (zk:HOST:PORT[/chroot]); "
                          "the metadata driver reads ZooKeeper only")
    return rest[2:] if rest.startswith("//") else rest


class MetadataDriver:
    """Reads where a topic's managed ledger lives in a target's metadata store;
    ``client_factory(hosts, timeout)`` lets tests plug in a fake kazoo client."""

    name = "metadata"

    def __init__(self, store_url: Optional[str], *, timeout: float = DEFAULT_TIMEOUT,
                 client_factory: Optional[Callable] = None):
        self.store_url = store_url
        self.timeout = timeout
        self._factory = client_factory
        self._client = None
        self.transcript = Transcript("metadata")

    # -- driver protocol ---------------------------------------------------------------------

    def can_perform(self, op) -> bool:
        return isinstance(op, ops.ReadTopicLayout)

    def reset(self) -> None:
        self.transcript = Transcript("metadata")

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                client.stop()
                client.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass

    def perform(self, op):
        if not self.can_perform(op):
            raise Unsupported("no-driver", f"the metadata driver cannot perform {type(op).__name__}; it reads the store only")
        if self.store_url is None:
            raise Unsupported("no-metadata-store", NO_STORE)
        topic = TopicName.parse(op.topic)
        base = f"{MANAGED_LEDGERS_ROOT}/{topic.tenant}/{topic.namespace}/{topic.domain}"
        found = []
        for child in self.children(base):
            if child.startswith(BUCKET_PREFIX):  # a bucket: "$" in a topic name is URL-encoded
                folder = f"{base}/{child}"
                found += [f"{folder}/{name}" for name in self.children(folder)
                          if urllib.parse.unquote(name) == topic.local_name]
            elif urllib.parse.unquote(child) == topic.local_name:
                found.append(f"{base}/{child}")
        return LedgerPaths(tuple(found))

    # -- the store ---------------------------------------------------------------------------

    def _connect(self):
        if self._client is not None:
            return self._client
        hosts = zk_hosts(self.store_url)
        if self._factory is not None:
            client = self._factory(hosts, self.timeout)
        else:
            from kazoo.client import KazooClient

            client = KazooClient(hosts=hosts, timeout=self.timeout, read_only=True)
        self.transcript.note(f"connect {self.store_url}")
        try:
            client.start(timeout=self.timeout)
        except Exception as exc:  # kazoo raises KazooTimeoutError (a plain Exception subclass)
            try:
                client.close()
            except Exception:  # noqa: BLE001
                pass
            raise Indefinite(f"metadata store {self.store_url}: no connection within {self.timeout:g} s "
                             f"({exc!r})") from exc
        self._client = client
        return client

    def children(self, path: str) -> list[str]:
        """Sorted children of ``path``; [] when it does not exist (a namespace with no topic yet)."""
        from kazoo.exceptions import KazooException, NoNodeError
        from kazoo.handlers.threading import KazooTimeoutError

        client = self._connect()
        self.transcript.sent(f"getChildren {path}")
        try:
            names = sorted(client.get_children_async(path).get(timeout=self.timeout))
        except NoNodeError:
            self.transcript.received("NoNode")
            return []
        except (KazooException, KazooTimeoutError, OSError) as exc:
            self.transcript.note(f"failed: {exc!r}")
            self.close()
            raise Indefinite(f"metadata store {self.store_url}: getChildren {path} failed: {exc!r}") from exc
        self.transcript.received(", ".join(names) if names else "(no children)")
        return names
