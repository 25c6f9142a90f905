"""Mechanisms learned from the batch-g first-sight misses, decided end to end on logs of their
own (never the batch's text), analyzed as `crashlens analyze` does.

* A debugger's report of a signal (gdb `Program received signal SIGBUS, Bus error.`, per
  thread, and `Program terminated with signal ...` on a core file) is the signal's death line.
* A crash whose faulting frame is NCCL's shared-memory code (ncclShmOpen and the shm
  transport's setup/connect): NCCL maps its segments in /dev/shm, and a tmpfs with no room
  faults on first touch (SIGBUS), so it is shm.
* UCX's shared-memory transport failing to allocate its segments (the receive FIFO, a posix
  segment under /dev/shm that does not fit, a SysV segment over SHMMAX) is shm, and the
  segfault that follows later is its consequence.
* `Segmentation fault: 11` (macOS's strsignal text, MXNet's own segfault handler) is a
  SIGSEGV's death line.
* NVIDIA's NGC containers print at start-up that /dev/shm is the default 64 MiB: the job's
  own log then says what docker inspect would (a context: it counts once something failed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from crashlens.pipeline import analyze


@dataclass(frozen=True)
class Scenario:
    name: str
    files: dict[str, str]
    verdict: str
    rule: str


SCENARIOS = (
    Scenario(
        "gdb-sigbus-in-ncclshmopen-from-torch-nccl",
        {
            "gdb.txt": "[New Thread 0x7fd0a97fe640 (LWP 41877)]\n"
            "\n"
            'Thread 41 "pt_main_thread" received signal SIGBUS, Bus error.\n'
            "[Switching to Thread 0x7fd0a97fe640 (LWP 41877)]\n"
            "(gdb) bt\n"
            "#0  0x00007fd1e8a0a1f0 in ncclShmOpen(char*, unsigned long, void**, void**, int,"
            " ncclShmHandle**) () from /opt/conda/lib/python3.10/site-packages/nvidia/nccl/"
            "lib/libnccl.so.2\n"
            "#1  0x00007fd1e8a0b2c4 in shmRecvSetup(ncclComm*, ncclTopoGraph*, ncclPeerInfo*,"
            " ncclPeerInfo*, ncclConnect*, ncclConnector*, int, int) () from "
            "/opt/conda/lib/python3.10/site-packages/nvidia/nccl/lib/libnccl.so.2\n",
        },
        "shm",
        "shm-nccl-shm-code-crash",
    ),
    Scenario(
        "glibc-backtrace-bus-error-in-nccl-shm-buffer",
        {
            "train.log": "Epoch 0: starting\n"
            "*** Received signal 7 ***\n"
            "  /usr/lib/x86_64-linux-gnu/libnccl.so.2(ncclShmAllocateShareableBuffer+0x9c)"
            " [0x7f2b4e1a9c3c]\n"
            "  /usr/lib/x86_64-linux-gnu/libnccl.so.2(+0x8a1f2) [0x7f2b4e18a1f2]\n"
            "./run.sh: line 9: 2210 Bus error               (core dumped) python train.py\n",
        },
        "shm",
        "shm-nccl-shm-code-crash",
    ),
    Scenario(
        "open-mpi-ucx-posix-segment-does-not-fit",
        {
            "mpirun.log": "[1699951203.448812] [node-7:55120:0]       mm_posix.c:233  UCX  "
            "ERROR Not enough memory to write total of 33562624 bytes. Please check that "
            "/dev/shm or the directory you specified has more available memory.\n"
            "[node-7:55120] *** Process received signal ***\n"
            "[node-7:55120] Signal: Segmentation fault (11)\n"
            "--------------------------------------------------------------------------\n"
            "mpirun noticed that process rank 3 with PID 55120 on node node-7 exited on "
            "signal 11 (Segmentation fault).\n",
        },
        "shm",
        "shm-ucx-shared-memory-alloc-failed",
    ),
    Scenario(
        "mpich-ucx-sysv-segment-over-shmmax",
        {
            "job.err": "[1700000100.120001] [cn012:9912 :0]        mm_sysv.c:114  UCX  ERROR "
            "A new segment was to be created and size < SHMMIN or size > SHMMAX, or no new "
            "segment was to be created. A segment with given key existed, but size is greater "
            "than the size of that segment. Please check shared memory limits by 'ipcs -l'.\n"
            "Abort(1615759) on node 3: Fatal error in internal_Init: Other MPI error\n",
        },
        "shm",
        "shm-ucx-shared-memory-alloc-failed",
    ),
)


def _folder(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    for file_name, text in files.items():
        (folder / file_name).write_text(text, encoding="utf-8")
    return folder


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_scenario_verdict(tmp_path: Path, scenario: Scenario) -> None:
    report = analyze([str(_folder(tmp_path, scenario.name, scenario.files))])
    assert str(report.verdict) == scenario.verdict, [
        (c.category, c.confidence) for c in report.causes
    ]
    assert scenario.rule in {item.rule for item in report.causes[0].evidence}


def test_a_debuggers_sigbus_line_is_a_bus_error_hit(tmp_path: Path) -> None:
    # a core file opened in gdb: the signal line alone, no frame anyone's rules know
    folder = _folder(
        tmp_path,
        "core",
        {
            "core.txt": "Core was generated by `python train.py --workers 8'.\n"
            "Program terminated with signal SIGBUS, Bus error.\n"
            "#0  0x00007f55b8c3a9d1 in __memmove_avx_unaligned_erms () from "
            "/lib/x86_64-linux-gnu/libc.so.6\n",
        },
    )
    report = analyze([str(folder)])
    assert str(report.verdict) != "none"
    assert report.causes[0].category == "shm"
    cited = {item.rule for item in report.causes[0].evidence}
    assert "shm-bus-error-crash" in cited


def test_the_proxy_threads_name_in_a_healthy_dump_is_not_a_crash(tmp_path: Path) -> None:
    # every NCCL process has a ncclProxyService thread: a stack dump of a run that then
    # finished names it without anything having failed
    folder = _folder(
        tmp_path,
        "dump",
        {
            "train.log": 'Thread 7 (Thread 0x7f45d7dff640 (LWP 3925) "python"):\n'
            "#0  0x00007f6b5e7a9e96 in __futex_abstimed_wait_common () from "
            "/lib/x86_64-linux-gnu/libc.so.6\n"
            "#1  0x00007f6b595436d7 in ncclProxyService(void*) () from "
            "/usr/lib/x86_64-linux-gnu/libnccl.so.2\n"
            "epoch 3 step 1200 loss 1.873\n"
            "Training completed successfully.\n",
        },
    )
    report = analyze([str(folder)])
    cited = {item.rule for cause in report.causes for item in cause.evidence}
    assert "shm-nccl-shm-code-crash" not in cited
    assert str(report.verdict) != "shm"


NGC_BANNER = (
    "=============\n"
    "== PyTorch ==\n"
    "=============\n"
    "NVIDIA Release 24.05 (build 92609789)\n"
    "\n"
    "NOTE: The SHMEM allocation limit is set to the default of 64MB.  This may be\n"
    "   insufficient for PyTorch.  NVIDIA recommends the use of the following flags:\n"
    "   docker run --gpus all --ipc=host --ulimit memlock=-1 --ulimit stack=67108864 ...\n"
    "\n"
)


def test_bare_nccl_system_error_in_an_ngc_container_with_64m_shm_is_shm(tmp_path: Path) -> None:
    folder = _folder(
        tmp_path,
        "ngc",
        {
            "train.log": NGC_BANNER + "[rank1]: torch.distributed.DistBackendError: NCCL error in: "
            "/opt/pytorch/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled "
            "system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
            "[rank1]: ncclSystemError: System call (e.g. socket, malloc) or external library "
            "call failed or device error.\n",
        },
    )
    report = analyze([str(folder)])
    assert str(report.verdict) == "shm", [(c.category, c.confidence) for c in report.causes]
    cited = {item.rule for item in report.causes[0].evidence}
    assert {"shm-nccl-system-error", "shm-ngc-banner-default-64mb"} <= cited


def test_bare_nccl_system_error_says_what_decides_it(tmp_path: Path) -> None:
    # no container evidence: the report may not be sure, but it must say how to tell
    # /dev/shm, the memlock limit and the network apart
    folder = _folder(
        tmp_path,
        "bare",
        {
            "job.log": "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/"
            "ProcessGroupNCCL.cpp:911, unhandled system error, NCCL version 2.10.3\n"
        },
    )
    report = analyze([str(folder)])
    assert report.causes[0].category == "shm"
    checks = [step.command or "" for cause in report.causes for step in cause.next_checks]
    checks += [step.command or "" for step in report.next_checks]
    assert any("ulimit -l" in command for command in checks)


def test_the_ngc_note_alone_is_no_failure(tmp_path: Path) -> None:
    folder = _folder(
        tmp_path,
        "healthy",
        {"train.log": NGC_BANNER + "epoch 1 step 100 loss 2.31\nepoch 2 step 200 loss 1.92\n"},
    )
    assert str(analyze([str(folder)]).verdict) == "none"


def test_mxnet_handlers_segfault_line_is_the_crash(tmp_path: Path) -> None:
    folder = _folder(
        tmp_path,
        "mxnet",
        {
            "fit.log": "[08:14:02] src/io/iter_image_recordio_2.cc:172: ImageRecordIOParser2: "
            "/data/train.rec, use 4 threads for decoding..\n"
            "\n"
            "Segmentation fault: 11\n"
            "\n"
            "Stack trace:\n"
            "  [bt] (0) /usr/local/lib/python3.8/dist-packages/mxnet/libmxnet.so(+0x3b1d9e0)"
            " [0x7f2c8e1a39e0]\n",
        },
    )
    report = analyze([str(folder)])
    assert str(report.verdict) != "none"
    cited = {item.rule for cause in report.causes for item in cause.evidence}
    assert "driver-sigsegv-exit" in cited
