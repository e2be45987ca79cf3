"""The CI files a user copies (docs/ci.md): the GitHub Actions action (action.yml), the example
GitHub workflow, GitLab job and plain shell job (examples/ci/).

actionlint (built into the cache by mk/ci.mk) checks them, with shellcheck on every ``run:`` script:

- the example workflow as a user's repository holds it, its ``uses:`` of this action pointed at a
  copy of action.yml, so that actionlint reads the action's metadata and checks the call's inputs
  against it (an input the action lacks is reported: the last test proves the metadata was read);
- the action's own steps: actionlint reads an action's metadata but does not lint its steps
  (rhysd/actionlint#46), so they are linted as the steps of a workflow that declares the action's
  inputs as its own.

shellcheck checks the shell job and the GitLab job's scripts; docs/ci.md shows each example as it is.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conformance.targets.maven import cache_dir

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
EXAMPLES = ROOT / "examples" / "ci"
WORKFLOW = EXAMPLES / "github-actions.yml"
GITLAB = EXAMPLES / "gitlab-ci.yml"
SHELL_JOB = EXAMPLES / "conformance-job.sh"
DOC = ROOT / "docs" / "ci.md"
OUR_ACTION = re.compile(r"uses: [\w.-]+/pulsar-conformance@[\w.-]+")


def actionlint() -> Path:
    version = re.search(r"^ACTIONLINT_VERSION := (\S+)$", (ROOT / "mk" / "ci.mk").read_text(), re.MULTILINE).group(1)
    binary = cache_dir() / "go" / f"actionlint-v{version}" / "actionlint"
    if not binary.is_file():
        pytest.fail(f"actionlint {version} is not built ({binary}): run make actionlint")
    if shutil.which("shellcheck") is None:
        pytest.fail("shellcheck is not installed, so actionlint would not check the scripts: run make system-shellcheck")
    return binary


def lint(repository: Path, *files: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(actionlint()), "-no-color", *files], cwd=repository, capture_output=True, text=True,
                          timeout=120)


def user_repository(tmp_path: Path, workflow_text: str) -> Path:
    """A repository holding the example workflow, with this action as a local one (``uses: ./``). actionlint
    resolves a local action from the project root, which it finds by its ``.git`` folder; without one it
    skips the action's metadata and checks no input."""
    repository = tmp_path / "repository"
    (repository / ".github" / "workflows").mkdir(parents=True)
    (repository / ".git").mkdir()
    assert len(OUR_ACTION.findall(workflow_text)) == 1
    (repository / ".github" / "workflows" / "conformance.yml").write_text(OUR_ACTION.sub("uses: ./", workflow_text))
    shutil.copy(ACTION, repository / "action.yml")
    return repository


def test_the_example_workflow_and_its_call_of_the_action_pass_actionlint(tmp_path):
    done = lint(user_repository(tmp_path, WORKFLOW.read_text()), ".github/workflows/conformance.yml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_actions_steps_pass_actionlint_and_shellcheck(tmp_path):
    action = yaml.safe_load(ACTION.read_text())
    assert action["runs"]["using"] == "composite"
    inputs = {name: {"description": spec["description"], "required": bool(spec.get("required", False)),
                     "type": "string", **({"default": spec["default"]} if "default" in spec else {})}
              for name, spec in action["inputs"].items()}
    workflow = {"name": "the action's steps", "on": {"workflow_call": {"inputs": inputs}},
                "jobs": {"steps": {"runs-on": "ubuntu-24.04", "steps": action["runs"]["steps"]}}}
    repository = tmp_path / "steps"
    (repository / ".github" / "workflows").mkdir(parents=True)
    (repository / ".github" / "workflows" / "steps.yml").write_text(yaml.safe_dump(workflow, sort_keys=False))
    done = lint(repository, ".github/workflows/steps.yml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_input_is_used_and_every_output_comes_from_a_step():
    action = yaml.safe_load(ACTION.read_text())
    steps = action["runs"]["steps"]
    text = yaml.safe_dump(steps)
    for name in action["inputs"]:
        assert f"inputs.{name}" in text, f"input {name} is declared but no step reads it"
    ids = {step.get("id") for step in steps}
    for name, output in action["outputs"].items():
        step = re.fullmatch(r"\$\{\{ steps\.([\w-]+)\.outputs\.([\w-]+) \}\}", output["value"])
        assert step and step.group(1) in ids, f"output {name}: {output['value']}"
    assert {"target", "known-divergences", "broker-config", "compare-with"} <= set(action["inputs"])
    assert {"exit-code", "report-dir"} <= set(action["outputs"])
    assert action["inputs"]["target"]["required"] is True


def test_an_input_the_action_lacks_is_reported(tmp_path):
    text = WORKFLOW.read_text().replace("          out: conformance-report\n",
                                        "          out: conformance-report\n          targte: x\n")
    done = lint(user_repository(tmp_path, text), ".github/workflows/conformance.yml")
    assert done.returncode == 1 and 'input "targte" is not defined' in done.stdout, done.stdout + done.stderr


def test_the_shell_job_passes_shellcheck():
    actionlint()
    done = subprocess.run(["shellcheck", "--shell=sh", str(SHELL_JOB)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert SHELL_JOB.stat().st_mode & 0o111


def test_the_gitlab_job_runs_the_image_with_a_shell_and_keeps_junit_and_history(tmp_path):
    actionlint()
    job = yaml.safe_load(GITLAB.read_text())["pulsar-conformance"]
    assert job["image"]["entrypoint"] == [""]
    out = job["variables"]["OUT"]
    assert job["artifacts"]["when"] == "always" and job["artifacts"]["reports"]["junit"] == f"{out}/junit.xml"
    assert job["cache"]["when"] == "always" and f"{out}/results/" in job["cache"]["paths"]
    assert any("url:pulsar://broker:6650" in line for line in job["script"])
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n" + "\n".join([*job["script"], *job["after_script"]]) + "\n")
    done = subprocess.run(["shellcheck", "--shell=sh", str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("example", [WORKFLOW, GITLAB], ids=lambda p: p.name)
def test_docs_show_each_example_as_it_is(example):
    assert example.read_text() in DOC.read_text(), f"docs/ci.md does not show {example.relative_to(ROOT)} as it is"
