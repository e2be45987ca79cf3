"""Every reference in the repository resolves in a clone, and the text says what the code does.

A reader of a clone has the files, Apache Pulsar's sources at a release tag, its PRs and issues, and
the PIP documents. So a citation is ``apache/pulsar@<tag>:<path>`` (or another repository's
``owner/name@<tag or commit>:<path>``), ``apache/pulsar#N``, or a PIP and its section; never the id
of a search index nobody else can open, nor a rule number of a style file that is not in the tree.
And the words describe the code or its source, not how the code came to be written: the PIPs are
named as PIPs (PIP-344, PIP-2, PIP-157, PIP-35), never as "the seed"; ids that are data, such as
``seed-344/background-table`` or ``pip344-seed-bg-004``, never match, and a random seed is
written as one.

The walk covers every tracked text file (``git ls-files``) ending in .py, .md, .yaml, .yml, .java,
.toml or .json, every Makefile and mk/*.mk, but for package-lock.json (npm's, generated) and this
file (which has to spell the words out). A file listed by git but not on disk is skipped.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SELF = Path(__file__).resolve().relative_to(ROOT).as_posix()
SUFFIXES = (".py", ".md", ".yaml", ".yml", ".java", ".toml", ".json")
SKIPPED = {"package-lock.json", SELF}


@dataclass(frozen=True)
class Word:
    name: str
    pattern: re.Pattern
    fix: str


WORDS = (
    Word("index id", re.compile(r"index ids?\b", re.IGNORECASE),
         "cite apache/pulsar@<tag>:<path> (or owner/name@<tag>:<path>, a PR or issue number, a PIP section)"),
    Word("read_file", re.compile(r"read_file"),
         "cite the file itself (apache/pulsar@<tag>:<path>), not a search index's lookup of it"),
    Word("STYLE R<n>", re.compile(r"STYLE R\d"),
         "say the principle in words (e.g. \"Pulsar's vocabulary exactly\", \"the broker may import the "
         "model's value helpers but never its decisions\")"),
    Word("in one session", re.compile(r"in one session", re.IGNORECASE),
         "say what was measured or done, and where (e.g. \"alternately on the same machine\")"),
    Word("this session", re.compile(r"this session", re.IGNORECASE),
         "say what the code does, not when it was written"),
    Word("the brief", re.compile(r"the brief", re.IGNORECASE),
         "name the source the decision rests on (a PIP section, Pulsar's code at a tag)"),
    Word("this change", re.compile(r"this change", re.IGNORECASE),
         "name the commit (its hash) or say what the code does now"),
    Word("machines new each session", re.compile(r"machines new each session", re.IGNORECASE),
         "say why in terms of the code (e.g. \"empty on a fresh clone\")"),
    Word("written by the spec stage", re.compile(r"written by the spec stage", re.IGNORECASE),
         "name the module that makes it"),
    Word("the seed", re.compile(r"\bthe seed\b", re.IGNORECASE),
         "name the PIP (PIP-344, PIP-2, PIP-157, PIP-35) and its section"),
)


@dataclass(frozen=True)
class Allowed:
    """A word ``path`` may hold, on the lines ``line`` matches, for ``reason``."""

    path: str
    word: str
    line: re.Pattern   # the exception holds only for lines of ``path`` that this matches
    reason: str


EXCEPTIONS: tuple[Allowed, ...] = ()


def tracked_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    names = [name for name in listed.decode("utf-8").split("\0") if name]
    return sorted(name for name in names
                  if name not in SKIPPED
                  and (name.endswith(SUFFIXES) or Path(name).name == "Makefile"
                       or (name.startswith("mk/") and name.endswith(".mk"))))


def findings(paths: list[str]) -> tuple[list[str], set[Allowed]]:
    """Every offending line as ``path:line: word: the line -> the fix``, and the exceptions that held."""
    found, used = [], set()
    for path in paths:
        file = ROOT / path
        if not file.is_file():
            continue
        for number, text in enumerate(file.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for word in WORDS:
                if not word.pattern.search(text):
                    continue
                holding = [e for e in EXCEPTIONS if e.path == path and e.word == word.name and e.line.search(text)]
                if holding:
                    used.update(holding)
                    continue
                found.append(f"{path}:{number}: {word.name!r}: {text.strip()[:160]}\n    fix: {word.fix}")
    return found, used


@pytest.fixture(scope="module")
def paths() -> list[str]:
    try:
        return tracked_files()
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"not a git checkout, so there is no list of tracked files ({exc}); run from a clone")


def test_every_reference_resolves_and_no_text_tells_how_it_was_written(paths):
    found, _ = findings(paths)
    assert not found, f"{len(found)} line(s) a reader of a clone cannot follow:\n" + "\n".join(found)


def test_every_exception_still_excuses_a_line(paths):
    _, used = findings(paths)
    stale = [f"{e.path}: {e.word!r} ({e.reason})" for e in EXCEPTIONS if e not in used]
    assert not stale, "exceptions that excuse nothing any more; remove them from EXCEPTIONS:\n" + "\n".join(stale)


@pytest.mark.parametrize("text, word", [
    ("see index id 12345", "index id"),
    ("(read_file by id)", "read_file"),
    ("the broker never imports it (STYLE R1)", "STYLE R<n>"),
    ("Side by side in one session", "in one session"),
    ("the code before this change", "this change"),
    ("The seed's table says", "the seed"),
])
def test_the_words_are_found(text, word):
    assert [w.name for w in WORDS if w.pattern.search(text)] == [word]


@pytest.mark.parametrize("text", [
    "source: [seed-344/background-table/case-4]",
    "- id: pip344-seed-bg-004-created",
    "rng = random.Random(seed)",
    "the random seed of the fuzzer",
    "apache/pulsar@v4.0.7:pulsar-common/src/main/java/org/apache/pulsar/common/policies/data/PoliciesUtil.java",
])
def test_ids_and_citations_are_not_words(text):
    assert [w.name for w in WORDS if w.pattern.search(text)] == []
