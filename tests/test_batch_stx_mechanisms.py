"""Mechanisms learned from blind batches s, t and x, end to end on lines that are not the
cases' own (other values of the same messages, as their programs print them):

* NCCL's return-code trace leaving its communicator set-up with code 1 (ncclUnhandledCudaError)
  is a failure, even where other ranks' set-up lines follow it in an interleaved log: such a
  run is not "going on".
* Hugging Face Spaces' platform verdicts: "Memory limit exceeded (<limit>)" is host_oom,
  "Space evicted, storage limit exceeded (<limit>)" is filesystem.
* The Hugging Face Hub unreachable with nothing cached (transformers' and huggingface_hub's
  wording) and an HTTP read timeout (urllib3 / requests) are network.
* NCCL refusing a connection of the wrong kind (socketFinalizeAccept) is network.
* SGLang's "memory capacity is unbalanced" is GPU memory held elsewhere: gpu_oom.
* Magnum's EGL context finding no CUDA device among the EGL devices is driver.
* transformers' load and generate() warnings (weights newly initialised, pad token defaults)
  are output the run goes on from: `none`, while a crash after them still shows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.model import Ending
from mechanism_helpers import (
    Scenario,
    assert_scenario_verdict,
    ending_of,
    log_report,
)

SCENARIOS = (
    Scenario(
        "hf-space-memory-limit-on-an-upgraded-tier",
        {"space.log": "Runtime error\nMemory limit exceeded (32Gi)\n"},
        "host_oom",
        "host-oom-hf-space-memory-limit-exceeded",
    ),
    Scenario(
        "hf-space-evicted-for-disk",
        {"space.log": "Runtime error\nSpace evicted, storage limit exceeded (50Gi)\n"},
        "filesystem",
        "filesystem-hf-space-evicted-storage-limit",
    ),
    Scenario(
        "transformers-offline-without-cache",
        {
            "run.log": "Traceback (most recent call last):\n"
            '  File "train.py", line 12, in <module>\n'
            '    config = AutoConfig.from_pretrained("bert-base-uncased")\n'
            "OSError: We couldn't connect to 'https://huggingface.co' to load this file,"
            " couldn't find it in the cached files and it looks like bert-base-uncased is not"
            " the path to a directory containing a file named config.json.\n"
        },
        "network",
        "network-hf-hub-unreachable-no-cache",
    ),
    Scenario(
        "requests-read-timeout-from-a-cdn",
        {
            "run.log": "Traceback (most recent call last):\n"
            '  File "download.py", line 30, in <module>\n'
            "    r = requests.get(url, timeout=10)\n"
            "requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='cdn-lfs.huggingface.co',"
            " port=443): Read timed out. (read timeout=10)\n"
        },
        "network",
        "network-http-read-timed-out",
    ),
    Scenario(
        "nccl-bootstrap-connection-at-a-proxy-socket",
        {
            "nccl.log": "node-02:5123:5188 [3] NCCL INFO Channel 00/0 : 3[3] -> 4[0] [send] via"
            " NET/Socket/0\n"
            "node-02:5123:5188 [3] misc/socket.cc:483 NCCL WARN socketFinalizeAccept: wrong"
            " type 1 != 2\n"
            "node-02:5123:5188 [3] NCCL INFO misc/socket.cc:561 -> 3\n"
        },
        "network",
        "network-nccl-socket-accept-wrong-peer",
    ),
    Scenario(
        "sglang-unbalanced-with-figures",
        {
            "server.log": "ValueError: The memory capacity is unbalanced. Some GPUs may be"
            " occupied by other processes. min_per_gpu_memory=61.23, local_gpu_memory=78.95,"
            " local_gpu_memory * 0.9=71.06\n"
        },
        "gpu_oom",
        "gpu-oom-sglang-memory-capacity-unbalanced",
    ),
    Scenario(
        "magnum-egl-second-gpu-not-found",
        {
            "sim.log": "Platform::WindowlessEglApplication::tryCreateContext(): unable to find"
            " CUDA device 1 among 1 EGL devices in total\n"
            "WindowlessContext: Unable to create windowless context\n"
        },
        "driver",
        "driver-egl-no-cuda-device",
    ),
)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_batch_stx_mechanism(tmp_path: Path, scenario: Scenario) -> None:
    assert_scenario_verdict(tmp_path, scenario)


NCCL_INIT_FAILED = (
    "gpu-01:4410:4490 [1] NCCL INFO Channel 00/0 : 1[1] -> 2[2] via P2P/IPC\n"
    "gpu-01:4411:4491 [2] NCCL INFO Channel 00/0 : 2[2] -> 3[3] via P2P/IPC\n"
    "gpu-01:4411:4491 [2] transport/p2p.cc:272 NCCL WARN Cuda failure 'invalid argument'\n"
    "gpu-01:4411:4491 [2] NCCL INFO transport/p2p.cc:327 -> 1\n"
    "gpu-01:4411:4491 [2] NCCL INFO init.cc:1024 -> 1\n"
    "gpu-01:4411:4491 [2] NCCL INFO init.cc:1310 -> 1\n"
    # the other ranks go on connecting: their lines are no sign that rank 2 went on
    "gpu-01:4412:4492 [3] NCCL INFO Channel 00/0 : 3[3] -> 0[0] via P2P/IPC\n"
    "gpu-01:4409:4489 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/IPC\n"
)


def test_a_failed_communicator_set_up_is_no_run_going_on(tmp_path: Path) -> None:
    report = log_report(tmp_path / "run", NCCL_INIT_FAILED)
    assert str(report.verdict) != "none"
    assert ending_of(report) is not Ending.ONGOING
    cited = {item.rule for cause in report.causes for item in cause.evidence}
    assert "driver-nccl-init-returned-cuda-error" in cited


def test_a_trace_that_returns_success_is_no_failure(tmp_path: Path) -> None:
    text = NCCL_INIT_FAILED.replace("-> 1\n", "-> 0\n").replace(
        "transport/p2p.cc:272 NCCL WARN Cuda failure 'invalid argument'",
        "NCCL INFO Connected all rings",
    )
    report = log_report(tmp_path / "run", text)
    cited = {item.rule for cause in report.causes for item in cause.evidence}
    assert "driver-nccl-init-returned-cuda-error" not in cited


NEW_HEAD = (
    "Some weights of BertForSequenceClassification were not initialized from the model"
    " checkpoint at bert-base-uncased and are newly initialized: ['classifier.bias',"
    " 'classifier.weight']\n"
    "You should probably TRAIN this model on a down-stream task to be able to use it for"
    " predictions and inference.\n"
)


def test_a_new_task_head_warning_is_a_run_going_on(tmp_path: Path) -> None:
    report = log_report(tmp_path / "run", NEW_HEAD)
    assert str(report.verdict) == "none"
    assert ending_of(report) is Ending.ONGOING


def test_generate_pad_token_advice_is_a_run_going_on(tmp_path: Path) -> None:
    text = (
        "The attention mask and the pad token id were not set. As a consequence, you may"
        " observe unexpected behavior. Please pass your input's attention_mask to obtain"
        " reliable results.\n"
        "Setting `pad_token_id` to `eos_token_id`:2 for open-end generation.\n"
    )
    report = log_report(tmp_path / "run", text)
    assert str(report.verdict) == "none"
    assert ending_of(report) is Ending.ONGOING


def test_a_crash_after_the_load_warning_still_shows(tmp_path: Path) -> None:
    text = NEW_HEAD + (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 88, in <module>\n'
        "    trainer.train()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a"
        " total capacity of 23.65 GiB of which 1.02 GiB is free.\n"
    )
    report = log_report(tmp_path / "run", text)
    assert str(report.verdict) == "gpu_oom"


def test_a_hub_download_retried_after_a_timeout_is_no_network_failure(tmp_path: Path) -> None:
    # huggingface_hub's back-off warns and tries again; the download then went on
    text = (
        "'(ReadTimeoutError(\"HTTPSConnectionPool(host='huggingface.co', port=443): Read timed"
        " out. (read timeout=10)\"), '(Request ID: 0b1c2d3e)')' thrown while requesting HEAD"
        " https://huggingface.co/bert-base-uncased/resolve/main/config.json\n"
        "Retrying in 1s [Retry 1/5].\n"
        "{'loss': 0.6931, 'learning_rate': 4.9e-05, 'epoch': 0.01}\n"
        "{'train_runtime': 812.4, 'train_samples_per_second': 9.8, 'epoch': 1.0}\n"
    )
    report = log_report(tmp_path / "run", text)
    cited = {item.rule for cause in report.causes for item in cause.evidence}
    assert "network-http-read-timed-out" not in cited
    assert str(report.verdict) != "network"
