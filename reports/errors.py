"""The reports stage's one error: the report cannot be made, and the message says why and what to do."""


class ReportError(Exception):
    """Raised for input the stage cannot use (no results, an unreadable file) and shown as is."""
