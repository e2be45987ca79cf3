"""The wire driver on a target of several brokers: where a lookup's Connect sends a client.

Apache Pulsar's broker answers a LOOKUP of a bundle another broker already owns with Connect and
the OWNER's URL, authoritative (NamespaceService#findBrokerServiceUrl completes with
``new LookupResult(nsData)``, which TopicLookupBase#lookupTopicAsync answers as
``LookupType.Connect``; apache/pulsar@v4.0.7:
pulsar-broker/src/main/java/org/apache/pulsar/broker/lookup/TopicLookupBase.java), and keeps
Redirect for a bundle nobody owns yet (to the leader, or from the leader to the broker its load
manager picked). A client connects to the URL a Connect names (``proxy_through_service_url`` aside:
then the service URL is used), so the driver does too (``connect_elsewhere``), and the PRODUCER or
SUBSCRIBE that follows goes to the owner. Only to another broker of the target (``cluster_urls``,
set by the harness), as the REST driver follows a 307 only there.
"""

from __future__ import annotations

import urllib.parse

from pulsar_codec import events
from pulsar_codec import pulsar_api_pb2 as pb

LOOKUP = pb.CommandLookupTopicResponse


def host_port(url: str) -> tuple[str, int]:
    parsed = urllib.parse.urlparse(url)
    return parsed.hostname or "", parsed.port or 0


def named_broker(got, tls: bool):
    """The broker URL a LOOKUP_RESPONSE names (the TLS one on a TLS connection), or None."""
    if not isinstance(got, events.LookupResponse):
        return None
    url = got.brokerServiceUrlTls if tls and got.has("brokerServiceUrlTls") and got.brokerServiceUrlTls \
        else got.brokerServiceUrl
    return url or None


def connect_elsewhere(driver, got) -> None:
    """Move ``driver`` (a WireDriver) to the broker a Connect names when it is not the one asked."""
    if not (isinstance(got, events.LookupResponse) and got.has("response") and got.response == LOOKUP.Connect):
        return
    if got.has("proxy_through_service_url") and got.proxy_through_service_url:
        return
    owner = named_broker(got, driver._tls is not None)
    if not owner or host_port(owner) == (driver.host, driver.port):
        return
    if host_port(owner) not in {host_port(url) for url in driver.cluster_urls or ()}:
        return  # not a broker of the target (a one-broker target's advertised name): stay, as before
    driver.transcript.note(f"Connect names {owner}: going on there")
    driver.move_to(owner)
