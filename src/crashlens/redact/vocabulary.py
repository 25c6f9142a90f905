"""The redactor's word lists, kept as data in `vocabulary.toml` beside this module.

The lists say what is *not* personal: system accounts, words too common to be a host name,
public services, file suffixes, tool names; and which last labels make a dotted name a host.
"""

from __future__ import annotations

import functools
import tomllib
from importlib import resources
from typing import Final


def _load() -> dict[str, list[str]]:
    text = (
        resources.files("crashlens.redact").joinpath("vocabulary.toml").read_text(encoding="utf-8")
    )
    lists: dict[str, list[str]] = tomllib.loads(text)
    return lists


_LISTS: Final = _load()

BUILD_ACCOUNTS: Final = frozenset(_LISTS["build_accounts"])
"""A vendor's build accounts: with the host after their `@`, its build machine."""
SYSTEM_USERS: Final = frozenset(_LISTS["system_users"]) | BUILD_ACCOUNTS
"""Default or system accounts: not personal, and common words in logs."""
COMMON_WORDS: Final = frozenset(_LISTS["common_words"])
"""Words never treated as a learned host name (too common to replace everywhere)."""
PUBLIC_DOMAINS: Final = tuple(_LISTS["public_domains"])
"""Public services: naming them says nothing about the user."""
TLDS: Final = tuple(_LISTS["tlds"])
"""Last labels of a fully qualified host name, in the order the host regex tries them."""
FILE_SUFFIXES: Final = tuple(_LISTS["file_suffixes"])
"""Suffixes that make a dotted name a file, not a host."""
TOOLS: Final = frozenset(_LISTS["tools"])
"""Programs that print their name before a colon at a line's start: not hosts."""
CODE_TLDS: Final = frozenset(_LISTS["code_tlds"])
"""Last labels that are also Python attribute names (`threading.local`)."""


_PUBLIC_SET: Final = frozenset(PUBLIC_DOMAINS)
_PUBLIC_LABELS: Final = max(domain.count(".") + 1 for domain in PUBLIC_DOMAINS)


def is_public(domain: str) -> bool:
    """Whether `domain` is one of PUBLIC_DOMAINS or a name under one (remembered for names
    of a host's length: a log names the same few on many lines)."""
    if len(domain) > _REMEMBERED_LENGTH:
        return _is_public(domain)
    return _remembered_is_public(domain)


_REMEMBERED_LENGTH: Final = 255


def _is_public(domain: str) -> bool:
    lower = domain.lower().rstrip(".")
    # Its last one, two, ... labels, as far as the longest public domain goes: a set lookup
    # each (hosts are checked often), and a name of 10,000 labels costs no more than one.
    labels = lower.rsplit(".", _PUBLIC_LABELS)
    return any(".".join(labels[-count:]) in _PUBLIC_SET for count in range(1, len(labels) + 1))


_remembered_is_public: Final = functools.lru_cache(maxsize=16384)(_is_public)
