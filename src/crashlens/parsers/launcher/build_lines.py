"""What a job ran on and was built with, read from any text log: the GPU's compute capability
and the CUDA (and torch) build versions.

The launcher parser reads versions with more context of its own (`collector.py`); a log of
unknown origin (a TensorFlow or Keras script's output, a notebook's) is read by the plain-text
collector, which keeps only death signs and these: `decide/gpu_arch.py` pairs the GPU with the
build whatever kind of log named them.

* `gpu.capability`: str `major.minor`, the first GPU a line names or states
  (`parsers/gpu_arch.py`); attr `shown_as` (the name found, or `stated`).
* `cuda.version`, `torch.version`, `nccl.version`: the first of each a line names
  (`messages.version_facts`); `nvidia_smi.driver_version`, the driver version a pasted
  torch.utils.collect_env report read from nvidia-smi.
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
from crashlens.parsers.launcher.messages import version_facts
from crashlens.text.values import bounded_int


def on_gpu(collector: AnchoredCollector, line: Line) -> None:
    if found := gpu_on_line(line.text):
        cap, named = found
        collector.keep_first("gpu.capability", shown(cap), line, shown_as=named)


def on_build_version(collector: AnchoredCollector, line: Line) -> None:
    for key, value in version_facts(line.text):
        collector.keep_first(key, value, line)


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

VERSION_ANCHOR = (
    r"torch==[0-9]|(?:PyTorch|torch) version:? [0-9]"
    r"|CUDA (?:[Vv]ersion|used to build PyTorch):? [0-9]|libcudart\.so\.[0-9]|NCCL version [0-9]"
    r"|^Nvidia driver version: [0-9]"
)
"""Line-safe: the lines `messages.version_facts` reads."""

GPU_ANCHOR: Anchor[Any] = Anchor(GPU_LINE_ANCHOR, on_gpu, settles=("gpu.capability",))
"""The GPU the job runs on, by name or stated capability (for the CUDA build's reach)."""

BUILD_ANCHORS: tuple[Anchor[Any], ...] = (
    GPU_ANCHOR,
    DNN_MEMORY_ANCHOR,
    Anchor(
        VERSION_ANCHOR,
        on_build_version,
        settles=("cuda.version", "torch.version", "nvidia_smi.driver_version"),
    ),
)
"""The plain-text collector's: the GPU and the build versions."""
