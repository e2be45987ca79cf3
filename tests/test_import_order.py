"""Imports go one way: spec -> model -> conformance -> reports, and the reference broker is a target.

- reference_broker may use the names and hashes it shares with the model (pulsar_naming) and the
  codec (pulsar_codec), and nothing of model/, spec/, conformance/ or reports/; otherwise "the
  broker agrees with the model" would prove nothing.
- pulsar_naming/ is neutral: the standard library and itself.
- pulsar_codec/ is sans-IO: protobuf, crc32c, the standard library and itself.
- model/ is pure: no project layer after it, no I/O libraries.
- reports/ reads results through conformance.results and nothing else of the project.
- the harness and everything before it (spec, model, conformance, reports) never import
  reference_broker or the mutation check's broken variants of it (mutation/): the broker is one
  target among others, reached over the wire and through its command line (or the variants'
  launcher); the harness speaks the protocol through pulsar_codec.
- mutation/ is test machinery around the broker: it may import the broker, which never imports
  it.
- spec/ is the first layer: data and its schema; it imports nothing else of the project.
"""

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("spec", "model", "pulsar_codec", "pulsar_naming", "reference_broker", "mutation", "conformance", "reports")
IO_LIBRARIES = {"asyncio", "socket", "selectors", "httpx", "pulsar", "uvicorn", "fastapi", "sqlite3", "kazoo",
                "subprocess", "threading"}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def modules(folder: str) -> list[Path]:
    return sorted(p for p in (ROOT / folder).rglob("*.py") if not p.name.endswith("_pb2.py"))


def project_imports(path: Path) -> set[str]:
    return {m for m in imports_of(path) if m.split(".")[0] in PROJECT}


@pytest.mark.parametrize("path", modules("reference_broker"), ids=str)
def test_reference_broker_uses_only_the_shared_names_and_the_codec(path):
    for module in project_imports(path):
        assert module.split(".")[0] in ("reference_broker", "pulsar_codec", "pulsar_naming"), f"{path} imports {module}"


@pytest.mark.parametrize("path", modules("pulsar_naming"), ids=str)
def test_the_shared_names_import_only_the_standard_library(path):
    stdlib = set(sys.stdlib_module_names)
    for module in imports_of(path):
        top = module.split(".")[0]
        assert top == "pulsar_naming" or (top in stdlib and top not in IO_LIBRARIES), f"{path} imports {module}"


@pytest.mark.parametrize("path", modules("pulsar_codec"), ids=str)
def test_codec_is_sans_io(path):
    stdlib = set(sys.stdlib_module_names)
    for module in imports_of(path):
        top = module.split(".")[0]
        assert top in {"pulsar_codec", "google", "crc32c", "__future__"} \
            or (top in stdlib and top not in IO_LIBRARIES), f"{path} imports {module}"


@pytest.mark.parametrize("path", modules("model"), ids=str)
def test_model_is_pure(path):
    for module in imports_of(path):
        top = module.split(".")[0]
        assert top not in IO_LIBRARIES, f"{path} imports {module}"
        assert top not in ("reference_broker", "conformance", "reports"), f"{path} imports {module}"


@pytest.mark.parametrize("path", modules("spec"), ids=str)
def test_spec_imports_nothing_after_it(path):
    for module in project_imports(path):
        assert module.split(".")[0] == "spec", f"{path} imports {module}"


@pytest.mark.parametrize("path", modules("reports"), ids=str)
def test_reports_read_only_the_results_schema(path):
    for module in project_imports(path):
        assert module.split(".")[0] == "reports" or module.startswith("conformance.results"), f"{path}: {module}"


HARNESS = ("spec", "model", "conformance", "reports")


@pytest.mark.parametrize("path", [path for folder in HARNESS for path in modules(folder)], ids=str)
def test_the_harness_never_imports_the_reference_broker_or_its_variants(path):
    for module in project_imports(path):
        assert module.split(".")[0] not in ("reference_broker", "mutation"), f"{path} imports {module}"


@pytest.mark.parametrize("path", modules("conformance"), ids=str)
def test_conformance_never_imports_reports(path):
    for module in project_imports(path):
        assert not module.startswith("reports"), f"{path} imports {module}"


@pytest.mark.parametrize("path", modules("mutation"), ids=str)
def test_mutation_uses_only_the_broker_and_itself(path):
    for module in project_imports(path):
        assert module.split(".")[0] in ("mutation", "reference_broker"), f"{path} imports {module}"


def test_the_walk_sees_every_layer():
    assert all(modules(folder) for folder in PROJECT)
