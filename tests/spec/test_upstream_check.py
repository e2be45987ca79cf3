"""spec/upstream_check.py: upstream citations verified at their tag, and the manifest the lint reads."""

import zipfile

import pytest

from spec import citations, lint as spec_lint, upstream_check
from spec.schema import SPEC_DIR
from tests.spec.helpers import MAVEN_REPO, REMOTE_QUOTE, make_spec_dir, row, write_rows

WHERE = "apache/pulsar@v4.0.7:pulsar-broker/src/test/SomeTest.java"
TEXT = b"class SomeTest {\n    void t() {\n        assertEquals(partitions,\n            2);\n    }\n}\n"


def source_release(repo, files):
    """A fake org.apache.pulsar:pulsar:4.0.7 source-release archive under a maven repository folder."""
    archive = upstream_check.maven_path(repo, "org.apache.pulsar", "pulsar", "4.0.7", "source-release", "zip")
    archive.parent.mkdir(parents=True)
    with zipfile.ZipFile(archive, "w") as zipped:
        for path, data in files.items():
            zipped.writestr(f"pulsar/{path}", data)


@pytest.fixture
def spec_dir(tmp_path):
    directory = make_spec_dir(tmp_path)
    write_rows(directory, row(id="pip344-lint-002", source="remote-test", info=REMOTE_QUOTE))
    return directory


def test_write_records_the_blob_and_the_quotes_found(spec_dir, tmp_path):
    source_release(tmp_path / "m2", {"pulsar-broker/src/test/SomeTest.java": TEXT})
    (spec_dir / citations.MANIFEST).unlink()
    assert spec_lint.lint(spec_dir) != []  # not recorded yet
    assert upstream_check.main(["--dir", str(spec_dir), "--maven-repo", str(tmp_path / "m2"), "--write"]) == 0
    manifest = citations.load_manifest(spec_dir)
    assert manifest[WHERE] == {"blob": citations.blob_id(TEXT), "quotes": [citations.quote_digest(REMOTE_QUOTE)]}
    assert spec_lint.lint(spec_dir) == []
    assert upstream_check.main(["--dir", str(spec_dir), "--maven-repo", str(tmp_path / "m2")]) == 0


@pytest.mark.parametrize("files, message", [
    ({"pulsar-broker/src/test/Other.java": TEXT}, "no such file at that tag"),
    ({"pulsar-broker/src/test/SomeTest.java": b"class SomeTest {}\n"}, "quote not found"),
])
def test_a_missing_file_or_quote_is_a_problem(spec_dir, tmp_path, capsys, files, message):
    source_release(tmp_path / "m2", files)
    assert upstream_check.main(["--dir", str(spec_dir), "--maven-repo", str(tmp_path / "m2"), "--write"]) == 1
    assert message in capsys.readouterr().err


def test_a_file_no_archive_here_holds_keeps_its_recorded_entry(spec_dir, tmp_path, capsys):
    assert upstream_check.main(["--dir", str(spec_dir), "--maven-repo", str(tmp_path / "empty")]) == 0
    assert "unchecked" in capsys.readouterr().err


def test_blob_id_is_gits():
    assert citations.blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


def test_the_real_manifest_matches_the_releases_when_their_archives_are_here(capsys):
    holders = {w for w in citations.load_manifest(SPEC_DIR)
               if upstream_check.reader(MAVEN_REPO, None)(w) is not None}
    if not holders:
        pytest.skip(f"no source-release archive under {MAVEN_REPO}")
    assert upstream_check.main(["--maven-repo", str(MAVEN_REPO)]) == 0, capsys.readouterr().err
