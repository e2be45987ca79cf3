"""Invariants of the model under random operation sequences (Hypothesis stateful testing):
partition counts are never negative or zero, lookups create metadata but never partitions, reads
change nothing, every topic lives in an existing namespace, and apply is deterministic."""

from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from model.machine import apply, initial_state
from model.ops import (
    CreateNamespace, CreateNonPartitionedTopic, CreatePartitionedTopic, DeleteNamespace, DeletePartitionedTopic,
    DeleteTopic, GetPartitionedMetadata, GetPartitionsForTopic, ListPartitionedTopics, ListTopics, Lookup, ProduceConsume,
    RemoveAutoTopicCreation, SetAutoTopicCreation, SetBrokerConfig,
)
from model.outcomes import RestError

NAMESPACES = st.sampled_from(["public/a", "public/b", "public/default"])
DOMAINS = st.sampled_from(["persistent", "non-persistent"])
LOCALS = st.sampled_from(["t", "u", "v-DLQ"])
ANY_LOCALS = st.sampled_from(["t", "u", "v-DLQ", "t-partition-1", "u-partition-0"])
APIS = st.sampled_from(["rest", "binary"])
TRANSPORTS = st.sampled_from(["binary", "http"])
CONFIG = st.sampled_from([
    ("allowAutoTopicCreation", "true"), ("allowAutoTopicCreation", "false"),
    ("allowAutoTopicCreationType", "partitioned"), ("allowAutoTopicCreationType", "non-partitioned"),
    ("defaultNumPartitions", "0"), ("defaultNumPartitions", "2"), ("maxNumPartitionsPerPartitionedTopic", "2"),
])


def full(domain, namespace, local):
    return f"{domain}://{namespace}/{local}"


class ModelInvariants(RuleBasedStateMachine):
    @initialize(era=st.sampled_from(["pip344", "pre-pip344"]))
    def start(self, era):
        self.state = initial_state(era=era)

    def do(self, op):
        before = self.state
        self.state, outcome = apply(before, op)
        assert apply(before, op) == (self.state, outcome)  # deterministic
        return before, outcome

    @rule(item=CONFIG)
    def set_config(self, item):
        self.do(SetBrokerConfig(*item))

    @rule(ns=NAMESPACES)
    def create_namespace(self, ns):
        self.do(CreateNamespace(ns))

    @rule(ns=NAMESPACES)
    def delete_namespace(self, ns):
        self.do(DeleteNamespace(ns))

    @rule(ns=NAMESPACES, allow=st.booleans(), partitioned=st.booleans(), count=st.sampled_from([None, 0, 1, 3]))
    def set_override(self, ns, allow, partitioned, count):
        self.do(SetAutoTopicCreation(ns, allow, "partitioned" if partitioned else "non-partitioned", count))

    @rule(ns=NAMESPACES)
    def remove_override(self, ns):
        self.do(RemoveAutoTopicCreation(ns))

    @rule(domain=DOMAINS, ns=NAMESPACES, local=LOCALS, partitions=st.integers(-1, 3))
    def create_partitioned(self, domain, ns, local, partitions):
        self.do(CreatePartitionedTopic(full(domain, ns, local), partitions))

    @rule(domain=DOMAINS, ns=NAMESPACES, local=LOCALS)
    def create_non_partitioned(self, domain, ns, local):
        self.do(CreateNonPartitionedTopic(full(domain, ns, local)))

    @rule(domain=DOMAINS, ns=NAMESPACES, local=LOCALS)
    def delete_partitioned(self, domain, ns, local):
        self.do(DeletePartitionedTopic(full(domain, ns, local)))

    @rule(domain=DOMAINS, ns=NAMESPACES, local=ANY_LOCALS)
    def delete_topic(self, domain, ns, local):
        before, _ = self.do(DeleteTopic(full(domain, ns, local)))
        assert self.state.partitioned == before.partitioned  # one partition goes, its metadata stays
        assert {str(t) for t in before.topics - self.state.topics} <= {full(domain, ns, local)}

    @rule(domain=DOMAINS, ns=NAMESPACES, local=ANY_LOCALS, api=APIS,
          auto_create=st.sampled_from([True, False, None]))
    def partitioned_metadata(self, domain, ns, local, api, auto_create):
        before, outcome = self.do(GetPartitionedMetadata(full(domain, ns, local), api, auto_create))
        assert self.state.topics == before.topics  # metadata-only creation
        if before.era == "pre-pip344" and (api == "binary" or auto_create):
            # old brokers answer "not found" for a topic only on REST without checkAllowAutoCreation
            assert not (isinstance(outcome, RestError) and outcome.reason.startswith("Topic "))

    @rule(domain=DOMAINS, ns=NAMESPACES, local=ANY_LOCALS, transport=TRANSPORTS)
    def partitions_for_topic(self, domain, ns, local, transport):
        before, _ = self.do(GetPartitionsForTopic(full(domain, ns, local), transport))
        assert self.state.topics == before.topics

    @rule(domain=DOMAINS, ns=NAMESPACES, local=ANY_LOCALS, transport=TRANSPORTS, count=st.integers(0, 2))
    def produce_consume(self, domain, ns, local, transport, count):
        before, _ = self.do(ProduceConsume(full(domain, ns, local), count, transport))
        assert before.topics <= self.state.topics  # producers only ever add topics

    @rule(domain=DOMAINS, ns=NAMESPACES, local=ANY_LOCALS, api=APIS)
    def lookup(self, domain, ns, local, api):
        before, _ = self.do(Lookup(full(domain, ns, local), api))
        assert self.state == before

    @rule(domain=DOMAINS, ns=NAMESPACES, api=APIS)
    def listings(self, domain, ns, api):
        before, _ = self.do(ListTopics(ns, api, domain))
        self.do(ListPartitionedTopics(ns, domain))
        assert self.state == before

    @invariant()
    def partition_counts_are_positive(self):
        assert all(count > 0 for count in self.state.partitioned.values())

    @invariant()
    def everything_lives_in_an_existing_namespace(self):
        for topic in (*self.state.topics, *self.state.partitioned):
            assert self.state.namespace_exists(topic.namespace_name)


TestModelInvariants = ModelInvariants.TestCase
TestModelInvariants.settings = settings(max_examples=60, stateful_step_count=30, deadline=None,
                                        suppress_health_check=[HealthCheck.too_slow])
