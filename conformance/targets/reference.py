"""The reference broker (this project's), launched as a child process on 127.0.0.1.

- Start (``argv``, ``_launch``): ``python -m reference_broker --broker-port 0 --web-port 0
  --metadata-store memory: [--set key=value]...``, ready when it prints exactly one line ``READY
  pulsar://127.0.0.1:P http://127.0.0.1:Q`` (the CLI's start-up contract); a process that exits
  or stays silent for ``start_timeout`` is a TargetError with its last output.
- Configuration: dynamic keys are set through the admin REST API (POST
  /admin/v2/brokers/configuration/{key}/{value}); Pulsar's non-dynamic keys (Pulsar's
  ServiceConfiguration) cannot change on a running broker, so a change to them restarts the
  broker with ``--set`` (its metadata store is in memory, and every case has its own namespace
  anyway). The process is started with ``--restart-on-stdin`` and restarts in place: told
  ``RESTART`` with the arguments a new process would get, it drops every listener, connection and
  all broker state and prints a new READY line (the CLI's start-up contract), so a restart costs
  no interpreter start and no imports (``_start_process``).
- stop is SIGTERM then SIGKILL after a bound (targets/process.py), and is always called.
- Security (conformance/security.py): a configuration with ``authenticationEnabled=true`` is
  started with the run's key (a ``file://`` key in the run's private folder), and a TLS run with
  TLS listeners on ephemeral ports (``brokerServicePortTls=0``, ``webServicePortTls=0``, the
  run's certificate); the READY line then lists the ``pulsar+ssl://`` and ``https://`` URLs too,
  and the harness uses only those (``pick_urls``).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Optional

from conformance.targets.base import Target
from conformance.targets.process import ManagedProcess

_READY = re.compile(r"^READY (pulsar://\S+) (http://\S+)(?: (pulsar\+ssl://\S+) (https://\S+))?\s*\Z")


def ready_fields(lines: list[str]) -> Optional[tuple[str, ...]]:
    """Every URL field of the READY line (2, or 4 with TLS listeners), once it was printed."""
    for line in lines:
        match = _READY.match(line)
        if match:
            return tuple(field for field in match.groups() if field)
    return None


def ready_urls(lines: list[str]) -> Optional[tuple[str, str]]:
    """The plain (service URL, admin URL) of the READY line, once it was printed."""
    fields = ready_fields(lines)
    return None if fields is None else (fields[0], fields[1])


class ReferenceTarget(Target):
    kind = "reference"
    # Groups run side by side on brokers of their own; on two cores a fifth broker and more cost
    # more of a core for their interpreters' start than their share of the cases gives back.
    max_instances = 4
    instance_cores = 0.25  # a Python process that waits on sockets between a case's requests
    instance_memory_mb = 128
    start_cores = 0.5  # an interpreter and its imports for a third of a second; a restart in place, less

    def __init__(self, name: Optional[str] = None, *, command: Optional[list[str]] = None, **kwargs):
        super().__init__(name, **kwargs)
        # ``command`` replaces the interpreter + module, so tests can launch a stand-in.
        self.command = command or [sys.executable, "-m", "reference_broker"]
        self.static: dict[str, str] = {}  # non-dynamic keys the running process was started with
        self.process: Optional[ManagedProcess] = None

    def spawn(self, index: int) -> "ReferenceTarget":
        twin = type(self)(self.name, command=self.command, timeout=self.timeout, start_timeout=self.start_timeout,
                          log_dir=self.log_dir)
        twin.instance_label = f"-{index + 1}"
        return twin

    def argv(self) -> list[str]:
        argv = [*self.command, "--broker-port", "0", "--web-port", "0", "--metadata-store", "memory:",
                "--restart-on-stdin"]
        launch = {**self.static, **self.security.launch_config(self.static, pulsar=False)}  # key, TLS files
        if self.security.tls:
            launch.update(brokerServicePortTls="0", webServicePortTls="0")
        for key, value in sorted(launch.items()):
            argv += ["--set", f"{key}={value}"]
        return argv

    def pick_urls(self, fields: tuple[str, ...]) -> tuple[str, str]:
        """The TLS pair of a READY line in a TLS run (the harness then uses only those), else the
        plain pair."""
        if self.security.tls:
            if len(fields) < 4:
                raise RuntimeError(f"{self.name} printed no TLS URLs in a TLS run: READY {' '.join(fields)}")
            return fields[2], fields[3]
        return fields[0], fields[1]

    def _launch(self) -> None:
        self.service_url, self.admin_url = self.pick_urls(self._start_process("reference broker", ready_fields))
        self.generation += 1

    def _start_process(self, what: str, ready):
        """Start ``argv()`` logging to ``<log_dir>/<name>.log``, or restart the running process in
        place with its arguments; returns what ``ready`` read from its output."""
        argv = self.argv()
        if self.process is not None and self.process.alive():
            return self.process.tell("RESTART " + json.dumps(argv[len(self.command):]), ready, self.start_timeout)
        log = self.log_dir / f"{self.log_name}.log" if self.log_dir else None
        if log:
            log.parent.mkdir(parents=True, exist_ok=True)
        self.process = ManagedProcess(argv, name=f"{what} ({self.name})", log_path=log, commands=True)
        return self.process.start(ready, self.start_timeout)

    def _stop_for_restart(self) -> None:
        if self.process is None or not self.process.alive():
            self.stop()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None

    def _configure(self, wanted: dict[str, str]) -> None:
        # The broker starts from Pulsar's defaults, so a case naming a non-dynamic key at its default
        # (every PIP-2 case does) needs no restart.
        self._configure_by_restart(wanted, same=lambda a, b: self._without_defaults(a) == self._without_defaults(b))
