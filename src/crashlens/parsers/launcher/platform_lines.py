"""Where a job was hosted, when the hosting platform's own status lines say so: what an
`unknown` verdict's checks read (`decide/remedy.sources_of`), since a hosted app has no node to
run dmesg or sacct on, only the platform's logs and its hardware tier.

* `platform.name`: str the platform, the first line that names it (`PLATFORM_NAMES`):
  `hf-spaces`, a Hugging Face Space, by the status its page shows (`Memory limit exceeded
  (16Gi)`, `Space evicted, storage limit exceeded`, `launch timed out, space was not healthy`),
  ZeroGPU's `GPU task aborted`, and the frames of its `spaces` package (`spaces/zero/`);
  `colab`, a Google Colab runtime, by its paths (`/content/drive/`, the notebook's `/content/`
  working folder in a traceback's frames) and the `google.colab` package's frames or its
  `Mounted at /content/drive`; `kaggle`, a Kaggle notebook, by its `/kaggle/working` and
  `/kaggle/input` folders.

Read from any text log (the launcher collector reads plain text too): a Space's status line
is pasted alone as often as inside its container log.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from crashlens.model import Line
from crashlens.parsers.base import Anchor, AnchoredCollector
from crashlens.parsers.launcher.tools import COLAB, HF_SPACES, KAGGLE


def _names(platform: str) -> Callable[[AnchoredCollector, Line], None]:
    """The handler of a platform's lines: the first one names it (`platform.name`)."""

    def on_line(collector: AnchoredCollector, line: Line) -> None:
        collector.keep_first("platform.name", platform, line)

    return on_line


PLATFORM_ANCHORS: tuple[Anchor[Any], ...] = (
    Anchor(
        r"Memory limit exceeded \([0-9]|storage limit exceeded|space was not healthy"
        r"|GPU task aborted|site-packages/spaces/zero/",
        _names(HF_SPACES),
        settles=("platform.name",),
    ),
    # (a frame's `File "/content/...`: the runtime's working folder, where notebooks clone and
    # run their scripts; `/content` alone in prose or a Docker volume is not enough)
    Anchor(
        r"/content/drive/|File \"/content/|/google/colab/|Mounted at /content/",
        _names(COLAB),
        settles=("platform.name",),
    ),
    Anchor(r"/kaggle/(?:working|input)/", _names(KAGGLE), settles=("platform.name",)),
)
"""A hosting platform's own status lines, frames and folders (the first one found names it)."""
