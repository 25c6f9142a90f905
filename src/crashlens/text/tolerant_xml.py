"""XML that may be cut off or slightly broken, read into an ElementTree anyway.

Pasted tool output (`nvidia-smi -q -x`) is often truncated at a terminal's scroll-back or a
log size limit. The strict parser is tried first; when it fails, a tokenizer rebuilds the tree
from whatever tags it finds, closing the elements left open at the end and ignoring close tags
that match nothing. Entities beyond the five predefined ones are left as written.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

# Linear on any input. A comment, processing instruction, CDATA section or declaration is
# looked for within its line, and one left open runs to the end of that line: searched for
# across the whole text, an opener with no closer would scan to the end again at every later
# opener (quadratic). The tag name is possessive: a name cut off before its `>`
# (`<pow99999...`) is otherwise retried at every split between name and attributes, quadratic
# in the name's length (a 32 KB name took 23 s).
_TOKEN_RE = re.compile(
    r"<!--(?:[^\n]*?-->|[^\n]*+)|<\?(?:[^\n]*?\?>|[^\n]*+)"
    r"|<!\[CDATA\[(?:[^\n]*?\]\]>|[^\n]*+)|<![^>\n]*+>?"
    r"|<(?P<close>/)?(?P<tag>[A-Za-z_][\w.:-]*+)(?P<attrs>[^<>]*?)(?P<empty>/)?>"
    r"|(?P<text>[^<]+)",
    re.DOTALL,
)
# a name is matched from its first character only: a search starting inside a long name
# would rescan the rest of it from every position (n^2)
_ATTR_RE = re.compile(r"""(?<![\w.:-])([\w.:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_ENTITIES = {"&lt;": "<", "&gt;": ">", "&amp;": "&", "&quot;": '"', "&apos;": "'"}


def parse_xml(text: str) -> tuple[ET.Element | None, str | None]:
    """(root, None) when `text` is well-formed; else the tolerant tree and the parser's error.

    The root is None only when no element at all could be read.
    """
    try:
        # A DOCTYPE may name a SYSTEM DTD; expat does not fetch it, so this stays offline.
        return ET.fromstring(text), None
    except ET.ParseError as error:
        return read_tolerant(text), str(error)


def read_tolerant(text: str) -> ET.Element | None:
    """Build a tree from possibly truncated XML: unclosed elements are closed at the end.

    Only the first root element is kept; text outside it is dropped.
    """
    root: ET.Element | None = None
    stack: list[ET.Element] = []
    # Linear whatever the nesting: how many elements of each tag are open, so a close tag
    # that matches none is known without scanning the stack (100,000 opens followed by as many
    # stray closes cost n^2 compares), and each open element's text pieces, joined once when
    # it closes (appending to `.text` copies the text so far every time).
    open_tags: dict[str, int] = {}
    pieces: list[list[str]] = []

    def pop() -> ET.Element:
        element = stack.pop()
        open_tags[element.tag] -= 1
        parts = pieces.pop()
        if parts:
            element.text = "".join(parts)
        return element

    for token in _TOKEN_RE.finditer(text):
        tag = token.group("tag")
        if tag is None:
            chunk = token.group("text")
            if chunk and stack:
                for entity, char in _ENTITIES.items():
                    chunk = chunk.replace(entity, char)
                pieces[-1].append(chunk)
            continue
        if token.group("close"):
            # Pop to the matching open element; a stray close tag is ignored.
            if open_tags.get(tag):
                while pop().tag != tag:
                    pass
            continue
        attrs = {
            m.group(1): m.group(2) or m.group(3) or ""
            for m in _ATTR_RE.finditer(token.group("attrs") or "")
        }
        element = ET.Element(tag, attrs)
        if stack:
            stack[-1].append(element)
        elif root is None:
            root = element
        else:
            continue
        if not token.group("empty"):
            stack.append(element)
            open_tags[tag] = open_tags.get(tag, 0) + 1
            pieces.append([])
    while stack:
        pop()
    return root
