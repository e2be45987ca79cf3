"""Putting one variant (mutation/variants.py) into this process's reference broker.

The function the variant names is recompiled from its source with the one snippet replaced and
put where the original was.

- aliases: the replacement goes into the function's module or class and into every
  ``reference_broker`` module that imported it by name, so callers find the variant however they
  refer to it. The broker's modules are imported first (``_MODULES``), so every such alias exists
  when the variant is installed.
- ``check(name)`` verifies a variant without installing it (its snippet is there once and the
  edited source compiles); ``applied(name)`` installs it for a block and restores every replaced
  binding after it (tests); ``install(name)`` installs it for good (the launcher).
"""

from __future__ import annotations

import __future__
import contextlib
import importlib
import inspect
import sys
import textwrap
from typing import Iterator, Optional

from mutation.variants import Mutant, MutantError, get

# Imported before a variant is installed, so every alias of a replaced function exists.
_MODULES = ("reference_broker.server", "reference_broker.binary_connection", "reference_broker.commands",
            "reference_broker.core", "reference_broker.lookup_service", "reference_broker.admin.app")


def _resolve(where: str):
    """(module, owner (module or class), attribute name, the function, its raw attribute)."""
    module_name, _, qualname = where.partition(":")
    module = importlib.import_module(module_name)
    owner = module
    parts = qualname.split(".")
    for part in parts[:-1]:
        owner = getattr(owner, part)
    raw = owner.__dict__[parts[-1]] if isinstance(owner, type) else getattr(owner, parts[-1])
    function = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
    return module, owner, parts[-1], function, raw


def _compile(mutant: Mutant):
    module, owner, attribute, function, raw = _resolve(mutant.where)
    source = inspect.getsource(function)  # snippets are written as the file indents them
    found = source.count(mutant.old)
    if found != 1:
        raise MutantError(f"mutant {mutant.name}: the snippet occurs {found} times in {mutant.where} "
                          f"(expected once): {mutant.old!r}")
    edited = textwrap.dedent(source.replace(mutant.old, mutant.new))
    flags = __future__.annotations.compiler_flag if getattr(module, "annotations", None) is __future__.annotations else 0
    try:
        code = compile(edited, f"<mutant {mutant.name}: {mutant.where}>", "exec", flags=flags, dont_inherit=True)
    except SyntaxError as exc:
        raise MutantError(f"mutant {mutant.name}: the edited source does not compile: {exc}") from exc
    return module, owner, attribute, function, raw, code


def check(name: str) -> Optional[str]:
    """None when ``name`` would install (its snippet there once, the edited source compiles), else the problem."""
    try:
        _compile(get(name))
    except MutantError as exc:
        return str(exc)
    return None


def install(name: str) -> Mutant:
    """Install variant ``name`` in this process for good, in its module and every alias."""
    _install(get(name))
    return get(name)


def _install(mutant: Mutant) -> list[tuple[object, str, object]]:
    """Install; returns (owner, attribute, original value) for every binding replaced."""
    for module_name in _MODULES:
        importlib.import_module(module_name)
    module, owner, attribute, function, raw, code = _compile(mutant)
    namespace: dict = {}
    exec(code, module.__dict__, namespace)  # noqa: S102 - our own source, edited by one snippet
    replacement = namespace[attribute]
    replaced = [(owner, attribute, raw)]
    setattr(owner, attribute, replacement)
    if not isinstance(owner, type):  # aliases: names imported elsewhere with ``from x import f``
        for other in list(sys.modules.values()):
            if getattr(other, "__name__", "").startswith("reference_broker") and other is not module:
                for key, value in list(vars(other).items()):
                    if value is raw:
                        replaced.append((other, key, raw))
                        setattr(other, key, replacement)
    return replaced


@contextlib.contextmanager
def applied(name: str) -> Iterator[Mutant]:
    """Tests: the variant installed for the block, every replaced binding restored after it."""
    replaced = _install(get(name))
    try:
        yield get(name)
    finally:
        for owner, attribute, original in reversed(replaced):
            setattr(owner, attribute, original)
