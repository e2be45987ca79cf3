"""The report's faces: the matrix heat-map picture, the static HTML summary page, the Markdown summary.

Input is the job's tables as Python rows (aggregate.JobResult.tables); nothing here touches Spark.

- the matrix (``heatmap_png``): a matrix cell is one target x (PIP, grade) of the target's latest
  run. Its colour is the pass rate (schema.py: passed / (passed + failed)), red 0% to green 100%;
  a cell where nothing was executed (all unsupported) is grey and says so, never green.
- the pages (``summary_html``, ``summary_markdown``): the HTML page is one self-contained file
  (styles inline, picture embedded), readable offline; the Markdown is short enough for a CI log:
  long lists are cut, with the count of what was cut.
- the client matrix (``client_matrix_html``, reports/clients.py): client library and version x
  broker release, after the compliance matrix on both pages.
- troubled targets first (``troubled_targets``): targets whose latest run has ``target-error``
  cases (the target could not start or stopped serving: conformance/verdicts.py) come first on
  both pages, before the matrix, so a run that judged nothing on a target never reads as a quiet
  one.
"""

from __future__ import annotations

import base64
import datetime
import html
from pathlib import Path
from typing import Optional

from reports import clients
from reports.schema import TARGET_ERROR, VERDICTS

GREY = "#d9d9d9"
MD_LIST = 20
HTML_LIST = 200


def _axes(matrix: list[dict]) -> tuple[list[str], list[tuple[str, str]]]:
    targets = sorted({r["target"] for r in matrix})
    order = {"MUST": 0, "SHOULD": 1, "MAY": 2}
    rows = sorted({(r["pip"], r["grade"]) for r in matrix},
                  key=lambda k: (int(k[0]) if str(k[0]).isdigit() else 10**6, str(k[0]), order.get(k[1], 9), k[1]))
    return targets, rows


def _cells(matrix: list[dict]) -> dict[tuple[str, str, str], dict]:
    return {(r["target"], r["pip"], r["grade"]): r for r in matrix}


def _rate_colour(rate: Optional[float]) -> str:
    if rate is None:
        return GREY
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    # Squared: a conformance rate of 60% is far from good, so it shows orange, not green.
    return to_hex(colormaps["RdYlGn"](0.05 + 0.9 * float(rate) ** 2))


def _pct(rate: Optional[float]) -> str:
    return "n/a" if rate is None else f"{100 * rate:.0f}%"


def heatmap_png(matrix: list[dict], path: Path) -> Path:
    """The matrix as a picture, one cell per target x (PIP, grade)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgb

    targets, rows = _axes(matrix)
    cells = _cells(matrix)
    width = max(6.0, 1.9 * len(targets) + 2.5)
    height = max(2.5, 0.75 * len(rows) + 1.6)
    fig, ax = plt.subplots(figsize=(width, height), dpi=110)
    for y, (pip, grade) in enumerate(rows):
        for x, target in enumerate(targets):
            cell = cells.get((target, pip, grade))
            rate = cell.get("pass_rate") if cell else None
            colour = _rate_colour(rate)
            ax.add_patch(plt.Rectangle((x, y), 1, 1, facecolor=colour, edgecolor="white", linewidth=2))
            if cell is None:
                text = "no cases"
            elif rate is None and cell.get(TARGET_ERROR):
                text = f"target error\n{cell[TARGET_ERROR]} not judged"
            elif rate is None:
                text = f"not executed\n{cell['unsupported']} unsupported"
            else:
                known = cell.get("expected_failure") or 0
                text = (f"{_pct(rate)}  ({cell['passed']}/{cell['passed'] + cell['failed']})\n"
                        + (f"x{known} " if known else "")
                        + f"u{cell['unsupported']} i{cell['indefinite']} b{cell['broken']}"
                        + (f" t{cell[TARGET_ERROR]}" if cell.get(TARGET_ERROR) else ""))
            dark = sum(to_rgb(colour)) < 1.2
            ax.text(x + 0.5, y + 0.5, text, ha="center", va="center", fontsize=8.5,
                    color="white" if dark else "black")
    ax.set_xlim(0, len(targets))
    ax.set_ylim(len(rows), 0)
    ax.set_xticks([x + 0.5 for x in range(len(targets))], targets)
    ax.set_yticks([y + 0.5 for y in range(len(rows))], [f"PIP-{p} {g}" for p, g in rows])
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_title("Pass rate, latest run per target\npassed / (passed + failed); x of the failed are known "
                 "divergences; u unsupported, i indefinite, b broken, t target error", fontsize=9, pad=24)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path


# -- HTML -----------------------------------------------------------------------------------------

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.meta{color:#666;font-size:13px} table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4} td.num{text-align:right} table#matrix td.cell{text-align:center;min-width:120px}
.cell .rate{font-size:16px;font-weight:600} .cell .counts{font-size:11px}
.regression{color:#b00020;font-weight:600} .fix{color:#1b7f3b;font-weight:600}
.bad{color:#b00020} .cut{color:#666;font-style:italic} img.heatmap{max-width:100%;border:1px solid #eee}
"""


def _e(value) -> str:
    return html.escape("" if value is None else str(value))


def _table(rows: list[dict], columns: list[str], limit: int = HTML_LIST, row_class: Optional[str] = None) -> str:
    if not rows:
        return "<p class='meta'>none</p>"
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = []
    for row in rows[:limit]:
        css = f" class='{_e(row.get(row_class))}'" if row_class else ""
        tds = "".join(f"<td class='num'>{_e(_fmt(row.get(c)))}</td>" if isinstance(row.get(c), (int, float))
                      and not isinstance(row.get(c), bool) else f"<td>{_e(_fmt(row.get(c)))}</td>" for c in columns)
        body.append(f"<tr{css}>{tds}</tr>")
    cut = f"<p class='cut'>{len(rows) - limit} more rows in the CSV</p>" if len(rows) > limit else ""
    return f"<table><tr>{head}</tr>{''.join(body)}</table>{cut}"


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


def matrix_table_html(matrix: list[dict]) -> str:
    targets, rows = _axes(matrix)
    cells = _cells(matrix)
    head = "<th>PIP / grade</th>" + "".join(f"<th class='target'>{_e(t)}</th>" for t in targets)
    lines = [f"<table id='matrix'><tr>{head}</tr>"]
    for pip, grade in rows:
        tds = []
        for target in targets:
            cell = cells.get((target, pip, grade))
            attrs = f"data-target='{_e(target)}' data-pip='{_e(pip)}' data-grade='{_e(grade)}'"
            if cell is None:
                tds.append(f"<td class='cell' {attrs} style='background:{GREY}'>no cases</td>")
                continue
            rate = cell.get("pass_rate")
            known = cell.get("expected_failure") or 0
            failed = (f"failed {cell['failed'] - known} · expected-failure {known}" if known
                      else f"failed {cell['failed']}")
            counts = (f"passed {cell['passed']} · {failed}<br>unsupported {cell['unsupported']} · "
                      f"indefinite {cell['indefinite']} · broken {cell['broken']}"
                      + (f"<br>target-error {cell[TARGET_ERROR]}" if cell.get(TARGET_ERROR) else ""))
            tds.append(f"<td class='cell' {attrs} data-pass-rate='{'' if rate is None else rate}' "
                       f"style='background:{_rate_colour(rate)}'><div class='rate'>{_pct(rate)}</div>"
                       f"<div class='counts'>{counts}</div></td>")
        lines.append(f"<tr><th>PIP-{_e(pip)} {_e(grade)}</th>{''.join(tds)}</tr>")
    lines.append("</table>")
    return "".join(lines)


def client_matrix_html(rows: list[dict]) -> list[str]:
    """The client compatibility matrix (reports/clients.py): client library and version x broker release."""
    if not rows:
        return []
    columns, grid = clients.grid(rows)
    head = "<th>client library</th>" + "".join(f"<th class='target'>{_e(c)}</th>" for c in columns)
    lines = [f"<table id='clients'><tr>{head}</tr>"]
    for client, cells in grid:
        tds = "".join(f"<td class='cell' style='background:{_rate_colour(cell.get('pass_rate')) if cell else GREY}'>"
                      f"<div class='rate'>{_pct(cell.get('pass_rate')) if cell else ''}</div>"
                      f"<div class='counts'>{_e(clients.cell_text(cell))}</div></td>" for cell in cells)
        lines.append(f"<tr><th>{_e(client)}</th>{tds}</tr>")
    lines.append("</table>")
    return ["<h2>Client libraries x broker releases</h2>",
            "<p class='meta'>PIP-344's client cases through each client library, the latest verdict of each case "
            "(every run counts, so each client release run keeps its row); unsupported is what the library's API "
            "lacks or the target cannot do; known: failures spec/divergences/ records for the client library or "
            "the broker.</p>", "".join(lines)]


def troubled_targets(tables: dict) -> list[dict]:
    """The latest runs with target-error cases, most first (shown before the matrix)."""
    latest = [r for r in tables.get("runs", []) if r.get("recency") == 1 and r.get(TARGET_ERROR)]
    return sorted(latest, key=lambda r: (-r[TARGET_ERROR], r["target"]))


def summary_html(result, png: Optional[Path] = None, allure_href: Optional[str] = None) -> str:
    """The summary page as one HTML string, self-contained and readable offline."""
    tables = result.tables
    latest = [r for r in tables.get("runs", []) if r.get("recency") == 1]
    picture = ""
    if png is not None and Path(png).exists():
        data = base64.b64encode(Path(png).read_bytes()).decode("ascii")
        picture = f"<img class='heatmap' alt='compliance matrix heat-map' src='data:image/png;base64,{data}'>"
    diff = sorted(tables.get("diff", []), key=lambda r: ({"regression": 0, "fix": 1}.get(r["change"], 2),
                                                         r["target"], r["case_id"]))
    slow = sorted(tables.get("durations_case", []), key=lambda r: -(r.get("p99_s") or 0))
    bad = [{"where": b.where(), "reason": b.reason, "excerpt": b.excerpt} for b in result.bad_lines]
    allure = f"<p><a href='{_e(allure_href)}'>Allure report</a></p>" if allure_href else ""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    bad_note = (f"<span class='bad'>{result.bad_count} bad line(s) skipped</span>" if result.bad_count
                else "no bad lines")
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<title>Pulsar conformance summary</title>", f"<style>{CSS}</style></head><body>",
        "<h1>Pulsar conformance summary</h1>",
        f"<p class='meta'>{len(result.files)} result file(s), {result.records} records, "
        f"{len({r['run_id'] for r in tables.get('runs', [])})} run(s), {bad_note}; generated {now}</p>", allure,
        *_troubled_html(tables),
        "<h2>Compliance matrix (latest run per target)</h2>",
        "<p class='meta'>pass rate = passed / (passed + failed); expected-failure counts the failed cases that "
        "spec/divergences/ records as known divergences of that target (they are failures, shown apart); "
        "unsupported, indefinite, broken and target-error are counted apart and never in the rate.</p>",
        matrix_table_html(tables.get("matrix", [])), picture,
        *client_matrix_html(tables.get("clients", [])),
        "<h2>Latest runs</h2>",
        _table(latest, ["target", "run_id", "target_version", "started", "records", *VERDICTS]),
        "<h2>Changes since the previous run</h2>",
        _table(diff, ["target", "change", "case_id", "driver", "before", "after"], row_class="change"),
        "<h2>Flaky cases (passed and failed at the same target version)</h2>",
        _table(tables.get("flaky", []), ["target", "target_version", "case_id", "driver", "passed", "failed",
                                         "pass_rate", "wilson_low", "wilson_high"]),
        "<h2>Durations per target (executed cases)</h2>",
        _table(tables.get("durations_target", []), ["target", "samples", "p50_s", "p99_s"]),
        "<h2>Slowest cases by p99</h2>",
        _table(slow, ["target", "case_id", "samples", "p50_s", "p99_s"], limit=25),
        "<h2>Bad lines</h2>",
        _table(bad, ["where", "reason", "excerpt"]),
        "</body></html>",
    ]
    return "\n".join(parts)


def _troubled_html(tables: dict) -> list[str]:
    troubled = troubled_targets(tables)
    if not troubled:
        return []
    return ["<h2 class='bad'>Targets down or misbehaving (latest run)</h2>",
            "<p class='meta'>target-error: the target could not start, stopped serving, or could not be "
            "restarted with a case's configuration; these cases were not judged. The reason is in each "
            "record and in the Allure report.</p>",
            _table(troubled, ["target", "run_id", "target_version", TARGET_ERROR, "records"])]


# -- Markdown -------------------------------------------------------------------------------------

def _md_row(values) -> str:
    return "| " + " | ".join(str(v).replace("|", "\\|") for v in values) + " |"


def summary_markdown(result) -> str:
    """The summary for a CI log, long lists cut with the count of what was cut."""
    tables = result.tables
    out = ["## Pulsar conformance summary", "",
           f"{len(result.files)} result file(s), {result.records} records, "
           f"{len({r['run_id'] for r in tables.get('runs', [])})} run(s), {result.bad_count} bad line(s).", ""]
    troubled = troubled_targets(tables)
    if troubled:
        out += ["### Targets down or misbehaving (latest run)", ""]
        out += [f"- **{r['target']}** ({r.get('target_version') or 'version unknown'}, run {r['run_id']}): "
                f"{r[TARGET_ERROR]} of {r['records']} case(s) target-error, not judged" for r in troubled]
        out.append("")
    out += ["### Compliance matrix (latest run per target)", "",
           _md_row(["target", "PIP", "grade", *VERDICTS, "of which expected", "pass rate", "95% CI"]),
           _md_row(["---"] * (len(VERDICTS) + 6))]
    for r in tables.get("matrix", []):
        ci = "" if r.get("wilson_low") is None else f"{_pct(r['wilson_low'])}–{_pct(r['wilson_high'])}"
        out.append(_md_row([r["target"], r["pip"], r["grade"], *[r[v] for v in VERDICTS], r.get("expected_failure") or 0,
                            _pct(r.get("pass_rate")), ci]))
    matrix_lines = clients.markdown(tables.get("clients", []))
    if matrix_lines:
        out += ["", "### Client libraries x broker releases", "", *matrix_lines]
    diff = tables.get("diff", [])
    out += ["", "### Changes since the previous run", ""]
    if not diff:
        out.append("none (or fewer than two runs per target)")
    else:
        kinds: dict[tuple[str, str], int] = {}
        for r in diff:
            kinds[(r["target"], r["change"])] = kinds.get((r["target"], r["change"]), 0) + 1
        out.append(", ".join(f"{t}: {n} {c}" for (t, c), n in sorted(kinds.items())))
        regressions = [r for r in diff if r["change"] == "regression"]
        for r in regressions[:MD_LIST]:
            out.append(f"- REGRESSION {r['target']} {r['case_id']} ({r['driver']}): {r['before']} -> {r['after']}")
        if len(regressions) > MD_LIST:
            out.append(f"- ... {len(regressions) - MD_LIST} more regressions in csv/diff.csv")
    flaky = tables.get("flaky", [])
    out += ["", f"### Flaky cases: {len(flaky)}", ""]
    if not flaky:
        out.append("none (no case both passed and failed at the same target version)")
    for r in flaky[:MD_LIST]:
        out.append(f"- {r['target']} {r['target_version']} {r['case_id']} ({r['driver']}): passed {r['passed']}, "
                   f"failed {r['failed']}, pass rate {_pct(r['pass_rate'])} "
                   f"(95% CI {_pct(r['wilson_low'])}–{_pct(r['wilson_high'])})")
    if len(flaky) > MD_LIST:
        out.append(f"- ... {len(flaky) - MD_LIST} more in csv/flaky.csv")
    out += ["", "### Durations per target (executed cases)", "", _md_row(["target", "samples", "p50 s", "p99 s"]),
            _md_row(["---"] * 4)]
    for r in tables.get("durations_target", []):
        out.append(_md_row([r["target"], r["samples"], _fmt(r["p50_s"]), _fmt(r["p99_s"])]))
    if result.bad_count:
        out += ["", f"### Bad lines: {result.bad_count} (skipped, not fatal)", ""]
        for b in result.bad_lines[:MD_LIST]:
            out.append(f"- {b.where()}: {b.reason}")
        if len(result.bad_lines) > MD_LIST:
            out.append(f"- ... {len(result.bad_lines) - MD_LIST} more in csv/bad_lines.csv")
    return "\n".join(out) + "\n"


def write_summaries(result, out_dir: Path, allure_href: Optional[str] = None) -> dict[str, Path]:
    """matrix.png, summary.html and summary.md under ``out_dir``."""
    out_dir = Path(out_dir)
    png = heatmap_png(result.tables.get("matrix", []), out_dir / "matrix.png")
    page = out_dir / "summary.html"
    page.write_text(summary_html(result, png, allure_href), encoding="utf-8")
    markdown = out_dir / "summary.md"
    markdown.write_text(summary_markdown(result), encoding="utf-8")
    return {"png": png, "html": page, "markdown": markdown}
