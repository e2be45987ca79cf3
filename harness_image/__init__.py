"""The harness as a container image: ``make image`` (build.py, Dockerfile; docs/ci.md)."""
