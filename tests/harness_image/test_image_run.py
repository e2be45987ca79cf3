"""The harness image for real: built (``python -m harness_image.build``, as ``make image`` runs it;
the first time on a machine it makes the Debian base too), run with host networking against a
reference broker started beside it as a ``url:`` broker, exactly as docs/ci.md tells a user to run
it; the same run from the clone against another such broker; every case's verdict the same. Then
the image's report stage (Spark, Allure) over its own results. An engine is started for it when
none answers, and stopped again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from conformance import verdicts as v
from conformance.results import read_results
from conformance.targets.process import ManagedProcess
from conformance.targets.reference import ready_urls
from tests.docker_engine import engine  # noqa: F401 - the module's fixture

REPO = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT = 2700  # a first build on a machine: the Debian base, the wheels, the image
RUN_TIMEOUT = 900


@contextmanager
def reference_broker():
    """A reference broker on ephemeral loopback ports, as a user's own broker would run beside the image."""
    process = ManagedProcess([sys.executable, "-m", "reference_broker", "--broker-port", "0", "--web-port", "0"],
                             name="reference broker")
    service, admin = process.start(ready_urls, 60)
    try:
        yield f"url:{service},{admin}"
    finally:
        process.stop()


def _docker(argv: list[str], name: str, timeout: float) -> subprocess.CompletedProcess:
    """``docker run --rm --name NAME ...``, its container removed even when the wait is cut short."""
    try:
        return subprocess.run(["docker", "run", "--rm", "--name", name, *argv], capture_output=True, text=True,
                              timeout=timeout)
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)


def _verdicts(results: Path) -> dict[tuple[str, str], str]:
    return {(r.case_id, r.driver): r.verdict for r in read_results(results)}


@pytest.mark.slow
@pytest.mark.timeout(BUILD_TIMEOUT + 3 * RUN_TIMEOUT)
def test_the_image_judges_a_broker_beside_it_as_the_clone_does(engine, tmp_path):
    ref_file = tmp_path / "image-ref"
    started = time.monotonic()
    built = subprocess.run([sys.executable, "-m", "harness_image.build", "--ref-file", str(ref_file)], cwd=REPO,
                           capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    image = ref_file.read_text().strip()
    print(f"image {image} ready in {time.monotonic() - started:.1f} s: {built.stderr.strip().splitlines()[-1]}")

    out = tmp_path / "image"
    out.mkdir()
    name = f"pulsar-conformance-test-{os.getpid()}"
    with reference_broker() as target:
        in_image = _docker(["--network", "host", "-v", f"{out}:/out", image,
                            "run", "--target", target, "--out", "/out", "--run-id", "image"], name, RUN_TIMEOUT)
    with reference_broker() as target:
        in_clone = subprocess.run([sys.executable, "-m", "conformance", "run", "--target", target,
                                   "--out", str(tmp_path / "clone"), "--run-id", "clone"],
                                  cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT)

    image_verdicts = _verdicts(out / "results" / "image.jsonl")
    clone_verdicts = _verdicts(tmp_path / "clone" / "results" / "clone.jsonl")
    assert len(image_verdicts) > 700, in_image.stdout[-3000:] + in_image.stderr[-3000:]
    differing = sorted((key, clone_verdicts.get(key), verdict) for key, verdict in image_verdicts.items()
                       if clone_verdicts.get(key) != verdict)
    assert not differing and image_verdicts.keys() == clone_verdicts.keys(), differing[:20]
    assert in_image.returncode == in_clone.returncode == 0, in_image.stdout[-3000:] + in_clone.stdout[-3000:]
    # The image's own drivers judged cases: the Java client and admin, the official Python client,
    # the Go and Rust clients' drivers.
    passed_by = {driver for (_, driver), verdict in image_verdicts.items() if verdict == v.PASSED}
    assert {"wire", "rest", "client", "java-client", "java-admin", "go-client", "go-admin",
            "rust-client"} <= passed_by, passed_by
    assert (out / "junit.xml").is_file()

    report = _docker(["-v", f"{out}:/out", image, "report", "--out", "/out", "--quiet"], name, RUN_TIMEOUT)
    assert report.returncode == 0, report.stdout[-3000:] + report.stderr[-3000:]
    assert (out / "summary.html").is_file() and (out / "allure-report" / "index.html").is_file()
    if shutil.which("docker"):
        left = subprocess.run(["docker", "ps", "-aq", "--filter", f"name={name}"], capture_output=True, text=True,
                              timeout=60)
        assert left.stdout.strip() == ""
