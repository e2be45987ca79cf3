"""Live topics of this broker: persistent logs and non-persistent (PIP-2) topics."""

from .non_persistent import NonPersistentSubscription, NonPersistentTopic
from .persistent import Consumer, Entry, PersistentTopic, Subscription
from .registry import TopicRegistry

__all__ = ["Consumer", "Entry", "NonPersistentSubscription", "NonPersistentTopic", "PersistentTopic",
           "Subscription", "TopicRegistry"]
