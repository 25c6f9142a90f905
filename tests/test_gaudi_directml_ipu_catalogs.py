"""Intel Gaudi, DirectML, Graphcore IPU and Moore Threads MUSA failures read through their
catalogs (patterns/tables/gaudi_synapse.toml, directml_errors.toml, ipu_poplar.toml,
musa_errors.toml), end to end on logs in the shapes those stacks print (host names, paths
and ids replaced):

* a Gaudi HPU that cannot be acquired, DirectML's device removed or hung, and PopTorch
  finding no IPU to attach all name `driver` first;
* the habanalabs driver giving a card up and Poplar's unrecoverable system error name
  `hardware` first;
* torch-directml's allocator, onnxruntime's E_OUTOFMEMORY on DirectML, Poplar's tile memory
  overflow and torch_musa's allocator all name `gpu_oom`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from crashlens.library import tables_dir
from crashlens.match.catalogs import load_catalog
from crashlens.match.rules import shipped_rules
from mechanism_helpers import assert_leads, log_report, report_of

TABLES = ["gaudi_synapse", "directml_errors", "ipu_poplar", "musa_errors"]


def traceback(frames: list[str], error: str, prefix: str = "") -> str:
    """A Python traceback through `frames` (file, line, code) ending in `error`."""
    lines = [f"{prefix}Traceback (most recent call last):"]
    for frame in frames:
        where, code = frame.split(" | ")
        lines += [f"{prefix}  File {where}", f"{prefix}    {code}"]
    return "\n".join([*lines, f"{prefix}{error}"]) + "\n"


LOGS = {
    # a Ray-driven vLLM start on Gaudi2 (HabanaAI/vllm-fork#344's shape): each worker fails
    # to acquire its HPU at start-up
    "gaudi-acquire-generic-failure": (
        "INFO 09-27 09:41:52 habana_model_runner.py:96] VLLM_PROMPT_BS_BUCKET_MIN=1 (default:1)\n"
        "(RayWorkerWrapper pid=4112) WARNING 09-27 09:41:52 utils.py:597] Pin memory is not"
        " supported on HPU.\n"
        + traceback(
            [
                '"/opt/app/worker.py", line 88, in init_device | torch.hpu.set_device(self.device)',
            ],
            "RuntimeError: synStatus=26 [Generic failure] Device acquire failed.",
            prefix="(RayWorkerWrapper pid=4112) ",
        ),
        "driver",
    ),
    # a second training job started on a node whose HPUs a serving container still holds
    "gaudi-acquire-already-acquired": (
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/workspace/train.py", line 40, in <module>\n'
        "[rank0]:     model = model.to('hpu')\n"
        "[rank0]: RuntimeError: synStatus=20 [Device already acquired] Device acquire failed.\n",
        "driver",
    ),
    # microsoft/DirectML#550's shape: torch-directml at model.to(device)
    "directml-device-removed": (
        "Epoch 1/20\n"
        + traceback(
            [
                '"C:\\work\\train.py", line 83, in train | model.to(device)',
                '"C:\\work\\.venv\\lib\\site-packages\\torch\\nn\\modules\\module.py", line 1145,'
                " in to | return self._apply(convert)",
            ],
            "RuntimeError: The GPU device instance has been suspended. Use"
            " GetDeviceRemovedReason to determine the appropriate action.",
        ),
        "driver",
    ),
    # onnxruntime-genai on DirectML (microsoft/onnxruntime-genai#667's shape, an iGPU)
    "directml-device-hung": (
        "2024-07-02 17:22:22.977 | INFO     | engine:generate:359 - Generation Request Prompt"
        " length: 970, New tokens: 50\n"
        "2024-07-02 17:22:26.036 | ERROR    | engine:generate:432 -"
        " D:\\a\\_work\\1\\onnxruntime-genai\\src\\dml\\dml_command_recorder.cpp(143)"
        "\\onnxruntime_genai.cp310-win_amd64.pyd!00007FFAA661D3A3: (caller: 00007FFAA66112A5)"
        " Exception(1) tid(638e0) 887A0006 The GPU will not respond to more commands, most"
        " likely because of an invalid command passed by the calling application.\n",
        "driver",
    ),
    # torch-directml's allocator in a Stable Diffusion web UI run
    "directml-out-of-video-memory": (
        "  0%|          | 0/20 [00:00<?, ?it/s]\n"
        + traceback(
            [
                '"D:\\sd\\modules\\processing.py", line 734, in process_images | '
                "res = process_images_inner(p)",
            ],
            "RuntimeError: Could not allocate tensor with 1073741824 bytes. There is not"
            " enough GPU video memory available!",
        ),
        "gpu_oom",
    ),
    # graphcore/poptorch#3's shape: the second model of the script finds the IPU taken
    "ipu-failed-to-acquire": (
        "Done training\n"
        "[16:18:46.542] [poptorch::python] [critical] poptorch.poptorch_core.Error: In"
        " poptorch/popart_compiler/source/CompilerImpl.cpp:627: 'poptorch_cpp_error': Failed"
        " to acquire 4 IPU(s)\n"
        "Error raised in:\n"
        "  [0] Compiler::initSession\n"
        "  [1] LowerToPopart::compile\n",
        "driver",
    ),
    # Poplar's compiler on a model too large for one IPU
    "ipu-out-of-tile-memory": (
        "Graph compilation:  40%|████      | 40/100 [00:51<01:12]\n"
        "terminate called after throwing an instance of 'poplar::graph_memory_allocation_error'\n"
        "  what():  Out of memory on tile 1187: 701312 bytes used but tiles only have 638976"
        " bytes of memory\n"
        "Aborted (core dumped)\n",
        "gpu_oom",
    ),
    # an IPU-over-Fabric link lost while weights are copied (graphcore/poptorch#14's shape)
    "ipu-unrecoverable-system-error": (
        traceback(
            [
                '"/usr/local/lib/python3.8/dist-packages/poptorch/_poplar_executor.py",'
                " line 562, in copyWeightsToDevice | "
                "poptorch_core.copyWeightsToDevice_impl(self._executable,",
            ],
            "poptorch.poptorch_core.UnrecoverableError: In unknown:0:"
            " 'poplar_unrecoverable_runtime_error': Could not complete operation. Fabric error:"
            " link down: LINK_DOWN, device 1",
        ),
        "hardware",
    ),
    # torch_musa's allocator in a fine-tuning run
    "musa-allocator-out-of-memory": (
        "step 120 loss 1.93\n"
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/workspace/finetune.py", line 201, in <module>\n'
        "[rank1]:     loss.backward()\n"
        "[rank1]: torch.OutOfMemoryError: MUSA out of memory. Tried to allocate 2.00 GiB (GPU 1;"
        " 47.99 GiB total capacity; 44.10 GiB already allocated; 1.21 GiB free)\n",
        "gpu_oom",
    ),
}


@pytest.mark.parametrize("name", sorted(LOGS))
def test_launcher_log_names_the_cause(tmp_path: Path, name: str) -> None:
    text, category = LOGS[name]
    report = log_report(tmp_path / name, text)
    assert_leads(report, category)
    assert str(report.verdict) != "none"


def test_habanalabs_giving_a_card_up_reads_as_hardware(tmp_path: Path) -> None:
    kernel = (
        "[   41.204113] habanalabs hl0: Successfully loaded firmware to device\n"
        "[   71.880412] habanalabs hl5: Failed to communicate with Device CPU (CPU-CP timeout)\n"
        "[   71.880419] habanalabs hl5: failed to initialize the H/W\n"
        "[   71.880502] habanalabs 0000:b3:00.0: Failed to initialize hl5. Device is NOT"
        " usable !\n"
    )
    launcher = "[rank5]: RuntimeError: synStatus=8 [Device not found] Device acquire failed.\n"
    report = report_of(tmp_path / "node", {"dmesg.txt": kernel, "train.log": launcher})
    categories = [cause.category.value for cause in report.causes]
    assert categories[:2] and set(categories[:2]) <= {"hardware", "driver"}
    rules = {item.rule for cause in report.causes for item in cause.evidence}
    assert {"gaudi-habanalabs-device-not-usable", "gaudi-device-acquire-failed"} <= rules


def test_a_graph_the_compiler_rejected_is_not_read_as_an_acquire_failure() -> None:
    # synStatus 26 after `Graph compile failed.` names no cause the reports agree on
    line = "[rank0]: RuntimeError: Graph compile failed. synStatus=synStatus 26 [Generic failure]"
    assert not any(rule.match_line(line) is not None for rule in shipped_rules())


@pytest.mark.parametrize("table", TABLES)
def test_the_new_tables_are_fully_covered(table: str, shipped_coverage: dict[str, Any]) -> None:
    rows = shipped_coverage
    assert rows[table].missing == ()
    assert rows[table].covered == len(load_catalog(tables_dir() / f"{table}.toml").entries)
