"""Where a source anchor points (``sources.yaml``'s ``where``), and the upstream manifest.

Every ``where`` is one of these forms, so that every citation resolves from a clone of this project:

  upstream   ``apache/pulsar@v4.0.7:pulsar-broker/src/main/java/.../ServerCnx.java``: a file of a public
             repository at a release tag (the PIP documents too: ``apache/pulsar@v4.0.7:pip/pip-344.md``);
  artifact   ``maven:org.apache.pulsar:pulsar-common:4.0.7:sources:org/apache/.../CommandSubscribe.java``:
             a file of a release's published sources jar, for code generated at build time, which no tag holds;
  thread     ``apache/pulsar#23002``: a pull request or issue;
  pip-url    ``https://github.com/apache/pulsar/wiki/PIP-2:-Non-Persistent-topic``: where a PIP document
             lived before Pulsar kept them in ``pip/``;
  local      ``docs/pip35-decisions.md#c-batch-lookup-semantics``: a file of this project (a markdown
             fragment must name one of its headings);
  observed   ``spec/observed/pulsar-4.0.7.jsonl`` or ``...jsonl#<case id>``: what a named release answered.

Upstream and artifact files are not in this project. ``spec/upstream.yaml`` (written by
``python -m spec.upstream_check --write`` from the release's source archive or a git mirror) holds, per
file, its git blob id and a digest of every quote found in it, so the lint checks those citations and
their quotes offline.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import yaml

MANIFEST = "upstream.yaml"

_PATH = r"[A-Za-z0-9._$-]+(?:/[A-Za-z0-9._$-]+)*"
UPSTREAM = re.compile(rf"^(?P<repo>apache/[A-Za-z0-9._-]+)@(?P<tag>v\d+\.\d+\.\d+):(?P<path>{_PATH})$")
ARTIFACT = re.compile(rf"^maven:(?P<group>[a-z0-9.]+):(?P<artifact>[a-z0-9-]+):(?P<version>\d+\.\d+\.\d+)"
                      rf":sources:(?P<path>{_PATH})$")
THREAD = re.compile(r"^(?P<repo>apache/[A-Za-z0-9._-]+)#(?P<number>[1-9]\d*)$")
PIP_URL = re.compile(r"^https://github\.com/apache/pulsar/wiki/PIP-\d+[A-Za-z0-9:._%-]*$")
LOCAL = re.compile(rf"^(?P<path>{_PATH})(?:#(?P<fragment>[a-z0-9_-]+))?$")
OBSERVED = re.compile(r"^(?P<path>spec/observed/pulsar-\d+\.\d+\.\d+\.jsonl)(?:#(?P<case>[a-z0-9\[\]-]+))?$")


@dataclass(frozen=True)
class Where:
    kind: str                   # upstream, artifact, thread, pip-url, local, observed
    text: str                   # the where itself
    path: Optional[Path] = None  # local and observed: the file in this project


def collapse(text: str) -> str:
    """How quotes are compared: HTML entities decoded, whitespace runs made one space."""
    return re.sub(r"\s+", " ", html.unescape(text)).strip()


def quote_digest(quote: str) -> str:
    return hashlib.sha256(collapse(quote).encode("utf-8")).hexdigest()[:16]


def blob_id(data: bytes) -> str:
    """The git blob id of a file's bytes (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def heading_slugs(markdown: str) -> set[str]:
    """GitHub's anchors for a markdown file's headings."""
    slugs = set()
    for line in markdown.splitlines():
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            text = re.sub(r"[^\w\- ]", "", match.group(1).lower())
            slugs.add(text.replace(" ", "-"))
    return slugs


def resolve(where: Optional[str], root: Path) -> tuple[Optional[Where], Optional[str]]:
    """(the parsed where, None) or (None, why it does not resolve); ``root`` is the project folder."""
    if not where:
        return None, "has no where"
    for kind, pattern in (("upstream", UPSTREAM), ("artifact", ARTIFACT), ("thread", THREAD),
                          ("pip-url", PIP_URL)):
        if pattern.match(where):
            return Where(kind, where), None
    observed = OBSERVED.match(where)
    if observed:
        path = root / observed["path"]
        if not path.is_file():
            return None, f"{observed['path']} does not exist"
        if observed["case"] and f'"case_id": {json.dumps(observed["case"])}' not in path.read_text(encoding="utf-8"):
            return None, f"{observed['path']} records no case {observed['case']!r}"
        return Where("observed", where, path), None
    local = LOCAL.match(where)
    if local and ".." not in local["path"].split("/") and "@" not in where:
        path = root / local["path"]
        if not path.is_file():
            return None, f"{local['path']} is not a file of this project"
        if local["fragment"] and local["fragment"] not in heading_slugs(path.read_text(encoding="utf-8")):
            return None, f"{local['path']} has no heading #{local['fragment']}"
        return Where("local", where, path), None
    return None, ("is none of the citable forms (apache/<repo>@v<X.Y.Z>:<path>, maven:<group>:<artifact>:"
                  "<version>:sources:<path>, apache/<repo>#<n>, a PIP's wiki URL, a file of this project, "
                  "spec/observed/pulsar-<release>.jsonl[#case]; spec/README.md)")


def load_manifest(spec_dir: Path) -> dict[str, dict]:
    """``spec/upstream.yaml``: where -> {blob, quotes}; empty when the file is absent."""
    path = Path(spec_dir) / MANIFEST
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return dict(data.get("files") or {})


def dump_manifest(files: dict[str, dict]) -> str:
    lines = ["# Upstream files cited by sources.yaml, as verified at their tag: the file's git blob id and a",
             "# digest (spec/citations.py quote_digest) of each quote found in it. Written by",
             "# `python -m spec.upstream_check --write`; `python -m spec.lint` reads it offline.",
             "schema: 1", "files:"]
    for where in sorted(files):
        entry = files[where]
        lines.append(f"  {json.dumps(where)}:")
        lines.append(f"    blob: {entry['blob']}")
        quotes = sorted(set(entry.get("quotes") or ()))
        lines.append("    quotes: [" + ", ".join(quotes) + "]")
    return "\n".join(lines) + "\n"
