"""spec/operations.py is the one registry of operations: adding one is its entry there, its dataclass
in model/ops.py, its answer in the model, and a method of each driver its apis name. These tests fail
while any of those is missing, naming what to add where."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from conformance.cases import API_SELECTORS, API_TRANSPORT_SELECTORS, _operation
from conformance.drivers import java
from conformance.execute import default_drivers
from conformance.executor import StepView
from conformance.routing import API_DRIVERS, Router
from model import ops
from model.machine import HANDLERS
from spec.operations import OPERATIONS, PIPS, WITH_CREDENTIALS
from tests.conformance.helpers import FakeTarget

# A value for each field an operation's dataclass requires, to make one without a row.
SAMPLES = {"topic": "t", "partitions": 2, "command": "flow-zero-permits", "key": "allowAutoTopicCreation",
           "value": "true", "tenant": "a-tenant", "namespace": "public/a-namespace", "subscription": "s"}


def _dataclasses_of_model_ops() -> dict[str, type]:
    return {name: cls for name, cls in inspect.getmembers(ops, inspect.isclass)
            if dataclasses.is_dataclass(cls) and cls.__module__ == ops.__name__}


def test_every_operation_of_the_registry_is_a_dataclass_of_the_model_and_the_other_way_round():
    defined = _dataclasses_of_model_ops()
    assert set(OPERATIONS) - set(defined) == set(), "add the dataclass of the same name to model/ops.py"
    assert set(defined) - set(OPERATIONS) - {WITH_CREDENTIALS} == set(), "add its entry to spec/operations.py"
    assert set(ops.OPERATION_TYPES) == set(defined)


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_what_a_row_may_write_is_a_field_of_the_operation(name):
    entry, cls = OPERATIONS[name], ops.OPERATION_TYPES[name]
    names = {f.name for f in dataclasses.fields(cls)}
    assert entry.fields <= names, f"spec/operations.py lets rows write {sorted(entry.fields - names)} of {name}"
    assert entry.selector is None or set(entry.selector.split("+")) <= names
    assert entry.pip in PIPS


@pytest.mark.parametrize("name", sorted(ops.OPERATION_TYPES))
def test_every_operation_has_the_models_answer(name):
    assert ops.OPERATION_TYPES[name] in HANDLERS, f"add {name}'s handler to model/machine.py's HANDLERS"


def _sample(name: str, api) -> object:
    entry, cls = OPERATIONS[name], ops.OPERATION_TYPES[name]
    required = {f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    template = {"op": name, **{key: SAMPLES[key] for key in required - {"namespace"} if key in SAMPLES}}
    if not entry.in_rows:  # never bound from a row: made as it stands
        return ops.op_from_json({**template, **{key: SAMPLES[key] for key in required if key in SAMPLES}})
    return _operation(template, api, "public/a-namespace", "persistent", lambda local: f"persistent://public/x/{local}")


def _routes():
    for name, entry in sorted(OPERATIONS.items()):
        if entry.apis:
            for api in entry.apis:
                yield pytest.param(name, api, "action" if api != "rest" or entry.selector else "setup",
                                   id=f"{name}[{api}]")
        elif name == "ReadTopicLayout":
            yield pytest.param(name, None, "observe", id=f"{name}[metadata]")
        else:
            yield pytest.param(name, None, "setup", id=f"{name}[setup]")


@pytest.fixture(scope="module")
def drivers():
    target = FakeTarget()
    target.start()
    made = default_drivers(target)
    yield made
    java.close_shared()


@pytest.mark.parametrize("name, api, role", list(_routes()))
def test_every_api_of_an_operation_reaches_a_driver_that_performs_it(drivers, name, api, role):
    op = _sample(name, api)
    case_api = api or "rest"
    driver = Router(drivers, has_admin=True).driver_for(StepView(op, role), case_api)
    assert driver.can_perform(op), f"the {driver.name} driver must perform {name} for api {case_api}"


def test_every_api_an_operation_names_is_one_a_case_can_fill_in_and_a_driver_serves():
    selected = {api for e in OPERATIONS.values() if e.selector for api in e.apis}
    assert selected <= set(API_SELECTORS) | set(API_TRANSPORT_SELECTORS)
    assert {api for e in OPERATIONS.values() for api in e.apis} <= set(API_DRIVERS)
