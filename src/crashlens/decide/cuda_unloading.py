"""A dying message that shows CUDA already unloaded: the process was exiting (teardown).

CUDA answers `cudaErrorCudartUnloading` (`driver shutting down`; `CUDA_ERROR_DEINITIALIZED` in
the driver API) to a call made while the process shuts down, after the driver was unloaded:
a destructor that still frees GPU memory or queries an event as the interpreter exits. A
`terminate called ...` whose `what():` says so, or a glog `Check failed: ... driver shutting
down`, is such a destructor dying, after the program's own work had returned. The failure
detector reads that message as an exit in progress, not a death; a death earlier in the log
still counts (`decide.failure`), so a real failure before the teardown still wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from crashlens.match.catalogs import load_catalogs
from crashlens.model import Fact, Hit

UNLOADING_ENTRY = "cudaErrorCudartUnloading"
"""The CUDA catalog's entry for a call made after the driver was unloaded."""
MESSAGE_LINES = 2
"""Lines below a dying message's first line that are still its own (`what():` and its note)."""
SAYS = "CUDA was already unloaded (driver shutting down): the process was exiting"


@cache
def unloading_texts() -> tuple[str, ...]:
    """How the unloading status is printed: the catalog entry's texts, and the message each
    `CUDA error: <message>` text carries, which C++ programs (Caffe, gloo) print bare."""
    texts: list[str] = []
    for catalog in load_catalogs():
        for entry in catalog.entries:
            if entry.id == UNLOADING_ENTRY:
                texts += entry.texts
    texts += [text.split(": ", 1)[1] for text in texts if text.startswith("CUDA error: ")]
    return tuple(dict.fromkeys(texts))


def shows_unloading(item: Fact, hits: Sequence[Hit]) -> bool:
    """Whether a dying message (`log.fatal`, a fatal `log.ends_with`) shows the unloading
    status on its own lines: its line, or the lines of its message below it (as a rule's hit
    there quotes them)."""
    texts = unloading_texts()
    if any(text in item.text for text in texts):
        return True
    first = item.lineno
    if first is None:
        return False
    return any(
        hit.path == item.path
        and hit.lineno is not None
        and first < hit.lineno <= first + MESSAGE_LINES
        and any(text in hit.text for text in texts)
        for hit in hits
    )
