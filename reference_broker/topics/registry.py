"""The broker's loaded topics, by full name (what Pulsar keeps in BrokerService.topics)."""

from __future__ import annotations

from model.names import TopicName

from .persistent import PersistentTopic


class TopicRegistry:
    def __init__(self) -> None:
        self._topics: dict[str, PersistentTopic] = {}

    def get_or_load(self, topic: TopicName) -> PersistentTopic:
        key = str(topic)
        loaded = self._topics.get(key)
        if loaded is None:
            loaded = self._topics[key] = PersistentTopic(key, topic.partition_index)
        return loaded

    def get(self, topic: TopicName) -> PersistentTopic | None:
        return self._topics.get(str(topic))

    def unload(self, name: str) -> None:
        self._topics.pop(name, None)

    def names(self) -> list[str]:
        return sorted(self._topics)
