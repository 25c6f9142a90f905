"""Out-of-memory errors a size probe caught and printed, while a log streams.

Some tools find the largest batch that fits by trying sizes until one runs out of memory,
catch that error and go on. YOLOv5's and Ultralytics' `profile()` (AutoBatch's probe, and
the `--profile` benchmark) print a table headed `Params  GFLOPs  GPU_mem (GB)  forward (ms)
backward (ms)  input  output`, one row per size tried, and for a size that failed print the
exception itself (`print(e)`, `LOGGER.info(e)`): the message alone, with no type and no
traceback (`CUDA out of memory. Tried to allocate ...`). The probe then picks a size that
fitted and the run goes on, so such a line is a report the process went on from (`handled`,
as `teardown.py` names it), not how the run ended.

`ProbeTracker` remembers where the last table header was; an out-of-memory message printed
bare (no exception type before it) within `WINDOW` lines after it is such a report. The same
message with its type (`torch.OutOfMemoryError: CUDA out of memory.`) or under a traceback
is an uncaught error, whatever came before.
"""

from __future__ import annotations

import re

HEADER = r"GPU_mem \(GB\)[ \t]+forward \(ms\)[ \t]+backward \(ms\)"
"""The scan pattern of the profile table's header (line-safe)."""
BARE_OOM = re.compile(r"^[ \t]*CUDA out of memory\. ")
"""PyTorch's CUDA out-of-memory message as `str(e)`, printed alone."""
WINDOW = 64
"""Lines after the header a caught size's message may come (a row per size, blank lines)."""


class ProbeTracker:
    """Where the last profile table began (see the module docstring)."""

    def __init__(self) -> None:
        self.header_at: int | None = None

    def read_header(self, lineno: int | None) -> None:
        """A profile table's header line."""
        self.header_at = lineno

    def caught(self, text: str, lineno: int | None) -> bool:
        """Whether an out-of-memory line is a size the probe tried, caught and printed."""
        if self.header_at is None or lineno is None or BARE_OOM.search(text) is None:
            return False
        return 0 < lineno - self.header_at <= WINDOW
