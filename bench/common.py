"""Small helpers the official-client benchmarks share."""

from __future__ import annotations

import logging


def quiet_logger(name: str) -> logging.Logger:
    """A logger for pulsar.Client that stays silent (the client logs every connection)."""
    logger = logging.getLogger(name)
    logger.setLevel(logging.CRITICAL)
    return logger


def percentile(samples: list[float], fraction: float) -> float:
    """The nearest-rank sample at ``fraction`` (0.5 = p50) of ``samples``."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]
