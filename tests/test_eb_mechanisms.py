"""Mechanisms learned from batch 2026-12-07-eb's misses (a university HPC centre's support
forum), tested on lines and files written for the tests, none a case's own: Slurm failing to
resolve a node's address, coreutils' wording of a network filesystem's errno on a path, a
custom `sacct --format` whose State cell has no ExitCode beside it, and a GPU whose power
reading nvidia-smi cannot take while CUDA fails to start with an unknown error."""

from __future__ import annotations

from pathlib import Path

from crashlens.parsers.launcher.deaths import slurm_state
from mechanism_helpers import assert_leads, report_of

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "srun: error: _fwd_tree_get_addr: can't find address for host cpu-217, check slurm.conf",
        "network-slurm-node-address-unresolved",
    ),
    (
        "srun: error: Application launch failed: Can't find an address, check slurm.conf",
        "network-slurm-node-address-unresolved",
    ),
    (
        "head: /scratch/proj/results/epoch_12.log: Communication error on send",
        "filesystem-network-errno-on-a-path",
    ),
]


def test_a_sacct_state_cell_beside_a_start_time_or_elapsed_is_read() -> None:
    assert slurm_state("OUT_OF_ME+ 2025-03-01T09:12:44 5512093.batch") == ("OUT_OF_MEMORY", {})
    assert slurm_state("5512093      OUT_OF_ME+   02:11:09") == ("OUT_OF_MEMORY", {})
    assert slurm_state("5512093.0  NODE_FAIL  120G") == ("NODE_FAIL", {})
    assert slurm_state("5512093 TIMEOUT") is None
    # a word of prose before a clock time is not a State cell
    assert slurm_state("Job FAILED at the scheduled restart; retry") is None


def test_a_custom_sacct_listing_with_an_out_of_memory_state_is_host_memory(
    tmp_path: Path,
) -> None:
    sacct = (
        "     State               Start        JobID \n"
        "---------- ------------------- ------------ \n"
        "OUT_OF_ME+ 2025-03-01T09:12:44 5512093.batch\n"
        " COMPLETED 2025-03-01T09:12:44 5512093.extern\n"
    )
    log = "Epoch 3: 41%|████      | 410/1000 [12:01<17:18,  1.76s/it]\n"
    report = report_of(tmp_path / "case", {"train.log": log, "sacct.txt": sacct})
    assert str(report.verdict) == "host_oom"
    assert_leads(report, "host_oom")


def test_a_power_err_on_the_gpu_cuda_cannot_start_on_is_the_hardware(tmp_path: Path) -> None:
    smi = "".join(
        row + "\n"
        for row in (
            "+--------------------------------------------"
            "---------------------------------------------+",
            "| NVIDIA-SMI 570.124.06             Driver Ve"
            "rsion: 570.124.06     CUDA Version: 12.8     |",
            "|-----------------------------------------+--"
            "----------------------+----------------------+",
            "| GPU  Name                 Persistence-M | B"
            "us-Id          Disp.A | Volatile Uncorr. ECC |",
            "| Fan  Temp   Perf          Pwr:Usage/Cap |  "
            "         Memory-Usage | GPU-Util  Compute M. |",
            "|                                         |  "
            "                      |               MIG M. |",
            "|=========================================+=="
            "======================+======================|",
            "|   0  NVIDIA L40S                    On  |  "
            " 00000000:41:00.0 Off |                    0 |",
            "| N/A   41C    P0           ERR!  /  350W |  "
            "     0MiB /  46068MiB |      0%      Default |",
            "|                                         |  "
            "                      |                  N/A |",
            "+-----------------------------------------+--"
            "----------------------+----------------------+",
        )
    )
    log = (
        "2025-06-02 10:01:12.551234: W external/xla/xla/service/platform_util.cc:220] unable to"
        " create StreamExecutor for CUDA:0: CUDA error: : CUDA_ERROR_UNKNOWN: unknown error\n"
        "jaxlib._jax.XlaRuntimeError: INTERNAL: no supported devices found for platform CUDA\n"
    )
    report = report_of(tmp_path / "case", {"nvidia-smi.txt": smi, "train.log": log})
    assert str(report.verdict) == "hardware"
    assert_leads(report, "hardware")


def test_the_same_unknown_error_without_the_power_err_stays_the_driver(tmp_path: Path) -> None:
    log = (
        "2025-06-02 10:01:12.551234: W external/xla/xla/service/platform_util.cc:220] unable to"
        " create StreamExecutor for CUDA:0: CUDA error: : CUDA_ERROR_UNKNOWN: unknown error\n"
        "jaxlib._jax.XlaRuntimeError: INTERNAL: no supported devices found for platform CUDA\n"
    )
    report = report_of(tmp_path / "case", {"train.log": log})
    assert report.causes[0].category.value == "driver"
