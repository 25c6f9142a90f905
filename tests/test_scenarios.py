"""End-to-end scenarios: whole folders a user would hand over, analyzed as `crashlens analyze`.

Each scenario asserts the verdict, that the decisive line is cited (by its text, in the right
file), and that a remediation step says the specific thing to do. The folders are corpus cases
(real public failure reports; see each case.toml for its source) and the shipped example.
Misleading ones (the visible symptom points elsewhere) are marked `hard`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from crashlens.model import Report, Verdict
from crashlens.pipeline import analyze
from crashlens.render import NEAR_CERTAIN

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Scenario:
    folder: str
    verdict: str
    evidence: str
    """Text of a cited evidence line of the top cause."""
    remedy: str
    """Text found in a remediation step or command of the top cause."""
    hard: bool = False


SCENARIOS = (
    # shm
    Scenario("examples/llamafactory-shm-bus-error", "shm", "Bus error", "--shm-size="),
    Scenario(
        "corpus/shm-eslam-torch-share-filename-enospc-docker",
        "shm",
        "unable to write to file </torch_",
        "--shm-size",
    ),
    Scenario("corpus/shm-megatron-docker-semlock-errno28", "shm", "SemLock", "shm", hard=True),
    Scenario(
        "corpus/shm-deepspeed-chat-exit-minus7-no-message-docker",
        "shm",
        "return code = -7",
        "--shm-size",
    ),
    Scenario("corpus/shm-kubeflow-pod-nccl296-posix-fallocate", "shm", "posix_fallocate", "shm"),
    # gpu_oom
    Scenario(
        "corpus/gpu_oom-hallo-stage1-accelerate-2x4090-rank1",
        "gpu_oom",
        "CUDA out of memory",
        "PYTORCH_CUDA_ALLOC_CONF",
    ),
    Scenario(
        "corpus/gpu_oom-qwen-quickstart-cublas-alloc-failed",
        "gpu_oom",
        "CUBLAS_STATUS_ALLOC_FAILED",
        "batch",
    ),
    Scenario(
        "corpus/gpu_oom-maddog-t4-old-runtimeerror-wording",
        "gpu_oom",
        "RuntimeError: CUDA out of memory",
        "PYTORCH_CUDA_ALLOC_CONF",
    ),
    # host_oom
    Scenario(
        "corpus/host_oom-mmrotate-ddp-dataloader-killed-16g",
        "host_oom",
        "Out of memory: Killed process",
        "memory",
    ),
    Scenario(
        "corpus/host_oom-bugbug-training-task-exit-137-docker-oomkilled",
        "host_oom",
        '"OOMKilled": true',
        "--memory",
    ),
    Scenario(
        "corpus/host_oom-knet-cityscapes-slurm-oom-kill-event", "host_oom", "oom-kill event", "mem"
    ),
    Scenario(
        "corpus/host_oom-llamafactory-z3-offload-glm4-full-252g",
        "host_oom",
        "Out of memory: Killed process",
        "memory",
        hard=False,
    ),
    # hardware
    Scenario(
        "corpus/hardware-hoth-nccl-timeout-all-ranks-gpu-unknown-error",
        "hardware",
        "fallen off the bus",
        "rain",
        hard=True,
    ),
    Scenario(
        "corpus/hardware-mineru-unspecified-launch-failure-gpu-swapped",
        "hardware",
        "Xid",
        "rain",
        hard=True,
    ),
    Scenario(
        "corpus/hardware-alpaca-lora-a100-ecc-nvidia-smi-uncorr-count",
        "hardware",
        "uncorrectable ECC error encountered",
        "nvidia-smi -r -i 0",
    ),
    Scenario(
        "corpus/hardware-b300-xid145-nvlink-vllm-tp-workers-killed",
        "hardware",
        "Xid",
        "scontrol update nodename=hgx-b300-07",
    ),
    # driver
    Scenario("corpus/driver-nvml-mismatch-unattended-upgrade", "driver", "API mismatch", "reboot"),
    Scenario(
        "corpus/driver-no-kernel-image-rtx4090-torch-without-sm89",
        "driver",
        "no kernel image is available",
        "TORCH_CUDA_ARCH_LIST",
    ),
    Scenario(
        "corpus/driver-cuml-multigpu-segfault-nccl-driver-insufficient",
        "driver",
        "Cuda failure",
        "driver",
        hard=True,
    ),
    # filesystem
    Scenario(
        "corpus/filesystem-megatron-lustre-ost-full-enospc",
        "filesystem",
        "No space left on device",
        "du -sh",
        hard=True,
    ),
    Scenario(
        "corpus/filesystem-mmdet-checkpoint-errno122-disk-quota",
        "filesystem",
        "Disk quota exceeded",
        "quota",
    ),
    Scenario(
        "corpus/filesystem-llamafactory-stale-file-handle-hf-cache",
        "filesystem",
        "Stale file handle",
        "mount",
    ),
    # permissions
    Scenario(
        "corpus/permissions-nccl-ib-reg-mr-enomem-memlock-8192",
        "permissions",
        "ibv_reg_mr",
        "memlock",
        hard=True,
    ),
    Scenario(
        "corpus/permissions-openshift-rank1-permissionerror-dot-cache",
        "permissions",
        "Permission denied: '/.cache'",
        "chown",
    ),
    Scenario(
        "corpus/permissions-docker-seccomp-set-mempolicy-despite-sys-nice",
        "permissions",
        "Operation not permitted",
        "--cap-add",
    ),
    # network
    Scenario(
        "corpus/network-nccl-ib-async-port-error-flapping-link", "network", "port error", "ibstat"
    ),
    Scenario(
        "corpus/network-slurm-master-addr-short-hostname-no-route",
        "network",
        "failed to connect",
        "NCCL_SOCKET_IFNAME",
    ),
    Scenario(
        "corpus/network-pytorch-nccl-error-12-different-switches-gid",
        "network",
        "ncclRemoteError",
        "NCCL_DEBUG",
    ),
)

NONE_SCENARIOS = (
    "corpus/none-xid45-preemptive-cleanup-noise-job-succeeded",
    "corpus/none-slurm-log-flooded-nccl-info-collectives",
    "corpus/none-nvidia-smi-transient-err-power-diag-pass",
    "corpus/none-vllm-ray-multihost-shm-warning-serving-ok",
)


def _run(folder: str) -> Report:
    path = ROOT / folder
    assert path.is_dir(), f"scenario folder {folder} is missing"
    logs = path / "logs" if (path / "logs").is_dir() else path
    return analyze([str(logs)])


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.folder.split("/")[-1])
def test_scenario(scenario: Scenario) -> None:
    report = _run(scenario.folder)
    assert report.verdict == scenario.verdict, [(c.category, c.confidence) for c in report.causes]
    top = report.causes[0]
    assert top.confidence >= 0.5
    cited = [e.text for e in top.evidence]
    assert any(scenario.evidence in text for text in cited), cited
    assert all(e.line is None or e.line >= 1 for e in top.evidence)
    steps = [f"{a.text} {a.command or ''}" for a in top.remediation]
    assert any(scenario.remedy in step for step in steps), steps


@pytest.mark.parametrize("folder", NONE_SCENARIOS, ids=lambda f: f.split("/")[-1])
def test_harmless_noise_is_not_a_failure(folder: str) -> None:
    assert _run(folder).verdict is Verdict.NONE


def test_at_least_25_scenarios_cover_every_category() -> None:
    assert len(SCENARIOS) >= 25
    assert {s.verdict for s in SCENARIOS} == {
        "shm",
        "gpu_oom",
        "host_oom",
        "hardware",
        "driver",
        "filesystem",
        "permissions",
        "network",
    }
    assert sum(s.hard for s in SCENARIOS) >= 6


def test_knock_on_timeouts_are_demoted_and_explained() -> None:
    report = _run("corpus/hardware-hoth-nccl-timeout-all-ranks-gpu-unknown-error")
    network = [c for c in report.causes if c.category.value == "network"]
    assert network, "the NCCL timeouts should still be listed, lower"
    assert network[0].demoted_because and "knock-on" in network[0].demoted_because
    assert any("knock-on" in note for note in report.notes)


def test_bare_sigkill_is_likely_host_oom_with_what_would_confirm_it(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "[2025-01-02 10:00:00,000] [INFO] [launch.py:152:main] nnodes=1, num_local_procs=8\n"
        "[2025-01-02 11:00:00,000] [ERROR] [launch.py:325:sigkill_handler] "
        "['/usr/bin/python3', '-u', 'train.py', '--local_rank=3'] exits with return code = -9\n"
    )
    report = analyze([str(log)])
    # Indirect evidence: host_oom at the probability the corpus gives it, not near-certain.
    assert report.verdict is Verdict.HOST_OOM
    assert 0.5 <= report.causes[0].confidence < NEAR_CERTAIN
    assert any("dmesg" in (a.command or "") for a in report.causes[0].next_checks)


def test_enospc_under_dev_shm_is_shm_but_on_a_disk_is_filesystem(tmp_path: Path) -> None:
    shm = tmp_path / "a.log"
    shm.write_text(
        "RuntimeError: unable to write to file </torch_1394_2747491098>: "
        "No space left on device (28)\n"
    )
    disk = tmp_path / "b.log"
    disk.write_text(
        '  File "/opt/conda/lib/python3.11/site-packages/torch/serialization.py", line 652\n'
        "OSError: [Errno 28] No space left on device: '/checkpoints/step_4000/model.pt'\n"
    )
    assert analyze([str(shm)]).verdict == "shm"
    assert analyze([str(disk)]).verdict == "filesystem"


def test_a_traceback_the_run_survived_is_not_a_failure(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "[default6]:Traceback (most recent call last):\n"
        '[default6]:  File "/opt/conda/lib/python3.11/site-packages/PIL/Image.py", line 3339\n'
        "[default6]:PIL.UnidentifiedImageError: cannot identify image file <_io.BytesIO>\n"
        "[default0]:retrying upload in 21s after transient error: "
        "ConnectionResetError(104, 'Connection reset by peer')\n"
        "{'loss': 0.912, 'learning_rate': 1.2e-05, 'epoch': 2.0}\n"
        "Training completed. Do not forget to share your model on huggingface.co/models =)\n"
    )
    assert analyze([str(log)]).verdict is Verdict.NONE
    crashed = tmp_path / "crashed.log"
    crashed.write_text(
        "Training completed. Do not forget to share your model on huggingface.co/models =)\n"
        "Traceback (most recent call last):\n"
        "RuntimeError: checkpoint upload failed\n"
    )
    assert analyze([str(crashed)]).verdict is Verdict.UNKNOWN
