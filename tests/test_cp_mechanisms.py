"""Mechanisms learned from batch 2026-12-05-cp, each tested on lines not from its cases: Numba's
missing CUDA toolkit pieces, a full object store, vLLM's engine failing to start after its
checkpoint-size warning, an HTTP connection aborted mid-request, PyTorch's out-of-memory
message without its head."""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Ending
from mechanism_helpers import assert_leads, ending_of, log_report, rules_hitting


def test_numba_without_libnvvm_is_driver(tmp_path: Path) -> None:
    text = (
        "Epoch 0:   0%|          | 0/35 [00:00<?, ?it/s]\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.11/site-packages/numba/cuda/cudadrv/nvvm.py", line 144,'
        " in __new__\n"
        "    raise NvvmSupportError(errmsg % e)\n"
        "numba.cuda.cudadrv.error.NvvmSupportError: libNVVM cannot be found. Do `conda install"
        " cudatoolkit`:\n"
        "libnvvm.so: cannot open shared object file: No such file or directory\n"
    )
    report = log_report(tmp_path / "numba", text)
    assert str(report.verdict) == "driver"


def test_numba_s_summary_on_a_cpu_machine_is_no_failure() -> None:
    line = "CUDA driver library cannot be found or no CUDA enabled devices are present."
    assert "driver-numba-cuda-toolkit-missing" not in rules_hitting(line)


def test_a_full_object_store_is_filesystem(tmp_path: Path) -> None:
    text = (
        "step 1200 loss 2.31\n"
        "saving checkpoint to s3://checkpoints/run-7/step-1200.pt\n"
        "minio.error.S3Error: S3 operation failed; code: XMinioStorageFull, message: Storage "
        "backend has reached its minimum free drive threshold. Please delete a few objects to "
        "proceed., resource: /checkpoints/run-7/step-1200.pt\n"
    )
    report = log_report(tmp_path / "minio", text)
    assert str(report.verdict) == "filesystem"


def test_the_engine_failing_to_start_is_a_death_and_the_checkpoint_size_leans_it(
    tmp_path: Path,
) -> None:
    text = (
        "(EngineCore_0 pid=301) INFO 01-02 10:00:00 [weight_utils.py:897] Auto-prefetch is"
        " disabled because the filesystem (XFS) is not a recognized network FS (NFS/Lustre) and"
        " the checkpoint size (61.02 GiB) exceeds 90% of available RAM (31.40 GiB).\n"
        "Loading safetensors checkpoint shards:  43% Completed | 3/7 [00:41<00:55, 13.9s/it]\n"
        "(EngineCore_0 pid=301) ERROR 01-02 10:01:10 [core.py:700] EngineCore failed to start.\n"
    )
    report = log_report(tmp_path / "vllm", text)
    assert ending_of(report) is Ending.DIED
    assert_leads(report, "host_oom")


def test_the_checkpoint_size_line_in_a_run_that_serves_is_no_failure(tmp_path: Path) -> None:
    text = (
        "(Worker pid=9) INFO 01-02 10:00:00 [weight_utils.py:897] Auto-prefetch is disabled"
        " because the filesystem (EXT4) is not a recognized network FS (NFS/Lustre) and the"
        " checkpoint size (155.43 GiB) exceeds 90% of available RAM (11.06 GiB).\n"
        "(Worker pid=9) INFO 01-02 10:00:37 [default_loader.py:430] Loading weights took 36.84"
        " seconds\n"
        "INFO:     Application startup complete.\n"
    )
    report = log_report(tmp_path / "serves", text)
    assert str(report.verdict) in ("none", "unknown")
    assert not report.causes or report.causes[0].confidence < 0.75


def test_an_http_connection_aborted_is_network(tmp_path: Path) -> None:
    text = (
        "epoch 3 step 400 loss 0.912\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 88, in <module>\n'
        "    wandb_log(metrics)\n"
        "requests.exceptions.ConnectionError: ('Connection aborted.', RemoteDisconnected('Remote"
        " end closed connection without response'))\n"
    )
    report = log_report(tmp_path / "aborted", text)
    assert str(report.verdict) == "network"


def test_a_hub_retry_warning_is_no_network_failure() -> None:
    line = (
        "'(ProtocolError('Connection aborted.', ConnectionResetError(104, 'Connection reset by"
        " peer')), '(Request ID: 1f2e)')' thrown while requesting HEAD https://huggingface.co/"
        "gpt2/resolve/main/config.json"
    )
    assert "network-http-connection-aborted" not in rules_hitting(line)


def test_the_oom_message_without_its_head_is_gpu_memory(tmp_path: Path) -> None:
    text = (
        "12:01:49-666648 INFO     Loading model: flux-dev\n"
        "12:03:10-120001 ERROR    Exception: Tried to allocate 9.40 GiB. GPU 0\n"
        "                         has a total capacity of 23.99 GiB of which 2.10 GiB is free.\n"
    )
    report = log_report(tmp_path / "wrapped", text)
    assert str(report.verdict) == "gpu_oom"


def test_a_cuda_error_cut_mid_word_at_the_end_is_a_death(tmp_path: Path) -> None:
    text = (
        '{"response": "Hello!", "error": "null"}\n'
        '{"response": "null", "error": "an unknown error was encountered while running the '
        "model CUDA error: unspecified launch fail"
    )
    report = log_report(tmp_path / "cut", text)
    assert ending_of(report) is Ending.DIED
    assert str(report.verdict) != "none"


def test_a_line_ending_in_a_few_words_of_an_error_is_no_death(tmp_path: Path) -> None:
    text = "epoch 1 loss 0.4\nepoch 2 loss 0.3 (checking for an illegal memory\n"
    report = log_report(tmp_path / "words", text)
    assert ending_of(report) is not Ending.DIED


def test_pytorch_s_cudnn_plan_warning_in_a_run_that_goes_on_is_harmless(tmp_path: Path) -> None:
    text = (
        "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
        "/opt/conda/lib/python3.10/site-packages/torch/autograd/graph.py:744: UserWarning: Plan"
        " failed with a cudnnException: CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: cudnnFinalize"
        " Descriptor Failed cudnn_status: CUDNN_STATUS_NOT_SUPPORTED (Triggered internally at"
        " ../aten/src/ATen/native/cudnn/Conv_v8.cpp:919.)\n"
        "  return Variable._execution_engine.run_backward(  # Calls into the C++ engine\n"
        "      1/100      3.41G      1.204      1.563      1.187        112        640\n"
        "      2/100      3.42G      1.151      1.402      1.160        108        640\n"
        "100 epochs completed in 1.204 hours.\n"
    )
    report = log_report(tmp_path / "plan", text)
    assert str(report.verdict) == "none"
