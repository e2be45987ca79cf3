"""Drivers: how one model operation is performed on a live target (see base.py)."""
