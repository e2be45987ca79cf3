"""``reference-broker``: start one reference broker and report where it serves.

Start-up contract (what harnesses and tests rely on):
- exactly one line ``READY pulsar://127.0.0.1:P http://127.0.0.1:Q`` on stdout once both the
  binary and the HTTP listener accept connections; logs go to stderr;
- with ``--brokers N`` (N > 1, a PIP-35 cluster in one process sharing one metadata store), the
  same single line lists every broker, comma-separated, in start order:
  ``READY pulsar://h:P1,pulsar://h:P2,... http://h:Q1,http://h:Q2,...`` (no spaces, so the line
  still splits into three fields); ports are P, P+1, ... when given, ephemeral when 0;
- a bad argument, an unknown ``broker.conf`` key or a bad value: a one-line error on stderr naming
  the key and exit code 2, before anything listens;
- SIGTERM or SIGINT: a clean, bounded shutdown and exit code 0.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from .config import ConfigError, build_config
from .errors import BrokerError

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
    return parser.parse_args(argv)


async def serve(args: argparse.Namespace, config) -> None:
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
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        print(f"READY {','.join(s.broker_url for s in servers)} {','.join(s.web_url for s in servers)}", flush=True)
        await stop.wait()
    finally:
        for server in reversed(servers):
            await server.stop()
        store.close()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = build_config(conf_file=args.conf_file, overrides=args.overrides)
        if args.host is not None:
            config.set("bindAddress", args.host)
        if args.brokers < 1:
            raise ConfigError(f"Invalid --brokers {args.brokers}: expected a number of brokers >= 1")
        if args.metadata_store is not None and not args.metadata_store.startswith(("memory:", "sqlite:", "zk:")):
            raise ConfigError(f"Unsupported --metadata-store {args.metadata_store!r}: "
                              "use memory:, sqlite:PATH or zk:HOST:PORT[/chroot]")
    except ConfigError as exc:
        print(f"reference-broker: configuration error: {exc}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    try:
        asyncio.run(serve(args, config))
    except (OSError, BrokerError) as exc:
        print(f"reference-broker: cannot start: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
