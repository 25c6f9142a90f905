"""The subset of YAML that configuration files such as docker-compose use, read by indentation.

Block mappings and block sequences (`- item`, `- key: value`), plain and quoted scalars, one-level
flow lists and mappings (`[gpu]`, `{size: 1g}`), comments, and `---` / `...` markers. Block
scalars (`|`, `>`) are skipped (their value is None); anchors, tags and multi-line flow
collections are not understood, and lines that do not fit are skipped, never raised on. Every
node keeps the line it was written on, so a reader can cite it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A plain key never ends in a space (the spaces before `:` are not part of it): saying so
# with `(?<![ \t])` keeps the lazy key and the spaces after it from sharing a long run of
# spaces, which backtracked quadratically.
_KEY_RE = re.compile(r"""^("[^"]*"|'[^']*'|[^\s#'"{\[][^:#]*?(?<![ \t]))[ \t]*+:(?:[ \t]+(.*)|)$""")
MAX_DEPTH = 64
"""Deeper nesting is no configuration file: stop descending instead of recursing without end."""


@dataclass(slots=True)
class _Line:
    """One meaningful line: comments dropped, tabs counted as four spaces of indent."""

    lineno: int
    indent: int
    content: str
    raw: str


@dataclass(slots=True)
class YamlNode:
    """A YAML value with the line it was written on."""

    value: str | dict[str, YamlNode] | list[YamlNode] | None
    lineno: int
    """1-based; a block value (`key:` with deeper lines) has its key's line."""
    raw: str
    """That line, stripped."""

    def get(self, *keys: str) -> YamlNode | None:
        """The node at a path of mapping keys, or None."""
        node: YamlNode | None = self
        for key in keys:
            if node is None or not isinstance(node.value, dict):
                return None
            node = node.value.get(key)
        return node

    def text(self) -> str | None:
        """The scalar as a string (None for mappings, lists and empty values)."""
        return self.value if isinstance(self.value, str) else None

    def items(self) -> list[YamlNode]:
        """The list items (a scalar counts as a one-item list)."""
        if isinstance(self.value, list):
            return self.value
        return [self] if isinstance(self.value, str) else []


def _strip_comment(content: str) -> str:
    """Drop a trailing `# comment` unless the `#` sits inside quotes."""
    if "#" not in content:
        return content
    if content.lstrip().startswith("#"):
        return ""
    quote: str | None = None
    for index, char in enumerate(content):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and index > 0 and content[index - 1] in " \t":
            return content[:index].rstrip()
    return content


def _lines(text: str) -> list[_Line]:
    lines: list[_Line] = []
    for lineno, raw in enumerate(text.split("\n"), start=1):
        raw = raw.rstrip("\r")
        expanded = raw.replace("\t", "    ")
        content = _strip_comment(expanded.strip())
        if not content or content in ("---", "..."):
            continue
        lines.append(_Line(lineno, len(expanded) - len(expanded.lstrip()), content, raw.strip()))
    return lines


def _is_item(line: _Line) -> bool:
    """Whether a line is a block sequence item (`- x` or a bare `-`)."""
    return line.content == "-" or line.content.startswith("- ")


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _scalar(value: str, lineno: int, raw: str) -> YamlNode:
    """A scalar, or a one-level flow list/mapping (`[gpu]`, `{size: 1g}`)."""
    value = value.strip()
    if value.startswith("[") and value.endswith("]"):
        parts = [part for part in value[1:-1].split(",") if part.strip()]
        return YamlNode([YamlNode(_unquote(part), lineno, raw) for part in parts], lineno, raw)
    if value.startswith("{") and value.endswith("}"):
        mapping: dict[str, YamlNode] = {}
        for part in value[1:-1].split(","):
            key, _, item = part.partition(":")
            if key.strip():
                mapping[_unquote(key)] = YamlNode(_unquote(item), lineno, raw)
        return YamlNode(mapping, lineno, raw)
    return YamlNode(_unquote(value), lineno, raw)


class _Reader:
    """Block mappings and sequences by indentation: enough of YAML for compose files."""

    def __init__(self, text: str) -> None:
        self.lines = _lines(text)
        self.pos = 0

    def read(self) -> YamlNode:
        root = YamlNode({}, 1, "")
        while self.pos < len(self.lines):
            start = self.pos
            node = self._block(self.lines[self.pos].indent, 0)
            if isinstance(node.value, dict) and isinstance(root.value, dict):
                root.value.update(node.value)
            if self.pos == start:
                self.pos += 1  # a line no block took: skip it rather than loop
        return root

    def _block(self, indent: int, depth: int) -> YamlNode:
        if _is_item(self.lines[self.pos]):
            return self._sequence(indent, depth)
        return self._mapping(indent, depth)

    def _child(self, parent_indent: int, depth: int, lineno: int, raw: str) -> YamlNode:
        """The block value after `key:` (deeper lines, or a same-indent `- ` list)."""
        if self.pos >= len(self.lines) or depth >= MAX_DEPTH:
            return YamlNode(None, lineno, raw)
        nxt = self.lines[self.pos]
        if nxt.indent > parent_indent or (nxt.indent == parent_indent and _is_item(nxt)):
            return self._block(nxt.indent, depth + 1)
        return YamlNode(None, lineno, raw)

    def _mapping(self, indent: int, depth: int) -> YamlNode:
        first = self.lines[self.pos]
        mapping: dict[str, YamlNode] = {}
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            if line.indent < indent or (line.indent == indent and _is_item(line)):
                break
            self.pos += 1
            found = _KEY_RE.match(line.content) if line.indent == indent else None
            if not found:
                continue  # continuation of a multi-line scalar, or not YAML at all
            key, rest = _unquote(found.group(1)), (found.group(2) or "").strip()
            if rest and rest[0] in "|>":
                mapping[key] = YamlNode(None, line.lineno, line.raw)
                self._skip_deeper(indent)
            elif rest:
                mapping[key] = _scalar(rest, line.lineno, line.raw)
            else:
                child = self._child(indent, depth, line.lineno, line.raw)
                # A block value is cited by its key's line (`trainer:`, `devices:`).
                child.lineno, child.raw = line.lineno, line.raw
                mapping[key] = child
        return YamlNode(mapping, first.lineno, first.raw)

    def _sequence(self, indent: int, depth: int) -> YamlNode:
        first = self.lines[self.pos]
        items: list[YamlNode] = []
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            if line.indent != indent or not _is_item(line):
                if line.indent > indent:
                    self.pos += 1
                    continue
                break
            rest = line.content[1:].strip()
            if not rest:
                self.pos += 1
                items.append(self._child(indent, depth, line.lineno, line.raw))
            elif _KEY_RE.match(rest) and depth < MAX_DEPTH:
                # `- key: value` opens a mapping whose keys line up with `key`.
                offset = indent + len(line.content) - len(rest)
                self.lines[self.pos] = _Line(line.lineno, offset, rest, line.raw)
                items.append(self._mapping(offset, depth + 1))
            else:
                self.pos += 1
                items.append(_scalar(rest, line.lineno, line.raw))
        return YamlNode(items, first.lineno, first.raw)

    def _skip_deeper(self, indent: int) -> None:
        while self.pos < len(self.lines) and self.lines[self.pos].indent > indent:
            self.pos += 1


def read_yaml(text: str) -> YamlNode:
    """The top-level mapping of a YAML document (an empty mapping when there is none).

    Several top-level blocks (or documents) are merged into one mapping, later keys winning.
    """
    return _Reader(text).read()
