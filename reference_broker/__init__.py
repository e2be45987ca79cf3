"""The reference broker: Pulsar's binary protocol and admin REST API for the four specified PIPs.

It implements behaviour on its own; it may use ``pulsar_naming.names`` (a value helper) but never the
model's decision logic, so that "the broker agrees with the model" means something.
"""

__version__ = "0.1.0-reference"
