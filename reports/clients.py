"""The client compatibility matrix: client library and version x broker release.

Its rows are the result records' ``client`` (conformance/results.py, schema 4: the library and version
that performed a case's action, ``github.com/apache/pulsar-client-go 0.21.0``), its columns the
targets' releases (``target_version``). A cell counts, over the cases that library performed on that
target, the latest verdict of each (every run counts: a run with another Java client release adds a
row of its own, and keeps the rows of the releases before it): passed, failed and how many of those
failures are known divergences, unsupported (what the library's API lacks, or the target), and the
rest. Pass rate as everywhere: passed / (passed + failed).

``client_matrix`` makes the table from the summaries' per-version rows (aggregate.py); ``cell_text``
and ``grid`` are what the summary pages (matrix.py) and the Allure report (allure.py) show.
"""

from __future__ import annotations

from typing import Optional

from reports.schema import BROKEN, FAILED, INDEFINITE, PASSED, TARGET_ERROR, UNSUPPORTED

CLIENT_COLUMNS = ["client:s", "target:s", "target_version:s", "cases:i", f"{PASSED}:i", f"{FAILED}:i",
                  "known_failures:i", f"{UNSUPPORTED}:i", f"{INDEFINITE}:i", f"{BROKEN}:i", f"{TARGET_ERROR}:i",
                  "pass_rate:d"]


def client_matrix(per_version: list[dict]) -> list[dict]:
    """One row per client library and version x target x target version, from the per-version rows
    (target x target version x case x driver x client: the latest verdict and its known divergence)."""
    cells: dict[tuple, dict] = {}
    for row in per_version:
        if not row.get("client"):
            continue
        key = (row["client"], row["target"], row["target_version"] or "")
        cell = cells.setdefault(key, {"client": key[0], "target": key[1], "target_version": key[2], "cases": 0,
                                      PASSED: 0, FAILED: 0, "known_failures": 0, UNSUPPORTED: 0, INDEFINITE: 0,
                                      BROKEN: 0, TARGET_ERROR: 0})
        cell["cases"] += 1
        verdict = row["last_verdict"]
        if verdict in cell:
            cell[verdict] += 1
        if verdict == FAILED and row.get("last_known"):
            cell["known_failures"] += 1
    for cell in cells.values():
        judged = cell[PASSED] + cell[FAILED]
        cell["pass_rate"] = round(cell[PASSED] / judged, 6) if judged else None
    return sorted(cells.values(), key=lambda c: (c["client"], c["target_version"], c["target"]))


def cell_text(cell: Optional[dict]) -> str:
    """``passed/judged``, the failures (and how many are known), unsupported and the rest: one line."""
    if cell is None:
        return "not run"
    judged = cell[PASSED] + cell[FAILED]
    parts = [f"{cell[PASSED]}/{judged} passed" if judged else "nothing judged"]
    if cell[FAILED]:
        known = cell["known_failures"]
        parts.append(f"{cell[FAILED]} failed" + (f" ({known} known)" if known else ""))
    if cell[UNSUPPORTED]:
        parts.append(f"{cell[UNSUPPORTED]} unsupported")
    other = cell[INDEFINITE] + cell[BROKEN] + cell[TARGET_ERROR]
    if other:
        parts.append(f"{other} indefinite/broken/target error")
    return ", ".join(parts)


def column_label(cell: dict) -> str:
    return f"{cell['target_version'] or 'unknown'} ({cell['target']})"


def grid(clients: list[dict]) -> tuple[list[str], list[tuple[str, list[Optional[dict]]]]]:
    """The matrix laid out: the column labels (broker releases, with their targets), and per client
    library and version its cells in that order (None: not run there)."""
    columns = sorted({column_label(c) for c in clients})
    rows: dict[str, dict[str, dict]] = {}
    for cell in clients:
        rows.setdefault(cell["client"], {})[column_label(cell)] = cell
    return columns, [(client, [by_column.get(column) for column in columns]) for client, by_column in sorted(rows.items())]


def markdown(clients: list[dict]) -> list[str]:
    """The matrix as a Markdown table (no lines when no client library ran)."""
    if not clients:
        return []
    columns, rows = grid(clients)
    lines = ["| client library \\ broker | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    lines += [f"| {client} | " + " | ".join(cell_text(cell) for cell in cells) + " |" for client, cells in rows]
    return lines
