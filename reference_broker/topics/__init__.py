"""Live topics of this broker: persistent logs now, non-persistent topics with the PIP-2 issue."""

from .persistent import Consumer, Entry, PersistentTopic, Subscription
from .registry import TopicRegistry

__all__ = ["Consumer", "Entry", "PersistentTopic", "Subscription", "TopicRegistry"]
