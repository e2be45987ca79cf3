"""model.names: parsing (Rules 1-4)."""

from __future__ import annotations

import pytest

from model.names import InvalidName, NamespaceName, TopicName


@pytest.mark.parametrize("text, full", [
    ("t", "persistent://public/default/t"),
    ("tn/ns/t", "persistent://tn/ns/t"),
    ("non-persistent://tn/ns/t-partition-2", "non-persistent://tn/ns/t-partition-2"),
])
def test_short_and_full_names(text, full):
    assert str(TopicName.parse(text)) == full


@pytest.mark.parametrize("text", ["", "a://tn/ns/t", "tn/cl/ns/t", "tn/ns/", "t n/ns/t", "tn//t"])
def test_invalid_names_are_refused_every_time(text):
    for _ in range(2):  # a refusal is never cached as a success
        with pytest.raises(InvalidName):
            TopicName.parse(text)


def test_a_name_parsed_twice_is_equal_and_hashes_alike():
    first = TopicName.parse("persistent://tn/ns/t-partition-3")
    again = TopicName.parse("persistent://tn/ns/t-partition-3")
    assert again == first and hash(again) == hash(first)
    assert (first.partition_index, str(first.partitioned_base), first.namespace_name) == \
           (3, "persistent://tn/ns/t", NamespaceName("tn", "ns"))


def test_derived_names_do_not_change_equality_or_order():
    a, b = TopicName.parse("tn/ns/a%b"), TopicName.parse("tn/ns/a%b")
    assert a.encoded_local_name == "a%25b"
    assert a == b and not a < b and not b < a and {a: 1}[b] == 1
