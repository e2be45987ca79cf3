"""The admin REST application: ``build_app(core, ...)`` assembles Pulsar's admin v2 and lookup v2 routes.

What this module owns: the FastAPI app object, the order the routers are mounted in, and the
error handlers. FastAPI publishes the OpenAPI description at ``/openapi.json`` (for schema-driven
fuzzing).

- fixed paths are mounted before the ``/admin/v2/{domain}/...`` patterns, because those patterns
  also match ``/admin/v2/namespaces/...`` and ``/admin/v2/brokers/...``.
- ``build_app`` records the bound URLs in the core (``set_service_urls``), so REST and binary
  lookups and the cluster's ClusterData all name the same addresses.
- the stats routes (PIP-2) read live topics, so they are mounted only when the server hands over
  its topic registry (``topics``); an app built over a bare core has none.
- with authentication on (``security``), admin/security.py's middleware is outermost: no route
  runs for a request it refuses.
"""

from __future__ import annotations

from fastapi import FastAPI

from reference_broker.admin import openapi, routes_brokers, routes_lookup, routes_namespaces, routes_stats, routes_topics
from reference_broker.admin.errors import install_error_handlers
from reference_broker.core import BrokerCore


def build_app(core: BrokerCore, *, broker_service_url: str, web_service_url: str, topics=None,
              security=None, close_subscription=None) -> FastAPI:
    """The admin REST app over ``core``; serve it with uvicorn in the broker's event loop.
    ``close_subscription(topic, subscription)`` disconnects a subscription's consumers on every
    connection (the server's), for a subscription deleted through the API."""
    core.set_service_urls(broker_url=broker_service_url, web_url=web_service_url)
    app = FastAPI(
        title="pulsar-conformance reference broker admin API",
        version=core.version,
        description="A subset of Apache Pulsar's admin v2 and lookup v2 REST APIs.",
    )
    app.state.core = core
    install_error_handlers(app)
    app.include_router(routes_brokers.build_router(core))  # fixed paths first
    app.include_router(routes_namespaces.build_router(core))
    app.include_router(routes_lookup.build_router(core))  # PIP-35 cluster routes, after the fixed brokers paths
    app.include_router(routes_topics.build_router(core))
    if topics is not None:  # the stats routes need the live topics
        app.include_router(routes_stats.build_router(core, topics, close_subscription))
    openapi.install(app)  # every status and parameter constraint documented (admin/openapi.py)
    if security is not None and security.authentication:  # outermost: no route runs for a refused request
        from reference_broker.admin.security import SecurityMiddleware
        app.add_middleware(SecurityMiddleware, security=security)
    return app
