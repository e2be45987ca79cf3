"""The ``zookeeper_server`` pytest fixture: a REAL ZooKeeper for the whole session.

The server itself (finding the installed ZooKeeper, start with a bounded readiness wait, stop) lives
in ``conformance/targets/zookeeper.py``, shared with the reference-zk conformance target; the names
are re-exported here for the tests and benches that import them from this module.

Rule: the fixture skips ONLY when ZooKeeper or java is not installed, and says which and how to
install it (``make test`` installs Debian's ``zookeeper``); any other failure is an error.
"""

from __future__ import annotations

import pytest

from conformance.targets.zookeeper import (  # noqa: F401  (re-exported)
    INSTALL_HINT,
    ZooKeeperServer,
    find_classpath,
    four_letter_word,
    missing_reason,
)


@pytest.fixture(scope="session")
def zookeeper_server(tmp_path_factory):
    """A running ZooKeeper for the whole session (skipped only when not installed)."""
    reason = missing_reason()
    if reason:
        pytest.skip(reason)
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"))
    server.start()
    try:
        yield server
    finally:
        server.stop()
