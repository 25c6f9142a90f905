"""Mechanisms learned from blind batch z (DALI, TPU/XLA, Transformer Engine, NCCL topology, and
the failure detector's readings of a log's end), end to end on lines that are not the cases'
own (other reports of the same messages, as their programs print them):

* DALI's device allocator failing (`CUDA allocation failed`, `Can't allocate N bytes on device
  D`) is gpu_oom; libnvcuvid not loaded and NVML's stub-library banner are driver.
* The TPU runtime refusing an HBM allocation (`Attempting to allocate X. That was not possible.
  There are Y free.`) is gpu_oom: HBM is the accelerator's memory.
* Transformer Engine's Userbuffers without CUDA Multicast support, and NCCL losing a node of its
  own topology (`Could not find NET with id`), are driver.
* NVRM's refusal of a GPU (`is not supported by the NVIDIA <version> driver release`, over
  several kernel lines) is hardware when the branch supports the model (a card failing its
  probe), driver otherwise.
* A log cut inside a Python traceback (at its header or a frame) is no run going on well.
* torchelastic's SignalException is an outside stop (the agent's handlers for SIGTERM, SIGINT,
  SIGHUP, SIGQUIT), not a failure.
* A loss-scale overflow in apex's or DeepSpeed's wording, a loop saying it skipped an iteration,
  a deprecation notice, and bare numbers after a warning end a run that was going on.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.model import Ending, Verdict
from crashlens.parsers.dmesg.gpu_support import listed_support
from mechanism_helpers import Scenario, assert_scenario_verdict, ending_of, log_report, report_of

TRAINING = "step 10 loss 2.31\nstep 20 loss 2.12\nstep 30 loss 2.05\n"

SCENARIOS = (
    # DALI#144: a TFRecord pipeline in a PyTorch loop, the one-line form
    Scenario(
        "dali-cuda-allocation-failed",
        {
            "train.log": "Traceback (most recent call last):\n"
            '  File "/opt/conda/lib/python3.6/site-packages/nvidia/dali/pipeline.py", line 402,'
            " in share_outputs\n"
            "    return self._pipe.ShareOutputs()\n"
            "RuntimeError: Critical error in pipeline: CUDA allocation failed\n"
            "Current pipeline object is no longer valid.\n"
        },
        "gpu_oom",
        "gpu-oom-dali-allocation-failed",
    ),
    # DALI#2229: a video pipeline without the driver's decode library
    Scenario(
        "dali-libnvcuvid-dlopen",
        {
            "train.log": 'dlopen "libnvcuvid.so" failed!\n'
            "[/opt/dali/dali/operators/reader/video_reader_op.h:66] [/opt/dali/dali/operators/"
            'reader/loader/video_loader.h:182] Assert on "lib_handle_" failed: Failed to load '
            "libnvcuvid.so, needed by the VideoReader operator.\n"
        },
        "driver",
        "driver-dali-video-decoder-library-missing",
    ),
    # googlecolab/colabtools#5126: HF Trainer on a v2-8
    Scenario(
        "tpu-hbm-allocation",
        {
            "train.log": TRAINING
            + "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: Error allocating device "
            "buffer: Attempting to allocate 129.50M. That was not possible. There are 78.17M "
            "free.; (0x0x0_HBM0)\n"
        },
        "gpu_oom",
        "gpu-oom-tpu-hbm-allocation-not-possible",
    ),
    # Transformer Engine's own check in newer releases (quoted by a Pai-Megatron launch script)
    Scenario(
        "te-userbuffers-multicast-assert",
        {
            "train.log": "AssertionError: CUDA device, driver and/or toolkit version does not "
            "support comm+GEMM overlap with CUDA Multicast. Launch app with UB_SKIPMC=1 to try "
            "CUDA IPC instead.\n"
        },
        "driver",
        "driver-userbuffers-cuda-multicast-unsupported",
    ),
    # NCCL's topology lookup (graph/topo.h) for a GPU node, in NCCL's host:pid:tid prefix
    Scenario(
        "nccl-topology-gpu-id",
        {
            "train.log": "node-07:2714030:2728529 [2] NCCL INFO Channel 00/02 : 0 1 2 3\n"
            "node-07:2714030:2728529 [2] graph/topo.h:166 NCCL WARN Could not find GPU with id "
            "1b000\n"
            "node-07:2714030:2728529 [2] NCCL INFO graph/paths.cc:312 -> 3\n"
        },
        "driver",
        "driver-nccl-topology-node-id-not-found",
    ),
)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_batch_z_scenarios(tmp_path: Path, scenario: Scenario) -> None:
    assert_scenario_verdict(tmp_path, scenario)


def test_nvml_stub_banner_is_driver(tmp_path: Path) -> None:
    # the stub's banner as a CUDA setup script quotes it, before a tool's NVML failure
    text = (
        "WARNING:\n\n"
        "You should always run with libnvidia-ml.so that is installed with your\n"
        "NVIDIA Display Driver. By default it's installed in /usr/lib and /usr/lib64.\n"
        "libnvidia-ml.so in GDK package is a stub library that is attached only for\n"
        "build purposes.\n"
        "Failed to initialize NVML: Unknown Error\n"
    )
    report = log_report(tmp_path, text)
    assert str(report.verdict) == "driver"
    assert "driver-nvml-stub-library-loaded" in {e.rule for e in report.causes[0].evidence}


@pytest.mark.parametrize(
    "cut",
    [
        "[rank3]: Traceback (most recent call last):\n",
        'Traceback (most recent call last):\n  File "train.py", line 88, in <module>\n',
    ],
    ids=["header", "frame"],
)
def test_a_log_cut_inside_a_traceback_is_no_run_going_on(tmp_path: Path, cut: str) -> None:
    # an NCCL WARN the log went past, then an error being printed when the excerpt stops
    text = TRAINING + "host:12:34 [0] transport.cc:55 NCCL WARN some warning\n" + cut
    report = log_report(tmp_path, text)
    assert ending_of(report) is Ending.UNKNOWN
    assert report.verdict is not Verdict.NONE


def test_a_thread_report_cut_at_its_header_still_reads_its_lead(tmp_path: Path) -> None:
    text = TRAINING + (
        "2021-10-01 12:00:00.000000: W tensorflow/core/kernels/queue_base.cc:285] _1_batch_queue: "
        "Skipping cancelled dequeue attempt with queue not closed\n"
        "Exception in thread Thread-3:\n"
        "Traceback (most recent call last):\n"
    )
    assert ending_of(log_report(tmp_path, text)) is Ending.COMPLETED


@pytest.mark.parametrize(
    "last",
    [
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4134 got signal: 1",
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 77 got signal: 15",
    ],
    ids=["sighup", "sigterm"],
)
def test_torchelastic_signal_exception_is_an_outside_stop(tmp_path: Path, last: str) -> None:
    text = TRAINING + "Traceback (most recent call last):\n" + '  File "run.py", line 8\n' + last
    report = log_report(tmp_path, text + "\n")
    assert ending_of(report) is Ending.STOPPED
    assert report.verdict is Verdict.NONE


def test_a_signal_exception_after_a_failure_is_its_teardown(tmp_path: Path) -> None:
    text = TRAINING + (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 79.10 GiB of which 1.06 GiB is free.\n"
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 9 got signal: 15\n"
    )
    assert str(log_report(tmp_path, text).verdict) == "gpu_oom"


@pytest.mark.parametrize(
    "last",
    [
        # apex's FP16_Optimizer, and DeepSpeed's unfused optimizer
        "OVERFLOW! Skipping step. Attempted loss scale: 65536.0, reducing to 32768.0",
        "[2024-03-08 16:33:21,416] [INFO] [unfused_optimizer.py:207:step] [deepspeed] fp16 "
        "dynamic loss scale overflow! Skipping step. Attempted loss scale: 65536.0, reducing to "
        "32768.0",
        "Skipping this iteration: loss is NaN",
        # transformers' deprecation notice, printed without a level marker
        "`resume_download` is deprecated and will be removed in version 1.0.0. Downloads always "
        "resume when possible.",
    ],
    ids=["apex", "deepspeed", "skip", "deprecated"],
)
def test_notices_a_run_goes_on_from(tmp_path: Path, last: str) -> None:
    report = log_report(tmp_path, TRAINING + last + "\n")
    assert ending_of(report) is Ending.ONGOING
    assert report.verdict is Verdict.NONE


@pytest.mark.parametrize(
    "last",
    [
        "`evaluate_generator` is deprecated and has been removed",
        "AttributeError: `np.float` was a deprecated alias; it is deprecated and removed",
    ],
    ids=["removed", "error"],
)
def test_a_removal_is_no_deprecation_notice(tmp_path: Path, last: str) -> None:
    assert ending_of(log_report(tmp_path, TRAINING + last + "\n")) is not Ending.ONGOING


def test_bare_numbers_after_a_warning_are_read_past(tmp_path: Path) -> None:
    text = (
        "model.py:51: UserWarning: The default behavior of interpolate changed.\n"
        "  warnings.warn(\n"
        "1024\n"
        "2048\n"
    )
    assert ending_of(log_report(tmp_path, text)) is Ending.ONGOING


def test_bare_numbers_after_plain_output_are_still_no_ending(tmp_path: Path) -> None:
    assert ending_of(log_report(tmp_path, TRAINING + "1024\n2048\n")) is Ending.UNKNOWN


def _refusal(device: str, version: str) -> str:
    """NVRM's refusal of a GPU as the kernel prints it, over three lines."""
    return (
        "[    5.301322] nvidia-nvlink: Nvlink Core is being initialized, major device number 236\n"
        f"[    5.303100] NVRM: The NVIDIA GPU 0000:3b:00.0 (PCI ID: 10de:{device})\n"
        "[    5.303100] NVRM: installed in this system is not supported by the\n"
        f"[    5.303100] NVRM: NVIDIA {version} driver release.\n"
        "[    5.303120] NVRM: The NVIDIA probe routine failed for 1 device(s).\n"
        "[    5.303121] NVRM: None of the NVIDIA devices were initialized.\n"
    )


@pytest.mark.parametrize(
    ("device", "version", "verdict", "rule"),
    [
        # an A100 80GB refused by R535, which supports it: the card failed its probe
        ("20b2", "535.161.08", "hardware", "hardware-gpu-refused-by-a-branch-that-supports-it"),
        # an RTX 4090 under R515, older than its first branch
        ("2684", "515.65.01", "driver", "driver-gpu-not-supported-by-driver-branch"),
        # a V100 under a branch past R580, the last that supports Volta
        ("1db5", "590.44.01", "driver", "driver-gpu-not-supported-by-driver-branch"),
        # a model the table does not list: the driver's words are taken as they are
        ("1abc", "580.95.05", "driver", "driver-gpu-not-supported-by-driver-branch"),
    ],
    ids=["supported-a100", "new-4090", "dropped-v100", "unlisted"],
)
def test_nvrm_refusal_is_read_against_the_support_table(
    tmp_path: Path, device: str, version: str, verdict: str, rule: str
) -> None:
    report = report_of(tmp_path / "node", {"dmesg.txt": _refusal(device, version)})
    assert str(report.verdict) == verdict
    assert rule in {e.rule for e in report.causes[0].evidence}


def test_support_table_reads_branches() -> None:
    assert listed_support("2330", "580.126.09") == "supported"
    assert listed_support("2330", "515.65.01") == "unsupported"
    assert listed_support("1DB5", "590.10") == "unsupported"
    assert listed_support("2330", "not-a-version") == "unknown"
    assert listed_support("ffff", "580.1") == "unknown"
