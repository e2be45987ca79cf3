"""``python -m mutation.launch``: a reference broker with one deliberately broken variant installed.

    python -m mutation.launch --mutant NAME <reference-broker arguments>
    python -m mutation.launch --list

The mutation check (conformance/mutation_check.py) starts the first as a reference target's command and
reads the second to know the variants; it imports nothing of the broker or of this package.

- ``--mutant NAME`` installs the variant (mutation/patch.py), then runs the broker's own ``main``
  with the remaining arguments, so the variant keeps the broker's start-up contract (the READY
  line, exit codes, signals) and differs from it in one rule only.
- an unknown variant, or one that no longer matches the code, is a one-line error on stderr and
  exit code 2 before anything listens, as a broker configuration error is.
- ``--list`` prints one JSON object per variant (name, pip, api, description) and exits 0.
"""

from __future__ import annotations

import argparse
import json
import sys

from mutation import patch
from mutation.variants import MUTANTS, MutantError

EXIT_BAD_VARIANT = 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mutation.launch", description=__doc__.splitlines()[0],
                                     allow_abbrev=False)  # the broker's own arguments pass through untouched
    choice = parser.add_mutually_exclusive_group(required=True)
    choice.add_argument("--mutant", metavar="NAME", help="the variant to install before the broker starts")
    choice.add_argument("--list", action="store_true", help="print the variants, one JSON object a line")
    args, broker_args = parser.parse_known_args(argv)
    if args.list:
        for mutant in MUTANTS:
            print(json.dumps({"name": mutant.name, "pip": mutant.pip, "api": mutant.api,
                              "description": mutant.description}))
        return 0
    try:
        patch.install(args.mutant)
    except MutantError as exc:
        print(f"mutation.launch: {exc}", file=sys.stderr)
        return EXIT_BAD_VARIANT
    from reference_broker.__main__ import main as broker_main

    return broker_main(broker_args)


if __name__ == "__main__":
    sys.exit(main())
