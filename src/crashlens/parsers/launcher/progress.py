"""The training progress among a log's last lines: which failure lines the run went on from.

`log.progress` keeps the first progress line only; a warning the run survived in mid-training
(a retry, a failed save) needs to know whether training went on AFTER it. Following every
progress line would cost a callback on most lines of a training log (the first-line anchor
settles for that reason), so the progress lines are read where the answer lies, among the
lines the engine keeps of the log's end (`TAIL_LINES`): a stop after an hour of steps has
steps just above it; a stop right after its failure has none between them.

Fact key: `log.progress_mark`: int how many progress lines of the tail came up to this one
(1, 2, ...), at that line; attr rank (its `[rankN]:` prefix, when it has one). An int, not a
flag: no classifier feature.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from crashlens.model import Fact, Line
from crashlens.parsers.base import fact

MARK = "log.progress_mark"


def tail_progress(path: str, tail: Sequence[Line], progress: re.Pattern[str]) -> list[Fact]:
    """One `log.progress_mark` per line of `tail` that reports training progress."""
    found: list[Fact] = []
    for line in tail:
        if progress.search(line.text):
            mark = len(found) + 1
            found.append(fact(MARK, mark, path, line.lineno, text=line.raw, rank=line.rank))
    return found
