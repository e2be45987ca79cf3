"""The ``topics_pattern`` of GET_TOPICS_OF_NAMESPACE: compiled and matched as Pulsar's broker does,
in time linear in the names matched.

What this module owns: turning a client's pattern into a matcher and filtering a namespace's
topic list with it. It decides nothing about which topics exist (``BrokerCore`` does) and never
touches the event loop: ``filter_topics`` is what a worker thread runs.

- whether to filter (``evaluated``): a pattern longer than ``subscriptionPatternMaxLength`` is
  not evaluated: the whole list is answered with ``filtered=false`` and one log line, as
  ServerCnx#handleGetTopicsOfNamespace @ v4.0.7 does ("if (topicsPattern.get().length() <=
  maxSubscriptionPatternLength) { filterTopics = true; ...} else { log.info(... was longer than
  maximum {}.") }"); so is any pattern while ``enableBrokerSideSubscriptionPatternEvaluation`` is
  false.
- matching (``filter_topics``) follows TopicList#filterTopics and
  TopicList#removeTopicDomainScheme @ v4.0.7: the scheme (``persistent://``,
  ``non-persistent://``) is cut from the pattern, and the pattern must match the whole of each
  topic's partitioned base name without its scheme (``tenant/ns/local``); ``.*`` matches
  everything (TopicsPatternFactory#matchAll).
- RE2 only (``compile_pattern``): patterns are compiled with RE2, which matches in linear time:
  Pulsar's default ``topicsPatternRegexImplementation=RE2J_WITH_JDK_FALLBACK`` retries a pattern
  RE2 refuses (a look-around, a back-reference) with java.util.regex, whose backtracking a crafted
  pattern turns exponential; the reference broker answers such a pattern as Pulsar answers one
  that compiles with neither: MetadataError (the ``exceptionally`` branch of
  handleGetTopicsOfNamespace wraps it in ServerMetadataException) naming the problem.
"""

from __future__ import annotations

from typing import Callable, Optional

import re2

from pulsar_naming.names import PARTITION_SUFFIX

SCHEME_SEPARATOR = "://"
ALL_TOPICS_PATTERN = ".*"  # TopicList.ALL_TOPICS_PATTERN

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is answered to its client, not written to stderr


class PatternError(ValueError):
    """A pattern that cannot be evaluated; the message says why and what to send instead."""


def remove_topic_domain_scheme(pattern: str) -> str:
    """TopicList#removeTopicDomainScheme: ``persistent://t/ns/x.*`` -> ``t/ns/x.*``."""
    if SCHEME_SEPARATOR not in pattern:
        return pattern
    # Java's Pattern.split drops trailing empty parts, so "persistent://" has no part 1.
    parts = pattern.split(SCHEME_SEPARATOR)
    while parts and parts[-1] == "":
        parts.pop()
    if len(parts) < 2:
        raise PatternError(f"Invalid topics_pattern {pattern!r}: nothing follows {SCHEME_SEPARATOR!r}")
    prefix, rest = parts[0], parts[1]
    for domain in ("non-persistent", "persistent"):
        if prefix == domain:
            return rest
        if prefix.endswith(domain):
            return prefix[: -len(domain)] + rest
    raise PatternError(f"Does not support topic domain: {prefix}")


def compile_pattern(pattern: str) -> Callable[[str], bool]:
    """A predicate over ``tenant/ns/local`` names; PatternError when RE2 refuses it (no JDK fallback)."""
    regex = remove_topic_domain_scheme(pattern)
    if regex == ALL_TOPICS_PATTERN:
        return lambda name: True
    try:
        compiled = re2.compile(regex, _OPTIONS)
    except re2.error as exc:
        detail = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else exc
        raise PatternError(f"Invalid topics_pattern {pattern!r}: {detail} (the broker evaluates patterns with "
                           "RE2 syntax, without look-arounds or back-references)") from None
    return lambda name: compiled.fullmatch(name) is not None


def _base_without_scheme(topic: str) -> str:
    name = topic.split(SCHEME_SEPARATOR, 1)[-1]
    base, sep, index = name.rpartition(PARTITION_SUFFIX)
    return base if sep and index.isdigit() else name


def filter_topics(topics: list[str], pattern: str) -> list[str]:
    """The topics whose partitioned base name matches ``pattern`` in whole; runs off the event loop."""
    matches = compile_pattern(pattern)
    return [topic for topic in topics if matches(_base_without_scheme(topic))]


def evaluated(pattern: Optional[str], max_length: int, enabled: bool = True) -> bool:
    """Whether the broker filters by ``pattern`` at all."""
    # Java's String#length counts UTF-16 code units.
    return enabled and pattern is not None and len(pattern.encode("utf-16-le")) // 2 <= max_length
