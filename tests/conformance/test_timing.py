"""conformance/timing.py: a run says where its time went."""

from conformance import timing


def test_the_account_names_each_kind_of_time_its_places_and_its_reasons():
    timing.reset()
    timing.spent(timing.START_UP, 20.0, "pulsar-4.0.7")
    timing.spent(timing.RESTART, 12.0, "pulsar-4.0.7", "enablePersistentTopics=false")
    timing.spent(timing.RESTART, 11.0, "pulsar-4.0.7", "enablePersistentTopics=false")
    timing.spent(timing.RETRY_PAUSE, 0.25, "reference")
    lines = timing.account(60.0, {"pulsar-4.0.7": 300.0}, {"pulsar-4.0.7": 636})
    text = "\n".join(lines)
    assert lines[0] == "where the time went: 60 s wall"
    assert "start-up: 1 taking 20.0 s (pulsar-4.0.7 20.0 s)" in text
    assert "restart: 2 taking 23.0 s (pulsar-4.0.7 23.0 s); for enablePersistentTopics=false x2" in text
    assert "retry pause: 1 taking 0.2 s" in text and "quiet period" not in text
    assert "cases on pulsar-4.0.7: 636 taking 300.0 s summed" in text
    timing.reset()
    assert timing.account(1.0, {}, {}) == ["where the time went: 1 s wall"]
