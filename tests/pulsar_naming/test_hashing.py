"""pulsar_naming.hashing: Java String.hashCode (Hypothesis against an independent reference, a real JVM)
and the PIP-157 bucket decisions (docs/pip157-decisions.md)."""

from __future__ import annotations

import base64
import random
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_naming.hashing import INT_MIN, bucket_of, java_string_hash

# Java 17's String.hashCode: string, hashCode, Math.abs, abs%3 (Java, literal), floorMod(h,3).
FACTS_TABLE = [
    ("Hello world!", -52966915, 52966915, 1, 2),
    ("my-topic", -1894580786, 1894580786, 2, 1),
    ("persistent://public/default/my-topic", -678218817, 678218817, 0, 0),
    ("nptopic1", -1816261340, 1816261340, 2, 1),
    ("ptopic-partition-0", 816219135, 816219135, 0, 0),
    ("polygenelubricants", -2147483648, -2147483648, -2, 1),
    ("GydZG_", -2147483648, -2147483648, -2, 1),
    ("DESIGNING WORKHOUSES", -2147483648, -2147483648, -2, 1),
    ("", 0, 0, 0, 0),
]
MIN_VALUE_NAMES = [row[0] for row in FACTS_TABLE if row[1] == INT_MIN]


# --- an independent reference: the closed-form sum over UTF-16-BE code units -----------------------


def reference_hash(s: str) -> int:
    """sum(c[i] * 31**(n-1-i)) reduced to a Java int; code units read from the UTF-16-BE bytes."""
    raw = s.encode("utf-16-be", "surrogatepass")
    units = [int.from_bytes(raw[i:i + 2], "big") for i in range(0, len(raw), 2)]
    n = len(units)
    total = sum(unit * pow(31, n - 1 - i, 2**32) for i, unit in enumerate(units)) % 2**32
    return total - 2**32 if total >= 2**31 else total


def java_literal_bucket(h: int, n: int) -> int:
    """``Math.abs(h) % n`` exactly as Java computes it (wrapping abs, truncating %): for comparison only."""
    magnitude = h if h == INT_MIN else abs(h)  # Math.abs(MIN_VALUE) == MIN_VALUE
    remainder = abs(magnitude) % n
    return -remainder if magnitude < 0 else remainder


# --- Java 17's String.hashCode values, row by row----------------------------------------------------------------


@pytest.mark.parametrize("text,hash_code,java_abs,java_abs_mod3,floor_mod3", FACTS_TABLE,
                         ids=[repr(row[0]) for row in FACTS_TABLE])
def test_facts_table_row(text, hash_code, java_abs, java_abs_mod3, floor_mod3):
    assert java_string_hash(text) == hash_code
    assert reference_hash(text) == hash_code
    assert java_literal_bucket(hash_code, 3) == java_abs_mod3  # the table's literal Java column
    assert hash_code % 3 == floor_mod3  # Python % is floorMod; NOT our rule for negative hashes
    if hash_code == INT_MIN:
        # Decision (c): abs(MIN_VALUE) = 2**31, so the bucket is the magnitude of Java's -2.
        assert bucket_of(text, 3) == -java_abs_mod3 == 2
    else:
        assert bucket_of(text, 3) == java_abs_mod3


def test_non_bmp_character_counts_two_code_units():
    assert java_string_hash("😀") == 0xD83D * 31 + 0xDE00 == 1772899  # Java's String.hashCode
    assert java_string_hash("a😀") == (97 * 31 + 0xD83D) * 31 + 0xDE00


def test_lone_surrogate_is_one_code_unit():
    assert java_string_hash("\ud83d") == 0xD83D


def test_pip157_example_layout_with_three_buckets():
    """PIP-157's pip/pip-157.md: hashing the plain local name, suffix included, reproduces the PIP's own example."""
    layout = {name: bucket_of(name, 3) for name in
              ["nptopic1", "nptopic2", *(f"ptopic-partition-{i}" for i in range(4))]}
    assert layout == {"nptopic1": 2, "nptopic2": 1, "ptopic-partition-0": 0, "ptopic-partition-1": 1,
                      "ptopic-partition-2": 2, "ptopic-partition-3": 0}
    # The full name does not match the example (PIP-157's pip/pip-157.md: nptopic1 -> 1, nptopic2 -> 0).
    assert [bucket_of(f"persistent://tenant/namespace/{n}", 3) for n in ("nptopic1", "nptopic2")] == [1, 0]


@pytest.mark.parametrize("name", MIN_VALUE_NAMES)
@pytest.mark.parametrize("n,ours,java_literal",
                         [(3, 2, -2), (7, 2, -2), (10, 8, -8), (16, 0, 0), (1024, 0, 0), (1, 0, 0)])
def test_min_value_names_stay_in_range(name, n, ours, java_literal):
    """Decision (c): the only deviation from a literal Java transcription (Java's String.hashCode)."""
    assert java_literal_bucket(java_string_hash(name), n) == java_literal
    assert bucket_of(name, n) == ours == 2**31 % n


@pytest.mark.parametrize("n", [0, -1, 1.0, True, "3", None])
def test_bucket_count_must_be_a_positive_int(n):
    with pytest.raises(ValueError, match="number of buckets"):
        bucket_of("t", n)


def test_hash_takes_only_str():
    with pytest.raises(TypeError):
        java_string_hash(b"bytes")  # type: ignore[arg-type]


# --- properties over arbitrary Unicode, non-BMP included ----------------------------------------------

_any_text = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=60)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=80) | _any_text)
def test_hash_matches_the_independent_reference(text):
    h = java_string_hash(text)
    assert h == reference_hash(text)
    assert INT_MIN <= h < 2**31


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=40), st.integers(min_value=1, max_value=4096))
def test_bucket_in_range_and_equals_java_except_min_value(text, n):
    bucket = bucket_of(text, n)
    assert 0 <= bucket < n
    h = java_string_hash(text)
    literal = java_literal_bucket(h, n)
    assert bucket == (literal if h != INT_MIN else -literal)
    if n == 1:
        assert bucket == 0


@given(st.text(max_size=20).filter(lambda s: any(ord(c) > 0xFFFF for c in s)) | st.just("x😀"))
def test_non_bmp_text_hashes_as_surrogate_pairs(text):
    assert java_string_hash(text) == reference_hash(text)


# --- the real thing: a JVM computes hashCode for a batch of generated strings -------------------------

JAVA_SOURCE = """
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.Base64;
public class Hashes {
    public static void main(String[] args) throws Exception {
        StringBuilder out = new StringBuilder();
        for (String line : Files.readAllLines(Paths.get(args[0]), StandardCharsets.US_ASCII)) {
            String s = new String(Base64.getDecoder().decode(line), StandardCharsets.UTF_8);
            out.append(s.hashCode()).append('\\n');
        }
        System.out.print(out);
    }
}
"""


def _generated_strings(count: int) -> list[str]:
    rng = random.Random(157)
    ranges = [(0x20, 0x7E), (0x80, 0x7FF), (0x800, 0xD7FF), (0xE000, 0xFFFF), (0x10000, 0x10FFFF)]
    strings = [row[0] for row in FACTS_TABLE] + ["😀", "a😀b", "topic-partition-12", "ünïcødé/%2F"]
    while len(strings) < count:
        chars = []
        for _ in range(rng.randint(0, 40)):
            low, high = rng.choice(ranges)
            chars.append(chr(rng.randint(low, high)))
        strings.append("".join(chars))
    return strings


@pytest.mark.slow
def test_hash_code_agrees_with_a_real_jvm(tmp_path):
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        pytest.skip(f"needs a JDK to compile the checker: javac={javac}, java={java}")
    (tmp_path / "Hashes.java").write_text(JAVA_SOURCE)
    subprocess.run([javac, "-d", str(tmp_path), str(tmp_path / "Hashes.java")], check=True, timeout=120)
    strings = _generated_strings(3000)
    (tmp_path / "in.txt").write_text(
        "\n".join(base64.b64encode(s.encode("utf-8")).decode("ascii") for s in strings) + "\n")
    result = subprocess.run([java, "-cp", str(tmp_path), "Hashes", str(tmp_path / "in.txt")],
                            capture_output=True, text=True, check=True, timeout=120)
    java_hashes = [int(line) for line in result.stdout.split()]
    assert len(java_hashes) == len(strings)
    mismatches = [(s, j) for s, j in zip(strings, java_hashes) if java_string_hash(s) != j]
    assert not mismatches, mismatches[:5]
