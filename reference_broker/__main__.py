"""``reference-broker``: start one reference broker and report where it serves.

Start-up contract (what harnesses and tests rely on):
- exactly one line ``READY pulsar://127.0.0.1:P http://127.0.0.1:Q`` on stdout once both the
  binary and the HTTP listener accept connections; logs go to stderr;
- with TLS listeners (``brokerServicePortTls`` and ``webServicePortTls`` set), two more fields
  follow on the same line: ``READY pulsar://h:P http://h:Q pulsar+ssl://h:R https://h:S``;
- with ``--brokers N`` (N > 1, a PIP-35 cluster in one process sharing one metadata store), the
  same single line lists every broker, comma-separated, in start order:
  ``READY pulsar://h:P1,pulsar://h:P2,... http://h:Q1,http://h:Q2,...`` (no spaces, so the line
  still splits into three fields); ports are P, P+1, ... when given, ephemeral when 0;
- a bad argument, an unknown ``broker.conf`` key or a bad value: a one-line error on stderr naming
  the key and exit code 2, before anything listens;
- SIGTERM or SIGINT: a clean, bounded shutdown and exit code 0;
- with ``--restart-on-stdin``, a line ``RESTART ["--set", "KEY=VALUE", ...]`` on stdin (a JSON
  list of arguments) stops every listener, closes every connection and the metadata store, drops
  all broker state, and serves again as a process started with those arguments would (a new READY
  line, or the configuration error and exit code 2): a harness that restarts a broker for each
  non-dynamic configuration pays for the interpreter and its imports once. End of stdin is a
  shutdown, as SIGTERM is. Identifiers the process hands out (ledger ids, producer names,
  connection ids) keep counting across such restarts, as they never repeat within a process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys

from .config import ConfigError, build_config
from .errors import BrokerError
from .security import Security, tls_server_context

EXIT_CONFIG_ERROR = 2


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="reference-broker", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=None,
                        help="address to bind; the same as --set bindAddress=HOST (default: bindAddress, 127.0.0.1)")
    parser.add_argument("--broker-port", type=int, default=None,
                        help="binary protocol port; 0 = ephemeral (default: brokerServicePort)")
    parser.add_argument("--web-port", type=int, default=None,
                        help="admin HTTP port; 0 = ephemeral (default: webServicePort)")
    parser.add_argument("--conf-file", help="a Pulsar broker.conf (key=value lines, Pulsar's key names)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override one broker.conf key; repeatable")
    parser.add_argument("--metadata-store", default=None, metavar="URL",
                        help="memory: (default), sqlite:PATH or zk:HOST:PORT[/chroot] (a real ZooKeeper)")
    parser.add_argument("--brokers", type=int, default=1, metavar="N",
                        help="run a cluster of N brokers in this process, sharing one metadata store (default 1)")
    parser.add_argument("--log-level", default="WARNING")
    parser.add_argument("--restart-on-stdin", action="store_true",
                        help="serve again with the arguments of each RESTART line read on stdin (a JSON list)")
    return parser.parse_args(argv)


def checked(argv: list[str] | None):
    """The parsed arguments and the broker.conf they give, every key and listener checked before
    anything listens; raises ConfigError."""
    args = parse_args(argv)
    config = build_config(conf_file=args.conf_file, overrides=args.overrides)
    if args.host is not None:
        config.set("bindAddress", args.host)
    Security(config, tenant_admins=lambda tenant: None)  # the security keys, checked before anything listens
    for port_key in ("brokerServicePortTls", "webServicePortTls"):
        tls_server_context(config, port_key=port_key)
    if args.brokers < 1:
        raise ConfigError(f"Invalid --brokers {args.brokers}: expected a number of brokers >= 1")
    if args.metadata_store is not None and not args.metadata_store.startswith(("memory:", "sqlite:", "zk:")):
        raise ConfigError(f"Unsupported --metadata-store {args.metadata_store!r}: "
                          "use memory:, sqlite:PATH or zk:HOST:PORT[/chroot]")
    return args, config


class Restart(Exception):
    """A RESTART line asked for another configuration that does not hold (exit code 2)."""


async def serve(args: argparse.Namespace, config) -> None:
    """Serve until SIGTERM, SIGINT or the end of stdin; with ``--restart-on-stdin``, serve afresh
    with the arguments of every RESTART line in between."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    requests: asyncio.Queue = asyncio.Queue()
    reader_task = None
    if args.restart_on_stdin:
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        reader_task = asyncio.create_task(_read_restarts(reader, requests, stop))
    try:
        while (argv := await _serve_once(args, config, stop, requests)) is not None:
            try:
                args, config = checked(argv)
            except ConfigError as exc:
                raise Restart(str(exc)) from None
    finally:
        if reader_task is not None:
            reader_task.cancel()


async def _read_restarts(reader: asyncio.StreamReader, requests: asyncio.Queue, stop: asyncio.Event) -> None:
    while True:
        line = await reader.readline()
        if not line:
            stop.set()  # whoever restarts us is gone
            return
        verb, _, rest = line.decode("utf-8", errors="replace").strip().partition(" ")
        if verb != "RESTART":
            logging.getLogger("reference_broker").warning("ignored on stdin: %r", line[:200])
            continue
        try:
            argv = json.loads(rest)
            if not isinstance(argv, list) or not all(isinstance(arg, str) for arg in argv):
                raise ValueError("not a list of strings")
        except ValueError as exc:
            logging.getLogger("reference_broker").warning("ignored RESTART: %s: %r", exc, rest[:200])
            continue
        await requests.put(argv)


async def _serve_once(args: argparse.Namespace, config, stop: asyncio.Event, requests: asyncio.Queue):
    """One lifetime of the brokers: a fresh store and core, READY, until a stop (None) or a restart
    (its arguments)."""
    from .core import BrokerCore
    from .metadata import open_store
    from .server import BrokerServer

    from .cluster import SharedStore

    store = open_store(args.metadata_store or config.get("metadataStoreUrl") or "memory:")
    broker_port = args.broker_port if args.broker_port is not None else config.get("brokerServicePort")
    web_port = args.web_port if args.web_port is not None else config.get("webServicePort")
    servers = []
    try:
        for index in range(args.brokers):  # PIP-35: N brokers, one store (closed once, below), one config
            core = BrokerCore(config, SharedStore(store) if args.brokers > 1 else store)
            server = BrokerServer(core, host=args.host, broker_port=broker_port and broker_port + index,
                                  web_port=web_port and web_port + index)
            await server.start()
            servers.append(server)
        fields = [",".join(server.urls[i] for server in servers) for i in range(len(servers[0].urls))]
        print(f"READY {' '.join(fields)}", flush=True)
        stopped, restart = asyncio.create_task(stop.wait()), asyncio.create_task(requests.get())
        await asyncio.wait({stopped, restart}, return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if stop.is_set():
            restart.cancel()
            return None
        return restart.result()
    finally:
        for server in reversed(servers):
            await server.stop()
        store.close()


def main(argv: list[str] | None = None) -> int:
    try:
        args, config = checked(argv)
    except ConfigError as exc:
        print(f"reference-broker: configuration error: {exc}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(serve(args, config))
    except Restart as exc:
        print(f"reference-broker: configuration error: {exc}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    except (OSError, BrokerError) as exc:
        print(f"reference-broker: cannot start: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
