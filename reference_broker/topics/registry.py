"""The broker's loaded topics, by full name (what Pulsar keeps in BrokerService.topics).

Rule 1: the domain of the name picks the kind: ``persistent://`` loads a PersistentTopic (a log),
        ``non-persistent://`` a NonPersistentTopic (PIP-2: nothing stored).
"""

from __future__ import annotations

from typing import Union

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
