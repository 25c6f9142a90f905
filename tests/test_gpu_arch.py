"""A CUDA build with no machine code for the GPU (`decide/gpu_arch.py`, `parsers/gpu_arch.py`):
GPU names and stated capabilities, the release table, and the driver verdict the pair gives a
CUDA library failure that alone reads as GPU memory."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from crashlens.decide.gpu_arch import LACKS, build_lacks_gpu, reach_of, release_table
from crashlens.library import tables_dir
from crashlens.model import Fact
from crashlens.parsers.base import fact
from crashlens.parsers.gpu_arch import FAMILIES, capability_of_name, gpu_on_line
from crashlens.pipeline import analyze_inputs
from mechanism_helpers import assert_leads, log_report

SAMPLES = Path(__file__).resolve().parent / "data" / "samples" / "nvidia_smi"
TABLE = tomllib.loads(
    (tables_dir() / "versions" / "gpu_architectures.toml").read_text(encoding="utf-8")
)


@pytest.mark.parametrize(
    ("name", "capability"),
    [(example, row["capability"]) for row in TABLE["family"] for example in row["examples"]],
)
def test_each_family_example_reads_as_its_capability(name: str, capability: str) -> None:
    found = capability_of_name(name)
    assert found is not None and f"{found[0]}.{found[1]}" == capability


def test_every_gpu_of_the_nvidia_smi_samples_has_a_capability() -> None:
    """Every GPU name the real nvidia-smi samples hold maps to a family."""
    names = set()
    for sample in sorted(SAMPLES.iterdir()):
        for analysis in analyze_inputs([str(sample)]):
            names |= {str(f.value) for f in analysis.facts if f.key == "gpu.name"}
    assert len(names) >= 8
    # nvidia-smi's table cuts a long name (`NVIDIA GeForce ...`): nothing to read there
    unknown = sorted(
        name for name in names if capability_of_name(name) is None and not name.endswith("...")
    )
    assert unknown == [], unknown


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # TensorFlow's device line states the capability
        (
            "Created device /job:localhost/replica:0/task:0/device:GPU:0 with 22302 MB memory:"
            "  -> device: 0, name: NVIDIA GeForce RTX 3090, pci bus id: 0000:01:00.0, compute"
            " capability: 8.6",
            (8, 6),
        ),
        # XLA's
        ("  StreamExecutor device (0): NVIDIA A100-SXM4-40GB, Compute Capability 8.0", (8, 0)),
        # PyTorch's warning for a GPU its build does not cover
        (
            "UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible"
            " with the current PyTorch installation.",
            (12, 0),
        ),
        # torch.utils.collect_env
        ("GPU models and configuration: GPU 0: GeForce RTX 3080", (8, 6)),
        ("GPU 0: NVIDIA H100 80GB HBM3", (9, 0)),
        (
            "Ultralytics YOLOv8.0.20 Python-3.10.12 torch-2.0.1+cu117 CUDA:0 (Tesla T4, 15102MiB)",
            (7, 5),
        ),
    ],
)
def test_gpu_lines_give_the_capability(line: str, expected: tuple[int, int]) -> None:
    found = gpu_on_line(line)
    assert found is not None and found[0] == expected


@pytest.mark.parametrize(
    "line",
    [
        "NVIDIA Corporation Device 2204 (rev a1)",
        "NCCL INFO Bootstrap : Using eth0:10.0.0.11<0>",
        "Loading checkpoint shards: 100%",
        "model.layers.10.mlp.A100_proj",  # no GPU name, a word that only contains one
    ],
)
def test_lines_without_a_known_gpu_give_none(line: str) -> None:
    assert gpu_on_line(line) is None


def test_families_are_ordered_specific_first() -> None:
    assert capability_of_name("NVIDIA TITAN X (Pascal)") == (6, 1)
    assert capability_of_name("GeForce GTX TITAN X") == (5, 2)
    assert capability_of_name("GeForce GTX TITAN Black") == (3, 5)
    assert FAMILIES.groups >= len(TABLE["family"])
    # a line naming two GPUs gives the first one named
    assert capability_of_name("GPU 0: Tesla K80, GPU 1: NVIDIA A100-SXM4-40GB") == (3, 7)


def test_release_table_reaches() -> None:
    releases = [cuda for cuda, _ in release_table()]
    assert releases == sorted(releases, reverse=True)
    assert reach_of((10, 2)) is not None and reach_of((10, 2)).newest == (7, 5)  # type: ignore[union-attr]
    assert reach_of((11, 3)).newest == (8, 6)  # type: ignore[union-attr]
    assert reach_of((12, 6)).newest == (9, 0)  # type: ignore[union-attr]
    assert reach_of((12, 8)).newest == (12, 0)  # type: ignore[union-attr]
    assert reach_of((13, 0)).oldest == (7, 5)  # type: ignore[union-attr]
    assert reach_of((7, 5)).newest == (5, 3)  # type: ignore[union-attr]
    assert reach_of((6, 5)) is None


def _cap(value: str, line: int = 4) -> Fact:
    return fact("gpu.capability", value, "train.log", line, text="GPU 0: some GPU")


def _cuda(value: str, text: str = "CUDA used to build PyTorch: x", line: int = 3) -> Fact:
    return fact("cuda.version", value, "train.log", line, text=text)


@pytest.mark.parametrize(
    ("facts", "gap"),
    [
        ([_cuda("10.1"), _cap("8.6")], "gpu_newer"),  # Ampere under CUDA 10
        ([_cuda("12.6"), _cap("12.0")], "gpu_newer"),  # Blackwell under CUDA 12.6
        ([_cuda("11.7"), _cap("9.0")], "gpu_newer"),  # Hopper under CUDA 11.7
        ([_cuda("13.0"), _cap("6.1")], "gpu_older"),  # Pascal, dropped by CUDA 13
        ([_cuda("7.5"), _cap("6.1")], "gpu_newer"),  # Pascal under CUDA 7.5 (8.0 added it)
        ([_cuda("12.1"), _cap("3.7")], "gpu_older"),  # Kepler, dropped by CUDA 12
        (
            [
                fact("torch.version", "1.7.1+cu101", "train.log", 2, text="torch 1.7.1+cu101"),
                fact("gpu.name", "NVIDIA GeForce RTX 3090", "smi.txt", 9, text="0 RTX 3090"),
            ],
            "gpu_newer",
        ),
    ],
)
def test_a_build_without_the_gpus_architecture_is_a_fact(facts: list[Fact], gap: str) -> None:
    derived = build_lacks_gpu(facts)
    assert [item.key for item in derived] == [LACKS]
    assert derived[0].attr("gap") == gap


@pytest.mark.parametrize(
    "facts",
    [
        [_cuda("11.3"), _cap("8.9")],  # Ada runs Ampere machine code: the same major version
        [_cuda("11.8"), _cap("9.0")],
        [_cuda("12.8"), _cap("6.1")],
        [_cuda("10.2"), _cap("7.5")],
        # nvidia-smi's banner names the driver's CUDA, not the build's
        [
            _cuda("13.0", "| NVIDIA-SMI 580.65.06  Driver Version: 580.65.06  CUDA Version: 13.0"),
            _cap("6.1"),
        ],
        [_cap("8.6")],
        [_cuda("10.1")],
    ],
)
def test_a_build_that_covers_the_gpu_is_no_fact(facts: list[Fact]) -> None:
    assert build_lacks_gpu(facts) == []


_OLD_BUILD_LOG = """\
Collecting environment information...
PyTorch version: 1.6.0+cu101
CUDA used to build PyTorch: 10.1
GPU models and configuration: GPU 0: GeForce RTX 3090
Epoch 0:   0%|          | 0/100
Traceback (most recent call last):
  File "train.py", line 10, in <module>
    out = model(x)
RuntimeError: Unable to find a valid cuDNN algorithm to run convolution
"""


def test_the_pair_makes_a_cudnn_failure_a_driver_verdict(tmp_path: Path) -> None:
    report = log_report(tmp_path / "old", _OLD_BUILD_LOG)
    assert_leads(report, "driver")
    assert report.causes[0].evidence[0].rule == "driver-cuda-build-lacks-gpu-arch"
    assert any("compute capability 8.6" in note for note in report.notes)


def test_without_the_gpu_the_failure_stays_what_it_was(tmp_path: Path) -> None:
    text = _OLD_BUILD_LOG.replace("GPU models and configuration: GPU 0: GeForce RTX 3090\n", "")
    report = log_report(tmp_path / "nogpu", text)
    assert not report.causes or report.causes[0].category.value != "driver"


def test_a_build_that_covers_the_gpu_leaves_memory_in_the_lead(tmp_path: Path) -> None:
    text = _OLD_BUILD_LOG.replace("1.6.0+cu101", "2.1.0+cu118").replace(": 10.1", ": 11.8")
    report = log_report(tmp_path / "new", text)
    assert not report.causes or report.causes[0].category.value != "driver"


_TF1_LOG = """\
2019-01-28 00:15:39.101010: I tensorflow/stream_executor/platform/default/dso_loader.cc:42] \
Successfully opened dynamic library libcudart.so.10.0
2019-01-28 00:15:40.123456: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1432] Found \
device 0 with properties:
name: GeForce RTX 3090 major: 8 minor: 6 memoryClockRate(GHz): 1.695
Epoch 1/50
2019-01-28 00:16:00.441512: E tensorflow/stream_executor/cuda/cuda_blas.cc:652] failed to run \
cuBLAS routine cublasSgemm_v2: CUBLAS_STATUS_EXECUTION_FAILED
"""


def test_tensorflow_1_device_properties_and_runtime_make_the_pair(tmp_path: Path) -> None:
    """TensorFlow 1.x states the capability as `major: 8 minor: 6` and names its runtime by
    the library it loads: an Ampere GPU under a CUDA 10.0 build."""
    assert gpu_on_line("name: GeForce RTX 3090 major: 8 minor: 6 memoryClockRate(GHz): 1.695")
    report = log_report(tmp_path / "tf1", _TF1_LOG)
    assert_leads(report, "driver")
    assert report.causes[0].evidence[0].rule == "driver-cuda-build-lacks-gpu-arch"
