"""Generated mutants (mutation/generated/): making them, keying their results, the budget, the triage.

Nothing here runs the conformance suite: the tester is given a stand-in judge."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cosmic_ray.mutating import mutate_code
from cosmic_ray.plugins import get_operator

from mutation.generated import cache, run, scope, triage
from mutation.generated.__main__ import score
from mutation.generated.mutants import TESTING_EXCEPTION, Mutant, compiles, enumerate_module

ROOT = Path(__file__).resolve().parents[2]
SMALL = scope.Module("reference_broker/autocreation.py", (scope.Run("reference", ("344",)),))


def _copy_root(tmp_path: Path) -> Path:
    for folder in ("reference_broker", "spec"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


@pytest.fixture(scope="module")
def small_mutants() -> list[Mutant]:
    return enumerate_module(ROOT, SMALL)


def test_one_parse_gives_cosmic_rays_own_mutations(small_mutants):
    source = (ROOT / SMALL.path).read_text(encoding="utf-8")
    assert small_mutants
    for mutant in small_mutants:
        expected = mutate_code(source, get_operator(f"core/{mutant.operator}")(), mutant.occurrence)
        assert mutant.source.split(f"\n\nclass {TESTING_EXCEPTION}")[0] == expected, mutant.describe()


def test_mutants_compile_and_change_one_place(small_mutants):
    assert all(compiles(m) is None for m in small_mutants)
    assert all(m.before != m.after and m.before for m in small_mutants)
    assert len({m.id for m in small_mutants}) == len(small_mutants)


def test_exception_handlers_that_never_match_are_defined():
    entry = scope.Module("reference_broker/lookup_service.py", SMALL.runs)
    replaced = [m for m in enumerate_module(ROOT, entry) if m.operator == "ExceptionReplacer"]
    assert replaced
    for mutant in replaced:
        assert f"class {TESTING_EXCEPTION}(Exception)" in mutant.source
        assert TESTING_EXCEPTION not in mutant.before and TESTING_EXCEPTION in mutant.after


def test_number_replacer_moves_numbers_up_only(small_mutants):
    numbers = [m for m in small_mutants if m.operator == "NumberReplacer"]
    assert numbers and all(m.occurrence % 2 == 0 for m in numbers)


def test_ids_survive_edits_elsewhere_in_the_file(tmp_path, small_mutants):
    root = _copy_root(tmp_path)
    path = root / SMALL.path
    path.write_text("# a comment that moves every line down\n\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    moved = enumerate_module(root, SMALL)
    assert [m.id for m in moved] == [m.id for m in small_mutants]
    assert all(a.line == b.line + 2 for a, b in zip(moved, small_mutants))


def test_functions_limit_the_scope():
    entry = scope.Module("reference_broker/autocreation.py", SMALL.runs, functions=("validate_override",))
    made = enumerate_module(ROOT, entry)
    assert made and {m.function for m in made} == {"validate_override"}


def test_scope_names_existing_modules_and_functions():
    for entry in scope.MODULES:
        source = (ROOT / entry.path).read_text(encoding="utf-8")
        assert enumerate_module(ROOT, entry), entry.path
        missing = [f for f in entry.functions or () if f"def {f.split('.')[-1]}(" not in source]
        assert not missing, f"{entry.path}: no such functions {missing}"


# -- cache keys ------------------------------------------------------------------------------


def test_module_key_follows_the_module_and_the_mutant(small_mutants):
    source = (ROOT / SMALL.path).read_text(encoding="utf-8")
    first, second = small_mutants[0], small_mutants[1]
    assert cache.module_key(first, source) == cache.module_key(first, source)
    assert cache.module_key(first, source) != cache.module_key(second, source)
    assert cache.module_key(first, source) != cache.module_key(first, source + "\n# edited\n")


def _harness_root(tmp_path: Path) -> Path:
    for name in ("conformance/run.py", "conformance/power_commands.py", "conformance/mutation_check.py",
                 "model/m.py", "pulsar_codec/c.py", "spec/schema.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"# {name}\n")
    return tmp_path


def test_harness_key_ignores_the_commands_that_only_start_mutation_checks(tmp_path):
    root = _harness_root(tmp_path)
    before = cache.harness_key(root)
    (root / "conformance/power_commands.py").write_text("# changed\n")
    (root / "conformance/mutation_check.py").write_text("# changed\n")
    assert cache.harness_key(root) == before
    for name in ("conformance/run.py", "model/m.py", "pulsar_codec/c.py", "spec/schema.py"):
        (root / name).write_text("# changed\n")
        assert cache.harness_key(root) != before, name
        before = cache.harness_key(root)


def _spec_root(tmp_path: Path) -> Path:
    spec = tmp_path / "spec"
    (spec / "generated").mkdir(parents=True)
    (spec / "features.yaml").write_text("schema: 1\n")
    (spec / "sources.yaml").write_text("schema: 1\n")
    for pip in ("344", "2"):
        (spec / f"pip{pip}.yaml").write_text(
            f'schema: 1\nfeature: pip-{pip}\npip: "{pip}"\ntables:\n  - name: t\n    rows:\n'
            f'      - {{id: pip{pip}-a, description: a}}\n      - {{id: pip{pip}-b, description: b}}\n')
    return tmp_path


def test_cases_key_follows_only_the_spec_files_of_its_pips(tmp_path):
    root = _spec_root(tmp_path)
    key_344 = cache.cases_key(root, ["344"])
    (root / "spec/pip2.yaml").write_text((root / "spec/pip2.yaml").read_text() + "# more\n")
    assert cache.cases_key(root, ["344"]) == key_344
    (root / "spec/generated/pip344-gen-1.yaml").write_text('schema: 1\npip: "344"\ntables: []\n')
    assert cache.cases_key(root, ["344"]) != key_344
    key_344 = cache.cases_key(root, ["344"])
    (root / "spec/sources.yaml").write_text("schema: 1\n# shared\n")
    assert cache.cases_key(root, ["344"]) != key_344


def _result(status: str, keys: cache.Keys, rows: cache.RowIndex, killer_row: str = "") -> dict:
    return {"id": "m", "status": status, "module_key": keys.module, "harness_key": keys.harness,
            "cases_key": keys.cases, "plan": keys.plan, "killer_row": killer_row, "judge": cache.JUDGE,
            "killer_row_digest": rows.digest(killer_row) if killer_row else None}


@pytest.mark.parametrize("caught", ["killed", "error", "timeout"])
def test_a_caught_result_holds_while_the_row_it_was_caught_at_is_unchanged(tmp_path, caught):
    root = _spec_root(tmp_path)
    rows = cache.RowIndex(root)
    keys = cache.Keys("mod", "harness", cache.cases_key(root, ["344"]), "reference:344")
    killed = _result(caught, keys, rows, killer_row="pip344-a")
    survived = _result("survived", keys, rows)
    assert cache.still_holds(killed, keys, rows) and cache.still_holds(survived, keys, rows)

    path = root / "spec/pip344.yaml"
    path.write_text(path.read_text() + "      - {id: pip344-c, description: an added row}\n")
    now = cache.Keys("mod", "harness", cache.cases_key(root, ["344"]), "reference:344")
    fresh = cache.RowIndex(root)
    assert cache.still_holds(killed, now, fresh)         # only rows were added
    assert not cache.still_holds(survived, now, fresh)   # a new row may kill it: tried again

    path.write_text(path.read_text().replace("description: a}", "description: changed}"))
    changed = cache.Keys("mod", "harness", cache.cases_key(root, ["344"]), "reference:344")
    assert not cache.still_holds(killed, changed, cache.RowIndex(root))


def test_a_survivor_is_tried_again_on_the_new_and_changed_rows_only(tmp_path):
    root = _spec_root(tmp_path)
    rows = cache.RowIndex(root)
    keys = cache.Keys("mod", "harness", cache.cases_key(root, ["344"]), "reference:344")
    before = cache.snapshot(root, ["344"], keys.cases)
    assert set(before["rows"]) == {"pip344-a", "pip344-b"}  # another PIP's rows are not in it
    survived = _result("survived", keys, rows)
    assert cache.rows_to_retry(survived, keys, before, cache.snapshot(root, ["344"], keys.cases)) == ()

    path = root / "spec/pip344.yaml"
    path.write_text(path.read_text().replace("description: b}", "description: b changed}")
                    + "      - {id: pip344-c, description: an added row}\n")
    now = cache.snapshot(root, ["344"], cache.cases_key(root, ["344"]))
    assert cache.rows_to_retry(survived, keys, before, now) == ("pip344-b", "pip344-c")

    path.write_text(path.read_text().replace("      - {id: pip344-a, description: a}\n", ""))
    assert cache.rows_to_retry(survived, keys, before, cache.snapshot(root, ["344"], "k")) == ("pip344-b", "pip344-c")
    assert cache.rows_to_retry(survived, keys, None, now) is None  # no snapshot: every row
    assert cache.rows_to_retry(_result("killed", keys, rows, "pip344-a"), keys, before, now) is None
    for field in ("module", "harness", "plan"):
        assert cache.rows_to_retry(survived, cache.Keys(**{**keys.__dict__, field: "other"}), before, now) is None
    (root / "spec/features.yaml").write_text("schema: 1\n# a feature every row may read\n")
    assert cache.rows_to_retry(survived, keys, before, cache.snapshot(root, ["344"], "k")) is None


def test_compaction_keeps_the_snapshots_its_results_name(tmp_path):
    path = tmp_path / "results.jsonl"
    for line in ({"id": "rows:k1", "rows": {}}, {"id": "rows:k2", "rows": {}},
                 {"id": "a", "status": "survived", "cases_key": "k1"}):
        cache.append(path, line)
    cache.compact(path, {"a"})
    assert sorted(cache.load(path)) == ["a", "rows:k1"]


@pytest.mark.parametrize("field", ["module", "harness", "plan"])
def test_a_result_never_holds_across_another_module_harness_or_plan(tmp_path, field):
    root = _spec_root(tmp_path)
    rows = cache.RowIndex(root)
    keys = cache.Keys("mod", "harness", "cases", "reference:344")
    result = _result("killed", keys, rows, killer_row="pip344-a")
    other = cache.Keys(**{**keys.__dict__, field: "other"})
    assert not cache.still_holds(result, other, rows)


def test_results_file_appends_then_compacts(tmp_path):
    path = tmp_path / "results.jsonl"
    cache.append(path, {"id": "b", "status": "survived"})
    cache.append(path, {"id": "a", "status": "killed"})
    cache.append(path, {"id": "b", "status": "killed"})
    with path.open("a") as handle:
        handle.write('{"id": "c", "sta')  # a line cut by a stopped run
    assert cache.load(path) == {"a": {"id": "a", "status": "killed"}, "b": {"id": "b", "status": "killed"}}
    cache.compact(path, {"b"})
    assert path.read_text() == '{"id": "b", "status": "killed"}\n'
    assert cache.load(tmp_path / "absent.jsonl") == {}


# -- budget ----------------------------------------------------------------------------------


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _fake_root(tmp_path: Path) -> Path:
    (tmp_path / "reference_broker").mkdir()
    (tmp_path / "reference_broker" / "m.py").write_text("X = 1\n")
    return tmp_path


def _mutant(name: str) -> Mutant:
    return Mutant(name, "reference_broker/m.py", "<module>", "NumberReplacer", 0, 1, "X = 1", "X = 2", "X = 2\n")


def test_the_budget_leaves_the_rest_untested(tmp_path, monkeypatch):
    root = _fake_root(tmp_path)
    clock = _Clock()
    seen = []

    def judge(runs, cwd, limits, hints=None, only=None):
        seen.append((cwd / "reference_broker" / "m.py").read_text())
        clock.now += 10.0
        return run.Outcome("killed", killer="case")

    monkeypatch.setattr(run, "judge", judge)
    results = {}
    tester = run.Tester(root, {}, jobs=1, budget_s=25.0, on_result=lambda m, o: results.setdefault(m.id, o),
                        clock=clock)
    mutants = [_mutant(f"m{i}") for i in range(5)]
    untested = tester.run(mutants, {"reference_broker/m.py": SMALL.runs})
    assert sorted(results) == ["m0", "m1", "m2"] and untested == ["m3", "m4"]
    assert seen == ["X = 2\n"] * 3  # each judged with the mutant on disk ...
    assert (root / "reference_broker" / "m.py").read_text() == "X = 1\n"  # ... and the repository untouched


def test_a_zero_budget_tests_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(run, "judge", lambda *a: pytest.fail("judged past the budget"))
    tester = run.Tester(_fake_root(tmp_path), {}, jobs=2, budget_s=0.0, on_result=lambda m, o: None)
    assert tester.run([_mutant("a"), _mutant("b")], {"reference_broker/m.py": SMALL.runs}) == ["a", "b"]


def test_scratch_copies_hold_no_bytecode(tmp_path):
    root = _fake_root(tmp_path)
    (root / "reference_broker" / "__pycache__").mkdir()
    (root / "reference_broker" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"stale")
    scratch = run.Scratch(root)
    try:
        assert not (scratch.folder / "reference_broker" / "__pycache__").exists()
        assert (scratch.path_of("reference_broker/m.py")).read_text() == "X = 1\n"
    finally:
        scratch.remove()
    assert not scratch.folder.exists()


def test_the_run_command_stops_at_the_first_failure():
    argv = run.run_command(scope.Run("reference-cluster", ("35", "2")), Path("/tmp/o"))
    assert argv[1:] == ["-m", "conformance", "run", "--target", "reference-cluster", "--pip", "35", "--pip", "2",
                        "-x", "--jobs", "1", "--out", "/tmp/o"]


# -- triage ----------------------------------------------------------------------------------

_ENTRY = {"id": "m1", "line": "a", "mutated": "b", "verdict": "equivalent", "why": "no answer reads it"}


def _yaml(*entries: dict) -> str:
    import yaml
    return yaml.safe_dump({"survivors": list(entries)})


def test_triage_reads_entries():
    entries = triage.parse(_yaml(_ENTRY, {**_ENTRY, "id": "m2", "verdict": "missing-case", "rows": ["pip2-x"]}))
    assert entries["m1"].verdict == "equivalent" and entries["m2"].rows == ("pip2-x",)


@pytest.mark.parametrize("bad, message", [
    ({**_ENTRY, "verdict": "fine"}, "verdict"),
    ({k: v for k, v in _ENTRY.items() if k != "why"}, "missing why"),
    ({**_ENTRY, "why": " "}, "empty"),
    ({**_ENTRY, "verdict": "missing-case"}, "rows"),
    ({**_ENTRY, "extra": 1}, "unknown keys"),
])
def test_triage_refuses_malformed_entries(bad, message):
    with pytest.raises(triage.TriageError, match=message):
        triage.parse(_yaml(bad))


def test_triage_refuses_an_id_twice():
    with pytest.raises(triage.TriageError, match="twice"):
        triage.parse(_yaml(_ENTRY, _ENTRY))


class _M:
    def __init__(self, before="a", after="b"):
        self.before, self.after = before, after


def test_triage_problems():
    entries = triage.parse(_yaml(
        _ENTRY,
        {**_ENTRY, "id": "gone"},
        {**_ENTRY, "id": "moved"},
        {**_ENTRY, "id": "killed-now"},
        {**_ENTRY, "id": "gap-killed", "verdict": "model-gap"},
        {**_ENTRY, "id": "gap", "verdict": "missing-case", "rows": ["r"]},
        {**_ENTRY, "id": "closed", "verdict": "missing-case", "rows": ["r"]},
        {**_ENTRY, "id": "later"}))
    mutants = {"m1": _M(), "moved": _M(after="c"), "killed-now": _M(), "gap": _M(), "closed": _M(), "later": _M(),
               "new": _M(), "gap-killed": _M()}
    statuses = {"m1": "survived", "killed-now": "killed", "gap": "survived", "closed": "killed", "new": "survived",
                "gap-killed": "killed"}
    found = triage.problems(entries, mutants, statuses)
    assert found == ["untriaged survivor: new",
                     "stale entry: gone matches no generated mutant",
                     "stale entry: moved no longer repeats its mutant's lines ('a' -> 'c')",
                     "stale entry: killed-now is triaged equivalent but its mutant is killed",
                     "stale entry: gap-killed is triaged model-gap but its mutant is killed",
                     "open gap: gap still survives the rows r"]


def test_score_leaves_equivalent_survivors_out():
    entries = triage.parse(_yaml(_ENTRY, {**_ENTRY, "id": "m2", "verdict": "out-of-scope"},
                                 {**_ENTRY, "id": "m7", "verdict": "model-gap"}))
    statuses = {"m1": "survived", "m2": "survived", "m3": "killed", "m4": "timeout", "m5": "error", "m6": "survived",
                "m7": "survived"}
    figures = score(statuses, entries)
    assert figures["score"] == round(3 / 6, 4)
    assert figures["score_in_scope"] == round(3 / 5, 4)
    assert (figures["equivalent"], figures["out_of_scope"], figures["model_gap"], figures["untriaged"]) == (1, 1, 1, 1)


def test_the_committed_triage_file_reads():
    triage.load(ROOT / triage.TRIAGE_FILE)


def test_the_committed_triage_agrees_with_the_committed_results():
    """The check the quality run makes, on the results that still hold without running anything."""
    entries = triage.load(ROOT / triage.TRIAGE_FILE)
    stored = cache.load(ROOT / cache.RESULTS_FILE)
    harness = cache.harness_key(ROOT)
    rows = cache.RowIndex(ROOT)
    mutants, statuses = {}, {}
    for entry in scope.MODULES:
        original = (ROOT / entry.path).read_text(encoding="utf-8")
        keys_cases = cache.cases_key(ROOT, [p for r in entry.runs for p in r.pips])
        for mutant in enumerate_module(ROOT, entry):
            mutants[mutant.id] = mutant
            keys = cache.Keys(cache.module_key(mutant, original), harness, keys_cases, cache.plan_key(entry.runs))
            result = stored.get(mutant.id)
            if result is not None and cache.still_holds(result, keys, rows):
                statuses[mutant.id] = result["status"]
    assert triage.problems(entries, mutants, statuses) == []


def test_quality_generated_hands_its_options_to_the_tool():
    from conformance.__main__ import build_parser
    from conformance.power_commands import generated_argv

    args = build_parser().parse_args(["quality", "--generated", "--budget", "60", "--module", "reference_broker/bundles.py",
                                      "--out", "o"])
    argv = generated_argv(args)
    assert argv[1:] == ["-m", "mutation.generated", "--out", "o", "--budget", "60.0", "--module",
                        "reference_broker/bundles.py"]


def test_annotations_are_not_mutated():
    made = enumerate_module(ROOT, SMALL)
    assert not [m for m in made if m.before.startswith("def ")]  # every def line here has annotations only


def test_a_probe_runs_only_the_hinted_rows():
    argv = run.run_command(scope.Run("reference", ("344",)), Path("/tmp/o"), ("pip344-a", "pip344-b"))
    assert argv[argv.index("-k") + 1] == "pip344-a or pip344-b"


def test_probes_try_the_rows_that_killed_the_same_function_first():
    from mutation.generated.__main__ import killer_rows

    def mutant(name, function):
        return Mutant(name, "reference_broker/m.py", function, "AddNot", 0, 1, "a", "b", "")

    by_id = {m.id: m for m in (mutant("f1", "f"), mutant("f2", "f"), mutant("g1", "g"), mutant("g2", "g"),
                                mutant("x", "f"))}
    results = {"f1": {"status": "killed", "killer_row": "row-f", "run": "reference:344"},
               "f2": {"status": "survived", "killer_row": "", "run": ""},
               "g1": {"status": "killed", "killer_row": "row-g", "run": "reference:344"},
               "g2": {"status": "killed", "killer_row": "row-g", "run": "reference:344"}}
    assert killer_rows(by_id["x"], by_id, results) == {"reference:344": ("row-f", "row-g")}
    # a result of the mutant itself that no longer holds: its own killer first
    before = {"status": "killed", "killer_row": "row-g", "run": "reference:344"}
    assert killer_rows(by_id["x"], by_id, results, before) == {"reference:344": ("row-g", "row-f")}
    assert killer_rows(by_id["x"], by_id, results, {**before, "status": "survived"}) == \
        {"reference:344": ("row-f", "row-g")}


def test_a_probe_that_kills_decides_and_one_that_passes_leaves_it_to_the_whole_run(tmp_path, monkeypatch):
    calls = []

    def execute(argv, cwd, limit):
        calls.append("-k" in argv)
        (cwd / "out" / "results").mkdir(parents=True, exist_ok=True)
        failed = "-k" in argv and "row-kills" in argv[argv.index("-k") + 1]
        record = {"case_id": "row-kills[rest]", "row_id": "row-kills", "verdict": "failed", "reason": "differs"}
        if failed:
            (cwd / "out" / "results" / "r.jsonl").write_text(__import__("json").dumps(record) + "\n")
        return (1 if failed else 0), ""

    monkeypatch.setattr(run, "execute", execute)
    monkeypatch.setattr(run, "BASELINE_PASSED", {})
    runs = (scope.Run("reference", ("344",)),)
    killed = run.judge(runs, tmp_path, {}, {"reference:344": ("row-kills",)})
    assert (killed.status, killed.killer, calls) == ("killed", "row-kills[rest]", [True])
    calls.clear()
    survived = run.judge(runs, tmp_path, {}, {"reference:344": ("row-passes",)})
    assert (survived.status, calls) == ("survived", [True, False])


def test_a_survivor_judged_by_an_older_rule_is_tested_again(tmp_path):
    root = _spec_root(tmp_path)
    rows = cache.RowIndex(root)
    keys = cache.Keys("mod", "harness", cache.cases_key(root, ["344"]), "reference:344")
    old = {**_result("survived", keys, rows), "judge": cache.JUDGE - 1}
    assert not cache.still_holds(old, keys, rows)
    assert cache.still_holds({**_result("killed", keys, rows, "pip344-a"), "judge": None}, keys, rows)


def test_a_run_that_passes_fewer_cases_than_the_baseline_kills(tmp_path, monkeypatch):
    import json

    def execute(argv, cwd, limit):
        results = cwd / "out" / "results"
        results.mkdir(parents=True, exist_ok=True)
        records = [{"case_id": "a[rest]", "row_id": "a", "verdict": "passed", "reason": ""},
                   {"case_id": "b[rest]", "row_id": "b", "verdict": "unsupported",
                    "reason": "target does not support namespace policy numberOfTopicBuckets"}]
        (results / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        return 0, ""

    monkeypatch.setattr(run, "execute", execute)
    runs = (scope.Run("reference", ("344", "157")),)
    monkeypatch.setitem(run.BASELINE_PASSED, runs[0], 2)
    outcome = run.judge(runs, tmp_path, {})
    assert (outcome.status, outcome.killer) == ("killed", "b[rest]")
    assert outcome.reason.startswith("1 case(s) that pass on the unmutated broker did not pass")
    monkeypatch.setitem(run.BASELINE_PASSED, runs[0], 1)
    assert run.judge(runs, tmp_path, {}).status == "survived"


def test_each_baseline_counts_its_own_run(tmp_path, monkeypatch):
    import json

    def execute(argv, cwd, limit):
        results = cwd / "out" / "results"
        results.mkdir(parents=True, exist_ok=True)
        name = f"{len(list(results.glob('*.jsonl')))}.jsonl"
        (results / name).write_text(json.dumps({"case_id": "a[rest]", "verdict": "passed"}) + "\n")
        return 0, ""

    monkeypatch.setattr(run, "execute", execute)
    runs = [scope.Run("reference", ("344",)), scope.Run("reference", ("2",))]
    monkeypatch.setattr(run, "BASELINE_PASSED", {})
    monkeypatch.setattr(run, "BASELINE_TIMES", {})
    limits = run.baseline(_fake_root(tmp_path), runs, lambda text: None)
    assert set(limits) == set(runs)
    assert [run.BASELINE_PASSED[r] for r in runs] == [1, 1]


def test_a_survivor_tried_on_some_rows_runs_only_those_and_skips_runs_without_them(tmp_path, monkeypatch):
    import json
    calls = []

    def execute(argv, cwd, limit):
        selected = argv[argv.index("-k") + 1] if "-k" in argv else ""
        calls.append((argv[argv.index("--pip") + 1], selected))
        results = cwd / "out" / "results"
        results.mkdir(parents=True, exist_ok=True)
        if selected == "pip344-none":
            return 2, "conformance: error: no case selected by -k 'pip344-none'; nothing was run"
        verdict = "failed" if "kills" in selected else "passed"
        (results / "r.jsonl").write_text(json.dumps({"case_id": f"{selected}[rest]", "row_id": selected,
                                                     "verdict": verdict, "reason": ""}) + "\n")
        return (1 if verdict == "failed" else 0), ""

    monkeypatch.setattr(run, "execute", execute)
    monkeypatch.setattr(run, "ROWS_BASELINE_PASSED", {})
    monkeypatch.setattr(run, "SELECTS_NOTHING", set())
    runs = (scope.Run("reference", ("344",)), scope.Run("reference", ("2",)))
    run.baseline_rows(_fake_root(tmp_path), [(runs[0], ("pip344-new",)), (runs[0], ("pip344-none",))], {})
    assert run.ROWS_BASELINE_PASSED == {(runs[0], ("pip344-new",)): 1}
    assert run.SELECTS_NOTHING == {(runs[0], ("pip344-none",))}
    calls.clear()

    hints = {"reference:344": ("pip344-old-killer",)}
    outcome = run.judge(runs, tmp_path, {}, hints, {"reference:344": ("pip344-new",), "reference:2": ()})
    assert (outcome.status, calls) == ("survived", [("344", "pip344-new")])  # no probe, no PIP-2 run
    calls.clear()
    assert run.judge(runs, tmp_path, {}, None, {"reference:344": ("pip344-none",)}).status == "survived"
    assert calls == []
    monkeypatch.setitem(run.ROWS_BASELINE_PASSED, (runs[0], ("pip344-kills",)), 1)
    assert run.judge(runs, tmp_path, {}, None, {"reference:344": ("pip344-kills",)}).killer == "pip344-kills[rest]"


def test_the_docs_page_shows_the_committed_figures():
    from mutation.generated import docs_page
    assert docs_page.main(["--check"]) == 0, "run python -m mutation.generated.docs_page"


def test_the_docs_page_replaces_only_its_generated_part():
    from mutation.generated import docs_page
    page = f"prose\n{docs_page.BEGIN}\nold figures\n{docs_page.END}\nmore prose\n"
    block = f"{docs_page.BEGIN}\nnew\n{docs_page.END}"
    assert docs_page.updated(page, block) == f"prose\n{block}\nmore prose\n"
    assert docs_page.updated("prose\n", block) == f"prose\n\n{block}\n"
