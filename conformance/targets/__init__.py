"""Targets: the brokers a conformance run judges (see base.py for the contract)."""
