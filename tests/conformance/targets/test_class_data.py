"""conformance/targets/class_data.py: a class-data archive per release, written once, then mapped."""

from __future__ import annotations

import shutil
import sys

from conformance.targets import class_data
from conformance.targets.class_data import ClassData
from conformance.targets.process import ManagedProcess


class _Process:
    """What ClassData.stop asks of a ManagedProcess; ``writes`` is the file its JVM would write at exit."""

    def __init__(self, writes=None, exits_by_itself=True):
        self.writes, self.exits_by_itself, self.calls = writes, exits_by_itself, []

    def kill(self):
        self.calls.append("kill")

    def terminate(self, timeout):
        self.calls.append(("terminate", timeout))
        if self.writes is not None:
            self.writes.write_bytes(b"archive")
        return self.exits_by_itself


def _option(options, name):
    return next(o.split("=", 1)[1] for o in options if o.startswith(f"-XX:{name}="))


def test_the_first_start_writes_the_archive_and_later_ones_map_it(tmp_path):
    data = ClassData("pulsar-broker-4.0.7", sys.executable, "a.jar:b.jar", ("-Xmx1g",), root=tmp_path)
    other_build = tmp_path / "pulsar-broker-4.0.7-0123456789abcdef.jsa"
    other_release = tmp_path / "pulsar-broker-4.0.8-0123456789abcdef.jsa"
    other_build.write_bytes(b"old")
    other_release.write_bytes(b"other")
    first = data.options()
    assert "-XX:TieredStopAtLevel=1" in first and data.writing
    written = tmp_path / _option(first, "ArchiveClassesAtExit").rsplit("/", 1)[1]
    process = _Process(writes=written)
    data.stop(process)
    assert process.calls == [("terminate", class_data.DUMP_TIMEOUT)]  # given time to exit and write
    assert data.path.read_bytes() == b"archive" and not written.exists()
    assert not other_build.exists() and other_release.exists()  # the same release's stale archive goes
    again = data.options()
    assert _option(again, "SharedArchiveFile") == str(data.path) and not data.writing
    process = _Process()
    data.stop(process)
    assert process.calls == ["kill"]  # its data is thrown away: no clean shutdown to wait for


def test_an_archive_is_kept_only_from_a_jvm_that_exited_by_itself(tmp_path):
    data = ClassData("pulsar-broker-4.0.7", sys.executable, "a.jar", (), root=tmp_path)
    written = tmp_path / _option(data.options(), "ArchiveClassesAtExit").rsplit("/", 1)[1]
    data.stop(_Process(writes=written, exits_by_itself=False))  # killed at the bound: maybe half a file
    assert not data.path.exists() and not written.exists()
    assert data.writing is False and "ArchiveClassesAtExit" in " ".join(data.options())  # written next time


def test_the_archive_belongs_to_one_jvm_build_classpath_and_options(tmp_path):
    def path(java, classpath, options):
        return ClassData("x", java, classpath, options, root=tmp_path).path
    base = path(sys.executable, "a.jar", ("-Xmx1g",))
    assert base == path(sys.executable, "a.jar", ("-Xmx1g",))
    other_java = tmp_path / "java"
    shutil.copy(sys.executable, other_java)
    assert len({base, path(sys.executable, "b.jar", ("-Xmx1g",)), path(sys.executable, "a.jar", ("-Xmx2g",)),
                path(str(other_java), "a.jar", ("-Xmx1g",))}) == 4


def test_kill_does_not_wait_for_a_process_that_ignores_sigterm(tmp_path):
    script = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"
    process = ManagedProcess([sys.executable, "-c", script], name="stubborn")
    process.start(lambda lines: True if "up" in lines else None, 30)
    process.kill()
    assert not process.alive() and process.popen.returncode == -9
    process = ManagedProcess([sys.executable, "-c", script], name="stubborn")
    process.start(lambda lines: True if "up" in lines else None, 30)
    assert process.terminate(0.2) is False  # it would not go by itself: killed at the bound
    assert not process.alive()
    process = ManagedProcess([sys.executable, "-c", "print('up', flush=True); import time; time.sleep(60)"],
                             name="polite")
    process.start(lambda lines: True if "up" in lines else None, 30)
    assert process.terminate(30) is True


def test_a_write_whose_harness_is_gone_is_swept(tmp_path):
    data = ClassData("x", sys.executable, "a.jar", (), root=tmp_path)
    gone = tmp_path / f".{data.path.name}.999999.1"  # no such process
    gone.write_bytes(b"half")
    data.options()
    assert not gone.exists()
