"""Command line (placeholder until the analyze pipeline lands)."""

from __future__ import annotations


def main() -> None:
    """Entry point of the `crashlens` console script."""
    raise SystemExit("crashlens: not ready yet")
