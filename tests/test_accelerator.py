"""The accelerator family a run's matched lines show, and the generic checks it gets: a run on
an AMD GPU, an Intel GPU, AWS Neuron or Ascend is not told to run nvidia-smi."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.decide.accelerator import accelerator_of, nvidia_only
from crashlens.decide.remedy import ACCELERATOR_CHECKS, GENERIC_CHECKS, checks_for
from crashlens.errors import PatternError
from crashlens.match.rules import ACCELERATORS, parse_remedy
from crashlens.model import Category, Hit, Role
from crashlens.pipeline import analyze


def _hits(*texts: str) -> list[Hit]:
    return [
        Hit("rule", Category.GPU_OOM, Role.ROOT, 0.9, "train.log", number, text)
        for number, text in enumerate(texts, 1)
    ]


@pytest.mark.parametrize(
    ("texts", "family"),
    [
        (["torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB."], "amd"),
        (["RuntimeError: HIP error: hipErrorNoBinaryForGpu: Unable to find code object"], "amd"),
        (["torch 2.4.1+rocm6.1 cannot use the device"], "amd"),
        (["RuntimeError: UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"], "intel"),
        (
            ["2024-May-02 10:00:01.0001 1234:1234 ERROR  NRT:nrt_init  Failed to initialize"],
            "neuron",
        ),
        (["RuntimeError: call aclnnMatmul failed, detail:EZ9999: Inner Error!"], "ascend"),
        # a family's marker beside one of NVIDIA's own: NVIDIA's checks stay
        (["hipErrorNoBinaryForGpu", "NVRM: Xid (PCI:0000:3b:00): 79"], None),
        # two families: neither is sure
        (["HIP error: invalid device function", "UR_RESULT_ERROR_DEVICE_LOST"], None),
        # JAX on an NVIDIA machine lists the backends it could not start
        (
            ["Unable to initialize backend 'rocm': module has no attribute 'GpuAllocatorConfig'"],
            None,
        ),
        # CUDA's name alone is every PyTorch build's
        (["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB"], None),
        ([], None),
    ],
)
def test_the_family_the_matched_lines_show(texts: list[str], family: str | None) -> None:
    assert accelerator_of(_hits(*texts)) == family


def test_every_family_has_checks_for_the_nvidia_centric_categories() -> None:
    for family in ACCELERATORS:
        for category in (Category.GPU_OOM, Category.DRIVER, Category.HARDWARE, Category.NETWORK):
            own = checks_for(category, family)
            assert own == ACCELERATOR_CHECKS[(category, family)]
            assert not any("nvidia-smi" in (a.command or "") for a in own), (category, family)
        assert (None, family) in ACCELERATOR_CHECKS, family


def test_a_category_without_a_family_block_keeps_the_default() -> None:
    assert checks_for(Category.FILESYSTEM, "amd") == GENERIC_CHECKS[Category.FILESYSTEM]
    assert checks_for(Category.GPU_OOM, None) == GENERIC_CHECKS[Category.GPU_OOM]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"about": "x", "steps": [{"text": "t"}], "accelerator": "amd"}, "generic_for"),
        (
            {"about": "x", "steps": [{"text": "t"}], "generic_for": "driver", "accelerator": "tpu"},
            "accelerator",
        ),
    ],
)
def test_the_loader_refuses_an_accelerator_it_cannot_use(
    data: dict[str, object], message: str
) -> None:
    with pytest.raises(PatternError, match=message):
        parse_remedy(data, "patterns/remedies/checks-x.toml")


def _checks(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "train.log"
    path.write_text(text, encoding="utf-8")
    report = analyze([str(path)])
    shown = [a for cause in report.causes for a in cause.next_checks] + list(report.next_checks)
    return [a.command or "" for a in shown]


def test_a_rocm_out_of_memory_asks_for_rocm_smi_not_nvidia_smi(tmp_path: Path) -> None:
    log = (
        "Epoch 3:  41%|████      | 412/1000 [05:10<07:22, 1.33it/s]\n"
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total"
        " capacity of 23.98 GiB of which 1.06 GiB is free. Of the allocated memory 21.50 GiB is"
        " allocated by PyTorch, and 0.95 GiB is reserved by PyTorch but unallocated.\n"
    )
    commands = _checks(tmp_path, log)
    assert any(command.startswith("rocm-smi") for command in commands)
    assert not any("nvidia-smi" in command for command in commands)


def test_a_cuda_out_of_memory_keeps_nvidia_smi(tmp_path: Path) -> None:
    log = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total"
        " capacity of 23.68 GiB of which 1.06 GiB is free.\n"
    )
    assert any(command.startswith("nvidia-smi") for command in _checks(tmp_path, log))


@pytest.mark.parametrize(
    ("command", "only"),
    [
        ("nvidia-smi -q -d ECC,ROW_REMAPPER", True),
        ("sudo nvidia-bug-report.sh", True),
        ("lspci | grep -i nvidia && dcgmi diag -r 1", True),
        ("free -g; nvidia-smi", True),
        ("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", False),
        ("dmesg -T | grep -i 'NVRM: Xid'", True),
        ('journalctl -k | grep "NVRM"', True),
        ("sudo dmesg -T | grep -iE 'NVRM: Xid|fallen off|AER|mce|EDAC'", False),
        ("sudo dmesg -T | grep -iE 'amdgpu|AER|mce|EDAC'", False),
        (None, False),
    ],
)
def test_steps_that_run_nvidias_own_tools(command: str | None, only: bool) -> None:
    assert nvidia_only(command) is only
