"""Exceptions crashlens raises. Bad *input* is never an exception: it is a skipped input.

CrashlensError
├── PatternError     a rule file is malformed (names the file and the field)
└── UsageError       the command line asks for something impossible
"""

from __future__ import annotations


class CrashlensError(Exception):
    """Base of every crashlens exception."""


class PatternError(CrashlensError):
    """A rule file of the pattern library is invalid; fatal before any input is read."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


class UsageError(CrashlensError):
    """The user asked for something that cannot be done (exit status 2)."""
