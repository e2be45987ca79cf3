"""The deliberately broken variants of the reference broker (mutation/variants.py, mutation/patch.py):
each one applies, replaces exactly one function and changes the behaviour it names."""

from __future__ import annotations

import collections
import inspect
import sys
import types

import pytest

from pulsar_naming.names import TopicName
from mutation import patch, variants as mutants
from reference_broker import autocreation
from reference_broker.config import build_config


def test_at_least_forty_mutants_covering_every_pip_and_both_apis():
    assert len(mutants.MUTANTS) >= 40
    assert len(mutants.BY_NAME) == len(mutants.MUTANTS)
    by_pip = collections.Counter(m.pip for m in mutants.MUTANTS)
    assert set(by_pip) == {"344", "2", "157", "35"}
    apis_344 = {m.api for m in mutants.MUTANTS if m.pip == "344"}
    assert {"rest", "binary", "both"} <= apis_344
    assert {m.api for m in mutants.MUTANTS if m.pip == "2"} >= {"rest", "binary"}


@pytest.mark.parametrize("name", sorted(mutants.BY_NAME))
def test_every_mutant_matches_the_code_once_and_compiles(name):
    assert patch.check(name) is None


def _bindings() -> dict:
    """Every function-valued binding of every reference_broker module and class."""
    seen = {}
    for module in list(sys.modules.values()):
        if not getattr(module, "__name__", "").startswith("reference_broker") or not isinstance(module, types.ModuleType):
            continue
        for key, value in list(vars(module).items()):
            if inspect.isfunction(value):
                seen[(module.__name__, key)] = value
            elif inspect.isclass(value) and value.__module__ == module.__name__:
                for attr, member in vars(value).items():
                    if inspect.isfunction(member) or isinstance(member, (staticmethod, classmethod)):
                        seen[(f"{module.__name__}.{key}", attr)] = member
    return seen


@pytest.mark.parametrize("name", sorted(mutants.BY_NAME))
def test_every_mutant_replaces_exactly_one_function_and_is_undone(name):
    mutant = mutants.get(name)
    with patch.applied(name):
        pass  # imports everything first
    before = _bindings()
    with patch.applied(name):
        during = _bindings()
    after = _bindings()
    changed = {key for key in before if during.get(key) is not before[key]}
    assert changed, name
    qualname = mutant.where.split(":", 1)[1]
    attribute = qualname.rsplit(".", 1)[-1]
    assert {key[1] for key in changed} == {attribute}  # one function (and its aliases, which patch.py replaces too)
    assert all(after[key] is before[key] for key in before)


def test_a_mutant_changes_the_behaviour_it_names():
    config = build_config(overrides=["allowAutoTopicCreation=false"])
    topic = TopicName.parse("persistent://public/default/t")
    assert autocreation.is_allow_auto_topic_creation(topic, {}, config, base_partitions=0) is False
    with patch.applied("auto-broker-flag-ignored"):
        assert autocreation.is_allow_auto_topic_creation(topic, {}, config, base_partitions=0) is True
    assert autocreation.is_allow_auto_topic_creation(topic, {}, config, base_partitions=0) is False


def test_an_unknown_or_stale_mutant_is_refused():
    with pytest.raises(mutants.MutantError, match="unknown mutant"):
        mutants.get("nope")
    stale = mutants.Mutant("stale", "344", "rest", "x", "reference_broker.autocreation:is_system_topic",
                           "this text is not in the function", "x")
    with pytest.raises(mutants.MutantError, match="occurs 0 times"):
        patch._compile(stale)
