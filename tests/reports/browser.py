"""Headless Chromium (Debian's /usr/bin/chromium) for the page checks: screenshots and the DOM, bounded."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1400,1000"]
TIMEOUT_S = 90


def chromium() -> str:
    path = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if path is None:
        pytest.fail("chromium is not installed: run `make system-chromium` (apt-get install chromium)")
    return path


def _run(args: list[str], timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        process = subprocess.Popen([chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate(timeout=10)
            pytest.fail(f"chromium did not finish within {timeout} s: {args}")
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # helpers (zygote, GPU) it may leave behind
            except ProcessLookupError:
                pass
    return subprocess.CompletedProcess(args, process.returncode, out, err)


def screenshot(page: Path, png: Path, budget_ms: int = 5000) -> Path:
    png.parent.mkdir(parents=True, exist_ok=True)
    if png.exists():
        png.unlink()
    done = _run([f"--virtual-time-budget={budget_ms}", f"--screenshot={png}", page.resolve().as_uri()])
    assert png.exists() and png.stat().st_size > 10_000, f"no screenshot of {page}: {done.stderr[-2000:]}"
    return png


def dump_dom(page: Path, budget_ms: int = 5000) -> str:
    done = _run([f"--virtual-time-budget={budget_ms}", "--dump-dom", page.resolve().as_uri()])
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
