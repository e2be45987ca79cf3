"""Java ``String.hashCode`` and the PIP-157 topic bucket: a pure value helper, like ``pulsar_naming/names.py``.

The model, the harness and the reference broker may all import this module (the broker imports
only ``pulsar_naming.names`` and ``pulsar_naming.hashing``). It decides one thing, which bucket a topic's
managed-ledger node lives in, and that decision is recorded with its reasons in
``docs/pip157-decisions.md``. What it rests on:

- the formula (``java_string_hash``, Java's String.hashCode): ``hashCode`` is ``h = 31*h + c``
  over the string's UTF-16 code units (Java ``char``), in 32-bit two's-complement arithmetic;
  ``""`` hashes to 0. A character outside the BMP counts as its two surrogate code units:
  "😀" = 0xD83D*31 + 0xDE00 = 1772899. A lone surrogate in a Python ``str`` counts as one code
  unit, as a lone ``char`` would in Java.
- which string (PIP-157's pip/pip-157.md): the string hashed is the topic's plain, decoded LOCAL
  name, partition suffix included (``ptopic-partition-0``), never the full
  ``persistent://tenant/ns/...`` name and never the URL-encoded form. PIP-157 does not say; its
  own example (3 buckets: nptopic1->$2, nptopic2->$1, ptopic-partition-0..3 -> $0,$1,$2,$0)
  matches exactly ``abs(localName.hashCode()) % 3`` on JDK 17, and the full name does not. So
  each partition of a partitioned topic lands by its own local name.
- the absolute value of MIN_VALUE (Java's String.hashCode): PIP-157 says "the topic name's hash
  code's absolute value modulo the number of buckets". Taken literally in Java,
  ``Math.abs(Integer.MIN_VALUE)`` is MIN_VALUE itself, and ``%`` keeps the dividend's sign, so
  names hashing to -2147483648 ("polygenelubricants", "GydZG_", "DESIGNING WORKHOUSES") would get
  bucket -2 for n=3 (``$-2``). We take the mathematical absolute value instead:
  ``abs(MIN_VALUE) = 2**31``. The bucket is therefore always in ``[0, n)``. This DEVIATES from a
  literal Java transcription ONLY when ``hashCode() == Integer.MIN_VALUE``, where our bucket is
  ``2**31 % n`` (2 for n=3, 8 for n=10, 0 for any power of two) while ``Math.abs(h) % n`` would
  be its negation. A Java implementation agreeing with us is
  ``(int) (Math.abs((long) s.hashCode()) % n)``. ``Math.floorMod(h, n)`` is NOT the formula: it
  differs for every negative hash (Java's String.hashCode).
- one bucket: ``n == 1`` means "no bucketing" (PIP-157 "The default value, 1 means no
  bucketing"): ``bucket_of`` answers 0, and the broker keeps today's path without a bucket folder.
"""

from __future__ import annotations

INT_MIN = -(2**31)
INT_MAX = 2**31 - 1
_MASK32 = 0xFFFFFFFF


def _to_int32(value: int) -> int:
    value &= _MASK32
    return value - 2**32 if value > INT_MAX else value


def java_string_hash(s: str) -> int:
    """Java's ``s.hashCode()`` over UTF-16 code units, as a Python int in ``[-2**31, 2**31)``."""
    if not isinstance(s, str):
        raise TypeError(f"java_string_hash() takes a str, not {type(s).__name__}")
    h = 0
    for char in s:
        cp = ord(char)
        if cp > 0xFFFF:  # a supplementary character is a surrogate pair in UTF-16
            cp -= 0x10000
            h = (31 * h + (0xD800 | (cp >> 10))) & _MASK32
            h = (31 * h + (0xDC00 | (cp & 0x3FF))) & _MASK32
        else:
            h = (31 * h + cp) & _MASK32
    return _to_int32(h)


def bucket_of(local_name: str, n: int) -> int:
    """The PIP-157 bucket of a topic's decoded local name among ``n`` buckets, in ``[0, n)``.

    Pass ``TopicName.local_name`` (partition suffix included). ``abs`` is the mathematical
    absolute value, so ``abs(-2**31) == 2**31``. ``n == 1`` (no bucketing) gives 0.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"number of buckets must be an int >= 1, got {n!r}")
    # Both operands are >= 0 here, so Python's floor % equals Java's truncating % (Java's String.hashCode).
    return abs(java_string_hash(local_name)) % n
