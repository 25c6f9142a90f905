"""One `re` pattern of the learned names, where Hyperscan is not there to find them.

`Redactor` finds learned names as one alternation of them, longest first, finds them with
`re.finditer`: at the leftmost place where a name starts, the longest name that starts there,
then the same from its end. As a flat alternation, `re` tries every name at every place of
the text: with the thousands of names a launcher log teaches, that made the writing pass run
at 0.3 MB/s without Hyperscan. The same names written as a trie (a group for each place where
names part, each name's rest tried before a name that ends there: `trn-h(?:1(?:00)?|2)`)
find the same spans, and `re` tries at each place only the one path the text's bytes take.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import TypeAlias

Trie: TypeAlias = "dict[int, Trie]"
"""A byte -> the names' rests after it; `_END` marks a name that ends there."""
_END = -1
_MAX_NESTING = 64
"""Groups nested deeper than this (names that are prefixes of each other, many times over)
take the flat alternation: `re` parses nested groups recursively."""


_FEW_NAMES = 32
"""Up to this many names the flat alternation is kept: `re` trying a few names at each place
costs little, and building the trie walks every byte of every name in Python (a single
hostile 32 KiB name took 15 ms to build against 0.2 ms to redact a 2 KiB line)."""


def names_pattern(names: Collection[bytes]) -> re.Pattern[bytes]:
    """What one alternation of `names` (longest first) finds, as a trie where there are many
    names and the trie is shallow enough, else that alternation itself."""
    trie = trie_pattern(names) if len(names) > _FEW_NAMES else None
    return trie if trie is not None else _alternation(names)


def trie_pattern(names: Collection[bytes]) -> re.Pattern[bytes] | None:
    """`names` written as a trie (what their alternation finds), or None where the groups
    would nest deeper than `_MAX_NESTING`."""
    trie: Trie = {}
    for name in names:
        node = trie
        for byte in name:
            node = node.setdefault(byte, {})
        node[_END] = {}
    return re.compile(_written(trie)) if _nesting(trie) <= _MAX_NESTING else None


def _alternation(names: Collection[bytes]) -> re.Pattern[bytes]:
    """The flat alternation, longest name first (the longest name at a place is found)."""
    ordered = sorted(names, key=len, reverse=True)
    return re.compile(b"|".join(re.escape(name) for name in ordered))


def _chain(byte: int, node: Trie) -> tuple[bytes, Trie]:
    """The bytes from `byte` on that no name parts or ends in, and the node after them."""
    chain = bytearray((byte,))
    while len(node) == 1 and _END not in node:
        ((byte, node),) = node.items()
        chain.append(byte)
    return bytes(chain), node


def _nesting(trie: Trie) -> int:
    """How deep `_written` nests its groups (counted without recursion: a long chain of names
    that are prefixes of each other must not reach Python's recursion limit here)."""
    deepest = 0
    stack = [(trie, 0)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > _MAX_NESTING:
            break
        for byte, child in node.items():
            if byte != _END:
                stack.append((_chain(byte, child)[1], depth + 1))
    return deepest


def _written(node: Trie) -> bytes:
    """`node` as a pattern: one branch for each byte that follows (one name's rest at most
    can match, as each branch starts with another byte), each tried before the end of a name
    that ends here, so the longest name at a place is the one found."""
    branches = []
    for byte in sorted(key for key in node if key != _END):
        chain, after = _chain(byte, node[byte])
        branches.append(re.escape(chain) + _written(after))
    if not branches:
        return b""
    if len(branches) == 1:
        body = branches[0]
        return b"(?:" + body + b")?" if _END in node else body
    body = b"(?:" + b"|".join(branches) + b")"
    return body + b"?" if _END in node else body
