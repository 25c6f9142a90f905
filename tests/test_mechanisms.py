"""Mechanisms the rule library knows, decided end to end on logs no corpus case holds.

Each scenario is one failure mechanism as its software prints it (the wording family, not a
case's text): a folder of the files a user would hand over is analyzed as `crashlens analyze`
does, and the top cause must be the mechanism's category, citing the rule that knows it. The
lines follow the vendors' formats (Slurm's sacct, kubectl, libnvidia-container, the NVIDIA
kernel driver, XLA, cuBLAS/cuDNN, glibc in other locales, Windows); host names, paths and
numbers are neutral.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from crashlens.pipeline import analyze


@dataclass(frozen=True)
class Mechanism:
    name: str
    files: dict[str, str]
    category: str
    rule: str


SACCT_HEADER = (
    "JobID           JobName      State ExitCode    Elapsed\n"
    "------------ ---------- ---------- -------- ----------\n"
)

MECHANISMS = (
    Mechanism(
        "slurm-oom-state-with-a-silent-log",
        {
            "train.log": "[2026-03-02 10:00:00] INFO step 1200 loss 2.31\n"
            "[2026-03-02 10:05:00] INFO step 1300 loss 2.29\n",
            "sacct.txt": SACCT_HEADER + "5512001      finetune   OUT_OF_ME+    0:125   02:11:40\n"
            "5512001.bat+      batch OUT_OF_ME+    0:125   02:11:40\n",
        },
        "host_oom",
        "host-oom-slurm-state-out-of-memory",
    ),
    Mechanism(
        "tensorflow-oom-on-a-cpu-device-is-host-memory",
        {
            "train.log": "Epoch 1/10\n"
            "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when "
            "allocating tensor with shape[120000,224,224,3] and type float on "
            "/job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu\n",
        },
        "host_oom",
        "host-oom-cpu-allocator-failed",
    ),
    Mechanism(
        "kubelet-eviction-for-ephemeral-storage",
        {
            "describe.txt": "Status:           Failed\n"
            "Reason:           Evicted\n"
            "Message:          Pod ephemeral local storage usage exceeds the total limit "
            "of containers 20Gi.\n",
        },
        "filesystem",
        "filesystem-k8s-eviction-ephemeral-storage",
    ),
    Mechanism(
        "container-requires-a-newer-cuda-than-the-host-driver",
        {
            "run.log": "docker: Error response from daemon: failed to create task for "
            "container: failed to create shim task: OCI runtime create failed: runc create "
            "failed: unable to start container process: error during container init: error "
            "running prestart hook #0: exit status 1, stdout: , stderr: Auto-detected mode as "
            "'legacy'\nnvidia-container-cli: requirement error: unsatisfied condition: "
            "cuda>=12.6, please update your driver to a newer version, or use an earlier cuda "
            "container: unknown.\n",
        },
        "driver",
        "driver-cuda-driver-insufficient",
    ),
    Mechanism(
        "nvidia-library-shadowed-on-one-node-while-the-other-waits",
        {
            "node0.log": "torch.distributed.DistStoreError: Timed out after 901 seconds "
            "waiting for clients. 1/2 clients joined.\n",
            "node1.log": "ImportError: /opt/venv/lib/python3.12/site-packages/torch/lib/"
            "libtorch_cuda.so: undefined symbol: ncclMemAlloc\n",
        },
        "driver",
        "driver-nvidia-library-symbol-mismatch",
    ),
    Mechanism(
        "nvidia-driver-status-says-the-gpu-needs-a-reset",
        {
            "dmesg.txt": "[Tue Jun  3 02:14:09 2025] NVRM: nvAssertOkFailedNoLog: Assertion "
            "failed: Reset required [NV_ERR_RESET_REQUIRED] (0x00000062) returned from "
            "status @ kernel_channel.c:1411\n",
            "job.log": "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or "
            "unavailable\n",
        },
        "hardware",
        "hardware-nvrm-status-gpu-fault",
    ),
    Mechanism(
        "xla-allocator-out-of-device-memory",
        {
            "train.log": "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Failed "
            "to allocate request for 4.00GiB (4294967296B) on device ordinal 1\n",
        },
        "gpu_oom",
        "gpu-oom-xla-tf-resource-exhausted",
    ),
    Mechanism(
        "windows-commit-limit-when-workers-load-torch",
        {
            "train.log": "OSError: [WinError 1455] The paging file is too small for this "
            'operation to complete. Error loading "C:\\envs\\ml\\lib\\site-packages\\torch'
            '\\lib\\cublas64_12.dll" or one of its dependencies.\n',
        },
        "host_oom",
        "host-oom-windows-commit-limit",
    ),
    Mechanism(
        "secure-boot-refuses-the-nvidia-module",
        {
            "setup.log": "modprobe: ERROR: could not insert 'nvidia': Key was rejected by "
            "service\n",
        },
        "driver",
        "driver-module-rejected-secure-boot",
    ),
    Mechanism(
        "memory-cgroup-oom-report-counters",
        {
            "dmesg.txt": "[ 9912.331020] memory: usage 67108864kB, limit 67108864kB, "
            "failcnt 5521\n",
            "job.log": "bash: line 1:  4242 Killed                  python train.py\n",
        },
        "host_oom",
        "host-oom-memcg-usage-at-limit",
    ),
)


def _folder(tmp_path: Path, mechanism: Mechanism) -> Path:
    folder = tmp_path / mechanism.name
    folder.mkdir()
    for name, text in mechanism.files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=lambda m: m.name)
def test_mechanism_leads_with_its_category_and_rule(tmp_path: Path, mechanism: Mechanism) -> None:
    report = analyze([str(_folder(tmp_path, mechanism))])
    assert report.causes, f"no cause for {mechanism.name}: verdict {report.verdict}"
    top = report.causes[0]
    assert top.category == mechanism.category, [(c.category, c.confidence) for c in report.causes]
    assert mechanism.rule in {item.rule for item in top.evidence}
    assert str(report.verdict) == mechanism.category


def test_tensorflow_oom_on_a_gpu_device_stays_gpu_memory(tmp_path: Path) -> None:
    gpu = Mechanism(
        "tensorflow-oom-on-a-gpu",
        {
            "train.log": "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM "
            "when allocating tensor with shape[256,64,112,112] and type float on "
            "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n",
        },
        "gpu_oom",
        "gpu-oom-xla-tf-resource-exhausted",
    )
    report = analyze([str(_folder(tmp_path, gpu))])
    assert report.causes[0].category == "gpu_oom"
    assert all(c.category != "host_oom" for c in report.causes)
