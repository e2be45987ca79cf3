"""Pulsar's names and name hashes as Java reads them: the values the model and the reference broker share.

The model (the oracle) and the reference broker (a target it judges) are kept apart so that "the broker
agrees with the model" means something: the broker never imports the model. What they do share is
here, because it decides nothing about behaviour, only what a string *is* in Pulsar's terms:

- ``pulsar_naming.names``: topic and namespace names parsed as Pulsar's ``TopicName`` and
  ``NamedEntity`` parse them (domains in any letter case, partition suffixes in any BMP decimal
  digit, v2 names only), and Pulsar's own refusal of a name and its words, release by release;
- ``pulsar_naming.hashing``: Java's ``String.hashCode`` and the PIP-157 bucket of a topic's local
  name (``docs/pip157-decisions.md``).

Because both sides use the same code, a fault here would be invisible to the suite; the evidence
that it reads names and hashes as Pulsar does lives next to it, in tests/pulsar_naming/: tables of
Java's own answers (``String.hashCode`` values, ``Integer.parseInt`` of other scripts' digits,
PIP-157's bucket example), a property test that every name Pulsar's parser (``pulsar_refusal``,
written from ``TopicName`` at each release) accepts also parses here, and, beyond the package, the
rows that judge names on Apache Pulsar 3.0.7, 4.0.7 and 4.2.4 (``pip344-name-*``, whose answers are
recorded in spec/observed/). It imports only the standard library.
"""
