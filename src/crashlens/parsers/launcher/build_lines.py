"""What a job ran on, read from any text log: the GPU's compute capability, and the memory
free when a cuDNN handle could not be created.

The launcher collector (which reads logs of unknown origin too: a TensorFlow or Keras script's
output, a notebook's) keeps these beside the build versions it reads itself (`collector.py`):
`decide/gpu_arch.py` pairs the GPU with the build whatever input named them.

* `gpu.capability`: str `major.minor`, the first GPU a line names or states
  (`parsers/gpu_arch.py`); attr `shown_as` (the name found, or `stated`).
* `cudnn.memory_free`: int bytes, the GPU memory XLA's or TensorFlow's cuda_dnn.cc reports free
  when it could not create a cuDNN handle (`Memory usage: <n> bytes free, <m> bytes total`);
  attr `total`. Much memory free says the handle failed for another reason than memory.
"""

from __future__ import annotations

import re
from typing import Any

from crashlens.model import Line
from crashlens.parsers.base import Anchor, AnchoredCollector
from crashlens.parsers.gpu_arch import GPU_LINE_ANCHOR, gpu_on_line, shown
from crashlens.text.values import bounded_int


def on_gpu(collector: AnchoredCollector, line: Line) -> None:
    if found := gpu_on_line(line.text):
        cap, named = found
        collector.keep_first("gpu.capability", shown(cap), line, shown_as=named)


_DNN_MEMORY = re.compile(
    r"cuda_dnn\.cc:[0-9]+\] Memory usage: ([0-9]{1,20}) bytes free, ([0-9]{1,20}) bytes total"
)


def on_dnn_memory(collector: AnchoredCollector, line: Line) -> None:
    if m := _DNN_MEMORY.search(line.text):
        free = bounded_int(m.group(1))
        if free is not None:
            collector.keep_first("cudnn.memory_free", free, line, total=bounded_int(m.group(2)))


DNN_MEMORY_ANCHOR: Anchor[Any] = Anchor(
    r"cuda_dnn\.cc:[0-9]+\] Memory usage: [0-9]", on_dnn_memory, settles=("cudnn.memory_free",)
)
"""The memory free on the GPU when its cuDNN handle could not be created."""

GPU_ANCHOR: Anchor[Any] = Anchor(GPU_LINE_ANCHOR, on_gpu, settles=("gpu.capability",))
"""The GPU the job runs on, by name or stated capability (for the CUDA build's reach)."""
