"""reports/clients.py: the client library x broker release matrix from the per-version rows."""

from reports import clients
from reports.schema import FAILED, PASSED, UNSUPPORTED

GO = "github.com/apache/pulsar-client-go 0.21.0"
JAVA_OLD, JAVA_NEW = "org.apache.pulsar:pulsar-client 3.0.5", "org.apache.pulsar:pulsar-client 4.0.13"


def row(client, case, verdict, *, target="pulsar-standalone:4.0.7", version="4.0.7", known=""):
    return {"client": client, "target": target, "target_version": version, "case_id": case, "driver": "d",
            "last_verdict": verdict, "last_known": known}


def test_each_client_release_is_a_row_and_each_release_a_column():
    per_version = [
        row(GO, "a", PASSED), row(GO, "b", FAILED, known="rust-or-go-entry"), row(GO, "c", UNSUPPORTED),
        row(GO, "a", PASSED, target="reference", version="reference-1"),
        row(JAVA_OLD, "a", PASSED), row(JAVA_NEW, "a", FAILED),
        row("", "wire-case", PASSED),  # no client library: not in the matrix
    ]
    matrix = clients.client_matrix(per_version)
    assert {(c["client"], c["target_version"]) for c in matrix} == {
        (GO, "4.0.7"), (GO, "reference-1"), (JAVA_OLD, "4.0.7"), (JAVA_NEW, "4.0.7")}
    go = next(c for c in matrix if c["client"] == GO and c["target_version"] == "4.0.7")
    assert (go["cases"], go[PASSED], go[FAILED], go["known_failures"], go[UNSUPPORTED], go["pass_rate"]) == \
        (3, 1, 1, 1, 1, 0.5)
    assert clients.cell_text(go) == "1/2 passed, 1 failed (1 known), 1 unsupported"
    columns, rows = clients.grid(matrix)
    assert columns == ["4.0.7 (pulsar-standalone:4.0.7)", "reference-1 (reference)"]
    assert [client for client, _ in rows] == sorted([GO, JAVA_OLD, JAVA_NEW])
    assert dict(rows)[JAVA_NEW][1] is None  # not run on the reference broker
    table = clients.markdown(matrix)
    assert table[0].startswith("| client library \\ broker | 4.0.7") and any("not run" in line for line in table)
