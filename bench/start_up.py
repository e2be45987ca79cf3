"""An Apache Pulsar standalone's start-up and stop, as the harness makes them and as bin/pulsar would.

A run starts a release's standalone once per non-dynamic configuration it needs, so a start's cost
is paid many times a run (conformance/targets/class_data.py). For one release, alternately, this
starts and stops its standalone (the harness's pulsar-standalone target, default configuration)
three ways, and prints each way's seconds to ready and to gone, and the CPU the JVM used:

- ``bin/pulsar``: bin/pulsar's JVM options only, stopped with SIGTERM and a 3 s bound (what the
  harness did before it had the archive);
- ``first tier``: plus ``-XX:TieredStopAtLevel=1``, stopped with SIGKILL;
- ``archive``: plus the release's class-data archive (written first when the machine has none), as
  every start of a run makes it.

Goal: a start with the archive at most half the CPU of a start with bin/pulsar's options.

    .venv/bin/python bench/start_up.py [--version 4.0.7] [--runs 3]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conformance.targets import class_data, maven, standalone  # noqa: E402


class _Fixed:
    """Start options of one way, and its stop."""

    writing = False

    def __init__(self, options: tuple[str, ...], graceful: bool):
        self._options, self.graceful = options, graceful

    def options(self) -> tuple[str, ...]:
        return self._options

    def stop(self, process) -> None:
        if self.graceful:
            process.stop(3.0)
        else:
            process.kill()


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def once(version: str, way) -> tuple[float, float, float]:
    """Seconds to ready, seconds to gone, CPU seconds of the JVM."""
    target = standalone.PulsarStandaloneTarget(version)
    target.java = standalone.find_java()
    target.classpath = maven.resolve(version)
    if way is not None:
        target.class_data = way
    cpu = children_cpu()
    started = time.monotonic()
    target._launch()
    ready = time.monotonic()
    target.stop()
    gone = time.monotonic()
    return ready - started, gone - ready, children_cpu() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default=standalone.DEFAULT_VERSION)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    archive, written = standalone.prepare_start_ups(args.version)
    print(f"Apache Pulsar {args.version}: class-data archive {archive.name} "
          f"({'written now' if written else 'cached'}, {archive.stat().st_size / 2 ** 20:.0f} MiB)")
    ways = {"bin/pulsar": lambda: _Fixed((), graceful=True),
            "first tier": lambda: _Fixed(class_data.START_OPTIONS, graceful=False),
            "archive": lambda: None}  # the target's own: the archive and the first tier
    figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in ways}
    for _ in range(args.runs):
        for name, way in ways.items():
            figures[name].append(once(args.version, way()))
    print(f"{'way':<12} {'ready s (median, min-max)':<28} {'gone s':<8} {'JVM CPU s':<10}")
    medians = {}
    for name, runs in figures.items():
        ready, gone, cpu = (sorted(column) for column in zip(*runs))
        medians[name] = statistics.median(cpu)
        print(f"{name:<12} {statistics.median(ready):5.2f} ({ready[0]:.2f}-{ready[-1]:.2f}){'':<12} "
              f"{statistics.median(gone):5.2f}    {medians[name]:5.2f}")
    ratio = medians["archive"] / medians["bin/pulsar"]
    print(f"archive / bin/pulsar CPU: {ratio:.2f} (goal at most 0.50: {'met' if ratio <= 0.5 else 'not met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
