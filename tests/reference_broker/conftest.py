"""Fixtures shared by the broker tests that need a real broker process."""

import pulsar
import pytest

from .broker_process import QUIET, running_broker


@pytest.fixture(scope="module")
def broker():
    """One reference broker process per test module: (service URL, admin URL)."""
    with running_broker() as urls:
        yield urls


@pytest.fixture
def client(broker):
    client = pulsar.Client(broker[0], operation_timeout_seconds=5, connection_timeout_ms=3000, logger=QUIET)
    yield client
    client.close()
