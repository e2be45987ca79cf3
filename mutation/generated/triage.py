"""The verdicts people gave the surviving generated mutants (``mutation/generated-triage.yaml``).

- an entry names its mutant by the mutant's stable id (mutants.py: module, function, operator and
  a hash of the changed lines) and repeats the line it changes (``line``) and what it becomes
  (``mutated``), so a reader needs no tool to see it and an entry whose mutant changed no longer
  matches.
- ``verdict`` is one of (``VERDICTS``):

  - ``equivalent``: no observable behaviour can change; ``why`` says why. Left out of the score's
    denominator.
  - ``out-of-scope``: it changes behaviour that no PIP states; ``why`` names that behaviour.
  - ``missing-case``: a PIP states the behaviour and no case checked it; ``rows`` lists the spec
    rows added for it, which kill it from then on.
  - ``model-gap``: a source states the behaviour, but no row can express it until the model or a
    driver observes more (``why`` names what: a consumer's own deliveries, a message id as
    delivered, a second tenant's namespace of the same name, ...). Counted as not caught, like
    ``out-of-scope``; kept apart so the gaps of the case language are listed.

- the check (``problems``) fails when a tested survivor has no entry, when an entry matches no
  mutant or no longer repeats its mutant's lines (stale), when an ``equivalent`` or
  ``out-of-scope`` or ``model-gap`` entry's mutant is killed (the verdict was wrong or the code
  moved), or when a ``missing-case`` entry's mutant still survives (its rows do not catch it).
  Mutants not tested yet (budget) are not judged either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import yaml

TRIAGE_FILE = Path("mutation") / "generated-triage.yaml"
VERDICTS = ("equivalent", "out-of-scope", "missing-case", "model-gap")


class TriageError(ValueError):
    """The triage file is malformed."""


@dataclass(frozen=True)
class Entry:
    id: str
    line: str
    mutated: str
    verdict: str
    why: str
    rows: tuple[str, ...] = ()


def parse(text: str, where: str = str(TRIAGE_FILE)) -> dict[str, Entry]:
    document = yaml.safe_load(text) or {}
    if not isinstance(document, dict) or not isinstance(document.get("survivors", []), list):
        raise TriageError(f"{where}: expected a mapping with a 'survivors' list")
    entries: dict[str, Entry] = {}
    for index, raw in enumerate(document.get("survivors") or []):
        at = f"{where}: survivors[{index}]"
        if not isinstance(raw, dict):
            raise TriageError(f"{at}: expected a mapping")
        missing = [key for key in ("id", "line", "mutated", "verdict", "why") if key not in raw]
        if missing:
            raise TriageError(f"{at}: missing {', '.join(missing)}")
        unknown = set(raw) - {"id", "line", "mutated", "verdict", "why", "rows"}
        if unknown:
            raise TriageError(f"{at}: unknown keys {', '.join(sorted(unknown))}")
        verdict = raw["verdict"]
        if verdict not in VERDICTS:
            raise TriageError(f"{at}: verdict {verdict!r} is not one of {', '.join(VERDICTS)}")
        rows = tuple(raw.get("rows") or ())
        if verdict == "missing-case" and not rows:
            raise TriageError(f"{at}: a missing-case entry lists the rows added for it")
        if not str(raw["why"]).strip():
            raise TriageError(f"{at}: 'why' is empty")
        if raw["id"] in entries:
            raise TriageError(f"{at}: {raw['id']} is triaged twice")
        entries[raw["id"]] = Entry(str(raw["id"]), str(raw["line"]), str(raw["mutated"]), verdict,
                                   str(raw["why"]).strip(), rows)
    return entries


def load(path: Path) -> dict[str, Entry]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    return parse(text, str(path))


def problems(entries: dict[str, Entry], mutants: dict[str, object], statuses: dict[str, str]) -> list[str]:
    """The triage check's findings. ``mutants``: id -> an object with ``before`` and ``after``; ``statuses``: id -> the
    tested status (killed, survived, error, timeout) of every tested mutant."""
    found = []
    for mutant_id, status in sorted(statuses.items()):
        if status == "survived" and mutant_id not in entries:
            found.append(f"untriaged survivor: {mutant_id}")
    for entry in entries.values():
        mutant = mutants.get(entry.id)
        if mutant is None:
            found.append(f"stale entry: {entry.id} matches no generated mutant")
            continue
        if (entry.line, entry.mutated) != (getattr(mutant, "before"), getattr(mutant, "after")):
            found.append(f"stale entry: {entry.id} no longer repeats its mutant's lines "
                         f"({getattr(mutant, 'before')!r} -> {getattr(mutant, 'after')!r})")
            continue
        status = statuses.get(entry.id)
        if status is None:
            continue
        if entry.verdict in ("equivalent", "out-of-scope", "model-gap") and status != "survived":
            found.append(f"stale entry: {entry.id} is triaged {entry.verdict} but its mutant is {status}")
        if entry.verdict == "missing-case" and status == "survived":
            found.append(f"open gap: {entry.id} still survives the rows {', '.join(entry.rows)}")
    return found


def counts(entries: Iterable[Entry], survivors: Iterable[str]) -> dict[str, int]:
    """How many of ``survivors`` have each verdict."""
    by_id = {entry.id: entry for entry in entries}
    result = {verdict: 0 for verdict in VERDICTS}
    for mutant_id in survivors:
        entry = by_id.get(mutant_id)
        if entry is not None:
            result[entry.verdict] += 1
    return result
