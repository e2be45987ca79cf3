"""Which driver performs which step of a case on a given target.

Rule 1: action steps go to the driver of the case's api: rest -> rest, binary -> wire,
        client-binary / client-http -> client, java-client-binary / java-client-http ->
        java-client, java-admin -> java-admin. An op that names its own api (``ops.*.api``)
        goes where that api says, since the model computed its outcome for that api.
Rule 2: setup and observe steps go by the op's own api if it has one; otherwise to REST when
        the target has an admin API, else to the wire driver when it can do that op (e.g.
        CreateNonPartitionedTopic by PRODUCER + CLOSE_PRODUCER), else Unsupported.
Rule 3: on targets with implicit namespaces (any tenant/namespace exists), CreateTenant and
        CreateNamespace are Done without I/O. A case that needs a tenant or namespace to be
        *missing*, deletes one, or expects creating one to fail, cannot be reproduced there:
        Unsupported, because the step expects an answer the target cannot be made to give.
"""

from __future__ import annotations

from typing import Optional

from conformance.errors import Unsupported
from model import ops
from model.names import InvalidName, NamespaceName, TopicName
from model.outcomes import Done

API_DRIVERS = {"rest": "rest", "binary": "wire", "client": "client",
               "client-binary": "client", "client-http": "client"}
API_DRIVERS["metadata"] = "metadata"  # white-box reads of the target's store (ReadTopicLayout, PIP-157)
API_DRIVERS.update({"java-client-binary": "java-client", "java-client-http": "java-client",  # drivers/java.py
                    "java-admin": "java-admin"})

# What exists on a fresh Pulsar standalone before any case runs.
BUILTIN_TENANTS = frozenset({"public", "pulsar"})
BUILTIN_NAMESPACES = frozenset({"public/default", "pulsar/system"})


def action_driver_name(case_api: str) -> str:
    """The driver that performs a case's action steps; it also names the test item."""
    try:
        return API_DRIVERS[case_api]
    except KeyError:
        raise Unsupported(f"unknown case api {case_api!r}; expected one of {', '.join(API_DRIVERS)}") from None


def _namespace_of(op) -> Optional[str]:
    text = getattr(op, "namespace", None)
    if text is None and isinstance(getattr(op, "topic", None), str):
        try:
            return str(TopicName.parse(op.topic).namespace_name)
        except InvalidName:
            return None
    return text


class NamespaceLedger:
    """Tracks which tenants/namespaces a case created, for implicit-namespace targets (Rule 3)."""

    def __init__(self):
        self.tenants = set(BUILTIN_TENANTS)
        self.namespaces = set(BUILTIN_NAMESPACES)

    def check(self, step) -> Optional[object]:
        """Done for implicit creations, None to perform the step, or raise Unsupported."""
        op = step.op
        if isinstance(op, (ops.CreateTenant, ops.CreateNamespace)):
            if step.expected != Done():
                raise Unsupported(f"target has implicit tenants/namespaces: {type(op).__name__} cannot give "
                                  f"{step.expected!r} there")
            if isinstance(op, ops.CreateTenant):
                self.tenants.add(op.tenant)
            else:
                self.namespaces.add(op.namespace)
                self.tenants.add(op.namespace.split("/", 1)[0])
            return Done()
        if isinstance(op, ops.DeleteNamespace):
            raise Unsupported("target has implicit namespaces: a namespace cannot be deleted there")
        namespace = _namespace_of(op)
        if namespace is None:
            return None
        try:
            name = NamespaceName.parse(namespace)
        except InvalidName:
            return None  # an invalid name is the target's to refuse
        if name.tenant not in self.tenants:
            raise Unsupported("case needs its tenant to be missing; the target has implicit tenants")
        if str(name) not in self.namespaces:
            raise Unsupported("case needs its namespace to be missing; the target has implicit namespaces")
        return None


class Router:
    """Picks the driver for each step (Rules 1, 2) from the drivers a target offers."""

    def __init__(self, drivers: dict, *, has_admin: bool):
        self.drivers = drivers  # name -> driver, or None when the target cannot have it
        self.has_admin = has_admin

    def _get(self, name: str, op):
        driver = self.drivers.get(name)
        if driver is None:
            why = "has no admin REST API" if name == "rest" else f"offers no {name} driver"
            raise Unsupported(f"{type(op).__name__} needs the {name} driver and the target {why}")
        return driver

    def is_substitute(self, step, driver) -> bool:
        """True when ``driver`` stands in for the admin API on a setup/observe step (Rule 2)."""
        return step.role != "action" and getattr(step.op, "api", None) is None and driver.name != "rest"

    def driver_for(self, step, case_api: str):
        op = step.op
        own_api = getattr(op, "api", None)
        if step.role == "action" or own_api is not None:
            name = API_DRIVERS.get(own_api) if own_api is not None else action_driver_name(case_api)
            if name is None:
                raise Unsupported(f"{type(op).__name__} names api {own_api!r}, which no driver speaks")
            driver = self._get(name, op)
        elif self.has_admin and self.drivers.get("rest") is not None and self.drivers["rest"].can_perform(op):
            driver = self.drivers["rest"]
        elif self.drivers.get("wire") is not None and self.drivers["wire"].can_perform(op):
            driver = self.drivers["wire"]
        elif self.drivers.get("client") is not None and self.drivers["client"].can_perform(op):
            driver = self.drivers["client"]
        else:
            raise Unsupported(f"no driver can perform {type(op).__name__} on this target "
                              f"({'admin API present' if self.has_admin else 'no admin REST API'})")
        if not driver.can_perform(op):
            raise Unsupported(f"the {driver.name} driver cannot perform {type(op).__name__} "
                              f"(api={own_api!r})")
        return driver
