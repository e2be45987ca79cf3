"""PIP-35 rows in ``conformance.cases``: binding ``topics`` and what a row's ``stated`` means.

Binding (spec/README.md, "PIP-35 batch operations"): each item of ``topics`` is a local name, bound
like ``topic`` to ``<domain>://<namespace>/<name>``, or a template holding ``{ns}`` once, sent as
written with ``{ns}`` replaced by the case's namespace (invalid names, a derived missing namespace).

``stated`` (written from the README's definitions, independently of model/batch_lookup.py, so that
``stated_disagreements`` catches a model that drifts from spec/pip35.md):

- ``entries: [name, ...]``   the batch answers exactly these entries, written as the row writes
  names (local names, or templates with {ns}); in this order on the binary API, as a set on REST;
- ``failed: {name: ServerError}``  exactly these entries fail, with these errors; every other entry
  resolves to its owner (Connect);
- ``agreement: bool``         the metamorphic operation's relation holds (or, false, does not);
- ``error: too-many-requests``  the whole request is refused (binary TooManyRequests, REST 413).
"""

from __future__ import annotations

from model.outcomes import Agreement, BatchLookupResult, RestError, ServerError

PIP35_STATED = ("entries", "failed", "agreement")
NS = "{ns}"


def bind_topics(items, namespace: str, full) -> tuple[str, ...]:
    """A row's ``topics`` as the operation sends them (module docstring)."""
    return tuple(item.replace(NS, namespace) if NS in item else full(item) for item in items)


def row_name(topic: str, namespace: str, domain: str) -> str:
    """An entry's topic written back the way a row writes it (the inverse of ``bind_topics``)."""
    prefix = f"{domain}://{namespace}/"
    rest = topic[len(prefix):]
    if topic.startswith(prefix) and rest and "/" not in rest:
        return rest
    return topic.replace(namespace, NS)


def pip35_error_kind(outcome):
    """``too-many-requests``: C3's refusal as each API shows it; None otherwise."""
    if isinstance(outcome, ServerError) and outcome.error == "TooManyRequests":
        return "too-many-requests"
    if isinstance(outcome, RestError) and outcome.status == 413:
        return "too-many-requests"
    return None


def pip35_stated_value(key: str, value, bound):
    """The value of ``key`` the bound case's expectations give, to compare with the stated one."""
    outcome = bound.action.expected
    if key == "agreement":
        return outcome.agree if isinstance(outcome, Agreement) else outcome
    if not isinstance(outcome, BatchLookupResult):
        return outcome
    domain = bound.case.row.setup.domain
    names = tuple(row_name(e[0], bound.namespace, domain) for e in outcome.entries)
    if key == "entries":
        if bound.case.api == "rest":  # a JSON object: the set of entries is what is fixed
            return value if sorted(names) == sorted(value) else names
        return names
    if key == "failed":
        failed = {name: e[4] for name, e in zip(names, outcome.entries) if e[2] != "Connect"}
        return tuple(sorted(failed.items()))
    raise KeyError(key)
