"""Known divergences: the cases a kind of target is recorded to fail, read from spec/divergences/.

Like web-platform-tests' expectation files, they let a run tell an expected failure from a
regression without hiding either: the verdict stays ``failed``, the record names the divergence,
and the summaries count the two apart.

A target's file is named by its ``divergence_profile`` (``profile_of``): ``apache-pulsar`` for
any target whose version is an Apache Pulsar release (detected, never assumed), the target's own
name for implementations that keep a file (``pulsar-lite``), none for the reference broker, which
must pass everything but what a client library is known to do against the spec: the files of
``LIBRARY_PROFILES`` apply to every target.

A divergence covers a case when the case or its row is listed and the target's release is inside
the entry's range (``KnownDivergences.covering``). Only a ``failed`` verdict is covered
(``KnownDivergences.applies``): a known divergence that passes is reported as such (the entry may
be stale), and one that turns indefinite or broken is not excused. Two kinds of entry say more:

- ``verdict: indefinite``: a request the target is recorded never to answer; its cases stay
  indefinite and are counted apart like known failures;
- ``intermittent`` (with why): the target fails the cases in some runs only, by timing; a pass
  names the entry too, so neither it nor the next failure is reported as a change.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Iterable, Optional

from spec.schema import APIS, DIVERGENCES_DIR, Divergence, load_divergences

APACHE_PULSAR = "apache-pulsar"
# Client libraries that keep a file of their own divergences (model/client_libraries.py): an entry
# covers the library's cases (the apis ``<library>-...``) on every target, its ``releases`` being the
# brokers'; a row id in it stands for the row's cases of the library's apis only.
LIBRARY_PROFILES = {"go": "pulsar-client-go", "rust": "pulsar-client-rust"}


def library_entries(directory: Path = DIVERGENCES_DIR) -> tuple[Divergence, ...]:
    """Every client library's known divergences, their row ids narrowed to the library's cases."""
    found = []
    for library, profile in LIBRARY_PROFILES.items():
        apis = [api for api in APIS if api.startswith(f"{library}-")]
        for entry in load_divergences(profile, directory):
            cases = tuple(case if "[" in case else f"{case}[{api}]" for case in entry.cases
                          for api in (("",) if "[" in case else apis))
            found.append(replace(entry, cases=cases))
    return tuple(found)


def profile_of(target) -> Optional[str]:
    """The name of the divergence file that applies to ``target``, or None (the reference broker)."""
    own = getattr(target, "divergence_profile", None)
    if own:
        return own
    return APACHE_PULSAR if getattr(target, "release", None) is not None else None


class KnownDivergences:
    def __init__(self, entries: Iterable[Divergence] = ()):
        self.entries = tuple(entries)

    @classmethod
    def for_target(cls, target) -> "KnownDivergences":
        given = getattr(target, "known_divergences", None)  # the user's own file (--known-divergences)
        if given is not None:
            return cls((*given, *library_entries()))
        profile = profile_of(target)
        return cls((*(load_divergences(profile) if profile else ()), *library_entries()))

    def covering(self, case_id: str, row_id: str, release) -> Optional[Divergence]:
        """The first entry that covers this case on a broker of ``release``, if any."""
        return next(iter(self.covering_all(case_id, row_id, release)), None)

    def covering_all(self, case_id: str, row_id: str, release) -> tuple[Divergence, ...]:
        """Every entry that covers this case on a broker of ``release``: a row listed whole in one
        entry and the same row's case listed in another (a client library's) both cover it."""
        return tuple(entry for entry in self.entries if entry.covers(case_id, row_id, release))

    def applies(self, verdict: str, case_id: str, row_id: str, release) -> Optional[Divergence]:
        """The entry a record of this verdict names: the first covering entry of that verdict
        (``failed``, or ``indefinite`` for a request the target is recorded never to answer), or an
        intermittent one for ``passed``; none otherwise."""
        return next((entry for entry in self.covering_all(case_id, row_id, release)
                     if verdict == entry.verdict or (verdict == "passed" and entry.intermittent)), None)
