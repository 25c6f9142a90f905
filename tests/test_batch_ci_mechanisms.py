"""Mechanisms learned after batch 2026-12-05-ci was scored, end to end on logs in the shapes
ComfyUI prints (from public ComfyUI reports, not from the case that prompted them; paths
changed):

* PyTorch's allocator OOM shown by ComfyUI as a bare `torch.OutOfMemoryError: Allocation on
  device`, followed by ComfyUI's own `Got an OOM, unloading all loaded models.`, names GPU
  memory;
* ComfyUI unloading models to make room before a load (no OOM) is no failure sign.
"""

from __future__ import annotations

from pathlib import Path

from mechanism_helpers import assert_leads, log_report

_FRAMES = (
    "!!! Exception during processing !!! Allocation on device \n"
    "Traceback (most recent call last):\n"
    '  File "C:\\ComfyUI_portable\\ComfyUI\\execution.py", line 327, in execute\n'
    "    output_data, output_ui, has_subgraph = get_output_data(obj, input_data_all)\n"
    '  File "C:\\ComfyUI_portable\\python_embeded\\Lib\\site-packages\\torch\\nn\\modules\\'
    'module.py", line 1326, in convert\n'
    "    return t.to(\n"
    "           ^^^^^\n"
)


def test_bare_allocation_on_device_and_the_oom_handler_name_gpu_memory(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "comfy-oom",
        "got prompt\n"
        "Requested to load FluxClipModel_\n"
        "loaded completely 9.5 GB 4777.53 MB\n"
        + _FRAMES
        + "torch.OutOfMemoryError: Allocation on device \n"
        "\n"
        "2024-12-27T14:06:51.410958 - Got an OOM, unloading all loaded models.\n"
        "2024-12-27T14:06:53.219802 - Prompt executed in 36.63 seconds\n",
    )
    assert_leads(report, "gpu_oom")


def test_handler_line_alone_names_gpu_memory(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "comfy-oom-handler",
        "got prompt\n"
        "  0%|          | 0/20 [00:00<?, ?it/s]\n"
        "Got an OOM, unloading all loaded models.\n"
        "Prompt executed in 12.04 seconds\n",
    )
    assert_leads(report, "gpu_oom")


def test_unloading_to_make_room_is_no_failure(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "comfy-unload",
        "got prompt\n"
        "Requested to load SDXL\n"
        "Unloading models for lowram load.\n"
        "loaded partially 5120.0 4998.1 0\n"
        "100%|##########| 20/20 [00:14<00:00,  1.39it/s]\n"
        "Prompt executed in 18.52 seconds\n",
    )
    assert not report.causes or report.causes[0].category.value != "gpu_oom"
