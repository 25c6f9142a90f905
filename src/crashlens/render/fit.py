"""Text fitted to a terminal's width, in cells, without cutting a token where nobody sees it.

A terminal that wraps a long line for us splits paths, commands and log lines at whatever
column they reach, and copy/paste then carries the break. So the terminal report lays out
every line itself: prose wraps at spaces, a cited log line is shortened around the part a
rule matched (an ellipsis marks each cut), a path too long for any line loses folders from its
middle (the file name and line number stay), and a shell command is broken only between
shell words, each broken line ending in ` \\` so that the lines paste back as one command.
Widths are display cells (`rich.cells`), so wide CJK characters count twice.
"""

from __future__ import annotations

import re
import unicodedata

from rich.cells import cell_len

ELLIPSIS = "…"
CONTINUATION = " \\"
"""Ends a broken shell line: the shell joins it with the next one."""
_OPERATORS = frozenset({"&&", "||", "|", ";", "|&"})
"""Shell words a broken line reads best starting with (`&& next step`)."""
_SNAP = 12
"""How far (in characters) a cut may move to land on a space instead of inside a word."""


def printable(text: str) -> str:
    """`text` as the report shows it: a tab becomes four spaces, other control characters go
    (the terminal would act on them, and rich drops them anyway)."""
    return "".join(
        "    " if char == "\t" else char
        for char in text
        if char == "\t" or unicodedata.category(char) != "Cc"
    )


def _head(text: str, width: int) -> str:
    """The longest start of `text` that fits in `width` cells."""
    used = 0
    for index, char in enumerate(text):
        used += cell_len(char)
        if used > width:
            return text[:index]
    return text


def _tail(text: str, width: int) -> str:
    """The longest end of `text` that fits in `width` cells."""
    used = 0
    for index in range(len(text) - 1, -1, -1):
        used += cell_len(text[index])
        if used > width:
            return text[index + 1 :]
    return text


def _snap_start(text: str, start: int, limit: int) -> int:
    """Move a left cut forward to just after a space, when one is near and before `limit`."""
    if start == 0 or text[start - 1] == " ":
        return start
    space = text.find(" ", start, min(limit, start + _SNAP))
    return space + 1 if space >= 0 else start


def _snap_end(text: str, end: int, limit: int) -> int:
    """Move a right cut back to a space, when one is near and after `limit`."""
    if end >= len(text) or text[end] == " ":
        return end
    space = text.rfind(" ", max(limit, end - _SNAP), end)
    return space if space > limit else end


def shorten(text: str, width: int, focus: tuple[int, int] | None = None) -> str:
    """One line of at most `width` cells: `text` whole, or cut around `focus` (a span of
    `text`, the part a rule matched) with an ellipsis at each cut. Without a focus the start
    is kept."""
    if width < 3:
        return _head(printable(text), width)
    start, end = focus if focus is not None else (0, 0)
    start, end = max(0, min(start, len(text))), max(0, min(end, len(text)))
    before, inside, after = (printable(p) for p in (text[:start], text[start:end], text[end:]))
    whole = before + inside + after
    if cell_len(whole) <= width:
        return whole
    if cell_len(inside) >= width - 2:  # the match alone is too long: keep its start
        lead = ELLIPSIS if before else ""
        return lead + _head(inside, width - 1 - len(lead)) + ELLIPSIS
    room = width - cell_len(inside)
    if cell_len(before) + 1 <= room:  # the line's start fits with the match: cut at the end
        keep = _head(whole, width - 1)
        cut = _snap_end(whole, len(keep), len(before) + len(inside))
        return whole[:cut].rstrip() + ELLIPSIS
    if cell_len(after) + 1 <= room:  # the match is near the end: cut at the start
        keep = _tail(whole, width - 1)
        cut = _snap_start(whole, len(whole) - len(keep), len(before))
        return ELLIPSIS + whole[cut:].lstrip()
    # Both ends go: a little of what comes before the match, more of what follows it.
    lead = _tail(before, max(0, (room - 2) // 3))
    trail = _head(after, room - 2 - cell_len(lead))
    left = _snap_start(whole, len(before) - len(lead), len(before))
    right = _snap_end(whole, len(before) + len(inside) + len(trail), len(before) + len(inside))
    return ELLIPSIS + whole[left:right].strip() + ELLIPSIS


def shorten_path(citation: str, width: int) -> str:
    """A `path:line` citation that fits in `width` cells: whole when it fits, else with
    folders cut from its middle (the start and the file name with its line stay)."""
    shown = printable(citation)
    if cell_len(shown) <= width:
        return shown
    name_at = max(shown.rfind("/"), shown.rfind("!")) + 1
    name = shown[name_at:]
    if cell_len(name) + 2 > width:  # even the file name is too long: keep its end
        return ELLIPSIS + _tail(name, width - 1)
    head = _head(shown[:name_at], width - cell_len(name) - 2)
    return head + ELLIPSIS + "/" + name


def wrap(text: str, width: int) -> list[str]:
    """Prose wrapped at spaces into lines of at most `width` cells. A word longer than a line
    is shortened in its middle when it is a path (a note citing a file), else split, as
    nothing else can be done with it."""
    lines: list[str] = []
    current = ""
    for word in printable(text).split():
        if cell_len(word) > width and "/" in word:
            word = shorten_path(word, width)
        candidate = f"{current} {word}" if current else word
        if cell_len(candidate) <= width:
            current = candidate
            continue
        if current:
            lines.append(current)
        while cell_len(word) > width > 0:
            piece = _head(word, width)
            lines.append(piece)
            word = word[len(piece) :]
        current = word
    if current or not lines:
        lines.append(current)
    return lines


def shell_words(command: str) -> list[str]:
    """`command` split where a line could break: at spaces outside quotes, `$(…)`, `${…}`
    and backquotes. A comment (an unquoted `#` starting a word) is one last word: a line
    continuation inside it would not continue anything. An unclosed quote runs to the end."""
    words: list[str] = []
    current: list[str] = []
    quote = ""  # the open quote character, or "" outside quotes
    depth = 0  # open $( and ${
    index = 0
    while index < len(command):
        char = command[index]
        if quote:
            current.append(char)
            if char == "\\" and quote == '"' and index + 1 < len(command):
                current.append(command[index + 1])
                index += 1
            elif char == quote:
                quote = ""
        elif char == "\\" and index + 1 < len(command):
            current.extend(command[index : index + 2])
            index += 1
        elif char in "'\"`":
            quote = char
            current.append(char)
        elif char == "$" and command[index + 1 : index + 2] in ("(", "{"):
            depth += 1
            current.extend(command[index : index + 2])
            index += 1
        elif char in ")}" and depth:
            depth -= 1
            current.append(char)
        elif char == "#" and not current and not depth:
            words.append(command[index:].rstrip())
            return words
        elif char in " \t" and not depth:
            if current:
                words.append("".join(current))
                current = []
        else:
            current.append(char)
        index += 1
    if current:
        words.append("".join(current))
    return words


def _segments(words: list[str]) -> list[list[str]]:
    """Words grouped so that each group after the first starts with an operator."""
    groups: list[list[str]] = [[]]
    for word in words:
        if word in _OPERATORS and groups[-1]:
            groups.append([])
        groups[-1].append(word)
    return groups


def _pack(words: list[str], first: int, rest: int) -> list[list[str]]:
    """Words in lines: the first line holds `first` cells, the others `rest`; operators start
    a line when the line must break anyway."""
    lines: list[list[str]] = [[]]

    def room() -> int:
        return first if len(lines) == 1 else rest

    for segment in _segments(words):
        line = " ".join(lines[-1])
        joined = " ".join(segment)
        if lines[-1] and cell_len(f"{line} {joined}") > room():
            operand = " ".join(segment[1:])
            if cell_len(joined) <= rest:
                lines.append([])  # the segment fits a line of its own: start one
            elif (
                segment[0] in _OPERATORS
                and len(segment) > 1
                and cell_len(operand) <= rest
                and cell_len(f"{line} {segment[0]}") <= room()
            ):
                # Only without its operator does the command fit a line: the operator ends
                # this line (`a && \`), so `python -c "..."` is not cut after `python`.
                lines[-1].append(segment[0])
                lines.append([])
                segment = segment[1:]
        for word in segment:
            line = " ".join(lines[-1])
            if lines[-1] and cell_len(f"{line} {word}") > room():
                lines.append([])
            lines[-1].append(word)
    return lines


def shell_lines(command: str, first: int, rest: int) -> list[str]:
    """A shell command as lines: the first at most `first` cells, the others `rest`, every
    line but the last ending in ` \\` (so they paste back as one command), broken only
    between shell words. A comment that does not fit goes on lines of its own, each a
    comment. A command of several lines is kept line by line."""
    result: list[str] = []
    for physical in printable_lines(command):
        width = first if not result else rest
        if cell_len(physical) <= width:
            result.append(physical)
            continue
        words = shell_words(physical)
        comment = words.pop() if words and words[-1].startswith("#") else None
        room = len(CONTINUATION)
        lines = [" ".join(line) for line in _pack(words, width - room, rest - room) if line]
        if comment is not None and lines:
            joined = f"{lines[-1]}    {comment}"
            if cell_len(joined) <= (width if len(lines) == 1 else rest):
                lines[-1], comment = joined, None
        result.extend(line + CONTINUATION for line in lines[:-1])
        result.extend(lines[-1:])
        if comment is not None:
            result.extend(f"# {part}" for part in wrap(comment.lstrip("#").strip(), rest - 2))
    return result


def printable_lines(text: str) -> list[str]:
    """The lines of `text`, each printable (a snippet or a command of several lines)."""
    return [printable(line) for line in text.splitlines()] or [""]


_COMMENT = re.compile(r"[ \t]+#")


def snippet_lines(text: str, width: int) -> list[str]:
    """A snippet's lines (YAML, Python, a config file). A line too wide for `width` that ends
    in a comment gets the comment on a line of its own above it, at its indentation: the same
    file for each of these languages, and nothing else about a snippet may move."""
    lines: list[str] = []
    for line in printable_lines(text):
        comment = _trailing_comment(line) if cell_len(line) > width else None
        if comment is None:
            lines.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        lines.extend([indent + line[comment:].strip(), line[:comment].rstrip()])
    return lines


def _trailing_comment(line: str) -> int | None:
    """Where a line's trailing comment begins: the first ` #` outside quotes."""
    for found in _COMMENT.finditer(line):
        before = line[: found.start()]
        if before.strip() and before.count("'") % 2 == 0 and before.count('"') % 2 == 0:
            return found.start()
    return None
