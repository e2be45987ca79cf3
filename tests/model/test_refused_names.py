"""model/refused_names.py: Pulsar's TopicName refusals, release by release."""

import pytest

from model.machine import apply, initial_state
from model.ops import GetPartitionedMetadata, Lookup
from model.outcomes import Partitions, RestError, ServerError
from model.refused_names import refusal

V3_0, V4_0, V4_2 = (3, 0, 7), (4, 0, 7), (4, 2, 4)
SHORT = "it should be in the format of <tenant>/<namespace>/<topic> or <topic>"


@pytest.mark.parametrize("name", ["t", "public/default/t", "persistent://public/ns/t", "non-persistent://a/b/c",
                                  "PERSISTENT://public/ns/t", "Non-Persistent://public/ns/t",
                                  "pers\u0131stent://public/ns/t", "PERS\u0130STENT://public/ns/t",
                                  "per\u017fistent://public/ns/t", "persistent://public/ns/t-partition-01",
                                  "persistent://a/b/c?d", "persistent://-=:._/b/c"])
def test_names_every_release_accepts(name):
    assert [refusal(name, r) for r in (V3_0, V4_0, V4_2)] == [None, None, None]


@pytest.mark.parametrize("name, v3_0, v4_0, v4_2", [
    ("persistent://bad$tenant/ns/t", *["Invalid named entity: bad$tenant"] * 3),
    ("persistent://t\u00e9/ns/t", *["Invalid named entity: t\u00e9"] * 3),  # Java's \w is ASCII
    ("persistent://public\n/ns/t", *["Invalid named entity: public\n"] * 3),  # Matcher#matches: the whole name
    ("persistent://public/ns/ ", None, *["Invalid topic name: persistent://public/ns/ . Topic local name must not "
                                         "be blank."] * 2),
    ("persistent://public/ns/", "Invalid topic name: persistent://public/ns/",
     *["Invalid topic name: persistent://public/ns/. Topic local name must not be blank."] * 2),
    ("persistent:///ns/t", "Invalid namespace format. namespace: /ns", "Invalid namespace format. namespace: /ns",
     "Invalid topic name /ns/t"),
    ("persistent://public//t", "Invalid namespace format. namespace: public/",
     "Invalid namespace format. namespace: public/", "Invalid topic name public//t"),
    ("nonpersistent://public/ns/t", *["Invalid topic domain: 'nonpersistent'"] * 3),
    ("persistent\u00df://public/ns/t", *["Invalid topic domain: 'persistent\u00df'"] * 3),  # no one-char mapping
    ("public/ns", *[f"Invalid short topic name 'public/ns', {SHORT}"] * 3),
    ("a//b", f"Invalid short topic name 'a//b', {SHORT}", f"Invalid short topic name 'a//b', {SHORT}",
     "Invalid topic name a//b"),
    ("persistent://public/ns/extra/t", None, None,
     "V1 topic names (with cluster component) are no longer supported. Please use the V2 format: "
     "'<domain>://tenant/namespace/topic'. Got: persistent://public/ns/extra/t"),
])
def test_refusals_by_release(name, v3_0, v4_0, v4_2):
    assert (refusal(name, V3_0), refusal(name, V4_0), refusal(name, V4_2)) == (v3_0, v4_0, v4_2)


def test_both_apis_refuse_before_looking_at_namespaces_or_topics():
    state = initial_state()
    name = "persistent://bad$tenant/ns/t"
    assert apply(state, GetPartitionedMetadata(name, "binary", True))[1] == ServerError(
        "InvalidTopicName", "Invalid topic name: Invalid named entity: bad$tenant")
    assert apply(state, GetPartitionedMetadata(name, "rest", True))[1] == RestError(412, "Topic name is not valid")
    assert apply(state, Lookup(name, "binary"))[1] == ServerError(
        "InvalidTopicName", "Invalid topic name: Invalid named entity: bad$tenant")


def test_a_blank_local_name_is_an_ordinary_name_before_4_0():
    state = initial_state(release=V3_0)
    assert apply(state, GetPartitionedMetadata("persistent://public/default/ ", "binary", True))[1] == Partitions(0)
