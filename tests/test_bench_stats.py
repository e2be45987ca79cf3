"""bench/common.median_interval and paired_ratio_text, which the benchmarks print their ratios with."""

from __future__ import annotations

import itertools

import pytest

from bench.common import median_interval, paired_ratio_text


def brute_force_coverage(count: int, k: int) -> float:
    """P(x(k) <= median <= x(count+1-k)) by counting every pattern of values below/above the median."""
    inside = sum(1 for signs in itertools.product((0, 1), repeat=count)
                 if k <= sum(signs) <= count - k)  # at least k values on each side
    return inside / 2 ** count


@pytest.mark.parametrize("count", range(1, 16))
def test_the_coverage_is_the_sign_tests_and_the_widest_that_reaches_95_percent(count):
    values = [float(i) for i in range(count)]
    low, high, coverage = median_interval(values)
    k = int(low) + 1
    assert high == count - k
    assert coverage == pytest.approx(brute_force_coverage(count, k))
    if coverage >= 0.95 and k + 1 <= (count + 1) // 2:
        assert brute_force_coverage(count, k + 1) < 0.95  # a narrower one would not reach 95%


def test_seven_rounds_give_the_whole_range_and_fifteen_a_narrower_one():
    assert median_interval([0.9, 1.1, 1.0, 0.8, 1.2, 0.95, 1.05]) == (0.8, 1.2, pytest.approx(1 - 2 / 128))
    low, high, coverage = median_interval([float(i) for i in range(15)])
    assert (low, high) == (3.0, 11.0) and coverage == pytest.approx(0.965, abs=0.001)


def test_the_text_says_what_the_interval_shows():
    assert paired_ratio_text([0.9, 0.95, 0.97, 0.98, 0.99, 0.99, 0.995]).endswith("reference slower)")
    assert paired_ratio_text([1.01, 1.02, 1.05, 1.1, 1.2, 1.03, 1.04]).endswith("reference faster)")
    assert paired_ratio_text([0.9, 1.1, 1.0, 0.8, 1.2, 0.95, 1.05]) == \
        "1.00x (98% interval 0.80-1.20x: no difference shown)"
    assert paired_ratio_text([0.9, 1.0]).startswith("0.95x")  # the median of an even count is the mean of the middle two


def test_no_value_is_an_error():
    with pytest.raises(ValueError):
        median_interval([])


def test_the_text_names_what_the_caller_compares():
    assert paired_ratio_text([1.3, 1.2, 1.25, 1.4, 1.35, 1.3, 1.28], "more CPU", "less CPU").endswith("more CPU)")
    assert paired_ratio_text([0.7, 0.8, 0.75, 0.6, 0.65, 0.7, 0.72], "more CPU", "less CPU").endswith("less CPU)")
