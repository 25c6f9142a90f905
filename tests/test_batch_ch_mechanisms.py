"""Mechanisms learned after batch 2026-12-04-ch was scored, end to end on logs in the shapes the
programs print (built from the programs' formats and public reports, not copied from the cases
that prompted them; hosts and paths changed):

* Docker's `could not select device driver with capabilities: [[gpu]]` without the quoted
  driver name names the NVIDIA container toolkit (`driver`), like the quoted form;
* a notebook log whose last output is a bare `^C` right after a model started loading names
  host memory (the runtime killed the process for RAM);
* a run the user stopped with Ctrl-C, whose Python process printed its KeyboardInterrupt, is
  not host memory.
"""

from __future__ import annotations

from pathlib import Path

from mechanism_helpers import assert_leads, log_report


def test_unquoted_device_driver_line_names_the_container_toolkit(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "compose-gpu",
        "$ docker compose up trainer\n"
        "[+] Running 1/0\n"
        " ✔ Container stack-trainer-1  Created                                       0.0s\n"
        "Attaching to trainer-1\n"
        "Error response from daemon: could not select device driver with capabilities:"
        " [[gpu]]\n",
    )
    assert_leads(report, "driver")


def test_bare_interrupt_after_a_checkpoint_load_names_host_memory(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "notebook-killed",
        "Python 3.10.12 (main, Nov 20 2023, 15:14:05) [GCC 11.4.0]\n"
        "Launching Web UI with arguments: --share --xformers\n"
        "Loading weights [31e35c80fc] from /content/models/Stable-diffusion/"
        "sd_xl_base_1.0.safetensors\n"
        "Creating model from config: /content/repositories/generative-models/configs/"
        "inference/sd_xl_base.yaml\n"
        "^C\n",
    )
    assert_leads(report, "host_oom")


def test_ctrl_c_with_its_keyboard_interrupt_is_not_host_memory(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "user-stop",
        "epoch 3 step 1200 loss 1.842\n"
        "epoch 3 step 1250 loss 1.837\n"
        "^CTraceback (most recent call last):\n"
        '  File "/home/user/proj/train.py", line 88, in <module>\n'
        "    loss.backward()\n"
        "KeyboardInterrupt\n",
    )
    assert not report.causes or report.causes[0].category.value != "host_oom"
