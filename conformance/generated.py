"""Generated cases: minimal failing sequences found by ``python -m conformance fuzz``, kept as data.

A file ``spec/generated/<id>.yaml`` holds one sequence that made a target disagree with the model,
shrunk on the live target (conformance/fuzz/). It replays as an ordinary case on every target from then
on: ``conformance.suite.load_cases`` includes these cases.

- Placeholders (``placeholder_names``): the file's ``steps`` are operations
  (``model.ops.op_to_json``) whose names hold two placeholders: ``{ns}`` (the case's namespace,
  ``tenant/ns``) and ``{tenant}`` (a second, fresh tenant). ``bind(namespace)`` puts the
  per-case namespace in ``{ns}`` and ``<ns>-t`` in ``{tenant}``, so every replay starts from
  names that do not exist yet.
- Expectations are recomputed by the model at bind time (``GeneratedCase.bind``, as
  ``Case.bind`` does in cases.py). The file's ``expected`` and ``actual`` are the record of what
  happened when it was found; the model is the judge, so a model fix changes the case's
  expectation without editing the file.
- Roles (``roles_of``): the last step (where the target disagreed) is the ``action``, performed
  through the api it names (``natural_route``); an earlier admin step the model answers Done is
  ``setup``, every other earlier step is ``observe``. Routing is then the runner's.
- A case's PIP is read from its last operation (``pip_of``: the registry's ``pip``,
  spec/operations.py), so ``--pip`` selects it with its feature; its table is ``pip-<N>/generated``
  and its grade SHOULD (the model's answer, which for texts marked [I] in model/ is our best reading
  of Pulsar).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

import yaml

from conformance.cases import UNSET, BoundCase, Case, Step
from model.errors import ModelUsageError
from model.machine import apply, initial_state
from pulsar_naming.names import InvalidName, NamespaceName
from model.ops import op_from_json, op_to_json
from model.outcomes import Done
from model.state import FrozenMap
from spec.operations import OPERATIONS

GENERATED_DIR = Path(__file__).resolve().parent.parent / "spec" / "generated"
NS, TENANT = "{ns}", "{tenant}"
GRADE = "SHOULD"



def natural_route(op) -> tuple[str, str]:
    """(role, case api) of ``op`` performed on its own: an op naming its own api (or a client
    transport) is an "action" of that api; an admin op without one is "setup", so REST performs it
    where there is an admin API and a stand-in (routing.py) elsewhere."""
    api = getattr(op, "api", None)
    transport = getattr(op, "transport", None)
    if api == "client" or (api is None and transport is not None):
        return "action", f"client-{transport or 'binary'}"
    if api is not None:
        return "action", api
    # an op with no api field that only one API performs (Handshake: binary)
    registered = OPERATIONS.get(type(op).__name__)
    if registered is not None and registered.apis == ("binary",):
        return "action", "binary"
    return "setup", "rest"


def pip_of(op_json: dict) -> str:
    if op_json.get("op") == "CreateNamespace" and "numberOfTopicBuckets" in dict(op_json.get("policies") or ()):
        return "157"
    return OPERATIONS[op_json["op"]].pip


def fill(value: Any, names: dict[str, str]) -> Any:
    """``value`` (JSON) with every placeholder of ``names`` replaced, recursively."""
    if isinstance(value, str):
        for placeholder, name in names.items():
            value = value.replace(placeholder, name)
        return value
    if isinstance(value, list):
        return [fill(v, names) for v in value]
    if isinstance(value, tuple):
        return tuple(fill(v, names) for v in value)
    if isinstance(value, dict):
        return {k: fill(v, names) for k, v in value.items()}
    return value


def placeholder_names(namespace: str) -> dict[str, str]:
    """Placeholder -> name for a case bound to ``namespace``: ``{ns}`` is it, ``{tenant}`` is ``<ns>-t``."""
    given = NamespaceName.parse(namespace)
    return {NS: str(given), TENANT: f"{given.namespace}-t"}


def roles_of(ops: list, expected: list) -> list[str]:
    """The role of each step: the last is the action, an earlier admin step the model answers
    Done is setup, any other is observe."""
    roles = []
    for index, (op, outcome) in enumerate(zip(ops, expected)):
        if index == len(ops) - 1:
            roles.append("action")
        elif natural_route(op)[0] == "setup" and outcome == Done():
            roles.append("setup")
        else:
            roles.append("observe")
    return roles


@dataclass(frozen=True)
class GeneratedCase(Case):
    program: tuple = ()           # the file's steps (JSON with placeholders), as tuples of items
    seed: Optional[int] = None
    found_on: str = ""
    path: str = field(default="", compare=False)

    def ops_for(self, namespace: str) -> list:
        names = placeholder_names(namespace)
        return [op_from_json(fill(json.loads(text), names)) for text in self.program]

    def bind(self, namespace: str, tenant_missing_name: Optional[str] = None, release=UNSET) -> BoundCase:
        try:
            ops = self.ops_for(namespace)
        except InvalidName as exc:
            raise ValueError(f"Case.bind({namespace!r}): {exc}") from None
        state = initial_state(self.broker_config, self.era) if release is UNSET else \
            initial_state(self.broker_config, self.era, release)
        expected = []
        for op in ops:
            try:
                state, outcome = apply(state, op)
            except ModelUsageError as exc:
                raise ValueError(f"{self.id} ({self.path}): the model no longer answers {op}: {exc}") from exc
            expected.append(outcome)
        steps = tuple(Step(op, role, outcome) for op, role, outcome in zip(ops, roles_of(ops, expected), expected))
        return BoundCase(self, str(NamespaceName.parse(namespace)), steps)


def case_id(pip: str, steps: list[dict]) -> str:
    digest = hashlib.sha1(json.dumps(steps, sort_keys=True).encode("utf-8")).hexdigest()[:8]
    return f"pip{pip}-gen-{digest}"


def from_document(doc: dict, path: Path) -> GeneratedCase:
    for key in ("id", "era", "steps"):
        if key not in doc:
            raise ValueError(f"{path}: generated case lacks {key!r}")
    steps = list(doc["steps"])
    if not steps:
        raise ValueError(f"{path}: generated case has no steps")
    templates = tuple(json.dumps(s, sort_keys=True) for s in steps)
    # The api of the last step, the action's, names the case; checked with a placeholder namespace.
    last = op_from_json(fill(steps[-1], placeholder_names("public/x")))
    api = natural_route(last)[1]
    pip = str(doc.get("pip") or pip_of(steps[-1]))
    era = doc["era"]
    broker_config = FrozenMap(initial_state(dict(doc.get("broker_config") or {}), era).config.to_strings())
    row_id = doc["id"]
    return GeneratedCase(
        id=f"{row_id}[{api}]", row_id=row_id, pip=pip, table=f"pip-{pip}/generated", grade=GRADE, era=era, api=api,
        description=doc.get("description") or f"generated sequence {row_id}",
        source=(f"generated/{row_id}",), info=doc.get("info"), broker_config=broker_config,
        note=f"found on {doc.get('found_on', '?')} with seed {doc.get('seed')}", row=None,
        program=templates, seed=doc.get("seed"), found_on=str(doc.get("found_on", "")), path=str(path))


def load_generated(pips: Optional[set[str]] = None, era: Optional[str] = None,
                   directory: Path = GENERATED_DIR) -> list[GeneratedCase]:
    """Every generated case (sorted by file name), optionally only some PIPs and one era."""
    cases = []
    for path in sorted(Path(directory).glob("*.yaml")) if Path(directory).is_dir() else ():
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict):
            raise ValueError(f"{path}: a generated case is a YAML mapping")
        case = from_document(doc, path)
        if pips is not None and case.pip not in pips:
            continue
        if era is not None and case.era != era:
            continue
        cases.append(case)
    return cases


def to_document(*, target: str, target_version: str, seed: Optional[int], era: str, steps: list[dict],
                expected: list, actual: list, signature: str, found_at: str,
                broker_config: Optional[dict] = None) -> dict:
    """The YAML document of one minimal failing sequence, its steps with the ``{ns}``/``{tenant}``
    placeholders."""
    pip = pip_of(steps[-1])
    last = steps[-1]
    return {
        "id": case_id(pip, steps),
        "pip": pip,
        "description": f"generated: {len(steps)} step(s); {target} disagrees with the model at the last step "
                       f"({last['op']}): {signature}",
        "found_on": target,
        "target_version": target_version,
        "seed": seed,
        "found_at": found_at,
        "era": era,
        "broker_config": dict(broker_config or {}),
        "signature": signature,
        "steps": steps,
        "expected": expected,
        "actual": actual,
    }


def _finding_key(doc: dict) -> tuple:
    return (doc.get("found_on"), doc.get("signature"), json.dumps(doc.get("expected"), sort_keys=True),
            json.dumps(doc.get("actual"), sort_keys=True))


def save(doc: dict, directory: Path = GENERATED_DIR) -> Path:
    """Write ``doc`` as ``<id>.yaml``, unless the folder already holds that finding: a file of that
    id (same steps), or one found on the same target with the same signature, expected and actual
    outcomes (another minimal sequence of the same divergence, e.g. on topic ``u`` instead of ``t``).
    Returns the path of the case that holds the finding."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{doc['id']}.yaml"
    if not path.exists():
        for existing in sorted(directory.glob("*.yaml")):
            try:
                known = yaml.safe_load(existing.read_text(encoding="utf-8"))
            except (OSError, yaml.YAMLError):
                continue
            if isinstance(known, dict) and _finding_key(known) == _finding_key(doc):
                return existing
    if not path.exists():
        header = ("# Generated by `python -m conformance fuzz` (conformance/fuzz/): a minimal sequence on\n"
                  "# which a target disagreed with the model. Replayed as an ordinary case on every target;\n"
                  "# placeholders {ns} and {tenant} are bound per case, expectations recomputed by the model.\n")
        path.write_text(header + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120),
                        encoding="utf-8")
    return path


def steps_json(ops: Iterable, names: dict[str, str]) -> list[dict]:
    """Ops as JSON with the concrete names of ``names`` (name -> placeholder) put back as placeholders."""
    ordered = dict(sorted(names.items(), key=lambda item: -len(item[0])))
    return [fill(json.loads(json.dumps(op_to_json(op))), ordered) for op in ops]
