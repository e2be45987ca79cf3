"""The model's one root error: the model was *called* wrongly (h11's LocalProtocolError analogue).

A broker answer, even an error answer, is never raised: it is an Outcome value (model/outcomes.py).
ModelUsageError means the caller asked something the model cannot answer faithfully: an unknown
config key, a malformed value, an operation through an API that cannot perform it, or a question
the sources do not settle. Every message says what to change.
"""

from __future__ import annotations


class ModelUsageError(ValueError):
    """The model was called with arguments it refuses; the message names the fix."""
