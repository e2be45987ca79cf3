"""The admin API's OpenAPI description, complete: every status a route answers and every constraint a
path parameter must meet, so that a schema-driven client neither meets an undocumented answer nor
sends a request the schema allows and the broker refuses. Also the ``Allow`` header of a 405.

- statuses (``complete``): every operation documents Pulsar's error shape (``{"reason": ...}``,
  admin/errors.py) for 400 (a body or query that does not bind), 404 (unknown resource or
  domain), 409 (it exists already, or is of the other kind), 412 (an invalid name or value), 500
  (a store failure) and 503 (no lookup permit; the namespace is being created elsewhere); the
  lookup routes also 307 (the owner is another broker, PIP-35 cluster) and 413 (a batch over
  ``maxBatchLookupTopics``). FastAPI's 422 is never answered (admin/errors.py answers a request
  that does not bind with 400) and is removed.
- path parameters (``complete``) say what the broker accepts: ``{domain}`` is ``persistent`` or
  ``non-persistent``; tenant, namespace and cluster names follow NamedEntity's pattern
  ``[-=:.\\w]+`` (``pulsar_naming.names.check_named_entity``); ``{configName}`` is one of the dynamic
  keys.
- the ``Allow`` of a 405 (``allowed_methods``) lists every method some route serves at that path
  (not only the first route's; of the templates matching it, those with the most literal
  characters, as JAX-RS selects), HEAD left out as the description has none.
"""

from __future__ import annotations

from typing import Any

import re

from fastapi import FastAPI

from pulsar_naming.names import DOMAINS
from reference_broker.config import DYNAMIC_KEYS

NAME_PATTERN = r"^[-=:.\w]+$"
_COMMON = {"400": "A body or query parameter that does not bind", "404": "No such resource",
           "409": "It exists already, or is of the other kind", "412": "An invalid name or value",
           "500": "A metadata store failure", "503": "Not served now (no lookup permit, busy namespace)"}
_LOOKUP = {"307": "The topic's owner is another broker: follow Location",
           "413": "A batch over maxBatchLookupTopics"}
_PARAMETERS: dict[str, dict[str, Any]] = {
    "domain": {"type": "string", "enum": list(DOMAINS)},
    "tenant": {"type": "string", "pattern": NAME_PATTERN},
    "namespace": {"type": "string", "pattern": NAME_PATTERN},
    "cluster": {"type": "string", "pattern": NAME_PATTERN},
    "configName": {"type": "string", "enum": sorted(DYNAMIC_KEYS)},
    "topic": {"type": "string", "minLength": 1},
    "subscription": {"type": "string", "minLength": 1},
}


def complete(schema: dict) -> dict:
    """Every status and path-parameter constraint added to FastAPI's generated description (in place); returns it."""
    schema.setdefault("components", {}).setdefault("schemas", {})["ErrorReason"] = {
        "type": "object", "properties": {"reason": {"type": "string"}}, "required": ["reason"]}
    body = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorReason"}}}
    for path, operations in schema.get("paths", {}).items():
        statuses = {**_COMMON, **(_LOOKUP if path.startswith("/lookup/") else {})}
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            for status, description in statuses.items():
                responses.setdefault(status, {"description": description, "content": body})
            for parameter in operation.get("parameters", ()):
                if parameter.get("in") == "path" and parameter["name"] in _PARAMETERS:
                    parameter["schema"] = dict(_PARAMETERS[parameter["name"]])
    schema.get("components", {}).get("schemas", {}).pop("HTTPValidationError", None)
    schema.get("components", {}).get("schemas", {}).pop("ValidationError", None)
    return schema


def install(app: FastAPI) -> None:
    generate = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is None:
            app.openapi_schema = complete(generate())
        return app.openapi_schema
    app.openapi = openapi


def allowed_methods(app, scope: dict) -> list[str]:
    """The methods the description declares at ``scope``'s path."""
    path = scope.get("path", "")
    best, methods = -1, set()
    for template, pattern, operations in _templates(app):
        found = pattern.match(path)
        if found is None or found.groupdict().get("domain", DOMAINS[0]) not in DOMAINS:
            continue  # /admin/v2/{domain}/... read over a fixed path: that route answers 404
        # As JAX-RS selects resources: the template with the most literal characters wins.
        literal = len(re.sub(r"\{\w+\}", "", template))
        if literal > best:
            best, methods = literal, set()
        if literal == best:
            methods.update(method.upper() for method in operations)
    return sorted(methods)


def _templates(app) -> list[tuple[str, "re.Pattern[str]", dict]]:
    cached = getattr(app.state, "path_templates", None)
    if cached is None:
        cached = app.state.path_templates = [
            (template, re.compile("^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template)) + r"\Z"),
             operations)
            for template, operations in app.openapi().get("paths", {}).items()]
    return cached
