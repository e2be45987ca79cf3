"""Every admin REST failure becomes Pulsar's error shape: a status code and ``{"reason": "..."}``.

What this module owns: the translation of exceptions to HTTP responses for the admin app.

- a ``BrokerError`` answers its own ``http_status`` and ``reason`` (Pulsar's
  PersistentTopicsBase.internalGetPartitionedMetadataAsync: "every ``RestException(status, msg)``
  body is JSON ``{"reason": "<msg>"}``").
- a request FastAPI cannot bind (bad JSON, wrong type, missing body) is 400 with a reason naming
  the field and the problem -- never a 422 and never a crash.
- an unknown path or method keeps its status (404, 405) with Jersey's wording as reason ("HTTP
  404 Not Found"); a 405's ``Allow`` names every method served at the path
  (openapi.allowed_methods).
- anything unexpected is 500 with the exception's text; the server keeps running
  (``CatchAllMiddleware``).
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from reference_broker.admin.openapi import allowed_methods
from reference_broker.errors import BrokerError


def error_response(status: int, reason: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"reason": reason})


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _describe_validation(errors: list[dict[str, Any]]) -> str:
    parts = []
    for error in errors:
        loc = ".".join(str(item) for item in error.get("loc", ()))
        message = error.get("msg", "invalid")
        if error.get("type") == "json_invalid":
            message = "malformed JSON"
        parts.append(f"{loc}: {message}" if loc else message)
    return "Invalid request: " + "; ".join(parts or ["invalid input"])


async def _broker_error(request: Request, exc: BrokerError) -> JSONResponse:
    return error_response(exc.http_status, exc.reason)


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    return error_response(400, _describe_validation(list(exc.errors())))


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    reason = f"HTTP {exc.status_code} {_phrase(exc.status_code)}".strip()
    if isinstance(exc.detail, str) and exc.detail and exc.detail != _phrase(exc.status_code):
        reason = exc.detail
    response = error_response(exc.status_code, reason)
    if exc.headers:
        response.headers.update(exc.headers)
    if exc.status_code == 405:
        response.headers["Allow"] = ", ".join(allowed_methods(request.app, request.scope))
    return response


class CatchAllMiddleware:
    """Anything unexpected answered 500, as a pure ASGI middleware: Starlette's own 500 handler re-raises after answering,
    which would crash an in-process test client; this one answers and swallows."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: dict) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:  # noqa: BLE001 - anything unexpected is 500, the server keeps running
            if started:
                raise
            response = error_response(500, f"Internal server error: {type(exc).__name__}: {exc}")
            await response(scope, receive, send)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(BrokerError, _broker_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_middleware(CatchAllMiddleware)
