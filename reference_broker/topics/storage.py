"""What a persistent topic may keep and how much backlog it may hold: Pulsar's retention and backlog
quota keys, read from the broker configuration (the namespace and topic policies that override them
are not implemented by the reference broker).

- retention (``StoragePolicy.retains``; ManagedLedgerImpl#internalTrimLedgers @ v4.0.7): oldest
  first, an entry no subscription needs (in a segment no subscription needs,
  ``PersistentTopic.trim``) is freed when it is expired ("retentionTimeMs >= 0 && clock.millis() -
  ledgerTimestamp > retentionTimeMs") or over the size quota ("retentionSizeInMB >= 0 &&
  totalSizeOfML - sizeToDelete >= retentionSizeInMB * MegaByte"); the first one neither expired
  nor over quota stops the trimming. So ``defaultRetentionTimeInMinutes=0`` and
  ``defaultRetentionSizeInMB=0`` (Pulsar's defaults) keep nothing, -1 means no limit by that
  measure, and an entry is kept only while it is within both limits.
- backlog quota (``StoragePolicy.producer_refusal``; PersistentTopic#checkBacklogQuotaExceeded @
  v4.0.7): with the policy ``producer_request_hold`` or ``producer_exception``, a PRODUCER is
  refused while the backlog (bytes from the slowest subscription's first unacknowledged entry) is
  at least ``backlogQuotaDefaultLimitBytes`` ("storageSize >= backlogQuotaLimitInBytes"), or its
  oldest unacknowledged entry is older than ``backlogQuotaDefaultLimitSecond``; a limit below 0 is
  off. The error is ProducerBlockedQuotaExceededError (hold) or
  ProducerBlockedQuotaExceededException (exception), with the message of the
  IllegalStateException ServerCnx#handleProducer wraps the TopicBacklogQuotaExceededException in.
- quota enforcement (``StoragePolicy.enforce``; BacklogQuotaManager#handleExceededBacklogQuota @
  v4.0.7), every ``backlogQuotaCheckIntervalInSeconds`` while ``backlogQuotaCheckEnabled``: a
  topic over its quota has its producers disconnected (hold, exception), or
  (``consumer_backlog_eviction``) the oldest entries of its slowest subscriptions skipped until
  it is within the quota.
"""

from __future__ import annotations

import time
from typing import Optional

MEGABYTE = 1024 * 1024
HOLD, EXCEPTION, EVICTION = "producer_request_hold", "producer_exception", "consumer_backlog_eviction"
# Backlog quota: IllegalStateException(TopicBacklogQuotaExceededException).getMessage(), i.e. the cause's toString()
QUOTA_EXCEEDED_MESSAGE = ("org.apache.pulsar.broker.service.BrokerServiceException$TopicBacklogQuotaExceededException: "
                          "Cannot create producer on topic with backlog quota exceeded")
_ERRORS = {HOLD: "ProducerBlockedQuotaExceededError", EXCEPTION: "ProducerBlockedQuotaExceededException"}


class StoragePolicy:
    """Reads the keys each time, so a policy object can be shared by every topic of a broker."""

    def __init__(self, config) -> None:
        self.config = config

    @property
    def segment_entries(self) -> int:
        """Entries of one segment, freed together as Pulsar frees a ledger (``PersistentTopic.trim``)."""
        return self.config.get("managedLedgerMaxEntriesPerLedger")

    def retains(self, entry, stored_bytes: int, now: float) -> bool:
        """Whether retention keeps ``entry``, the oldest, of ``stored_bytes`` stored."""
        minutes = self.config.get("defaultRetentionTimeInMinutes")
        size_mb = self.config.get("defaultRetentionSizeInMB")
        expired = minutes >= 0 and now - entry.published_at > minutes * 60.0
        over_quota = size_mb >= 0 and stored_bytes - entry.size >= size_mb * MEGABYTE
        return not (expired or over_quota)

    def quota_exceeded(self, topic, now: Optional[float] = None) -> bool:
        """The backlog quota's test, whatever the policy."""
        limit_bytes = self.config.get("backlogQuotaDefaultLimitBytes")
        if limit_bytes >= 0 and topic.subscriptions and topic.backlog_size() >= limit_bytes:
            return True
        limit_seconds = self.config.get("backlogQuotaDefaultLimitSecond")
        if limit_seconds >= 0:
            oldest = topic.oldest_backlog_entry()
            now = time.monotonic() if now is None else now
            return oldest is not None and now - oldest.published_at > limit_seconds
        return False

    def producer_refusal(self, topic) -> Optional[tuple[str, str]]:
        """(ServerError name, message) when a PRODUCER on ``topic`` is refused, else None."""
        policy = self.config.get("backlogQuotaDefaultRetentionPolicy")
        if policy in _ERRORS and self.quota_exceeded(topic):
            return _ERRORS[policy], QUOTA_EXCEEDED_MESSAGE
        return None

    def enforce(self, topic, disconnect_producers) -> bool:
        """Quota enforcement on one topic; ``disconnect_producers(topic)`` closes its producers. Whether it was over."""
        if not self.quota_exceeded(topic):
            return False
        if self.config.get("backlogQuotaDefaultRetentionPolicy") != EVICTION:
            disconnect_producers(topic)
            return True
        while self.quota_exceeded(topic):
            slowest = min(topic.subscriptions.values(), key=lambda s: s.backlog_from())
            if slowest.backlog_from() >= topic.next_entry_id:
                break  # nothing left to evict (a limit of 0 bytes)
            slowest.skip_to(max(slowest.backlog_from(), topic.first_entry_id))
        return True
