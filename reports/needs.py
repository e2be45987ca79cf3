"""What the reports stage needs beyond the core install, and the command that brings each.

Spark runs in a JVM (Java 17 or newer for PySpark 4) with its tasks in Python workers that use pyarrow;
the pages draw with matplotlib; the Allure HTML is rendered by the npm ``allure`` CLI. An installed
``pulsar-conformance`` has none of these unless asked for, so the stage checks them before it starts
anything and names each missing one with its fix, instead of failing inside Spark.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Optional

PYTHON_PACKAGES = ("pyspark", "pyarrow", "matplotlib")
JAVA_MINIMUM = 17
EXTRA_HINT = "pip install 'pulsar-conformance[reports]'"
JAVA_HINT = ("install a Java 17+ runtime (Debian: apt-get install openjdk-17-jre-headless) "
             "or put its bin/ on PATH")
PACKAGE_JSON = Path(__file__).resolve().parents[1] / "package.json"


def missing_python_packages() -> list[str]:
    return [name for name in PYTHON_PACKAGES if importlib.util.find_spec(name) is None]


def java_major(version_text: str) -> Optional[int]:
    """The major version in ``java -version``'s text: 'version "17.0.9"' -> 17, 'version "1.8.0_392"' -> 8."""
    found = re.search(r'version "(\d+)(?:\.(\d+))?', version_text)
    if found is None:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major


def java_problem() -> Optional[str]:
    java = shutil.which("java")
    if java is None:
        return f"java is not on PATH: Spark needs Java {JAVA_MINIMUM}+; {JAVA_HINT}"
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{java} -version did not answer ({exc}); {JAVA_HINT}"
    major = java_major(done.stderr + done.stdout)
    if major is None or major < JAVA_MINIMUM:
        return f"{java} is Java {major or '?'}, Spark needs {JAVA_MINIMUM}+; {JAVA_HINT}"
    return None


def spark_problems() -> list[str]:
    """Every reason the Spark job cannot start here, each with its fix; empty when it can."""
    problems = []
    missing = missing_python_packages()
    if missing:
        problems.append(f"Python package(s) {', '.join(missing)} missing: {EXTRA_HINT}")
    java = java_problem()
    if java:
        problems.append(java)
    return problems


def allure_hint() -> str:
    """How to get the allure CLI: the version this project pins when its package.json is at hand."""
    version = ""
    if PACKAGE_JSON.is_file():
        version = json.loads(PACKAGE_JSON.read_text(encoding="utf-8")).get("devDependencies", {}).get("allure", "")
    package = f"allure@{version}" if version else "allure"
    return (f"`npm install {package}` in the working folder (a clone: `make node_modules`), or pass "
            "--allure-cli PATH, or --no-allure")
