"""Mechanisms learned after batch 2026-12-05-cj was scored, end to end on logs in the shapes the
programs print (from the programs' sources and other public reports, not from the cases that
prompted them; hosts and paths changed):

* mmcv's `<op>_impl: implementation for device cuda:0 not found` (an mmcv build without its
  CUDA ops) names `driver`;
* YOLOX's label assignment falling back to the CPU after a GPU out-of-memory error names GPU
  memory where the run stops there;
* and is not blamed where training went on to finish.
"""

from __future__ import annotations

from pathlib import Path

from mechanism_helpers import assert_leads, log_report

_YOLOX_PROGRESS = "".join(
    f"2022-03-02 11:{20 + i}:41 | INFO     | yolox.core.trainer:260 - epoch: 12/300, iter:"
    f" {100 * i}/1250, mem: 21873Mb, iter_time: 0.842s, data_time: 0.003s, total_loss: 6.{i}12,"
    " lr: 1.000e-02, size: 640, ETA: 3 days, 2:11:05\n"
    for i in range(1, 4)
)
_YOLOX_FALLBACK = (
    "2022-03-02 11:24:02 | ERROR    | yolox.models.yolo_head:336 - OOM RuntimeError is raised"
    " due to the huge memory cost during label assignment.                            CPU mode is"
    " applied in this batch. If you want to avoid this issue,                            try to"
    " reduce the batch size or image size.\n"
    "------------CPU Mode for This Batch-------------\n"
)


def test_mmcv_op_without_cuda_kernel_names_the_installation(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "mmcv-cpu-build",
        "2023-05-11 09:14:02,118 - mmdet - INFO - workflow: [('train', 1)], max: 12 epochs\n"
        "Traceback (most recent call last):\n"
        '  File "tools/train.py", line 247, in <module>\n'
        "    main()\n"
        '  File "/opt/conda/lib/python3.8/site-packages/mmcv/ops/roi_align.py", line 82, in'
        " forward\n"
        "    ext_module.roi_align_forward(\n"
        "RuntimeError: roi_align_forward_impl: implementation for device cuda:0 not found.\n",
    )
    assert_leads(report, "driver")


def test_yolox_cpu_fallback_where_the_run_stops_names_gpu_memory(tmp_path: Path) -> None:
    report = log_report(tmp_path / "yolox-stopped", _YOLOX_PROGRESS + _YOLOX_FALLBACK)
    assert_leads(report, "gpu_oom")


def test_yolox_cpu_fallback_in_a_finished_run_is_not_blamed(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "yolox-finished",
        _YOLOX_PROGRESS
        + _YOLOX_FALLBACK
        + _YOLOX_PROGRESS
        + "2022-03-05 08:02:11 | INFO     | yolox.core.trainer:195 - Training of experiment is"
        " done and the best AP is 47.31\n",
    )
    assert str(report.verdict) in ("none", "unknown"), report.verdict
    assert not report.causes or report.causes[0].category.value != "gpu_oom"
