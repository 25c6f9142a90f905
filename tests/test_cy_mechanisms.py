"""Mechanisms learned from batch 2026-12-06-cy's misses, each tested on lines and logs written for
the test, not taken from the cases: TensorFlow's cuDNN lookups that find none (`DNN library is not
found`, `Fail to find the dnn implementation`), its BFC allocator's failure line since 2.5 and
a `ResourceExhaustedError` named without the allocator's words; cuDF's import-time check of the
GPU's architecture; Theano's CNMeM and CUDA.jl's pools out of memory; ONNX Runtime's and Faiss's
forms of CUDA errors; Caffe's host allocation check; ollama's driver library that finds no GPU;
and the user's stops the failure detector did not read: an IPython traceback cut off under its
`KeyboardInterrupt` header, an error raised while handling a `KeyboardInterrupt`, and the Intel
Fortran runtime's control-C abort; and AlphaPose's finish line."""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Ending
from mechanism_helpers import ending_of, log_report, rules_hitting

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "tensorflow.python.framework.errors_impl.UnimplementedError:  DNN library is not found.",
        "driver-tensorflow-dnn-library-not-found",
    ),
    ("    Fail to find the dnn implementation.", "driver-tensorflow-dnn-implementation-not-found"),
    (
        "2023-02-20 10:12:55.201448: W tensorflow/tsl/framework/bfc_allocator.cc:479] Allocator"
        " (GPU_0_bfc) ran out of memory trying to allocate 512.00MiB (rounded to 536870912)"
        "requested by op sequential/dense/MatMul",
        "gpu-oom-framework-allocator-exhausted",
    ),
    (
        "ResourceExhaustedError                    Traceback (most recent call last)",
        "gpu-oom-tensorflow-resource-exhausted-error",
    ),
    (
        "RuntimeError: This cuDF installation is missing the necessary PTX files that are <=61.",
        "driver-rapids-build-lacks-gpu-ptx",
    ),
    (
        "RuntimeError: ('initCnmem: cnmemInit call failed! Reason=CNMEM_STATUS_OUT_OF_MEMORY."
        " numdev=1\\n', 'You asked to force this device and it failed.')",
        "gpu-oom-framework-allocator-exhausted",
    ),
    (
        "ERROR: Out of GPU memory trying to allocate 3.815 GiB",
        "gpu-oom-framework-allocator-exhausted",
    ),
    (
        "[E:onnxruntime:, sequential_executor.cc:516 ExecuteKernel] CUDA failure 999: unknown"
        " error ; GPU=0 ; hostname=node-04 ; expr=cudaStreamSynchronize(stream);",
        "driver-cuda-error-unknown",
    ),
    (
        "RuntimeError: Error in virtual void* faiss::gpu::StandardGpuResourcesImpl::allocMemory"
        "(const faiss::gpu::AllocRequest&) at StandardGpuResources.cpp:452: Error: 'err ==="
        " cudaSuccess' failed: StandardGpuResources: alloc fail type TemporaryMemoryBuffer dev 0"
        " space Device stream 0x55d1 size 1610612736 bytes (cudaMalloc error out of memory [2])",
        "gpu-oom-cuda-error-out-of-memory",
    ),
    (
        "RuntimeError: Error in void faiss::gpu::allocMemorySpaceV at gpu/utils/MemorySpace.cpp:26:"
        " Error: 'err == cudaSuccess' failed: failed to cudaMalloc 805306368 bytes (error 2 out"
        " of memory)",
        "gpu-oom-cuda-error-out-of-memory",
    ),
    (
        "F0611 14:02:51.009113 30211 syncedmem.hpp:31] Check failed: *ptr host allocation of size"
        " 603979776 failed",
        "host-oom-cpu-allocator-failed",
    ),
    (
        'time=2025-06-02T19:44:10.901+02:00 level=INFO source=gpu.go:611 msg="no nvidia devices'
        ' detected by library /usr/lib/x86_64-linux-gnu/libcuda.so.570.153.02"',
        "driver-ollama-no-nvidia-devices-detected",
    ),
]


def test_a_recovered_bfc_allocation_stays_harmless() -> None:
    line = (
        "2023-02-20 10:12:55.201448: W tensorflow/tsl/framework/bfc_allocator.cc:290] Allocator"
        " (GPU_0_bfc) ran out of memory trying to allocate 2.26GiB with freed_by_count=0. The"
        " caller indicates that this is not a failure, but may mean that there could be"
        " performance gains if more memory were available."
    )
    assert "gpu-oom-framework-allocator-exhausted" not in rules_hitting(line)


def test_a_cpu_resource_exhausted_error_is_not_the_gpus() -> None:
    line = (
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating"
        " tensor with shape[64,2048,2048] and type float on"
        " /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu"
    )
    assert "gpu-oom-tensorflow-resource-exhausted-error" not in rules_hitting(line)


def _notebook_traceback(exception: str) -> str:
    """A Jupyter cell's output cut off among the frames, under IPython's header."""
    return (
        "Epoch 2/20\n"
        "---------------------------------------------------------------------------\n"
        f"{exception:<42}Traceback (most recent call last)\n"
        "/tmp/ipykernel_311/2288.py in <module>\n"
        "      3 model.compile(optimizer='adam', loss='mse')\n"
        "----> 4 model.fit(x, y, epochs=20)\n"
        "\n"
        "~/.local/lib/python3.10/site-packages/keras/engine/training.py in fit(self, x, y)\n"
        "   1562                 callbacks.on_train_batch_begin(step)\n"
        "-> 1563                 tmp_logs = self.train_function(iterator)\n"
    )


def test_ordinary_output_after_a_notebook_traceback_is_no_cut_traceback(tmp_path: Path) -> None:
    """The header only closes a log whose every later line is one of its frames."""
    text = _notebook_traceback("KeyboardInterrupt") + "Saving the model to /work/out.keras now\n"
    report = log_report(tmp_path / "later", text)
    assert ending_of(report) is not Ending.STOPPED


def _handling(first: str) -> str:
    """A traceback raised while an earlier exception was being handled (Python's own chain)."""
    return (
        "step 410 loss 0.882\n"
        "Traceback (most recent call last):\n"
        '  File "/app/train.py", line 88, in train\n'
        "    loss.backward()\n"
        f"{first}\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/app/train.py", line 97, in train\n'
        "    save_checkpoint(model, path=last_ckpt)\n"
        "UnboundLocalError: cannot access local variable 'last_ckpt' where it is not associated"
        " with a value\n"
    )


# read by tests/test_mechanism_endings.py
LOGS_AND_ENDINGS = [
    ("notebook-keyboardinterrupt", _notebook_traceback("KeyboardInterrupt"), Ending.STOPPED),
    ("notebook-error", _notebook_traceback("ValueError"), Ending.DIED),
    ("handling-keyboardinterrupt", _handling("KeyboardInterrupt"), Ending.STOPPED),
    ("handling-error", _handling("RuntimeError: CUDA error: unknown error"), Ending.DIED),
    (
        "forrtl-control-c",
        "INFO:mlagents.trainers: Step: 42000. Mean Reward: 1.731. Std of Reward: 0.402.\n"
        "forrtl: error (200): program aborting due to control-C event\n"
        "Image              PC                Routine            Line        Source\n"
        "libifcoremd.dll    00007FFC1A2394C4  Unknown               Unknown  Unknown\n"
        "KERNELBASE.dll     00007FFC5E4B6D13  Unknown               Unknown  Unknown\n",
        Ending.STOPPED,
    ),
    (
        "alphapose-finish",
        "Loading pose model from pretrained_models/fast_res50_256x192.pth\n"
        "100%|##########| 120/120 [00:41<00:00,  2.90it/s]\n"
        "===========================> Finish Model Running.\n"
        "===========================> Rendering remaining images in the queue...\n",
        Ending.COMPLETED,
    ),
]
