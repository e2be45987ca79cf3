"""A small fixed set of conformance results (three runs, two targets, five cases) and its expected report.

Written through conformance/results.py's ResultWriter, so the lines are exactly what a run writes. The
verdict table is chosen so that every report table has something to show:

  target     version(s)     case                   R1  R2  R3
  reference  1.0            c1 344 MUST            P   P   P
                            c2 344 MUST            P   F   P     flaky at 1.0; R2->R3 fix
                            c3 344 SHOULD          P   P   F     flaky at 1.0; R2->R3 regression
                            c4 157 MUST            U   U   U
                            c5 157 MAY             P   P   I     R2->R3 changed (indefinite kept apart)
  lite       0.1, 0.1, 0.2  c1 344 MUST            P   F   F     flaky at 0.1
                            c2 344 MUST            F   F   P     R2->R3 intermittent (a known divergence that says so)
                            c3 344 SHOULD          U   U   U
                            c4 157 MUST            P   P   F     NOT flaky: the failure is at 0.2; regression
                            c5 157 MAY             B   P   P

Bad lines: the R3 file ends with a truncated record, a blank line (ignored) and garbage; ``other.jsonl``
holds a record of schema_version 99, a record with an unknown verdict, and a record without run_id.
"""

from __future__ import annotations

from pathlib import Path

from conformance.results import SCHEMA_VERSION, ResultRecord, ResultWriter

RUNS = [("20260701T100000Z-aaaaaa", "2026-07-01T10:00"), ("20260702T100000Z-bbbbbb", "2026-07-02T10:00"),
        ("20260702T120000Z-cccccc", "2026-07-02T12:00")]
CASES = {  # short name -> (case_id, row_id, pip, grade, api, driver)
    "c1": ("pip344-a-001[binary]", "pip344-a-001", "344", "MUST", "binary", "wire"),
    "c2": ("pip344-a-002[binary]", "pip344-a-002", "344", "MUST", "binary", "wire"),
    "c3": ("pip344-a-003[rest]", "pip344-a-003", "344", "SHOULD", "rest", "rest"),
    "c4": ("pip157-b-001[binary]", "pip157-b-001", "157", "MUST", "binary", "wire"),
    "c5": ("pip157-b-002[rest]", "pip157-b-002", "157", "MAY", "rest", "rest"),
}
V = {"P": "passed", "F": "failed", "U": "unsupported", "I": "indefinite", "B": "broken"}
TABLE = {
    "reference": {"versions": ["1.0", "1.0", "1.0"],
                  "c1": "PPP", "c2": "PFP", "c3": "PPF", "c4": "UUU", "c5": "PPI"},
    "lite": {"versions": ["0.1", "0.1", "0.2"],
             "c1": "PFF", "c2": "FFP", "c3": "UUU", "c4": "PPF", "c5": "BPP"},
}


def duration(target: str, case: str, run: int) -> float:
    """Distinct, predictable durations: reference c1 takes 0.1, 0.2, 0.9 s in R1..R3."""
    if (target, case) == ("reference", "c1"):
        return (0.1, 0.2, 0.9)[run]
    base = {"reference": 1.0, "lite": 2.0}[target]
    return round(base + int(case[1]) / 10 + run / 100, 4)


def record(run: int, target: str, case: str) -> ResultRecord:
    run_id, minute = RUNS[run]
    case_id, row_id, pip, grade, api, driver = CASES[case]
    verdict = V[TABLE[target][case][run]]
    failed = verdict == "failed"
    second = list(CASES).index(case) + (0 if target == "reference" else 10)
    return ResultRecord(
        schema_version=SCHEMA_VERSION, run_id=run_id, timestamp=f"{minute}:{second:02d}.000+00:00", case_id=case_id,
        row_id=row_id, pip=pip, table=f"pip-{pip}/fixture", grade=grade, era="pip344", api=api, target=target,
        target_version=TABLE[target]["versions"][run], driver=driver, verdict=verdict,
        reason="expected X, got Y" if failed else "",
        expected={"kind": "Partitions", "partitions": 0}, actual={"kind": "Partitions", "partitions": 1 if failed else 0},
        failing_step=1 if failed else None, duration_s=duration(target, case, run), source=[f"facts-{case}"],
        namespace=f"public/c{run}{case}", known_divergence=known_divergence(target, case, verdict))


def known_divergence(target: str, case: str, verdict: str) -> str:
    """lite fails c1 as a known divergence; c2 as an intermittent one, named when it passes too."""
    if (target, case) == ("lite", "c1") and verdict == "failed":
        return "lite-known"
    if (target, case) == ("lite", "c2") and verdict in ("failed", "passed"):
        return "lite-timing"
    return ""


def write_results(out_dir: Path) -> dict:
    """Writes the three runs and the bad lines to ``out_dir/results``; returns what the report must find."""
    results = Path(out_dir) / "results"
    for run, (run_id, _) in enumerate(RUNS):
        writer = ResultWriter(Path(out_dir), run_id)
        for target in TABLE:
            for case in CASES:
                writer.write(record(run, target, case))
        writer.close()
    r3 = results / f"{RUNS[2][0]}.jsonl"
    good_lines = len(r3.read_text(encoding="utf-8").splitlines())
    with open(r3, "a", encoding="utf-8") as handle:
        handle.write(record(2, "lite", "c1").to_json()[:57] + "\n")  # truncated
        handle.write("\n")
        handle.write("\x00\x01 not json at all }\n")
    other = results / "other.jsonl"
    valid = record(0, "reference", "c1").to_json()
    other.write_text("\n".join([
        valid.replace(f'"schema_version": {SCHEMA_VERSION}', '"schema_version": 99'),
        valid.replace('"verdict": "passed"', '"verdict": "great"'),
        valid.replace('"run_id": "20260701T100000Z-aaaaaa"', '"run_id": null'),
    ]) + "\n", encoding="utf-8")
    return {
        "records": len(RUNS) * len(TABLE) * len(CASES),
        "bad": [(str(r3), good_lines + 1, "json"), (str(r3), good_lines + 3, "json"),
                (str(other), 1, "schema_version"), (str(other), 2, "verdict"), (str(other), 3, "missing")],
    }
