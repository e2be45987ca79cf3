"""Transcripts: what a driver sent and received during one case, for Allure attachments.

The wire driver records every frame with its exact bytes (hex) and the decoded event; the REST
driver records each request and response line. Nothing is summarised away, so a reader can replay
a failing case from the attachment alone. A transcript belongs to one case: drivers start a new
one on ``reset()``.

A token never reaches a transcript: every entry's text and hex go through ``security.redact`` in
``Transcript._add`` (a CONNECT's auth_data shows as ``<redacted>`` in both).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from conformance.security import redact

SENT = ">>"
RECEIVED = "<<"
NOTE = "--"


@dataclass(frozen=True)
class Entry:
    direction: str  # SENT | RECEIVED | NOTE
    summary: str  # event repr, HTTP request/response line, or a note
    hex: str = ""  # exact frame bytes for wire entries
    at: float = 0.0  # seconds since the transcript began


@dataclass
class Transcript:
    """An append-only log of one driver's traffic in one case."""

    channel: str  # "wire" | "rest" | "client"
    entries: list[Entry] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def _add(self, direction: str, summary: str, data: bytes = b"") -> None:
        self.entries.append(Entry(direction, redact(summary), redact(data.hex()), time.monotonic() - self.started))

    def sent(self, summary: str, data: bytes = b"") -> None:
        self._add(SENT, summary, data)

    def received(self, summary: str, data: bytes = b"") -> None:
        self._add(RECEIVED, summary, data)

    def note(self, summary: str) -> None:
        self._add(NOTE, summary)

    def __bool__(self) -> bool:
        return bool(self.entries)


def _hex_lines(hex_text: str, width: int = 32) -> list[str]:
    """Split hex into lines of ``width`` bytes, grouped by 4 bytes (frame sizes read easily)."""
    lines = []
    for start in range(0, len(hex_text), width * 2):
        chunk = hex_text[start:start + width * 2]
        lines.append(" ".join(chunk[i:i + 8] for i in range(0, len(chunk), 8)))
    return lines


def format_transcript(transcript: Transcript) -> str:
    """Plain text for an Allure attachment: one block per entry, hex indented below it."""
    out = [f"# {transcript.channel} transcript ({len(transcript.entries)} entries)"]
    for entry in transcript.entries:
        out.append(f"[{entry.at:8.3f}s] {entry.direction} {entry.summary}")
        out.extend(f"             {line}" for line in _hex_lines(entry.hex))
    return "\n".join(out) + "\n"
