"""Pulsar's admin REST conventions, shared by the REST driver and its parts (rest_batch.py,
rest_buckets.py): v2 paths, the ErrorData ``reason`` of a refusal, and what a 2xx answer means.

- ``done``: a 2xx answer with no body to read is ``Done``; any other status is
  ``RestError(status, reason)``.
- ``error_reason``: the ``reason`` is ErrorData's ``{"reason": ...}``, the message of a servlet
  error page, or else the raw body. An exception the broker did not expect (Pulsar's
  RestException(Throwable), a 500) has a reason holding its message and its stack trace: the
  reason is the message alone, since the trace names line numbers of one build. A body Jersey
  could not bind (Pulsar: 400 text/plain, Jackson's message) has its parser location cut off:
  "\n at [Source: ...; line: 1, column: N]" and the reference chain after it differ by Jackson
  release (the source is redacted from 2.16 on) and by column. A reason that relays an error of
  Pulsar's own client has its request id and socket addresses replaced
  (outcomes.normalise_message), as the wire driver does.
- ``json_body``: a 2xx body that is not JSON where JSON is due is a ProtocolViolation.
"""

from __future__ import annotations

import html
import json
import re
import urllib.parse

import httpx

from conformance.errors import ProtocolViolation
from pulsar_naming.names import InvalidName, NamespaceName, TopicName
from model.outcomes import Done, RestError, normalise_message


def path_segment(text: str) -> str:
    """``text`` as one segment of a URL path (``/`` escaped too)."""
    return urllib.parse.quote(text, safe="")


def topic_path(topic: str) -> str:
    """``{domain}/{tenant}/{ns}/{encoded local name}`` as Pulsar's v2 REST paths want it. A name the
    parser refuses (a row sending what Pulsar refuses) is split as written, each part one segment."""
    try:
        name = TopicName.parse(topic)
    except InvalidName:
        domain, _, rest = topic.partition("://")
        parts = rest.split("/", 2)
        if not domain or len(parts) != 3:
            raise
        return "/".join([domain, *(path_segment(part) for part in parts)])
    return f"{name.domain}/{path_segment(name.tenant)}/{path_segment(name.namespace)}/{name.encoded_local_name}"


def namespace_path(namespace: str) -> str:
    name = NamespaceName.parse(namespace)
    return f"{path_segment(name.tenant)}/{path_segment(name.namespace)}"


# A servlet error page (Jetty's, as Pulsar's authentication filter answers) names the status and
# its message in the title.
_SERVLET_ERROR_TITLE = re.compile(r"<title>Error (\d{3}) (.*?)</title>", re.DOTALL)


# RestException#getExceptionData (v3.0.2 to v4.2.4): "\n --- An unexpected error occurred in the
# server ---\n\nMessage: <message>\n\nStacktrace:\n\n<trace>".
_UNEXPECTED = re.compile(r"^\n --- An unexpected error occurred in the server ---\n\nMessage: (.*?)\n\nStacktrace:",
                         re.DOTALL)


# JsonProcessingException#getMessage: the original message, then "\n at " and the location.
_JACKSON_LOCATION = "\n at [Source: "


def error_reason(response: httpx.Response) -> str:
    """Pulsar's ErrorData ``reason``, a servlet error page's message, Jackson's message without its
    location, or the raw body."""
    text = response.text
    try:
        body = json.loads(text)
    except ValueError:
        page = _SERVLET_ERROR_TITLE.search(text)
        if page and int(page.group(1)) == response.status_code:
            return html.unescape(page.group(2).strip())
        return text.split(_JACKSON_LOCATION, 1)[0]
    if isinstance(body, dict) and isinstance(body.get("reason"), str):
        unexpected = _UNEXPECTED.match(body["reason"])
        return normalise_message(unexpected.group(1) if unexpected else body["reason"])
    return text


def done(response: httpx.Response):
    """``Done`` for a 2xx answer, else ``RestError(status, reason)``."""
    if 200 <= response.status_code < 300:
        return Done()
    return RestError(response.status_code, error_reason(response))


def json_body(response: httpx.Response, what: str):
    """The JSON of a 2xx answer; a body that is not JSON is a ProtocolViolation."""
    try:
        return response.json()
    except ValueError as exc:
        raise ProtocolViolation(f"{what}: 2xx answer is not JSON: {response.text[:200]!r}") from exc
