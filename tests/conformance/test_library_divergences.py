"""Known divergences of a client library (conformance/divergences.py, LIBRARY_PROFILES): they cover the
library's own cases on every target, the reference broker included, and never another library's."""

from dataclasses import replace
from types import SimpleNamespace

from conformance.divergences import KnownDivergences, library_entries

FILE = """schema: 1
target: pulsar-client-rust
title: "the pulsar crate"
divergences:
  - id: skips-metadata
    cases: [pip344-row-001, "pip344-row-002[rust-client-binary]"]
    releases: "*"
    kind: pip-deviation
    summary: "a summary"
    evidence: ["observed"]
"""


def test_a_row_id_stands_for_the_librarys_cases_only(tmp_path):
    (tmp_path / "pulsar-client-rust.yaml").write_text(FILE)
    [entry] = library_entries(tmp_path)
    assert "pip344-row-001[rust-client-binary]" in entry.cases and "pip344-row-001[rust-admin]" in entry.cases
    assert not any("java" in case or "go-" in case for case in entry.cases)
    assert "pip344-row-002[rust-client-binary]" in entry.cases
    known = KnownDivergences(entry for entry in library_entries(tmp_path))
    assert known.covering("pip344-row-001[rust-client-binary]", "pip344-row-001", None) == entry
    assert known.covering("pip344-row-001[java-client-binary]", "pip344-row-001", None) is None


def test_every_target_gets_the_libraries_files_beside_its_own():
    reference = SimpleNamespace(divergence_profile=None, release=None, known_divergences=None)
    assert set(KnownDivergences.for_target(reference).entries) == set(library_entries())


def test_a_row_listed_whole_does_not_hide_a_librarys_entry_of_another_verdict(tmp_path):
    """A broker's entry lists a row whole (its failures); a library's entry lists that row's case of the
    library with the verdict indefinite: an indefinite record of that case names the library's entry."""
    (tmp_path / "pulsar-client-rust.yaml").write_text(FILE.replace(
        'kind: pip-deviation', 'kind: defect\n    verdict: indefinite'))
    [library] = library_entries(tmp_path)
    broker = replace(library, id="broker-wide", cases=("pip344-row-002",), verdict="failed")
    known = KnownDivergences((broker, library))
    case = "pip344-row-002[rust-client-binary]"
    assert known.covering_all(case, "pip344-row-002", None) == (broker, library)
    assert known.applies("indefinite", case, "pip344-row-002", None) == library
    assert known.applies("failed", case, "pip344-row-002", None) == broker
    assert known.applies("broken", case, "pip344-row-002", None) is None
