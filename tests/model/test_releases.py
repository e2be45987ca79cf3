import pytest
import yaml
from hypothesis import given, strategies as st

from model import releases
from model.errors import ModelUsageError
from model.releases import NEWEST, era_of, has, parse_range, parse_release

release_st = st.tuples(st.integers(0, 6), st.integers(0, 12), st.integers(0, 20))


def test_parse_release():
    assert parse_release("4.0.7") == (4, 0, 7)
    assert parse_release("Pulsar Server3.0.2") == (3, 0, 2)
    assert parse_release("3.3.0-SNAPSHOT") == (3, 3, 0)
    # other implementations are held to the newest behaviour
    assert parse_release("0.1.0-reference") is NEWEST
    assert parse_release("pulsar-lite 0.2.0") is NEWEST
    assert parse_release(None) is NEWEST


def test_ranges():
    pip344 = parse_range(">=3.0.6 <3.1 | >=3.3.1")
    assert (3, 0, 6) in pip344 and (3, 0, 17) in pip344
    assert (3, 0, 5) not in pip344 and (3, 1, 0) not in pip344 and (3, 2, 3) not in pip344
    assert (3, 3, 0) not in pip344 and (3, 3, 1) in pip344 and (4, 2, 4) in pip344
    assert NEWEST in pip344
    assert NEWEST not in parse_range("<4")
    assert (4, 0, 7) in parse_range("=4.0.7") and (4, 0, 8) not in parse_range("=4.0.7")
    assert (1, 0, 0) in parse_range("*") and NEWEST in parse_range("*")
    assert (3, 1, 0) in parse_range("!>=3.0.6 <3.1 | >=3.3.1")


@pytest.mark.parametrize("text", ["", "3.0.6", ">=3.0.6 |", "~3.0", ">=a.b"])
def test_bad_ranges_are_refused(text):
    with pytest.raises(ModelUsageError, match="bad version range"):
        parse_range(text)


@given(release_st, release_st)
def test_an_interval_is_a_half_open_span(low, release):
    span = parse_range(f">={'.'.join(map(str, low))} <{low[0] + 1}")
    assert (release in span) == (low <= release < (low[0] + 1, 0, 0))


@given(st.one_of(st.none(), release_st))
def test_complement(release):
    pip344 = releases.BEHAVIOURS["pip-344"].range
    assert (release in releases.era_range("pre-pip344")) == (release not in pip344)
    assert era_of(release) == ("pip344" if release in pip344 else "pre-pip344")


def test_pip344_range_agrees_with_features_yaml():
    """spec/features.yaml lists PIP-344's first version per release line; the model's range must
    start each line at exactly that release and include no line in between."""
    from spec.schema import SPEC_DIR

    firsts = yaml.safe_load((SPEC_DIR / "features.yaml").read_text())["features"]["pip-344"]["first_versions"]
    firsts = [tuple(int(p) for p in text.split(".")) for text in firsts]
    for first in firsts:
        before = (first[0], first[1], first[2] - 1) if first[2] else None
        assert has(first, "pip-344")
        if before:
            assert not has(before, "pip-344"), before
    assert not has((3, 1, 9), "pip-344") and not has((3, 2, 9), "pip-344")


def test_unknown_behaviour():
    with pytest.raises(ModelUsageError, match="unknown behaviour"):
        has((4, 0, 7), "no-such-thing")


def test_every_behaviour_cites_its_evidence():
    for name, behaviour in releases.BEHAVIOURS.items():
        assert behaviour.what and behaviour.evidence, name
