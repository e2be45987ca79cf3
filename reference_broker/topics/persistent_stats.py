"""Admin stats of a persistent topic: ``/stats`` and ``/internalStats`` bodies from the live log.

Field names are Pulsar's PersistentTopicStatsImpl / SubscriptionStatsImpl / ConsumerStatsImpl and
PersistentTopicInternalStats ones; rates come from rates.Rate (60 s sliding window), as for
non-persistent topics (``NonPersistentTopic.stats``). ``storageSize`` is what the log holds now
(entries freed by ``PersistentTopic.trim`` no longer count); ``backlogSize`` counts from the
slowest subscription's first unacknowledged entry; a subscription's ``msgBacklog`` is the entries
it has not been sent yet.
"""

from __future__ import annotations

_TYPE_NAMES = {0: "Exclusive", 1: "Shared", 2: "Failover", 3: "Key_Shared"}


def _position(ledger_id: int, entry_id: int) -> str:
    return f"{ledger_id}:{entry_id}"


def _subscription_stats(subscription) -> dict:
    consumers = [{
        "consumerName": c.name, "availablePermits": max(c.permits, 0), "unackedMessages": len(c.unacked),
        "msgRateOut": c.out.rate(), "msgThroughputOut": c.out.throughput(), "msgOutCounter": c.out.total,
        "bytesOutCounter": c.out.total_bytes, "msgRateRedeliver": 0.0, "blockedConsumerOnUnackedMsgs": False,
    } for c in subscription.consumers]
    return {
        "msgRateOut": subscription.out.rate(), "msgThroughputOut": subscription.out.throughput(),
        "msgOutCounter": subscription.out.total, "bytesOutCounter": subscription.out.total_bytes,
        "msgRateRedeliver": 0.0, "msgBacklog": max(subscription.backlog(), 0),
        "unackedMessages": sum(len(c.unacked) for c in subscription.consumers),
        "type": _TYPE_NAMES.get(subscription.sub_type, "None"), "consumers": consumers,
        "isReplicated": False, "isDurable": True,
    }


def topic_stats(topic) -> dict:
    subscriptions = {name: _subscription_stats(s) for name, s in sorted(topic.subscriptions.items())}
    rate_in, throughput_in = topic.rate_in.rate(), topic.rate_in.throughput()
    publishers = [{"producerId": key[1], "producerName": name, "msgRateIn": 0.0, "msgThroughputIn": 0.0,
                   "averageMsgSize": 0.0, "accessMode": "Shared", "metadata": {}}
                  for key, name in sorted(topic.producers.items())]
    return {
        "msgRateIn": rate_in, "msgThroughputIn": throughput_in,
        "msgRateOut": sum(s["msgRateOut"] for s in subscriptions.values()),
        "msgThroughputOut": sum(s["msgThroughputOut"] for s in subscriptions.values()),
        "bytesInCounter": topic.bytes_in_counter, "msgInCounter": topic.msg_in_counter,
        "bytesOutCounter": topic.removed_out[1] + sum(s["bytesOutCounter"] for s in subscriptions.values()),
        "msgOutCounter": topic.removed_out[0] + sum(s["msgOutCounter"] for s in subscriptions.values()),
        "averageMsgSize": (throughput_in / rate_in) if rate_in else 0.0,
        "msgChunkPublished": False, "storageSize": topic.storage_size(), "backlogSize": topic.backlog_size(),
        "offloadedStorageSize": 0, "waitingPublishers": 0, "publishers": publishers,
        "subscriptions": subscriptions, "replication": {}, "deduplicationStatus": "Disabled",
    }


def internal_stats(topic) -> dict:
    last = topic.last_entry_id()
    return {
        "entriesAddedCounter": topic.next_entry_id, "numberOfEntries": len(topic.entries),
        "totalSize": topic.storage_size(), "currentLedgerEntries": len(topic.entries),
        "currentLedgerSize": topic.storage_size(), "lastConfirmedEntry": _position(topic.ledger_id, last),
        "ledgers": [{"ledgerId": topic.ledger_id, "entries": len(topic.entries), "size": topic.storage_size()}],
        "cursors": {name: {"markDeletePosition": _position(topic.ledger_id, s.mark_delete),
                           "readPosition": _position(topic.ledger_id, s.read_position),
                           "individuallyDeletedMessages": str(sorted(s.acked)),
                           "messagesConsumedCounter": s.out.total}
                    for name, s in sorted(topic.subscriptions.items())},
    }
