"""How many binary-protocol connections a broker takes: ``brokerMaxConnections`` and
``brokerMaxConnectionsPerIp``, counted as Pulsar's ConnectionController does.

- counting (ConnectionController.DefaultConnectionController @ v4.0.7): a limit of 0 or less is
  off. Every accepted connection is counted, the refused ones too, and every closed one is
  uncounted, so a refused connection holds its place until its socket is closed; a connection is
  refused when the count including it is over a limit ("totalConnectionNum > maxConnections"),
  the broker-wide limit checked first.
- the refusal (ServerCnx#channelActive @ v4.0.7) is the ERROR NotAllowedError "Reached the
  maximum number of connections", or "Reached the maximum number of connections on address"
  followed directly by the peer address as Java's InetSocketAddress prints it ("/ip:port").
"""

from __future__ import annotations

from collections import Counter
from typing import Optional


class ConnectionLimits:
    def __init__(self, config) -> None:
        self.max_connections = config.get("brokerMaxConnections")
        self.max_per_ip = config.get("brokerMaxConnectionsPerIp")
        self.total = 0
        self.per_ip: Counter[str] = Counter()
        self._counted: dict[object, Optional[str]] = {}

    @property
    def enabled(self) -> bool:
        return self.max_connections > 0 or self.max_per_ip > 0

    def admit(self, connection, ip: Optional[str], port: Optional[int] = None) -> Optional[str]:
        """Count ``connection``; the refusal message when it is past a limit, else None."""
        if not self.enabled or ip is None:
            return None
        self._counted[connection] = ip
        self.total += 1
        self.per_ip[ip] += 1
        if self.max_connections > 0 and self.total > self.max_connections:
            return "Reached the maximum number of connections"
        if self.max_per_ip > 0 and self.per_ip[ip] > self.max_per_ip:
            return f"Reached the maximum number of connections on address/{ip}:{port}"
        return None

    def release(self, connection) -> None:
        if connection not in self._counted:
            return
        ip = self._counted.pop(connection)
        self.total -= 1
        self.per_ip[ip] -= 1
        if self.per_ip[ip] <= 0:
            del self.per_ip[ip]
