"""Mechanisms learned from batches aw and ay, end to end on lines that are not the cases' own
(other public reports of the same messages, the programs' documented output formats):

* A symbolic link the mount cannot hold (Python's two-path OSError with EOPNOTSUPP or ENOSYS:
  Google Drive, SMB/CIFS, FUSE mounts) is the filesystem, not the job's bad argument.
* A log that ends on the answer `False` to `torch.cuda.is_available()` (IPython's `Out[N]:`,
  the REPL's bare `False`) shows CUDA unavailable: driver; `True` is no failure. A `docker
  run` of a GPU image without --gpus / the NVIDIA runtime is context for it.
* RVC ends its training worker with os._exit(2333333) after its finish line; the parent's
  mp.spawn ProcessExitedException with that status is the end of a finished run.
* TensorFlow's "kernel version X does not match DSO version Y" is the kernel module and
  libcuda at different versions, like NVML's Driver/library version mismatch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.model import Ending, Verdict
from mechanism_helpers import Scenario, assert_scenario_verdict, ending_of, log_report

_IPYTHON_BANNER = (
    "Python 3.10.12 (main, Nov 20 2023, 15:14:05) [GCC 11.4.0]\n"
    "Type 'copyright', 'credits' or 'license' for more information\n"
    "IPython 8.20.0 -- An enhanced Interactive Python. Type '?' for help.\n"
    "\n"
    "In [1]: import torch\n"
    "\n"
    "In [2]: torch.cuda.is_available()\n"
)

_RVC_EPOCHS = (
    "INFO:gemikovoice:====> Epoch: 8\n"
    "INFO:gemikovoice:====> Epoch: 9\n"
    "INFO:gemikovoice:Saving model and optimizer state at iteration 10 to "
    "./logs\\gemikovoice\\G_0.pth\n"
    "INFO:gemikovoice:====> Epoch: 10\n"
)

_RVC_SPAWN_TRACEBACK = (
    "Traceback (most recent call last):\n"
    'File "I:\\VoiceConversionWebUI\\train_nsf_sim_cache_sid_load_pretrain.py", line 515, in\n'
    "main()\n"
    'File "I:\\VoiceConversionWebUI\\train_nsf_sim_cache_sid_load_pretrain.py", line 42, in main\n'
    "mp.spawn(\n"
    'File "I:\\VoiceConversionWebUI\\venv\\lib\\site-packages\\torch\\multiprocessing\\spawn.py",'
    " line 149, in join\n"
    "raise ProcessExitedException(\n"
)

SCENARIOS = (
    # wandb/wandb#1176: the run's latest-run link on a Windows share
    Scenario(
        "wandb-latest-link-on-a-share",
        {
            "train.log": "Traceback (most recent call last):\n"
            '  File "train.py", line 12, in <module>\n'
            "    wandb.init(project='demo')\n"
            "OSError: [Errno 95] Operation not supported: "
            "'runs/run-xxxxxxxx_xxxxxx-xxxxxxxx' -> 'latest.12473'\n"
        },
        "filesystem",
        "filesystem-link-not-supported-by-mount",
    ),
    # RSer-XDU/G-FSDet#6: a FUSE mount that does not implement symlink(2)
    Scenario(
        "setup-mim-link-enosys",
        {
            "setup.log": "Traceback (most recent call last):\n"
            '  File "setup.py", line 156, in <module>\n'
            "    add_mim_extension()\n"
            '  File "setup.py", line 142, in add_mim_extension\n'
            "    os.symlink(src_relpath, tar_path)\n"
            "OSError: [Errno 38] Function not implemented: '../../tools' -> "
            "'mmfewshot/.mim/tools'\n"
        },
        "filesystem",
        "filesystem-link-not-supported-by-mount",
    ),
    # an nvidia/cuda image started without the toolkit, then the check in IPython
    Scenario(
        "ipython-cuda-unavailable-in-a-container-without-gpus",
        {
            "session.log": "$ docker run -it --rm nvidia/cuda:12.8.1-devel-ubuntu22.04\n"
            + _IPYTHON_BANNER
            + "Out[2]: False\n"
        },
        "driver",
        "driver-cuda-availability-check-false",
    ),
    # the plain REPL's answer
    Scenario(
        "repl-cuda-unavailable",
        {"session.log": ">>> import torch\n>>> torch.cuda.is_available()\nFalse\n"},
        "driver",
        "driver-cuda-availability-check-false",
    ),
    Scenario(
        "tensorflow-kernel-module-and-libcuda-differ",
        {
            "train.log": "2021-09-13 23:57:29.694689: I tensorflow/stream_executor/cuda/"
            "cuda_diagnostics.cc:196] kernel reported version is: 460.56.0\n"
            "2021-09-13 23:57:29.694695: E tensorflow/stream_executor/cuda/"
            "cuda_diagnostics.cc:306] kernel version 460.56.0 does not match DSO version "
            "470.57.2 -- cannot find working devices in this configuration\n"
            "Traceback (most recent call last):\n"
            '  File "train.py", line 40, in <module>\n'
            "    with tf.device('/GPU:0'):\n"
            "RuntimeError: /job:localhost/replica:0/task:0/device:GPU:0 unknown device.\n"
        },
        "driver",
        "driver-nvml-library-mismatch",
    ),
)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_the_mechanism_names_the_cause(tmp_path: Path, scenario: Scenario) -> None:
    assert_scenario_verdict(tmp_path, scenario)


def test_a_cuda_check_that_answers_true_is_no_driver_failure(tmp_path: Path) -> None:
    report = log_report(tmp_path / "true", _IPYTHON_BANNER + "Out[2]: True\n")
    assert report.verdict != Verdict.DRIVER


def test_a_gpu_image_started_without_gpus_alone_names_no_cause(tmp_path: Path) -> None:
    """The command line is context: a daemon whose default runtime is nvidia gives GPUs."""
    report = log_report(
        tmp_path / "cmd", "$ docker run -it --rm nvidia/cuda:12.8.1-devel-ubuntu22.04\n"
    )
    assert report.verdict != Verdict.DRIVER


def test_rvc_finish_line_then_its_exit_status_is_a_finished_run(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "rvc",
        _RVC_EPOCHS
        + "INFO:gemikovoice:Training is done. The program is closed.\n"
        + "saving final ckpt: Success.\n"
        + _RVC_SPAWN_TRACEBACK
        + "torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with exit "
        "code 2333333\n",
    )
    assert report.verdict == Verdict.NONE
    assert ending_of(report) is Ending.COMPLETED


def test_rvc_exit_status_alone_is_a_finished_run(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "rvc-status",
        _RVC_SPAWN_TRACEBACK
        + "torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with exit "
        "code 2333333\n",
    )
    assert ending_of(report) is Ending.COMPLETED


def test_another_exit_status_of_the_same_launcher_still_fails(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "rvc-1",
        _RVC_EPOCHS
        + _RVC_SPAWN_TRACEBACK
        + "torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with exit "
        "code 1\n",
    )
    assert ending_of(report) is Ending.DIED


def test_an_error_after_rvcs_finish_line_still_fails(tmp_path: Path) -> None:
    """The web UI's index step after training (RVC#18): its own traceback ends the log."""
    report = log_report(
        tmp_path / "rvc-index",
        _RVC_EPOCHS
        + "INFO:gemikovoice:Training is done. The program is closed.\n"
        + "Traceback (most recent call last):\n"
        + 'File "I:\\VoiceConversionWebUI\\infer-web.py", line 421, in train1key\n'
        + "big_npy = np.concatenate(npys, 0)\n"
        + "ValueError: need at least one array to concatenate\n",
    )
    assert ending_of(report) is Ending.DIED
