"""The mutants: cosmic-ray's operators over the scope's modules, each one edit of one file.

- a mutant (``Mutant``) is one operator applied at one place (cosmic-ray's occurrence numbering),
  kept as the whole mutated source of its module and the lines it changes.
- a stable id (``enumerate_module``): its ``id`` is stable across edits elsewhere in the file:
  module, qualified function, operator, and a hash of the changed lines before and after (never a
  line number); two mutants that would share an id (the same line twice in one function) get
  ``#2``, ``#3`` in file order.
- a handler that never matches: ExceptionReplacer writes a handler for
  ``CosmicRayTestingException``, a name the broker does not have; the mutated source defines it at
  its end, so the handler is one that never matches, as the operator intends, instead of a
  NameError when an exception reaches it.
- what is not made: a mutant outside the scope's functions (scope.Module.functions) is not made;
  nor is one whose source no longer compiles (``compiles``, reported by ``enumerate_module``'s
  caller as an error); nor one inside an annotation (``in_annotation``): every broker module has
  ``from __future__ import annotations``, so ``X | None`` made ``X & None`` is never evaluated and
  could change nothing.
- parsed once (``_mutated_code``): each mutation is applied to a copy of its one node, put in the
  node's place while the module's code is read back, and taken out again. This gives exactly
  cosmic-ray's ``mutate_code`` (which parses the module again for every mutant, far slower);
  tests/mutation compares the two.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

import parso
from cosmic_ray.ast import ast_nodes
from cosmic_ray.plugins import get_operator

from mutation.generated import scope

TESTING_EXCEPTION = "CosmicRayTestingException"
_TESTING_EXCEPTION_DEF = f"\n\nclass {TESTING_EXCEPTION}(Exception):  # generated mutant: a handler that never matches\n    pass\n"


@dataclass(frozen=True)
class Mutant:
    id: str
    module: str          # path relative to the repository root
    function: str        # qualified name, "<module>" outside any function
    operator: str        # cosmic-ray's name without "core/"
    occurrence: int
    line: int            # 1-based, of the first changed line: for people, never part of the id
    before: str          # the changed lines, stripped, joined by newlines
    after: str
    source: str          # the whole mutated module

    def describe(self) -> str:
        return f"{self.module}:{self.line} {self.function}: {self.operator}: {self.before!r} -> {self.after!r}"


def qualname(node) -> str:
    """Qualified name of the innermost function around ``node`` (classes and functions joined by dots)."""
    parts = []
    current = node.parent
    while current is not None:
        if isinstance(current, (parso.python.tree.Function, parso.python.tree.Class)) \
                and not isinstance(current, parso.python.tree.Lambda):
            parts.append(current.name.value)
        current = current.parent
    return ".".join(reversed(parts)) or "<module>"


def in_annotation(node) -> bool:
    """``node`` is inside a parameter's, a function's return or a variable's annotation."""
    child, parent = node, node.parent
    while parent is not None:
        if parent.type == "funcdef" and getattr(parent, "annotation", None) is child:
            return True
        if parent.type == "tfpdef" and parent.children and child is not parent.children[0]:
            return True
        if parent.type == "annassign" and parent.children and parent.children[1] is child:
            return True
        child, parent = parent, parent.parent
    return False


def _in_scope(name: str, functions: Optional[tuple[str, ...]]) -> bool:
    if functions is None:
        return True
    return any(name == f or name.startswith(f + ".") for f in functions)


def _changed(original: str, mutated: str) -> tuple[int, str, str]:
    """(first changed line, removed lines, added lines), stripped."""
    old, new = original.splitlines(), mutated.splitlines()
    before, after, first = [], [], 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        first = first or i1 + 1
        before += [line.strip() for line in old[i1:i2]]
        after += [line.strip() for line in new[j1:j2]]
    return first, "\n".join(before), "\n".join(after)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:10]


def _mutated_code(tree, node, operator, index: int) -> str:
    """The module's code (parsed once) with ``operator`` applied at ``node``'s ``index``-th position."""
    parent = node.parent
    clone = copy.deepcopy(node, {id(parent): parent} if parent is not None else {})  # not the tree above it
    replacement = operator.mutate(clone, index)
    if parent is None:
        return replacement.get_code()
    at = parent.children.index(node)
    parent.children[at] = replacement
    try:
        return tree.get_code()
    finally:
        parent.children[at] = node


def enumerate_module(root: Path, entry: scope.Module, operators: Iterable[str] = scope.OPERATORS) -> list[Mutant]:
    """Every mutant of one module, each with its stable id, in operator then file order."""
    source = (root / entry.path).read_text(encoding="utf-8")
    tree = parso.parse(source)
    made: list[Mutant] = []
    seen: dict[str, int] = {}
    for name in operators:
        operator = get_operator(name)()
        only = scope.ONLY_INDEX.get(name)
        occurrence = -1
        for node in list(ast_nodes(tree)):
            for index, _ in enumerate(list(operator.mutation_positions(node))):
                occurrence += 1
                if only is not None and index != only:
                    continue
                function = qualname(node)
                if not _in_scope(function, entry.functions) or in_annotation(node):
                    continue
                mutated = _mutated_code(tree, node, operator, index)
                if mutated == source:
                    continue
                line, before, after = _changed(source, mutated)
                if TESTING_EXCEPTION in mutated and TESTING_EXCEPTION not in source:
                    mutated += _TESTING_EXCEPTION_DEF  # a handler that never matches
                short = name.removeprefix("core/")
                base = f"{entry.path}:{function}:{short}:{_digest(before, after)}"
                seen[base] = seen.get(base, 0) + 1
                mutant_id = base if seen[base] == 1 else f"{base}#{seen[base]}"
                made.append(Mutant(mutant_id, entry.path, function, short, occurrence, line, before, after, mutated))
    return made


def enumerate_all(root: Path, modules: Iterable[scope.Module] = scope.MODULES) -> list[Mutant]:
    return [mutant for entry in modules for mutant in enumerate_module(root, entry)]


def compiles(mutant: Mutant) -> Optional[str]:
    """None when the mutated module compiles, else the error (a mutant that does not compile is not run)."""
    try:
        compile(mutant.source, mutant.module, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None
