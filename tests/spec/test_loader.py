import pytest

from spec.schema import APIS, SpecError, load_file, load_rows
from tests.spec.helpers import upstream_text


GOOD_ROW = """\
      - id: pip344-test-001
        description: A row that loads
        source: [seed-344/metadata-table/case-3]
        info: "quoted"
        grade: MUST
        era: pip344
        apis: [rest, binary]
        setup: {broker: {allowAutoTopicCreation: "true"}, topics: [{name: t, partitions: 0}]}
        operation: {op: GetPartitionedMetadata, topic: t, auto_create: true}
        observe: [{op: ListPartitionedTopics}]
        stated: {partitions: 0, metadata_created: false}
"""


def spec_text(rows: str) -> str:
    return "schema: 1\nfeature: pip-344\npip: \"344\"\ntables:\n  - name: t\n    title: T\n    rows:\n" + rows


def write(tmp_path, rows: str):
    path = tmp_path / "pip999.yaml"
    path.write_text(spec_text(rows))
    return path


def test_a_good_row_loads(tmp_path):
    (row,) = load_file(write(tmp_path, GOOD_ROW)).rows
    assert row.id == "pip344-test-001" and row.pip == "344" and row.table == "pip-344/t"
    assert row.apis == ("rest", "binary") and row.line == 8
    assert row.operation_json() == {"op": "GetPartitionedMetadata", "auto_create": True, "topic": "t"}
    assert row.stated_json() == {"metadata_created": False, "partitions": 0}
    assert dict(row.setup.broker) == {"allowAutoTopicCreation": "true"}


# Each case: (text to replace in GOOD_ROW, replacement, line of the error in the file, message part).
# GOOD_ROW starts on line 8 of the file.
MALFORMED = [
    ("id: pip344-test-001", "id: PIP344_test", 8, "must look like pip344-seed-new-003"),
    ("description: A row that loads", "description: " + "x" * 101, 9, "keep it <= 100"),
    ("grade: MUST", "grade: MAY", 12, "grade must be one of MUST, SHOULD"),
    ("era: pip344", "era: 3.0.6", 13, "era must be one of"),
    ("apis: [rest, binary]", "apis: [rest, client-http]", 14, "cannot be performed through client-http"),
    ("apis: [rest, binary]", "apis: [rest, rest]", 14, "lists an api twice"),
    ('{allowAutoTopicCreation: "true"}', "{allowAutoTopicCreation: true}", 15, "must be a quoted string"),
    ("{name: t, partitions: 0}", "{name: public/default/t, partitions: 0}", 15, "must be a local name"),
    ("{name: t, partitions: 0}", "{name: t, partitions: -2}", 15, "partitions must be an int >= 0"),
    ("topic: t, auto_create", "topic: 'persistent://public/default/t', auto_create", 16, "not a local name"),
    ("topic: t, auto_create", "topic: 'Persistent://{ns}/a/t', auto_create", 16, "not a local name"),
    ("topic: t, auto_create: true}", "topic: t, auto_create: yes-please}", 16, "auto_create must be bool"),
    ("{op: GetPartitionedMetadata,", "{op: GetPartitionMetadata,", 16, "op must be one of"),
    ("topic: t, auto_create: true}", "topic: t, api: rest}", 16, "unknown field 'api'"),
    ("{op: GetPartitionedMetadata, topic: t, auto_create: true}", "{op: SetBrokerConfig, key: a, value: b}", 16,
     "acts outside the per-case namespace"),
    ("observe: [{op: ListPartitionedTopics}]", "observe: [{op: ListTopics}]", 18, "needs an observe step ListPartitionedTopics"),
    ("stated: {partitions: 0,", "stated: {partition: 0,", 18, "stated key 'partition'"),
    ("        setup:", "        colour: red\n        setup:", 15, "unknown field 'colour'"),
    # the override is written either by its fields or as a raw body, never both
    ("{op: GetPartitionedMetadata, topic: t, auto_create: true}",
     "{op: SetAutoTopicCreation, body: '{}', allow_auto_topic_creation: true}", 16,
     "unknown field 'allow_auto_topic_creation'"),
    ("{op: GetPartitionedMetadata, topic: t, auto_create: true}",
     "{op: SetAutoTopicCreation, allow_auto_topic_creation: true}", 16, "lacks topic_type"),
    ("{op: GetPartitionedMetadata, topic: t, auto_create: true}", "{op: SetAutoTopicCreation, body: []}", 16,
     "body must be str"),
]


@pytest.mark.parametrize("old, new, line, message", MALFORMED)
def test_malformed_rows_are_refused_with_file_and_line(tmp_path, old, new, line, message):
    assert old in GOOD_ROW
    path = write(tmp_path, GOOD_ROW.replace(old, new))
    with pytest.raises(SpecError) as error:
        load_file(path)
    assert str(error.value).startswith(f"{path}:{line}: "), str(error.value)
    assert message in str(error.value)


def test_a_domain_written_otherwise_in_the_case_namespace_loads_for_the_model_to_judge(tmp_path):
    (row,) = load_file(write(tmp_path, GOOD_ROW.replace("topic: t,", "topic: 'PERSISTENT://{ns}/t',"))).rows
    assert row.operation_json()["topic"] == "PERSISTENT://{ns}/t"


def test_missing_field_names_the_row(tmp_path):
    path = write(tmp_path, GOOD_ROW.replace("        grade: MUST\n", ""))
    with pytest.raises(SpecError, match=r"pip999.yaml:8: pip344-test-001: row lacks grade"):
        load_file(path)


def test_duplicate_keys_and_bad_yaml_are_refused(tmp_path):
    path = write(tmp_path, GOOD_ROW.replace("        grade: MUST\n", "        grade: MUST\n        grade: SHOULD\n"))
    with pytest.raises(SpecError, match=r"pip999.yaml:13: duplicate key 'grade'"):
        load_file(path)
    path.write_text(spec_text(GOOD_ROW) + "  - [unbalanced\n")
    with pytest.raises(SpecError, match="not valid YAML"):
        load_file(path)


def test_a_missing_namespace_cannot_hold_topics(tmp_path):
    path = write(tmp_path, GOOD_ROW.replace("setup: {", "setup: {namespace: missing, "))
    with pytest.raises(SpecError, match=":15: .*need the namespace"):
        load_file(path)


def test_wrong_schema_version_is_refused(tmp_path):
    path = tmp_path / "pip999.yaml"
    path.write_text(spec_text(GOOD_ROW).replace("schema: 1", "schema: 2"))
    with pytest.raises(SpecError, match=r":1: .*schema must be 1"):
        load_file(path)


def test_all_real_rows_load():
    rows = load_rows()
    assert len(rows) > 150
    assert len([r for r in rows if r.pip == "2"]) >= 45
    assert {r.era for r in rows} == {"pip344", "pre-pip344", "any"}
    assert {a for r in rows for a in r.apis} == set(APIS)  # every api has rows


def test_the_pip_numbers_case_5_twice_and_both_rows_exist():
    pip = upstream_text("apache/pulsar@v4.0.7:pip/pip-344.md")
    table = pip.split("PulsarClient.getPartitionsForTopic(String, boolean)`.", 1)[1]
    assert [line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| 5 ")] == ["5", "5"]
    ids = {r.id for r in load_rows()}
    assert {"pip344-seed-list-005", "pip344-seed-list-006"} <= ids


def test_fixture_line_arithmetic():
    # MALFORMED's line numbers assume GOOD_ROW starts on line 8 of the file
    assert spec_text(GOOD_ROW).splitlines()[7].strip() == "- id: pip344-test-001"
