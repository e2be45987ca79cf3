"""The broker's loaded topics, by full name (what Pulsar keeps in BrokerService.topics).

- the domain of the name picks the kind: ``persistent://`` loads a PersistentTopic (a log),
  ``non-persistent://`` a NonPersistentTopic (PIP-2: nothing stored).
- a non-persistent topic with no producer and no subscription for ``max_idle`` seconds is
  unloaded by ``collect_inactive`` (Pulsar's inactive-topic check, run every
  ``brokerDeleteInactiveTopicsFrequencySeconds`` while ``brokerDeleteInactiveTopicsEnabled``): it
  stops being listed and its stats are gone, as on Pulsar. Until then it keeps its counters
  (testAccumulativeStats). Persistent topics are never collected: their log lives in this
  process only, and the metadata says they exist.
- an unloaded persistent topic frees its log at once (``PersistentTopic.release``), and the
  allocator is asked to hand the freed memory back to the system (``unload``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import time
from typing import Optional, Union

from pulsar_naming.names import TopicName

from .non_persistent import NonPersistentTopic
from .persistent import PersistentTopic

LiveTopic = Union[PersistentTopic, NonPersistentTopic]


def _allocator_trim():
    """glibc's malloc_trim, which returns freed heap pages to the system; a no-op elsewhere."""
    try:
        trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return lambda: None
    return lambda: trim(0)


_trim_allocator = _allocator_trim()


class TopicRegistry:
    def __init__(self, policy=None) -> None:
        """``policy``: the persistent topics' storage.StoragePolicy (None: they keep every entry)."""
        self._topics: dict[str, LiveTopic] = {}
        self.policy = policy

    def get_or_load(self, topic: TopicName) -> LiveTopic:
        key = str(topic)
        loaded = self._topics.get(key)
        if loaded is None:
            if topic.persistent:
                loaded = PersistentTopic(key, topic.partition_index, self.policy)
            else:
                loaded = NonPersistentTopic(key, topic.partition_index)
            self._topics[key] = loaded
        return loaded

    def get(self, topic: TopicName) -> LiveTopic | None:
        return self._topics.get(str(topic))

    def unload(self, name: str) -> None:
        unloaded = self._topics.pop(name, None)
        if isinstance(unloaded, PersistentTopic) and unloaded.entries:  # free the log at once
            unloaded.release()
            _trim_allocator()

    def persistent_topics(self) -> list[PersistentTopic]:
        return [topic for topic in self._topics.values() if isinstance(topic, PersistentTopic)]

    def names(self) -> list[str]:
        return sorted(self._topics)

    def collect_inactive(self, max_idle: float, now: Optional[float] = None) -> list[str]:
        """Unloads the non-persistent topics idle for ``max_idle`` seconds; returns their names."""
        now = time.monotonic() if now is None else now
        idle = [name for name, topic in self._topics.items()
                # the period's end as a sum, not the idle time as a difference: at the end itself
                # a difference of floats can fall short of max_idle by a rounding step
                if isinstance(topic, NonPersistentTopic) and topic.is_idle() and now >= topic.last_active + max_idle]
        for name in idle:
            del self._topics[name]
        return idle
