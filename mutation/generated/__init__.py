"""Generated mutants of the reference broker's decision code (``python -m mutation.generated``).

The hand-written variants (mutation/variants.py) were written by the hands that wrote the cases
catching them; these are written by a tool: cosmic-ray's mutation operators, applied one at a time
to a copy of the broker's source on disk, judged by the conformance suite run as a subprocess.

``scope`` says which code is mutated and which cases judge it, ``mutants`` makes the mutants,
``cache`` keys and keeps their results, ``run`` tests them within a time budget, ``triage`` reads
the verdicts given to the survivors, ``report`` turns it all into figures.
"""
