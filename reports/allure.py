"""The Allure HTML report: self-contained files, rendered by the npm package ``allure`` (Allure 3).

allure-pytest writes ``<out>/allure-results`` during a conformance run (conformance/plugin.py); this module
stages the latest run's results, writes the Allure 3 config, and runs ``allure generate`` with the awesome
plugin's ``singleFile`` option, which inlines every script, style and result into each ``index.html``.

- the latest run only (``stage``): allure-pytest appends to ``allure-results`` run after run, so
  the results kept are those labelled with the latest run's id (the id is in
  ``environment.properties``). Results without that label (older runs) are kept when they started
  at or after the run's first case (its start comes from its ``<run_id>.jsonl``); without either,
  every result is rendered.
- targets are Allure environments (``stage``, ``write_config``): each staged result gets a
  ``target`` label (its ``target`` parameter, else its ``suite`` label) and a ``verdict`` label,
  and the config has one environment per target, with the target's ``environment.properties``
  values as its variables. With several targets each also gets a report of its own
  (``target-<id>/``, ``allure_id``), and the top page is Allure's summary: one headline ring per
  target beside the report of all of them, never one ring alone over all targets mixed. Every
  report groups by PIP, table and row (epic, feature, story).
- categories keep failed, unsupported, indefinite, broken and target-error apart
  (schema.ALLURE_STATUS); they are in the Allure 3 config and, for Allure 2 readers, in
  ``categories.json`` beside the results.
- the client libraries (``client`` label, conformance/plugin.py): a report of their cases grouped
  by client library and version, then target (``clients/``), and each target's column of the
  client matrix (reports/clients.py) among its environment's variables.
- history is carried across runs in ``<out>/allure-history.jsonl`` (Allure 3's ``historyPath``); a
  run already recorded there is not appended twice (``<out>/allure-history.runs`` lists them).
- the report must not call out: Google Analytics tags that the templates carry are stripped from
  the output, and ``ALLURE_NO_ANALYTICS`` is set. Every wait on the CLI is bounded.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Iterable, Optional

from reports import clients as client_matrix, needs
from reports.schema import ALLURE_STATUS, BROKEN, FAILED, INDEFINITE, PASSED, TARGET_ERROR, UNSUPPORTED

ROOT = Path(__file__).resolve().parents[1]
GENERATE_TIMEOUT_S = 300
ANALYTICS = re.compile(r"<script[^>]*googletagmanager[^>]*>\s*</script>\s*"
                       r"(<script>\s*window\.dataLayer[\s\S]*?</script>)?")


class AllureError(Exception):
    """The Allure report could not be rendered; the message says why and what to do."""


def find_cli(explicit: Optional[Path] = None) -> Optional[Path]:
    """The ``allure`` CLI: the given one, else node_modules/.bin/allure of the cwd or of this project's
    clone, else ``allure`` on PATH."""
    if explicit:
        return Path(explicit) if Path(explicit).exists() else None
    for candidate in (Path.cwd() / "node_modules/.bin/allure", ROOT / "node_modules/.bin/allure"):
        if candidate.exists():
            return candidate
    on_path = shutil.which("allure")
    return Path(on_path) if on_path else None


def read_properties(path: Path) -> dict[str, str]:
    """A Java .properties file (as conformance/plugin.py writes it) as a dict."""
    values: dict[str, str] = {}
    if not path.exists():
        return values
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith(("#", "!")):
            continue
        key, value, escaped = [], [], False
        target = key
        for char in line:
            if escaped:
                target.append({"n": "\n", "t": "\t"}.get(char, char))
                escaped = False
            elif char == "\\":
                escaped = True
            elif char in "=:" and target is key:
                target = value
            else:
                target.append(char)
        values["".join(key).strip()] = "".join(value).strip()
    return values


def run_start_ms(run_id: str, result_files: Iterable[Path]) -> Optional[int]:
    """When the run's first case started, from its ``<run_id>.jsonl`` (to keep the latest run only); None if not found."""
    for path in result_files:
        path = Path(path)
        if path.name != f"{run_id}.jsonl":
            continue
        starts = []
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    record = json.loads(line)
                    finished = datetime.fromisoformat(record["timestamp"]).timestamp()
                    starts.append(finished - float(record.get("duration_s") or 0))
                except (ValueError, KeyError, TypeError):
                    continue
        if starts:
            return int(min(starts) * 1000) - 1000  # 1 s of slack for clock rounding
    return None


def verdict_of(result: dict) -> str:
    """The conformance verdict an allure-pytest result stands for (conformance/plugin.py's verdict -> pytest outcome)."""
    status = result.get("status")
    message = (result.get("statusDetails") or {}).get("message") or ""
    if status == "passed":
        return PASSED
    if status == "failed":
        return FAILED
    if status == "skipped":
        return UNSUPPORTED
    if re.search(r"\btarget-error:", message):
        return TARGET_ERROR
    return INDEFINITE if re.search(r"\bindefinite:", message) else BROKEN


def _target_of(result: dict) -> str:
    for parameter in result.get("parameters") or []:
        if parameter.get("name") == "target":
            return str(parameter.get("value", "")).strip("'\"")
    for label in result.get("labels") or []:
        if label.get("name") == "suite":
            return label.get("value", "")
    return "unknown"


def _attachment_sources(node) -> Iterable[str]:
    if isinstance(node, dict):
        for item in node.get("attachments") or []:
            if isinstance(item, dict) and item.get("source"):
                yield item["source"]
        for step in node.get("steps") or []:
            yield from _attachment_sources(step)
        for key in ("befores", "afters"):
            for fixture in node.get(key) or []:
                yield from _attachment_sources(fixture)


def _of_run(result: dict, run_id: str, since_ms: Optional[int]) -> bool:
    labelled = [l.get("value") for l in result.get("labels") or [] if l.get("name") == "run_id"]
    if labelled and run_id:
        return labelled[0] == run_id
    return since_ms is None or int(result.get("start") or 0) >= since_ms


def stage(allure_results: Path, staging: Path, since_ms: Optional[int], run_id: str = "") -> dict:
    """The latest run's results, as environments: copies the kept results (with labels added) and their attachments into ``staging``."""
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    kept, sources, targets, with_client = set(), set(), {}, 0
    for path in sorted(allure_results.glob("*-result.json")):
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, OSError):
            continue
        if not _of_run(result, run_id, since_ms):
            continue
        target, verdict = _target_of(result), verdict_of(result)
        labels = [l for l in result.get("labels") or [] if l.get("name") not in ("target", "verdict")]
        result["labels"] = labels + [{"name": "target", "value": target}, {"name": "verdict", "value": verdict}]
        targets[target] = targets.get(target, 0) + 1
        with_client += any(label.get("name") == "client" for label in labels)
        kept.add(result.get("uuid"))
        sources.update(_attachment_sources(result))
        (staging / path.name).write_text(json.dumps(result), encoding="utf-8")
    for path in allure_results.glob("*-container.json"):
        try:
            container = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, OSError):
            continue
        if kept & set(container.get("children") or []):
            sources.update(_attachment_sources(container))
            shutil.copy2(path, staging / path.name)
    for source in sources:
        if (allure_results / source).exists():
            shutil.copy2(allure_results / source, staging / source)
    (staging / "categories.json").write_text(json.dumps(categories_json(), indent=1), encoding="utf-8")
    return {"results": len(kept), "targets": targets, "with_client": with_client}


def categories_json() -> list[dict]:
    """The verdict categories, for Allure 2 readers (categories.json)."""
    rules = []
    for verdict, (status, name) in ALLURE_STATUS.items():
        if name is None:
            continue
        rule = {"name": name, "matchedStatuses": [status]}
        if verdict in (INDEFINITE, TARGET_ERROR):
            rule["messageRegex"] = rf"(?s).*\b{verdict}:.*"
        elif verdict == BROKEN:
            rule["messageRegex"] = r"(?s)^(?!.*\b(?:indefinite|target-error):).*"
        rules.append(rule)
    return rules


def write_config(path: Path, *, output: Path, history: Path, targets: Iterable[str],
                 variables: dict[str, dict[str, str]], report_name: str, append_history: bool,
                 client_report: bool = False) -> Path:
    """The Allure 3 config, with the environments, the categories and the history path (JavaScript: environment
    matchers are functions). With ``client_report``, a report of the client libraries' cases as well, grouped by
    client library and version, then target: the client matrix's rows, each target's verdicts under them."""
    targets = sorted(targets)
    environments = ",\n".join(
        f"    {json.dumps(environment_id(t))}: {{ name: {json.dumps(environment_name(t))}, "
        f"variables: {json.dumps({'target': t, **variables.get(t, {})})}, "
        f"matcher: byTarget({json.dumps(t)}) }}" for t in sorted(targets))
    rules = []
    for verdict, (status, name) in ALLURE_STATUS.items():
        if name is not None:
            rules.append(f"    {{ name: {json.dumps(name)}, matchers: {{ statuses: [{json.dumps(status)}], "
                         f"labels: {{ verdict: {json.dumps(verdict)} }} }}, groupBy: [\"environment\"] }}")
    rules_text = ",\n".join(rules)
    # One report per target as well, so each target's headline ring counts its own cases only; with
    # several plugins Allure writes a summary page that shows every report's figures side by side.
    per_target = "\n".join(
        f"    {json.dumps(plugin_id(t))}: {{ import: \"@allurereport/plugin-awesome\", options: {{ singleFile: true, "
        f"reportName: {json.dumps(f'{report_name}: {t}')}, groupBy: [\"epic\", \"feature\", \"story\"], "
        f"filter: byTarget({json.dumps(t)}) }} }}," for t in targets) if len(targets) > 1 else ""
    if client_report:
        per_target += (f"\n    clients: {{ import: \"@allurereport/plugin-awesome\", options: {{ singleFile: true, "
                       f"reportName: {json.dumps(f'{report_name}: client libraries x brokers')}, "
                       f"groupBy: [\"client\", \"target\", \"feature\"], filter: withClient }} }},")
    text = f"""// Written by reports/allure.py for one rendering; do not edit.
const byTarget = (name) => ({{ labels }}) => labels.some((l) => l.name === "target" && l.value === name);
const withClient = ({{ labels }}) => labels.some((l) => l.name === "client");
export default {{
  name: {json.dumps(report_name)},
  output: {json.dumps(str(output))},
  historyPath: {json.dumps(str(history))},
  appendHistory: {json.dumps(append_history)},
  environments: {{
{environments}
  }},
  categories: {{ rules: [
{rules_text}
  ] }},
  plugins: {{
    awesome: {{ options: {{ singleFile: true, reportName: {json.dumps(report_name)},
                          groupBy: ["target", "epic", "feature", "story"] }} }},
{per_target}
  }},
}};
"""
    path.write_text(text, encoding="utf-8")
    return path


ALLURE_ID_MAX = 64  # Allure 3 refuses longer environment ids and names


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:6]


def allure_id(text: str) -> str:
    """``text`` as an id of Allure 3's config: at most 64 latin letters, digits, ``_`` and ``-``. A
    text that had to change ends with a short digest of itself, so two target names that differ
    only in a replaced character (``pulsar-4.0.7``, ``pulsar-4_0_7``) keep two ids."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", text)
    if safe == text and len(text) <= ALLURE_ID_MAX:
        return text
    return f"{safe[:ALLURE_ID_MAX - 7]}-{_digest(text)}"


def environment_id(target: str) -> str:
    """The Allure environment of a target."""
    return allure_id(target)


def environment_name(target: str) -> str:
    """The name Allure shows for a target's environment. Allure refuses a name with a path
    separator, a control character or more than 64 characters, so a URL target's slashes are shown
    as U+2215 (a slash to the eye) and a long name is cut, with a digest; the exact target name is
    the environment's ``target`` variable."""
    name = re.sub(r"[\x00-\x1f\x7f-\x9f]", "", target).replace("/", "\u2215").replace("\\", "\u2215").strip()
    if name in ("", ".", ".."):
        name = f"target {name}".strip()
    if len(name) > ALLURE_ID_MAX:
        name = f"{name[:ALLURE_ID_MAX - 8]}\u2026 {_digest(target)}"
    return name


def plugin_id(target: str) -> str:
    """A target's report folder name (``target-<id>``)."""
    return "target-" + allure_id(target)


def target_variables(properties: dict[str, str], targets: Iterable[str],
                     clients: Iterable[dict] = ()) -> dict[str, dict[str, str]]:
    """Each target's environment variables: its ``environment.properties`` values, and its column of the
    client matrix (reports/clients.py), one ``client <library> <version>`` variable per client library."""
    out: dict[str, dict[str, str]] = {}
    for target in targets:
        prefix = f"{target}."
        out[target] = {k[len(prefix):]: v for k, v in properties.items() if k.startswith(prefix)}
        if properties.get("run_id"):
            out[target]["run_id"] = properties["run_id"]
    for cell in clients:
        if cell["target"] in out:
            out[cell["target"]][f"client {cell['client']}"] = client_matrix.cell_text(cell)
    return out


def render(allure_results: Path, out_dir: Path, *, result_files: Iterable[Path] = (), cli: Optional[Path] = None,
           timeout: float = GENERATE_TIMEOUT_S, report_name: str = "Pulsar conformance",
           clients: Iterable[dict] = ()) -> Path:
    """Stages, configures and runs ``allure generate``; returns the single-file ``index.html``."""
    # Absolute: `allure generate` runs with the staging folder as its cwd, where a relative --out
    # (`make report` passes reports/out) would point somewhere else.
    allure_results, out_dir = Path(allure_results).resolve(), Path(out_dir).resolve()
    if not allure_results.is_dir() or not any(allure_results.glob("*-result.json")):
        raise AllureError(f"no Allure results in {allure_results}: `python -m conformance run` writes them "
                          "(allure-pytest); pass --allure-results DIR or --no-allure")
    given, cli = cli, find_cli(cli)
    if cli is None:
        raise AllureError(f"the allure CLI was not found{f' at {given}' if given else ''}: {needs.allure_hint()}")
    properties = read_properties(allure_results / "environment.properties")
    run_id = properties.get("run_id", "")
    since = run_start_ms(run_id, result_files) if run_id else None
    work = out_dir / ".allure-staging"
    staged = stage(allure_results, work / "results", since, run_id)
    if not staged["results"]:
        raise AllureError(f"no Allure result of run {run_id or '?'} in {allure_results}")
    history = out_dir / "allure-history.jsonl"
    ledger = out_dir / "allure-history.runs"
    seen = set(ledger.read_text(encoding="utf-8").split()) if ledger.exists() else set()
    append = not run_id or run_id not in seen
    report_dir = out_dir / "allure-report"
    if report_dir.exists():
        shutil.rmtree(report_dir)
    config = write_config(work / "allurerc.mjs", output=report_dir, history=history, targets=staged["targets"],
                          variables=target_variables(properties, staged["targets"], clients),
                          report_name=report_name, append_history=append, client_report=bool(staged["with_client"]))
    (work / "results" / "executor.json").write_text(json.dumps({
        "name": "pulsar-conformance", "type": "make", "buildName": run_id or "conformance run",
        "reportName": report_name}), encoding="utf-8")
    env = dict(os.environ, ALLURE_NO_ANALYTICS="true", NO_COLOR="1", CI=os.environ.get("CI", "true"))
    try:
        done = subprocess.run([str(cli), "generate", "--config", str(config), str(work / "results")],
                              cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise AllureError(f"allure generate did not finish within {timeout:.0f} s") from exc
    index = report_dir / "index.html"
    if done.returncode != 0 or not index.exists():
        raise AllureError(f"allure generate failed (exit {done.returncode}): {(done.stderr or done.stdout)[-2000:]}")
    for page_path in report_dir.rglob("*.html"):
        page = page_path.read_text(encoding="utf-8")
        page_path.write_text(ANALYTICS.sub("", page), encoding="utf-8")
    if append and run_id:
        with open(ledger, "a", encoding="utf-8") as handle:
            handle.write(run_id + "\n")
    shutil.rmtree(work, ignore_errors=True)
    return index
