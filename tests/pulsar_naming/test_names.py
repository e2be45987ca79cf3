"""pulsar_naming.names: parsing (``TopicName.parse``, ``partition_index``, ``check_named_entity``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from pulsar_naming.names import InvalidName, NamespaceName, TopicName, java_parse_integer, pulsar_refusal


@pytest.mark.parametrize("text, full", [
    ("t", "persistent://public/default/t"),
    ("tn/ns/t", "persistent://tn/ns/t"),
    ("non-persistent://tn/ns/t-partition-2", "non-persistent://tn/ns/t-partition-2"),
    # TopicDomain#getEnum ignores case as String#equalsIgnoreCase does, a dotless i included
    ("PERSISTENT://tn/ns/t", "persistent://tn/ns/t"),
    ("Non-Pers\u0131stent://tn/ns/t", "non-persistent://tn/ns/t"),
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


@pytest.mark.parametrize("local, index, base", [
    ("t-partition-1", 1, "t"),
    ("t-partition-\u0661", 1, "t"),            # Integer.parseInt reads Arabic-Indic digits
    ("t-partition-\uff11\uff10", 10, "t"),      # and full-width ones
    ("t-partition-\U0001d7cf", -1, None),        # two UTF-16 chars in Java: not a digit to parseInt
    ("t-partition-1\n", -1, None),               # the whole text after the suffix must parse
    ("t-partition-+1", -1, None),                # parsed, but not written as String.valueOf writes 1
    ("t-partition-01", -1, None),
    ("t-partition-2147483648", -1, None),
    ("a-partition-1-partition-2", 2, "a-partition-1"),  # the last suffix counts
    ("-partition-1", 1, ""),                     # Java's substringAfterLast needs nothing before it
])
def test_partition_index_as_get_partition_index_reads_it(local, index, base):
    name = TopicName("persistent", "tn", "ns", local)
    assert name.partition_index == index
    assert name.partitioned_base.local_name == (local if base is None else base)


@pytest.mark.parametrize("text", ["persistent://tn\n/ns/t", "persistent://tn/ns\n/t"])
def test_a_named_entity_is_matched_whole_so_a_final_line_feed_is_refused(text):
    with pytest.raises(InvalidName):
        TopicName.parse(text)


@pytest.mark.parametrize("text, bits, value", [
    ("7", 32, 7), ("+7", 32, 7), ("-7", 32, -7), ("\u0667", 32, 7), ("-\uff17", 64, -7),
    ("2147483647", 32, 2147483647), ("2147483648", 32, None), ("-2147483648", 32, -2147483648),
    ("2147483648", 64, 2147483648), ("9223372036854775808", 64, None),
    ("", 32, None), ("+", 32, None), ("7\n", 32, None), (" 7", 32, None), ("1_0", 32, None), ("\U0001d7d5", 32, None),
])
def test_java_parse_integer_reads_what_integer_and_long_parse(text, bits, value):
    assert java_parse_integer(text, bits) == value


_DOMAINS_AS_WRITTEN = st.sampled_from(["", "persistent://", "PERSISTENT://", "Non-Persistent://", "pers\u0131stent://",
                                       "nonpersistent://", "://", "persistent:/"])
_CHARS = st.sampled_from(["a", "B", "-", "_", ".", "=", ":", "0", "\u0661", " ", "\t", "\n", "\u0131", "\u017f",
                          "\u00e9", "\u00df", "-partition-1", "%"])
_SEGMENTS = st.lists(st.lists(_CHARS, max_size=4).map("".join), min_size=1, max_size=5).map("/".join)


@settings(max_examples=3000, deadline=None)
@given(_DOMAINS_AS_WRITTEN, _SEGMENTS)
def test_every_name_pulsar_accepts_parses(domain, segments):
    """The reference broker asks pulsar_refusal first and then TopicName.parse; the second must
    never refuse what the first accepted, or a broker built on both refuses more than Pulsar."""
    text = domain + segments
    if pulsar_refusal(text) is None:
        TopicName.parse(text)
