"""Which driver performs which step of a case on a given target.

``Router.driver_for`` decides:

- Action steps go to the driver of the case's api (``API_DRIVERS``): rest -> rest, binary ->
  wire, client-binary / client-http -> client, java-client-binary / java-client-http ->
  java-client, java-admin -> java-admin, and so for the go- and rust- apis (go-client, go-admin,
  rust-client, rust-admin). An op that names its own api (``ops.*.api``) goes where
  that api says, since the model computed its outcome for that api.
- Setup and observe steps go by the op's own api if it has one; otherwise to REST when the
  target has an admin API, else to the wire driver when it can do that op (e.g.
  CreateNonPartitionedTopic by PRODUCER + CLOSE_PRODUCER), else Unsupported.
- Stand-ins (``Router.is_substitute``, ``_stand_in_refusal``): a driver other than REST stands in
  for the admin API only where Pulsar, configured as the case's broker config says, would give
  the admin call's result through it: a PRODUCER creates a non-partitioned topic only while
  auto-creation is on and of type non-partitioned. So a stand-in that then fails is a divergence
  of the target, judged like any answer (execute.py).

Implicit namespaces (``NamespaceLedger``): on targets detected to serve namespaces nobody created
(``implicit_namespaces``, Target._serves_uncreated_namespaces) and without an admin API, a
CreateTenant or CreateNamespace *setup* step the model answers Done is Done without I/O: what it
makes is already there. Every other step is routed as usual: a case whose tenant or namespace
must be missing simply never creates it and runs, so the target's answer is judged (answering as
if it existed is a finding); a step that creates or deletes a namespace as the action, or expects
creating one to fail, needs the admin API like anywhere else (as setup and observe steps do).
"""

from __future__ import annotations

from typing import Mapping, Optional

from conformance.errors import Unsupported
from conformance.targets import config as pulsar_config
from model import ops
from model.outcomes import Done

API_DRIVERS = {"rest": "rest", "binary": "wire", "client": "client",
               "client-binary": "client", "client-http": "client"}
API_DRIVERS["metadata"] = "metadata"  # white-box reads of the target's store (ReadTopicLayout, PIP-157)
API_DRIVERS.update({"java-client-binary": "java-client", "java-client-http": "java-client",  # drivers/java.py
                    "java-admin": "java-admin"})
API_DRIVERS.update({f"{library}-{role}": f"{library}-{role.split('-')[0]}"  # drivers/native_clients.py
                    for library in ("go", "rust") for role in ("client-binary", "client-http", "admin")})

def action_driver_name(case_api: str) -> str:
    """The driver that performs a case's action steps; it also names the test item."""
    try:
        return API_DRIVERS[case_api]
    except KeyError:
        raise Unsupported("no-driver", f"unknown case api {case_api!r}; expected one of {', '.join(API_DRIVERS)}") \
            from None


class NamespaceLedger:
    """Setup steps an implicit-namespace target needs no I/O for: what they create is already served."""

    def check(self, step) -> Optional[object]:
        """Done for a setup creation the target needs none of, else None: perform the step. A
        namespace created with policies, or a tenant with admin roles, is more than a served name:
        without an admin API those cannot be given, so such steps are performed (and refused)."""
        op = step.op
        plain = (isinstance(op, ops.CreateTenant) and not op.admin_roles) or \
            (isinstance(op, ops.CreateNamespace) and not op.policies)
        if step.role == "setup" and plain and step.expected == Done():
            return Done()
        return None

    @staticmethod
    def applies(target) -> bool:
        return bool(getattr(target, "implicit_namespaces", False)) and not getattr(target, "has_admin", False)


class Router:
    """Picks the driver for each step, action or setup/observe, from the drivers a target offers."""

    def __init__(self, drivers: dict, *, has_admin: bool, broker_config: Optional[Mapping[str, str]] = None):
        self.drivers = drivers  # name -> driver, or None when the target cannot have it
        self.has_admin = has_admin
        # what the broker runs with (Pulsar's defaults for keys not given): decides stand-ins
        self.broker_config = pulsar_config.effective(
            {k: pulsar_config.normalise(v) for k, v in (broker_config or {}).items()})

    def _stand_in_refusal(self, op) -> Optional[str]:
        """Why no stand-in can give the admin call's result under this config, or None."""
        if isinstance(op, ops.CreateNonPartitionedTopic):
            allow = self.broker_config["allowAutoTopicCreation"]
            kind = self.broker_config["allowAutoTopicCreationType"]
            if allow != "true" or kind != "non-partitioned":
                return (f"CreateNonPartitionedTopic needs the admin REST API: with allowAutoTopicCreation={allow} "
                        f"and allowAutoTopicCreationType={kind} a PRODUCER does not create a non-partitioned topic")
        return None

    def _get(self, name: str, op):
        driver = self.drivers.get(name)
        if driver is None:
            admin = name == "rest" or name.endswith("-admin")  # they exist only with an admin URL
            why = "has no admin REST API" if admin else f"offers no {name} driver"
            raise Unsupported("no-admin-api" if admin else "no-driver",
                              f"{type(op).__name__} needs the {name} driver and the target {why}")
        return driver

    def is_substitute(self, step, driver) -> bool:
        """True when ``driver`` stands in for the admin API on a setup/observe step."""
        return step.role != "action" and getattr(step.op, "api", None) is None and driver.name != "rest"

    def driver_for(self, step, case_api: str):
        op = step.op
        own_api = getattr(op, "api", None)
        if step.role == "action" or own_api is not None:
            name = API_DRIVERS.get(own_api) if own_api is not None else action_driver_name(case_api)
            if name is None:
                raise Unsupported("no-driver", f"{type(op).__name__} names api {own_api!r}, which no driver speaks")
            driver = self._get(name, op)
        elif self.has_admin and self.drivers.get("rest") is not None and self.drivers["rest"].can_perform(op):
            driver = self.drivers["rest"]
        elif self._stand_in_refusal(op):
            raise Unsupported("no-admin-api", self._stand_in_refusal(op))
        elif self.drivers.get("wire") is not None and self.drivers["wire"].can_perform(op):
            driver = self.drivers["wire"]
        elif self.drivers.get("client") is not None and self.drivers["client"].can_perform(op):
            driver = self.drivers["client"]
        else:
            raise Unsupported("no-driver" if self.has_admin else "no-admin-api",
                              f"no driver can perform {type(op).__name__} on this target "
                              f"({'admin API present' if self.has_admin else 'no admin REST API'})")
        if not driver.can_perform(op):
            raise Unsupported("no-driver", f"the {driver.name} driver cannot perform {type(op).__name__} "
                              f"(api={own_api!r})")
        return driver
