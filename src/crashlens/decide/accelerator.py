"""Which accelerator family a run's failure lines show, so its checks ask for that family's tools.

The generic checks that end every cause of a category (and an `unknown` verdict's list) are
written for NVIDIA GPUs: nvidia-smi, NCCL's log, the NVRM kernel lines. A run on an AMD GPU, an
Intel GPU, AWS Neuron or Huawei Ascend gets its own family's checks instead, where a block for
the category is written (`accelerator` in `patterns/remedies/checks-*-<family>.toml`).

Only the lines the rules matched are read (the lines that carry the failure, not a whole log's
start-up banner), and a family is named only when those lines show its markers, no other
family's and none of NVIDIA's own. Two words are deliberately not markers: CUDA's name (a ROCm
build of PyTorch still says `torch.cuda` and `CUDA out of memory`, and HIP's error names echo
CUDA's) and a bare lower-case `rocm` (JAX on an NVIDIA machine lists the `rocm` backend it
could not start).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from crashlens.model import Hit

_FAMILIES = {
    "amd": re.compile(
        r"\b(?:ROCm|HIP error|HIP out of memory|hipError[A-Za-z]+|HSA_STATUS_[A-Z_]+"
        r"|rocBLAS|rocblas_[a-z_]+|MIOpen|miopenStatus[A-Za-z]+|RCCL|amdgpu|rocm-smi|amd-smi"
        r"|gfx(?:90[0-9a-c]|94[0-9]|95[0-9]|1[012][0-9]{2}))\b|\+rocm[0-9]"
    ),
    "intel": re.compile(
        r"\b(?:XPU|xpu|ipex|intel_extension_for_pytorch|UR_RESULT_[A-Z_]+|ZE_RESULT_[A-Z_]+"
        r"|oneCCL|xpu-smi|Level Zero)\b"
    ),
    "neuron": re.compile(
        r"(?:\bNRT:|\bnrt_[a-z_]+|\bneuron-ls\b|\bneuronx|\bNEURON_RT_[A-Z_]+|\blibnrt\b|\bTDRV:)"
    ),
    # CANN's error codes (EH9999, EL0004: two letters, four digits, then a colon or a space);
    # not MindSpore's name, which its GPU build prints too
    "ascend": re.compile(
        r"\b(?:Ascend|ascend-dmi|npu-smi|torch_npu|NPU out of memory|NPU error"
        r"|NPUCachingAllocator|halMemAlloc|rtMalloc|aclnn[A-Za-z]+|ACL_ERROR_[A-Z_]+"
        r"|HcclCommInitRootInfo)\b|\bE[A-Z][0-9]{4}(?=[:\s])"
    ),
}
_NVIDIA = re.compile(
    r"\b(?:NVRM|nvidia-smi|Xid|NVML|cuDNN|CUDNN|cudnn|CUBLAS|cuBLAS|cublas|NVIDIA|nvidia|nvcc"
    r"|CUDA_ERROR_[A-Z_]+|cudaError[A-Za-z]+)\b"
)


def accelerator_of(hits: Iterable[Hit]) -> str | None:
    """The one non-NVIDIA family the matched lines show, or None (NVIDIA, several, or none)."""
    texts = [hit.text for hit in hits if hit.text]
    if any(_NVIDIA.search(text) for text in texts):
        return None
    seen = {family for family, marker in _FAMILIES.items() if any(map(marker.search, texts))}
    return seen.pop() if len(seen) == 1 else None


_NVIDIA_TOOL = re.compile(
    r"(?:^|[;&|]\s*)(?:sudo\s+)?(?:nvidia-smi|nvidia-bug-report\.sh|nvidia-debugdump|dcgmi)\b"
)
_NVIDIA_LINES_ONLY = re.compile(r"\bgrep\b[^|;&\n]*\s['\"](?:NVRM|NVRM: Xid|Xid)['\"]")
"""A search of a log for NVIDIA's driver lines alone (`grep -i 'NVRM: Xid'`): nothing to find
where another family's driver ran; a search that names other words too stays."""


def nvidia_only(command: str | None) -> bool:
    """Whether a step's command runs one of NVIDIA's own tools (nvidia-smi, DCGM, the bug
    report) or searches for NVIDIA's driver lines alone, which a run on another family has no
    use for."""
    if command is None:
        return False
    return bool(_NVIDIA_TOOL.search(command) or _NVIDIA_LINES_ONLY.search(command))
