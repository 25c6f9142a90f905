"""The InfiniBand adapters a job tells NCCL to use (`NCCL_IB_HCA`) are read wherever the log
shows the setting, and with a small locked-memory limit they explain NCCL's bare system error
as the failed buffer registration (permissions), not /dev/shm."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.parsers.launcher.ib_settings import ib_hca_setting
from crashlens.pipeline import analyze_inputs
from mechanism_helpers import report_of


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "+ export NCCL_IB_HCA=mlx5_0,mlx5_3,mlx5_4,mlx5_5",
            ("mlx5_0,mlx5_3,mlx5_4,mlx5_5", "command"),
        ),
        ("export NCCL_IB_HCA=^mlx5_1", ("^mlx5_1", "command")),
        ("NCCL_IB_HCA=mlx5_0:1 torchrun --nnodes=2 train.py", ("mlx5_0:1", "command")),
        ("mpirun -np 16 -x NCCL_IB_HCA=ibp12s0 ./all_reduce_perf -b 8", ("ibp12s0", "command")),
        ("{'NCCL_IB_HCA': 'mlx5_2', 'NCCL_DEBUG': 'WARN'}", ("mlx5_2", "command")),
        (
            "node-1:812:812 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0",
            ("mlx5_0", "nccl"),
        ),
    ],
)
def test_the_setting_is_read_as_written(line: str, expected: tuple[str, str]) -> None:
    assert ib_hca_setting(line) == expected


@pytest.mark.parametrize(
    "line",
    ["export NCCL_IB_HCA=", "unset NCCL_IB_HCA", "see the NCCL_IB_HCA docs", "NCCL_IB_HCA=$HCAS"],
)
def test_no_device_list_is_no_setting(line: str) -> None:
    assert ib_hca_setting(line) is None


def test_the_launcher_parser_keeps_the_first_setting(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "+ export NCCL_IB_HCA=mlx5_0,mlx5_1\n+ torchrun --nnodes=2 --nproc_per_node=8 fit.py\n"
        "[rank0]: step 1 loss 3.2\n",
        encoding="utf-8",
    )
    facts = [f for a in analyze_inputs([str(log)]) for f in a.facts if f.key == "nccl.ib_hca"]
    assert [(f.value, f.lineno) for f in facts] == [("mlx5_0,mlx5_1", 1)]


SYSTEM_ERROR = (
    "[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/"
    "c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for "
    "details), NCCL version 2.19.3\n"
)
ULIMIT = (
    "core file size              (blocks, -c) 0\n"
    "data seg size               (kbytes, -d) unlimited\n"
    "max locked memory           (kbytes, -l) {limit}\n"
    "max memory size             (kbytes, -m) unlimited\n"
    "open files                          (-n) 1048576\n"
    "stack size                  (kbytes, -s) 8192\n"
)


@pytest.mark.parametrize(("limit", "verdict"), [("64", "permissions"), ("unlimited", "unknown")])
def test_adapters_chosen_with_a_small_memlock_explain_the_system_error(
    tmp_path: Path, limit: str, verdict: str
) -> None:
    files = {
        "train.log": "+ export NCCL_IB_HCA=mlx5_0,mlx5_1\n" + SYSTEM_ERROR,
        "ulimit.txt": "$ ulimit -a\n" + ULIMIT.format(limit=limit),
    }
    report = report_of(tmp_path / "job", files)
    assert report.verdict.value == verdict, [(c.category, c.confidence) for c in report.causes]
