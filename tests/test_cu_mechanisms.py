"""Mechanisms learned in the stop of batch 2026-12-06-cu, each tested on lines and logs written for
the test, not taken from the cases: how macOS's shell words a signal death (BSD's strsignal text
and the signal's number), what notebook front ends show once their kernel process is dead, the
legacy `docker build`'s report of a RUN step the kernel killed (found by probing, before the
batch), a TLS session to a download server cut or refused and datasets' `Couldn't reach '<name>'
on the Hub` (found by probing after it); then, from the batch's misses: zsh's job line cut after
the signal's word, Python's refusal to raise a resource limit past the hard one, XLA finding no
NCCL library, HugeCTR's out-of-memory check naming a header, Grounding DINO's unbuilt `_C`
extension, PyTorch's environment report pairing its CUDA build with a driver too old for it (and
an fp16 op left on the CPU as what that mismatch leads to), and the early-stopping lines of
Keras and Lightning as finish signs; and, from the corpus's out-of-fold misses, DeepSpeed's
launcher tearing its ranks down when none printed an error (a silent kill)."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.model import Ending
from crashlens.pipeline import analyze
from mechanism_helpers import (
    Scenario,
    assert_scenario_verdict,
    ending_of,
    log_report,
    report_of,
    write_folder,
)

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    ("Abort trap: 6", "network-sigabrt-exit"),
    ("[2]  + 91234 killed", "host-oom-shell-killed"),
    ("ValueError: not allowed to raise maximum limit", "permissions-setrlimit-above-hard-limit"),
    (
        "XlaRuntimeError: INTERNAL: NCCL operation ncclCommInitRank(&comm, nranks, id, rank)"
        " failed: Unable to load NCCL library. Multi-GPU collectives will not work.",
        "driver-library-missing",
    ),
    (
        "[HCDEBUG][ERROR] Runtime error: out of memory /hugectr/HugeCTR/include/tensor2.hpp:117",
        "gpu-oom-cuda-check-at-source-out-of-memory",
    ),
    (
        "/usr/lib/python3/site-packages/groundingdino/models/GroundingDINO/ms_deform_attn.py:31:"
        " UserWarning: Failed to load custom C++ ops. Running on CPU mode Only!",
        "driver-cuda-extension-module-not-built",
    ),
    ("Is CUDA available: False", "driver-torch-env-report-cuda-unavailable"),
    (
        "requests.exceptions.SSLError: HTTPSConnectionPool(host='cdn-lfs.hf.co', port=443): Max"
        " retries exceeded with url: /repos/x (Caused by SSLError(SSLZeroReturnError(6, 'TLS/SSL"
        " connection has been closed (EOF) (_ssl.c:1131)')))",
        "network-http-tls-handshake-failed",
    ),
    (
        "ConnectionError: Couldn't reach 'HuggingFaceFW/fineweb' on the Hub (ReadTimeout)",
        "network-hf-hub-unreachable-no-cache",
    ),
    (
        "RuntimeError: \"slow_conv2d_cpu\" not implemented for 'Half'",
        "driver-half-precision-op-on-cpu",
    ),
    (
        "The command '/bin/sh -c pip install -r requirements.txt' returned a non-zero code: 137",
        "host-oom-docker-exit-137",
    ),
]


DEATH_LINES = [
    ("macos-abort", "Abort trap: 6"),
    ("macos-trap", "Trace/BPT trap: 5"),
    ("notebook-restarting", "The kernel appears to have died. It will restart automatically."),
    ("notebook-gave-up", "The kernel has died, and the automatic restart has failed."),
    (
        "vscode-cell",
        "The Kernel crashed while executing code in the current cell or a previous cell.",
    ),
    (
        "vscode-log",
        "12:07:55.806 [error] Disposing session as kernel process died ExitCode: undefined,"
        " Reason: ",
    ),
    ("spyder", "Kernel died, restarting"),
    ("zsh-job-cut", "[1]    77120 killed"),
]


@pytest.mark.parametrize(("name", "line"), DEATH_LINES, ids=[name for name, _ in DEATH_LINES])
def test_the_line_shows_the_run_died(tmp_path: Path, name: str, line: str) -> None:
    """After lines of training progress, the line is a death sign: the ending is `died`."""
    report = log_report(tmp_path / name, "Epoch 1/10\nstep 100 loss 2.31\n" + line + "\n")
    assert ending_of(report) is Ending.DIED
    assert str(report.verdict) != "none"


def test_a_kernel_death_mentioned_in_passing_is_not_one(tmp_path: Path) -> None:
    """The front ends' words are matched as they print them, not a sentence that quotes them."""
    report = log_report(
        tmp_path / "quoted",
        "Epoch 1/10\nstep 100 loss 2.31\nsee the FAQ if a kernel died once\nstep 200 loss 2.10\n",
    )
    assert ending_of(report) is not Ending.DIED


SCENARIOS = (
    # a script raising its open-files limit past the cluster's hard limit at start-up
    Scenario(
        "setrlimit",
        {
            "train.log": (
                "Traceback (most recent call last):\n"
                '  File "/home/user/proj/train.py", line 12, in <module>\n'
                "    resource.setrlimit(resource.RLIMIT_NOFILE, (1048576, hard))\n"
                "ValueError: current limit exceeds maximum limit\n"
            ),
        },
        "permissions",
        "permissions-setrlimit-above-hard-limit",
    ),
    # HugeCTR's allocator: the embedding does not fit the GPU
    Scenario(
        "hugectr",
        {
            "train.log": (
                "[HCDEBUG][INFO] Initialize model: dlrm\n"
                "terminate called after throwing an instance of 'std::runtime_error'\n"
                "  what():  [HCDEBUG][ERROR] Runtime error: out of memory"
                " /hugectr/HugeCTR/include/tensor2.hpp:117\n"
                "Aborted (core dumped)\n"
            ),
        },
        "gpu_oom",
        "gpu-oom-cuda-check-at-source-out-of-memory",
    ),
    # Grounding DINO installed without its CUDA extension, run on a GPU
    Scenario(
        "groundingdino",
        {
            "infer.log": (
                "/opt/conda/lib/python3.10/site-packages/groundingdino/models/GroundingDINO/"
                "ms_deform_attn.py:31: UserWarning: Failed to load custom C++ ops. Running on CPU"
                " mode Only!\n"
                "Traceback (most recent call last):\n"
                '  File "/opt/conda/lib/python3.10/site-packages/groundingdino/models/'
                'GroundingDINO/ms_deform_attn.py", line 53, in forward\n'
                "    output = _C.ms_deform_attn_forward(\n"
                "NameError: name '_C' is not defined\n"
            ),
        },
        "driver",
        "driver-cuda-extension-module-not-built",
    ),
)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_a_log_of_the_mechanism_gets_its_verdict(tmp_path: Path, scenario: Scenario) -> None:
    assert_scenario_verdict(tmp_path, scenario)


COLLECT_ENV = (
    "Collecting environment information...\n"
    "PyTorch version: 2.1.0+cu121\n"
    "Is debug build: False\n"
    "CUDA used to build PyTorch: 12.1\n"
    "OS: Ubuntu 20.04.6 LTS (x86_64)\n"
    "Is CUDA available: False\n"
    "CUDA runtime version: 11.4.152\n"
    "GPU models and configuration: GPU 0: NVIDIA GeForce RTX 3090\n"
    "Nvidia driver version: {driver}\n"
)
EXPLANATION = "driver-cuda-runtime-newer-than-driver"
HALF_ON_CPU = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 88, in <module>\n'
    "    out = model(batch)\n"
    "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'\n"
)


def test_an_environment_report_pairs_the_cuda_build_with_its_driver(tmp_path: Path) -> None:
    """torch.utils.collect_env's driver line is nvidia-smi's driver version: a CUDA 12.1 build
    on a 470 driver (CUDA 11.4 at most) explains why CUDA is unavailable, whatever the knock-on
    error in the run's own log; with a driver new enough, nothing explains it."""
    old = report_of(
        tmp_path / "old",
        {"collect_env.txt": COLLECT_ENV.format(driver="470.82.01"), "train.log": HALF_ON_CPU},
    )
    assert str(old.verdict) == "driver"
    assert EXPLANATION in {item.rule for item in old.causes[0].evidence}
    new = report_of(
        tmp_path / "new",
        {"collect_env.txt": COLLECT_ENV.format(driver="535.104.05"), "train.log": HALF_ON_CPU},
    )
    assert EXPLANATION not in {item.rule for cause in new.causes for item in cause.evidence}


def test_early_stopping_lines_are_finish_signs(tmp_path: Path) -> None:
    """Keras's and Lightning's early-stopping lines end the fit loop on purpose: a log that ends
    past them shows a completed run."""
    for name, text in [
        ("keras", "Epoch 14/100\n120/120 - 3s - loss: 0.21\nEpoch 14: early stopping\n"),
        (
            "keras-restore",
            "Epoch 9/50\n64/64 - 1s - loss: 0.40\n"
            "Restoring model weights from the end of the best epoch: 4.\n",
        ),
        (
            "lightning",
            "Epoch 7: 100%|##########| 50/50 [00:04<00:00, 11.2it/s, v_num=3]"
            "Monitored metric val_acc did not improve in the last 4 records. Best score: 0.871."
            " Signaling Trainer to stop.\n",
        ),
    ]:
        report = log_report(tmp_path / name, text)
        assert ending_of(report) is Ending.COMPLETED, name
        assert str(report.verdict) == "none", name


DS_TEARDOWN = (
    "[2025-02-01 10:00:00,000] [INFO] [launch.py:256:main] process 4101 spawned with command:"
    " ['/usr/bin/python3', '-u', 'sft.py', '--local_rank=0']\n"
    "[2025-02-01 10:00:00,001] [INFO] [launch.py:256:main] process 4102 spawned with command:"
    " ['/usr/bin/python3', '-u', 'sft.py', '--local_rank=1']\n"
    "Loading checkpoint shards:  50%|#####     | 2/4 [01:10<01:10, 35.0s/it]\n"
    "[2025-02-01 10:03:12,500] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 4101\n"
    "[2025-02-01 10:03:12,900] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 4102\n"
)


def test_a_deepspeed_teardown_with_no_error_reads_as_a_silent_kill(tmp_path: Path) -> None:
    """DeepSpeed's launcher killing its ranks when none printed an error: a rank died of a
    signal, most likely the OOM killer's (thin evidence, named as likely); with a rank's
    traceback in the log, that traceback decides instead."""
    silent = analyze([str(write_folder(tmp_path, "silent", {"train.log": DS_TEARDOWN}))])
    assert str(silent.verdict) == "host_oom"
    assert "host-oom-deepspeed-silent-rank-death" in {i.rule for i in silent.causes[0].evidence}
    assert silent.causes[0].confidence < 0.95
    oom = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a"
        " total capacity of 23.65 GiB of which 1.12 GiB is free.\n"
    )
    loud_log = DS_TEARDOWN.replace("[2025-02-01 10:03:12,500]", oom + "[2025-02-01 10:03:12,500]")
    loud = analyze([str(write_folder(tmp_path, "loud", {"train.log": loud_log}))])
    assert str(loud.verdict) == "gpu_oom"
    rules = {item.rule for cause in loud.causes for item in cause.evidence}
    assert "host-oom-deepspeed-silent-rank-death" not in rules


def test_a_rank_log_beside_the_launcher_log_says_how_the_process_died(tmp_path: Path) -> None:
    """The launcher's log alone is a silent teardown; a rank's own log beside it shows the
    exception that ended that rank, so the thin host-memory reading is ruled out and the
    exception decides."""
    files = {
        "launcher.log": DS_TEARDOWN,
        "rank1.log": (
            "Traceback (most recent call last):\n"
            '  File "sft.py", line 210, in <module>\n'
            "    trainer.train()\n"
            "OSError: [Errno 28] No space left on device: '/ckpt/global_step800/zero_pp_rank_1'\n"
        ),
    }
    report = analyze([str(write_folder(tmp_path, "two-files", files))])
    assert str(report.verdict) == "filesystem"
    rules = {item.rule for cause in report.causes for item in cause.evidence}
    assert "host-oom-deepspeed-silent-rank-death" not in rules
