"""A target answered by the model itself, in-process: the harness's generated-sequence and
differential machinery can then be tested without a broker, and a "broken" variant is the model
with one handler replaced."""

from __future__ import annotations

import time
from typing import Callable, Optional

from conformance.errors import Indefinite
from conformance.execute import TargetSession
from conformance.generated import natural_route
from conformance.targets.base import ERA_PIP344, Target
from conformance.transcript import Transcript
from model import machine
from model.config import BrokerConfig


class ModelBroker:
    """One broker's state, shared by its drivers; ``handlers`` override model handlers by op type."""

    def __init__(self, handlers: Optional[dict] = None, hang: Optional[Callable] = None, delay: float = 0.0):
        self.state = machine.initial_state({}, ERA_PIP344)
        self.handlers = dict(handlers or {})
        self.hang = hang or (lambda op: False)
        self.delay = delay
        self.performed = 0

    def perform(self, op):
        self.performed += 1
        if self.hang(op):
            time.sleep(self.delay)
            raise Indefinite(f"no answer to {type(op).__name__} within {self.delay} s")
        handler = self.handlers.get(type(op)) or machine.HANDLERS[type(op)]
        self.state, outcome = handler(self.state, op)
        return outcome


class ModelDriver:
    def __init__(self, name: str, broker: ModelBroker):
        self.name = name
        self.broker = broker
        self.transcript = Transcript(name)

    def can_perform(self, op) -> bool:
        api = natural_route(op)[1]
        return {"rest": api == "rest", "wire": api == "binary", "client": api.startswith("client")}[self.name]

    def perform(self, op):
        return self.broker.perform(op)

    def reset(self) -> None:
        self.transcript = Transcript(self.name)

    def close(self) -> None:
        pass


class ModelTarget(Target):
    kind = "model"

    def __init__(self, name: str = "model", broker: Optional[ModelBroker] = None, **kwargs):
        super().__init__(name, **kwargs)
        self.broker = broker or ModelBroker()

    def start(self) -> None:
        self.service_url, self.admin_url = "pulsar://model:6650", "http://model:8080"
        self.has_admin, self.era, self.versions = True, ERA_PIP344, {"rest": "model-1"}
        self.started = True

    def configure(self, broker_config: dict) -> None:
        self.broker.state = self.broker.state.with_config(BrokerConfig.from_strings(broker_config))


def model_session(name: str = "model", **broker_kwargs) -> TargetSession:
    target = ModelTarget(name, ModelBroker(**broker_kwargs))
    return TargetSession(target, driver_factory=lambda t: {n: ModelDriver(n, t.broker) for n in ("rest", "wire", "client")})
