"""Shared by the spec tests: a spec folder written from small rows, with a local quotable source."""

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
    where: ../shared/doc.md
  remote-test:
    title: An upstream test
    where: pulsar-broker/src/test/SomeTest.java
"""
FEATURES = "schema: 1\nfeatures:\n  pip-344:\n    title: PIP-344\n    status: shipped\n  pip-35:\n    title: PIP-35\n    status: tentative\n"


def make_spec_dir(tmp_path):
    """<tmp>/proj/spec with sources.yaml and features.yaml, and <tmp>/shared/doc.md to quote from."""
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "doc.md").write_text("The answer is\n   `{partitions: 2}` for case 2.\n")
    directory = tmp_path / "proj" / "spec"
    directory.mkdir(parents=True)
    (directory / "sources.yaml").write_text(SOURCES)
    (directory / "features.yaml").write_text(FEATURES)
    return directory


def write_rows(directory, *rows, feature="pip-344"):
    text = f'schema: 1\nfeature: {feature}\npip: "344"\ntables:\n  - name: t\n    title: T\n    rows:\n' + "".join(rows)
    (directory / "pip344.yaml").write_text(text)


def row(id="pip344-lint-001", source="quoted-doc", info="answer is `{partitions: 2}`", grade="MUST", partitions=2):
    return ROW.format(id=id, source=source, info=info, grade=grade, partitions=partitions)
