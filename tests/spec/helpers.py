"""Shared by the spec tests: a spec folder written from small rows, with a quotable file of the project
and an upstream file recorded in the folder's upstream manifest."""

import os
from pathlib import Path

import pytest

from spec import citations, upstream_check

# Where the upstream checks find Apache Pulsar's source-release archives (spec/upstream_check.py);
# without them those tests skip.
MAVEN_REPO = Path(os.environ.get("PULSAR_MAVEN_REPO", Path.home() / ".m2" / "repository"))

ROW = """\
      - id: {id}
        description: A lint test row
        source: [{source}]
        info: "{info}"
        grade: {grade}
        era: pip344
        apis: [rest, binary]
        setup: {{topics: [{{name: t, partitions: 2}}]}}
        operation: {{op: GetPartitionedMetadata, topic: t, auto_create: true}}
        stated: {{partitions: {partitions}}}
"""
SOURCES = """\
schema: 1
sources:
  quoted-doc:
    title: A local document
    where: docs/doc.md
  remote-test:
    title: An upstream test
    where: apache/pulsar@v4.0.7:pulsar-broker/src/test/SomeTest.java
"""
REMOTE_QUOTE = "assertEquals(partitions, 2);"
FEATURES = "schema: 1\nfeatures:\n  pip-344:\n    title: PIP-344\n    status: shipped\n  pip-35:\n    title: PIP-35\n    status: tentative\n"


def make_spec_dir(tmp_path):
    """<tmp>/proj/spec with sources.yaml, features.yaml and upstream.yaml (the upstream test holding
    REMOTE_QUOTE), and <tmp>/proj/docs/doc.md to quote from."""
    (tmp_path / "proj" / "docs").mkdir(parents=True)
    (tmp_path / "proj" / "docs" / "doc.md").write_text("The answer is\n   `{partitions: 2}` for case 2.\n")
    directory = tmp_path / "proj" / "spec"
    directory.mkdir(parents=True)
    (directory / "sources.yaml").write_text(SOURCES)
    (directory / "features.yaml").write_text(FEATURES)
    (directory / citations.MANIFEST).write_text(citations.dump_manifest({
        "apache/pulsar@v4.0.7:pulsar-broker/src/test/SomeTest.java":
            {"blob": "0" * 40, "quotes": [citations.quote_digest(REMOTE_QUOTE)]}}))
    return directory


def write_rows(directory, *rows, feature="pip-344"):
    text = f'schema: 1\nfeature: {feature}\npip: "344"\ntables:\n  - name: t\n    title: T\n    rows:\n' + "".join(rows)
    (directory / "pip344.yaml").write_text(text)


def row(id="pip344-lint-001", source="quoted-doc", info="answer is `{partitions: 2}`", grade="MUST", partitions=2):
    return ROW.format(id=id, source=source, info=info, grade=grade, partitions=partitions)


def upstream_text(where: str) -> str:
    """The text of an upstream file at its tag, read from a source-release archive; skips the test when
    this machine has none."""
    data = upstream_check.reader(MAVEN_REPO, None)(where)
    if data is None:
        pytest.skip(f"no source-release archive under {MAVEN_REPO} holds {where}")
    return data.decode("utf-8")
