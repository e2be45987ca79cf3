"""The broker's loaded topics, by full name (what Pulsar keeps in BrokerService.topics).

Rule 1: the domain of the name picks the kind: ``persistent://`` loads a PersistentTopic (a log),
        ``non-persistent://`` a NonPersistentTopic (PIP-2: nothing stored).
Rule 2: a non-persistent topic with no producer and no subscription for ``max_idle`` seconds is
        unloaded by ``collect_inactive`` (Pulsar's inactive-topic check, run every
        ``brokerDeleteInactiveTopicsFrequencySeconds`` while ``brokerDeleteInactiveTopicsEnabled``):
        it stops being listed and its stats are gone, as on Pulsar. Until then it keeps its
        counters (testAccumulativeStats). Persistent topics are never collected: their log lives
        in this process only, and the metadata says they exist.
"""

from __future__ import annotations

import time
from typing import Optional, Union

from model.names import TopicName

from .non_persistent import NonPersistentTopic
from .persistent import PersistentTopic

LiveTopic = Union[PersistentTopic, NonPersistentTopic]


class TopicRegistry:
    def __init__(self) -> None:
        self._topics: dict[str, LiveTopic] = {}

    def get_or_load(self, topic: TopicName) -> LiveTopic:
        key = str(topic)
        loaded = self._topics.get(key)
        if loaded is None:
            kind = PersistentTopic if topic.persistent else NonPersistentTopic
            loaded = self._topics[key] = kind(key, topic.partition_index)
        return loaded

    def get(self, topic: TopicName) -> LiveTopic | None:
        return self._topics.get(str(topic))

    def unload(self, name: str) -> None:
        self._topics.pop(name, None)

    def names(self) -> list[str]:
        return sorted(self._topics)

    def collect_inactive(self, max_idle: float, now: Optional[float] = None) -> list[str]:
        """Rule 2: unloads the non-persistent topics idle for ``max_idle`` seconds; returns their names."""
        now = time.monotonic() if now is None else now
        idle = [name for name, topic in self._topics.items()
                if isinstance(topic, NonPersistentTopic) and topic.is_idle() and now - topic.last_active >= max_idle]
        for name in idle:
            del self._topics[name]
        return idle
