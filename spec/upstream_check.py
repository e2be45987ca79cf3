"""Verify the upstream citations against Apache Pulsar's released sources: ``python -m spec.upstream_check``.

For every ``sources.yaml`` anchor whose ``where`` is an upstream file at a release tag
(``apache/pulsar@v4.0.7:<path>``) or a file of a release's sources jar
(``maven:org.apache.pulsar:<artifact>:<version>:sources:<path>``), this reads the file from

  * a release's source archive, ``org.apache.pulsar:pulsar:<version>:zip:source-release`` on Maven
    Central (the tree of tag v<version>), found under ``--maven-repo`` (default ~/.m2/repository;
    ``--download`` fetches the missing ones with ``mvn dependency:get``), or
  * a git mirror of apache/pulsar (``--mirror <git dir>``, read with ``git show <tag>:<path>``),

and checks that it exists and that every quote cited from it occurs in it: each row's ``info`` whose
row cites no local file that holds it, and each anchor's ``quote``. ``--write`` records the result in
``spec/upstream.yaml`` (the file's git blob id and a digest of each quote found), which ``python -m
spec.lint`` reads offline; without ``--write`` the recorded manifest is compared with what was read.
A file no archive or mirror here holds is reported as unchecked and keeps its recorded entry.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import zipfile
from collections import defaultdict
from pathlib import Path
from typing import Callable, Optional

from spec import citations
from spec.schema import SPEC_DIR, SpecError, load_registry, load_rows

Reader = Callable[[str], Optional[bytes]]  # where -> the file's bytes, or None when not held here


def _archive_member(archive: Path, path: str) -> Optional[bytes]:
    with zipfile.ZipFile(archive) as zipped:
        names = zipped.namelist()
        top = names[0].split("/", 1)[0] if names else ""
        try:
            return zipped.read(f"{top}/{path}")
        except KeyError:
            return b""  # the archive is the tag's tree: the file is not at that tag


def maven_path(repo: Path, group: str, artifact: str, version: str, classifier: str, ext: str) -> Path:
    return repo.joinpath(*group.split("."), artifact, version, f"{artifact}-{version}-{classifier}.{ext}")


def reader(maven_repo: Path, mirror: Optional[Path]) -> Reader:
    def read(where: str) -> Optional[bytes]:
        upstream = citations.UPSTREAM.match(where)
        if upstream and mirror is not None:
            shown = subprocess.run(["git", f"--git-dir={mirror}", "show", f"{upstream['tag']}:{upstream['path']}"],
                                   capture_output=True)
            return shown.stdout if shown.returncode == 0 else b""
        if upstream and upstream["repo"] == "apache/pulsar":
            archive = maven_path(maven_repo, "org.apache.pulsar", "pulsar", upstream["tag"][1:],
                                 "source-release", "zip")
            return _archive_member(archive, upstream["path"]) if archive.is_file() else None
        artifact = citations.ARTIFACT.match(where)
        if artifact:
            jar = maven_path(maven_repo, artifact["group"], artifact["artifact"], artifact["version"], "sources", "jar")
            if not jar.is_file():
                return None
            with zipfile.ZipFile(jar) as zipped:
                try:
                    return zipped.read(artifact["path"])
                except KeyError:
                    return b""
        return None
    return read


def cited_quotes(spec_dir: Path) -> tuple[dict[str, dict], dict[str, set[str]]]:
    """The anchors, and per upstream or artifact where the quotes that must be found in it: a row's
    info when none of the row's local sources holds it (checked by the lint), and each anchor's quote."""
    sources = load_registry(spec_dir / "sources.yaml", "sources")
    root = spec_dir.resolve().parent
    local_text, remote = {}, {}
    for name, entry in sources.items():
        where, _ = citations.resolve(entry.get("where"), root)
        if where and where.kind == "local":
            local_text[name] = citations.collapse(where.path.read_text(encoding="utf-8"))
        elif where and where.kind in ("upstream", "artifact"):
            remote[name] = where.text
    quotes: dict[str, set[str]] = defaultdict(set)
    for name, where in remote.items():
        quotes[where]  # every cited file is checked, quoted or not
        if sources[name].get("quote"):
            quotes[where].add(sources[name]["quote"])
    for row in load_rows(spec_dir):
        if not row.info or any(citations.collapse(row.info) in local_text.get(a, "") for a in row.source):
            continue
        for anchor in row.source:
            if anchor in remote:
                quotes[remote[anchor]].add(row.info)
    return sources, quotes


def check(spec_dir: Path, read: Reader) -> tuple[dict[str, dict], list[str], list[str]]:
    """(the manifest as read now, problems, wheres this machine could not read)."""
    _, quotes = cited_quotes(spec_dir)
    recorded = citations.load_manifest(spec_dir)
    manifest, problems, unread = {}, [], []
    found_somewhere: dict[str, bool] = defaultdict(bool)
    for where in sorted(quotes):
        data = read(where)
        if data is None:
            unread.append(where)
            if where in recorded:
                manifest[where] = recorded[where]
            continue
        if not data:
            problems.append(f"{where}: no such file at that tag")
            continue
        text = citations.collapse(data.decode("utf-8", errors="replace"))
        found = [q for q in quotes[where] if citations.collapse(q) in text]
        for quote in quotes[where]:
            found_somewhere[quote] |= quote in found
        manifest[where] = {"blob": citations.blob_id(data), "quotes": sorted({citations.quote_digest(q) for q in found})}
    # a quote is cited from several files at once when a row names several upstream sources: it is
    # enough that one holds it
    checked = {q for where in quotes if where not in unread for q in quotes[where]}
    for quote in sorted(checked):
        holders = [w for w in quotes if quote in quotes[w]]
        if not found_somewhere[quote] and not any(w in unread for w in holders):
            problems.append(f"quote not found in {', '.join(holders)}: {quote!r}")
    return manifest, problems, unread


def download(versions: set[str], maven_repo: Path) -> None:
    for version in sorted(versions):
        if maven_path(maven_repo, "org.apache.pulsar", "pulsar", version, "source-release", "zip").is_file():
            continue
        subprocess.run(["mvn", "-q", f"-Dmaven.repo.local={maven_repo}", "dependency:get", "-Dtransitive=false",
                        f"-Dartifact=org.apache.pulsar:pulsar:{version}:zip:source-release"], check=False)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spec.upstream_check", description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=SPEC_DIR, help="spec folder (default: this package)")
    parser.add_argument("--maven-repo", type=Path, default=Path.home() / ".m2" / "repository")
    parser.add_argument("--mirror", type=Path, help="a git mirror of apache/pulsar (read instead of the archives)")
    parser.add_argument("--download", action="store_true", help="fetch missing source archives with mvn")
    parser.add_argument("--write", action="store_true", help=f"write spec/{citations.MANIFEST}")
    args = parser.parse_args(argv)
    try:
        _, quotes = cited_quotes(args.dir)
    except SpecError as exc:
        print(exc, file=sys.stderr)
        return 1
    if args.download and args.mirror is None:
        download({m["tag"][1:] for w in quotes if (m := citations.UPSTREAM.match(w))}, args.maven_repo)
    manifest, problems, unread = check(args.dir, reader(args.maven_repo, args.mirror))
    for where in unread:
        print(f"unchecked (no source archive or mirror here holds it): {where}", file=sys.stderr)
    recorded = citations.load_manifest(args.dir)
    if args.write and not problems:
        (args.dir / citations.MANIFEST).write_text(citations.dump_manifest(manifest), encoding="utf-8")
    elif not args.write and manifest != recorded:
        for where in sorted(set(manifest) | set(recorded)):
            if manifest.get(where) != recorded.get(where):
                problems.append(f"{where}: spec/{citations.MANIFEST} differs from what was read (run with --write)")
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"upstream check: {len(quotes) - len(unread)} file(s) read, {len(unread)} unchecked, "
          f"{len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
