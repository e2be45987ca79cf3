"""Test machinery of the mutation check, kept out of the shipped reference broker.

``variants`` lists the deliberately broken variants of the broker, ``patch`` puts one into a
running process, and ``launch`` starts a broker with one installed (``python -m mutation.launch``).
The broker never imports this package, and the harness reaches it only through the launcher's
command line (tests/test_import_order.py).
"""
