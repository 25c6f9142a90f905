"""Deciding an input's kind from its content; the file name only adds confidence.

Each parser scores the first 64 KiB in [0, 1]; a matching filename glob adds 0.2. The best
score above `THRESHOLD` wins (ties: registry order); below it the input is plain text, which
is still scanned by every generic rule. Detection never raises.
"""

from __future__ import annotations

from fnmatch import fnmatch
from functools import lru_cache

from crashlens.model import Detection, InputKind
from crashlens.parsers import PARSERS
from crashlens.parsers.base import Parser, safe_sniff

THRESHOLD = 0.3
FILENAME_BONUS = 0.2
AGREEMENT = 0.85
"""Content score plus filename bonus at which the named kind is taken without the others."""
QUICK_CHARS = 4 * 1024
"""The named kind is first tried on this much of the head: in a scan of thousands of small
files sniffing is a large share of the work, and a file whose first lines already show its
named kind needs no more. Anything less clear is decided on the whole head, as before."""


def _name_matches(parser: Parser, name: str) -> bool:
    return parser in _named_parsers(name)


@lru_cache(maxsize=1024)
def _named_parsers(name: str) -> tuple[Parser, ...]:
    """The parsers whose filename globs match `name` (an archive repeats a few names)."""
    lower = name.lower()
    return tuple(p for p in PARSERS if any(fnmatch(lower, glob) for glob in p.filenames))


def scores(head: str, name: str) -> list[tuple[Parser, float, bool]]:
    """Every parser's score for this input: (parser, score with bonus, filename matched)."""
    result = []
    for parser in PARSERS:
        named = _name_matches(parser, name)
        score = safe_sniff(parser, head) + (FILENAME_BONUS if named else 0.0)
        result.append((parser, score, named))
    return result


def _named_and_certain(head: str, name: str) -> Detection | None:
    """When the file's name and its content agree on a kind, that kind wins at once.

    `dmesg.txt` that reads as a kernel log, `train.log` with launcher markers: a scan then skips
    the other sniffers for most files. Agreement means the one parser named by the file's glob
    scores at least `AGREEMENT` with the bonus (its content alone is clearly its kind).
    """
    named = _named_parsers(name)
    if len(named) != 1:
        return None
    score = safe_sniff(named[0], head) + FILENAME_BONUS
    if score < AGREEMENT:
        return None
    return Detection(kind=named[0].kind, score=min(score, 1.0), reason="by content and file name")


def detect(head: str, name: str, forced: InputKind | None = None) -> Detection:
    """The kind of one input, with its score and the reason it was chosen."""
    if forced is not None:
        return Detection(kind=forced, score=1.0, reason="--kind given")
    quick = _named_and_certain(head[:QUICK_CHARS], name)
    if quick is None and len(head) > QUICK_CHARS:
        quick = _named_and_certain(head, name)
    if quick is not None:
        return quick
    ranked = scores(head, name)
    best_parser, best_score, named = max(ranked, key=lambda item: item[1])
    if best_score < THRESHOLD or best_parser.kind is InputKind.OTHER:
        return Detection(kind=InputKind.OTHER, score=best_score, reason="no format recognized")
    how = "content" + (" and file name" if named else "")
    return Detection(kind=best_parser.kind, score=min(best_score, 1.0), reason=f"by {how}")
