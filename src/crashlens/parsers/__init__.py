"""The parser registry: every parser module under `crashlens.parsers` declares itself.

A parser is a concrete `Parser` subclass with a `kind`, defined in any module of this package.
The registry imports the package's modules and collects them, so adding an input kind needs no
list edited here (`CONTRIBUTING.md`, "Add an input kind"). What is derived from it:

* `PARSERS`, in detection order: document parsers, then log parsers, then the plain-text
  fallback; by kind within each. Order only breaks exact ties in detection, and no two
  document parsers score above zero on the same sample (`tests/test_registry.py`).
* `LOG_KINDS`, the kinds read as line logs (what a rule's `inputs = ["logs"]` stands for).

`InputKind` (in `model.py`) stays a hand-written enum, so code and mypy can name a kind; the
registry tests check that it and the parsers name the same kinds, each exactly once.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable
from types import ModuleType

from crashlens.model import InputKind
from crashlens.parsers.base import DocumentParser, LogParser, Parser


def _module_names(package: str, folder: str) -> Iterable[str]:
    """Names of the modules and sub-packages under `folder`, recursively, in name order.

    A listing of the folder rather than `pkgutil`, whose import costs more than the rest of
    the registry (every `crashlens` command starts here)."""
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        stem, suffix = os.path.splitext(entry.name)
        if entry.is_file() and suffix == ".py" and stem != "__init__":
            yield f"{package}.{stem}"
        elif entry.is_dir() and os.path.isfile(os.path.join(entry.path, "__init__.py")):
            yield f"{package}.{entry.name}"
            yield from _module_names(f"{package}.{entry.name}", entry.path)


def _modules(package: ModuleType) -> Iterable[ModuleType]:
    """The package's modules, sub-packages included, imported in name order."""
    for folder in package.__path__:
        for name in _module_names(package.__name__, folder):
            yield importlib.import_module(name)


def _declared(module: ModuleType) -> Iterable[type[Parser]]:
    """The concrete parser classes a module defines (not those it imports)."""
    for value in vars(module).values():
        if (
            isinstance(value, type)
            and issubclass(value, Parser)
            and value.__module__ == module.__name__
            and not value.__abstractmethods__
            and "kind" in vars(value)
        ):
            yield value


def _detection_order(parser: Parser) -> tuple[bool, bool, str]:
    """Documents before logs, the plain-text fallback last, then by kind."""
    return parser.kind is InputKind.OTHER, isinstance(parser, LogParser), parser.kind.value


def collect_parsers(package: ModuleType) -> tuple[Parser, ...]:
    """One instance of every parser declared in `package`, in detection order."""
    found = {cls: None for module in _modules(package) for cls in _declared(module)}
    return tuple(sorted((cls() for cls in found), key=_detection_order))


PARSERS: tuple[Parser, ...] = collect_parsers(importlib.import_module(__name__))
"""Every parser: documents, then logs, then plain text (ties in detection break on it)."""

LOG_KINDS: frozenset[InputKind] = frozenset(p.kind for p in PARSERS if isinstance(p, LogParser))
"""The kinds read line by line as logs: what `inputs = ["logs"]` in a rule stands for."""

_BY_KIND: dict[InputKind, Parser] = {parser.kind: parser for parser in PARSERS}


def get_parser(kind: InputKind) -> Parser:
    """The parser for one kind."""
    return _BY_KIND[kind]


__all__ = [
    "LOG_KINDS",
    "PARSERS",
    "DocumentParser",
    "LogParser",
    "Parser",
    "collect_parsers",
    "get_parser",
]
