"""Deciding an input's kind from its content; the file name only adds confidence.

Each parser scores the first 64 KiB in [0, 1]; a matching filename glob adds 0.2. The best
score above `THRESHOLD` wins (ties: registry order); below it the input is plain text, which
is still scanned by every generic rule. Detection never raises.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fnmatch import fnmatch
from functools import lru_cache

from crashlens.inputs.discover import iter_inputs
from crashlens.inputs.read import read_head, sniff_text
from crashlens.model import Detection, InputKind, InputStatus
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


@lru_cache(maxsize=1024)
def _named_parsers(name: str) -> tuple[Parser, ...]:
    """The parsers whose filename globs match `name` (an archive repeats a few names)."""
    lower = name.lower()
    return tuple(p for p in PARSERS if any(fnmatch(lower, glob) for glob in p.filenames))


def scores(
    head: str, name: str, known: dict[Parser, float] | None = None
) -> list[tuple[Parser, float, bool]]:
    """Every parser's score for this input: (parser, score with bonus, filename matched).

    `known`: content scores already computed on this head (not sniffed again)."""
    by_name = _named_parsers(name)
    result = []
    for parser in PARSERS:
        named = parser in by_name
        content = known[parser] if known and parser in known else safe_sniff(parser, head)
        result.append((parser, content + (FILENAME_BONUS if named else 0.0), named))
    return result


def _named_score(head: str, name: str) -> tuple[Parser, float] | None:
    """The content score of the one parser the file's name points to (None: not exactly one)."""
    named = _named_parsers(name)
    if len(named) != 1:
        return None
    return named[0], safe_sniff(named[0], head)


def _agreed(named: tuple[Parser, float] | None) -> Detection | None:
    """When the file's name and its content agree on a kind, that kind wins at once.

    `dmesg.txt` that reads as a kernel log, `train.log` with launcher markers: a scan then skips
    the other sniffers for most files. Agreement means the one parser named by the file's glob
    scores at least `AGREEMENT` with the bonus (its content alone is clearly its kind).
    """
    if named is None or named[1] + FILENAME_BONUS < AGREEMENT:
        return None
    score = min(named[1] + FILENAME_BONUS, 1.0)
    return Detection(kind=named[0].kind, score=score, reason="by content and file name")


def detect(head: str, name: str, forced: InputKind | None = None) -> Detection:
    """The kind of one input, with its score and the reason it was chosen."""
    if forced is not None:
        return Detection(kind=forced, score=1.0, reason="--kind given")
    named = _named_score(head[:QUICK_CHARS], name)
    quick = _agreed(named)
    if quick is None and named is not None and len(head) > QUICK_CHARS:
        named = _named_score(head, name)
        quick = _agreed(named)
    if quick is not None:
        return quick
    # By now `named` holds the named parser's score on the whole head: not sniffed again.
    known = {named[0]: named[1]} if named is not None else None
    ranked = scores(head, name, known)
    best_parser, best_score, by_name = max(ranked, key=lambda item: item[1])
    if best_score < THRESHOLD or best_parser.kind is InputKind.OTHER:
        return Detection(kind=InputKind.OTHER, score=best_score, reason="no format recognized")
    how = "content" + (" and file name" if by_name else "")
    return Detection(kind=best_parser.kind, score=min(best_score, 1.0), reason=f"by {how}")


@dataclass(frozen=True, slots=True)
class KindExplained:
    """How one input's kind was decided (what `crashlens detect` prints)."""

    path: str
    detection: Detection | None
    """The kind chosen and why; None when the input was skipped."""
    ranking: tuple[tuple[InputKind, float], ...] = ()
    """Every parser's score, filename bonus included, best first (ties: registry order)."""
    skipped: str | None = None
    """Why the input could not be read."""


def explain_inputs(paths: Sequence[str]) -> Iterator[KindExplained]:
    """Every input under `paths` with the kind detection gives it and every parser's score."""
    for item in iter_inputs(list(paths)):
        if isinstance(item, InputStatus):
            yield KindExplained(item.path, None, skipped=item.reason)
            continue
        with item.open() as stream:
            head = sniff_text(read_head(stream))
        ranked = sorted(scores(head, item.name), key=lambda s: -s[1])
        yield KindExplained(
            item.path,
            detect(head, item.name),
            tuple((parser.kind, score) for parser, score, _ in ranked),
        )
