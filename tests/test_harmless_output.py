"""Output that looks alarming and is not, read by the failure detector as a run going on well:
a line's own level marker (`decide.severity`), output its project calls harmless (the catalog
`tables/harmless_output.toml`, `decide.harmless_output`), Python's unraisable-exception report,
multiprocessing's resource tracker, and a server's shutdown (uvicorn's lifespan cancelled).
Each is tested on lines of public reports other than the cases that prompted it, and beside a
real failure, which must still count."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.mechanism_helpers import ending_of as _ending
from tests.mechanism_helpers import log_report as _report

from crashlens.decide.harmless_output import harmless_entry
from crashlens.decide.severity import Level, level_of
from crashlens.match.catalogs import load_catalogs
from crashlens.model import Ending, Verdict


@pytest.mark.parametrize(
    ("line", "level"),
    [
        # c10's glog form, a file name with a hyphen (lucidrains/lightweight-gan#93)
        (
            "[W pthreadpool-cpp.cc:90] Warning: Leaking Caffe2 thread-pool after fork. "
            "(function pthreadpool)",
            Level.WARNING,
        ),
        ("[W515 10:02:03.123 ProcessGroupNCCL.cpp:1168] Warning: something", Level.WARNING),
        ("E0325 20:57:27.620000 2606 torch/distributed/run.py:869] failed", Level.ERROR),
        # onnxruntime's sink (jianchang512/stt#11)
        (
            "2024-01-28 12:06:00.8464605 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:1983 "
            "onnxruntime::python::CreateInferencePybindStateModule] Init provider bridge failed.",
            Level.WARNING,
        ),
        (
            "[E:onnxruntime:Default, provider_bridge_ort.cc:1193 Get] LoadLibrary failed",
            Level.ERROR,
        ),
        # DeepSpeed (deepspeedai/DeepSpeedExamples#615)
        (
            "[2023-06-30 11:01:39,535] [INFO] [comm.py:594:init_distributed] cdb=None",
            Level.INFO,
        ),
        # Ray (ray-project/ray#8000's format) and vLLM
        (
            "2020-04-13 15:49:27,165 WARNING worker.py:1072 -- A worker died or was killed",
            Level.WARNING,
        ),
        ("INFO 06-18 18:49:00 api_server.py:177] vLLM API server version 0.5.0.post1", Level.INFO),
        ("INFO:     Shutting down", Level.INFO),
        ("ERROR:    Traceback (most recent call last):", Level.ERROR),
        ("2026-01-02 10:00:00,000 - data - WARNING - 3 samples had no label", Level.WARNING),
        (
            "/opt/x/torch/nn/modules/rnn.py:62: UserWarning: dropout option adds dropout",
            Level.WARNING,
        ),
        ("2017-11-02 W tensorflow/core/framework/op_kernel.cc:1192] Out of range", Level.WARNING),
        ("evaluating WARNINGS dataset split 2", None),
        ("step 30 loss 2.05", None),
    ],
)
def test_a_lines_level_is_read_from_its_own_marker(line: str, level: Level | None) -> None:
    assert level_of(line) == level


def test_every_entry_of_the_catalog_is_known_by_its_example() -> None:
    table = next(c for c in load_catalogs() if c.name == "harmless_output")
    assert len(table.entries) >= 4
    for entry in table.entries:
        assert entry.category == "noise"
        assert entry.source.startswith("https://")
        found = harmless_entry(entry.example)
        assert found is not None and found.id == entry.id
    assert harmless_entry("RuntimeError: DataLoader worker (pid 4062) is killed by signal") is None


def test_a_log_ending_at_a_warning_of_another_library_is_going_on(tmp_path: Path) -> None:
    # the Caffe2 warnings between a Lightning epoch and the next (motional/nuplan-devkit#161)
    text = (
        "Epoch 0: 100%|##########| 7/7 [00:08<00:00,  1.17s/it, loss=7.17, v_num=]\n"
        "[W pthreadpool-cpp.cc:90] Warning: Leaking Caffe2 thread-pool after fork. "
        "(function pthreadpool)\n"
        "[W pthreadpool-cpp.cc:90] Warning: Leaking Caffe2 thread-pool after fork. "
        "(function pthreadpool)\n"
    )
    report = _report(tmp_path, text)
    assert _ending(report) is Ending.ONGOING
    assert report.verdict is Verdict.NONE
    judged = report.assessment.harmless if report.assessment else ()
    assert any("known harmless" in line and "pytorch/issues/57273" in line for line in judged)


def test_openmpi_single_copy_notices_then_progress_are_going_on(tmp_path: Path) -> None:
    # deepinsight/insightface#1284: Open MPI's CMA read refused in an unprivileged container,
    # and the run's steps after it
    text = "".join(
        f"[1,{rank}]<stderr>:[8311b4012d34:15393{rank}] Read -1, expected 131072, errno = 1\n"
        for rank in (5, 7, 3, 6)
    ) + ("[1,0]<stdout>:Step #10\tLoss: 2.304177\n[1,0]<stdout>:Step #20\tLoss: 2.298811\n")
    report = _report(tmp_path, text)
    assert _ending(report) is Ending.ONGOING
    assert report.verdict is Verdict.NONE
    judged = report.assessment.harmless if report.assessment else ()
    assert judged and all("horovod/pull/150" in line for line in judged)


def test_openmpi_single_copy_notices_alone_are_a_stop(tmp_path: Path) -> None:
    # Charliecloud's FAQ: where Open MPI has no fallback, LAMMPS prints these "[... repeat
    # thousands of times ...]" and fails: lines alone, with no progress, show no run going on
    text = (
        "[cn002:21512] Read -1, expected 6144, errno = 1\n"
        "[cn001:23947] Read -1, expected 6144, errno = 1\n"
        "[cn002:21517] Read -1, expected 9792, errno = 1\n"
        "[... repeat thousands of times ...]\n"
    )
    report = _report(tmp_path, text)
    assert _ending(report) is Ending.UNKNOWN
    assert report.verdict is Verdict.UNKNOWN
    reason = report.assessment.reason if report.assessment else ""
    assert "harmless only where the run goes on" in reason and "SYS_PTRACE" in reason


def test_a_harmless_notice_does_not_hide_a_death_after_it(tmp_path: Path) -> None:
    text = (
        "[de44f6097ee6:39278] Read -1, expected 5285, errno = 1\n"
        "[de44f6097ee6:39279] Read -1, expected 5285, errno = 1\n"
        "Bus error (core dumped)\n"
    )
    report = _report(tmp_path, text)
    assert _ending(report) is Ending.DIED
    assert report.verdict is not Verdict.NONE


def test_deepspeeds_backend_warning_then_its_init_goes_on(tmp_path: Path) -> None:
    # deepspeedai/DeepSpeedExamples#615
    text = (
        "[2023-06-30 11:01:39,534] [WARNING] [comm.py:152:init_deepspeed_backend] NCCL backend "
        "in DeepSpeed not yet implemented\n"
        "[2023-06-30 11:01:39,535] [INFO] [comm.py:594:init_distributed] cdb=None\n"
    )
    report = _report(tmp_path, text)
    assert _ending(report) is Ending.ONGOING
    assert report.verdict is Verdict.NONE


def test_an_ordinary_warning_before_setup_chatter_still_stops(tmp_path: Path) -> None:
    # no project calls this one harmless: a hang at the first collective looks like this
    text = (
        "[2023-06-30 11:01:39,534] [WARNING] [runner.py:202:fetch_hostfile] Unable to find "
        "hostfile, will proceed with training with local resources only.\n"
        "[2023-06-30 11:01:39,535] [INFO] [comm.py:594:init_distributed] cdb=None\n"
    )
    report = _report(tmp_path, text)
    assert _ending(report) is Ending.UNKNOWN
    assert report.verdict is not Verdict.NONE


TRACKER_37 = (
    # scverse/scvi-tools#424 (Python 3.7's semaphore tracker)
    "Traceback (most recent call last):\n"
    '  File "/opt/python/3.7.1/lib/python3.7/multiprocessing/semaphore_tracker.py", line 130, '
    "in main\n"
    "    cache.remove(name)\n"
    "KeyError: b'/loky-20184-6go5idni'\n"
)
TRACKER_312 = (
    # wool-labs/wool#336 (Python 3.12's resource tracker)
    "Traceback (most recent call last):\n"
    '  File ".../python3.12/multiprocessing/resource_tracker.py", line 264, in main\n'
    "    cache[rtype].remove(name)\n"
    "KeyError: '/iV4C1iXslIkIXmhWzi8gAQdA_fwYNR'\n"
)


@pytest.mark.parametrize("reports", [TRACKER_37 * 3, TRACKER_312 * 2])
def test_the_resource_trackers_own_reports_are_no_death(tmp_path: Path, reports: str) -> None:
    report = _report(tmp_path, "INFO 06-18 18:49:00 api_server.py:177] vLLM API server\n" + reports)
    assert _ending(report) is Ending.ONGOING
    assert report.verdict is Verdict.NONE
    judged = report.assessment.harmless if report.assessment else ()
    assert any("resource tracker" in line for line in judged)


def test_the_programs_own_traceback_beside_the_trackers_still_counts(tmp_path: Path) -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 12, in <module>\n'
        "    main()\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n" + TRACKER_312
    )
    report = _report(tmp_path, text)
    assert report.verdict is not Verdict.NONE


LIFESPAN_CANCELLED = (
    # Kludex/uvicorn#1649: Ctrl-C on a multi-worker uvicorn in Docker
    "INFO:     Finished server process [12]\n"
    "INFO:     Waiting for application shutdown.\n"
    "ERROR:    Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/site-packages/starlette/routing.py", line 648, in lifespan\n'
    "    await receive()\n"
    '  File "/usr/local/lib/python3.10/site-packages/uvicorn/lifespan/on.py", line 137, '
    "in receive\n"
    "    return await self.receive_queue.get()\n"
    '  File "/usr/local/lib/python3.10/asyncio/queues.py", line 159, in get\n'
    "    await getter\n"
    "asyncio.exceptions.CancelledError\n"
)


def test_a_servers_lifespan_cancelled_at_shutdown_is_a_stop(tmp_path: Path) -> None:
    report = _report(tmp_path, LIFESPAN_CANCELLED)
    assert _ending(report) is Ending.STOPPED
    assert report.verdict is Verdict.NONE
    assert report.assessment is not None and "lifespan" in report.assessment.reason


def test_a_cancelled_error_of_the_applications_own_code_still_counts(tmp_path: Path) -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/worker.py", line 40, in run\n'
        "    await self.queue.get()\n"
        "asyncio.exceptions.CancelledError\n"
    )
    report = _report(tmp_path, text)
    assert _ending(report) is Ending.DIED


@pytest.mark.parametrize(
    "last",
    [
        # fastapi/fastapi#4427 (--reload) and Kludex/uvicorn#1649 (--workers): the supervisor
        "INFO:     Stopping reloader process [4558]",
        "INFO:     Stopping parent process [7]",
    ],
)
def test_uvicorns_supervisor_stopping_is_a_stop(tmp_path: Path, last: str) -> None:
    text = "INFO:     Shutting down\nINFO:     Finished server process [3840]\n"
    report = _report(tmp_path, text + last + "\n")
    assert _ending(report) is Ending.STOPPED
    assert report.verdict is Verdict.NONE


ENGINE_DIED = (
    "Traceback (most recent call last):\n"
    '  File "/opt/vllm/engine/async_llm_engine.py", line 42, in run_engine_loop\n'
    "    done, _ = await asyncio.wait(requests_in_progress)\n"
    "vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already.\n"
)


def test_a_server_brought_down_by_an_error_is_no_stop(tmp_path: Path) -> None:
    # the server process's own shutdown lines follow any exit of its main loop
    text = ENGINE_DIED + "INFO:     Shutting down\nINFO:     Finished server process [3840]\n"
    report = _report(tmp_path, text)
    assert _ending(report) is not Ending.STOPPED
    assert report.verdict is not Verdict.NONE


def test_a_lifespan_cancelled_after_an_error_is_no_stop(tmp_path: Path) -> None:
    report = _report(tmp_path, ENGINE_DIED + LIFESPAN_CANCELLED)
    assert _ending(report) is Ending.DIED
    assert report.verdict is not Verdict.NONE


def test_a_stop_after_a_failure_line_is_the_failures_teardown(tmp_path: Path) -> None:
    text = (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        "INFO:     Shutting down\n"
        "INFO:     Finished server process [3840]\n"
    )
    report = _report(tmp_path, text)
    assert report.verdict is not Verdict.NONE


def test_an_unraisable_report_as_the_last_line_is_no_ending(tmp_path: Path) -> None:
    # pytorch DataLoader iterator finalized at exit (the form many reports quote)
    text = (
        "Epoch 3: val_acc 0.91\n"
        "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f>\n"
    )
    report = _report(tmp_path, text)
    assert _ending(report) is Ending.ONGOING
    assert report.verdict is Verdict.NONE


def test_an_unraisable_report_after_a_crash_does_not_hide_it(tmp_path: Path) -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 12, in <module>\n'
        "    main()\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f>\n"
    )
    report = _report(tmp_path, text)
    assert report.verdict is not Verdict.NONE


@pytest.mark.parametrize("last", ["success!", "Training completed successfully.", "Succeeded"])
def test_last_words_of_success_are_a_finish(tmp_path: Path, last: str) -> None:
    text = (
        "2020-04-13 15:35:00,032 WARNING worker.py:1072 -- A worker died or was killed while "
        "executing task ffffffffffffffff45b95b1c0100.\n" + last + "\n"
    )
    report = _report(tmp_path, text)
    assert _ending(report) is Ending.COMPLETED
    assert report.verdict is Verdict.NONE


NVML_POLLER = "".join(
    f"E0611 14:02:{second:02d}.120511 1 metrics.cc:238] failed to get energy consumption "
    "for GPU 1, NVML_ERROR 3\n"
    for second in range(0, 12, 2)
)
"""Triton's metrics poller asking a GPU for a counter it does not offer, every two seconds:
NVML's code 3 is NVML_ERROR_NOT_SUPPORTED (`tables/nvml_errors.toml`, NVIDIA's definition)."""


def test_a_monitoring_loops_not_supported_status_is_going_on(tmp_path: Path) -> None:
    report = _report(tmp_path, NVML_POLLER)
    assert _ending(report) is Ending.ONGOING
    assert report.verdict is Verdict.NONE
    assert harmless_entry("failed to get energy consumption for GPU 1, NVML_ERROR 3") is not None


def test_only_nvml_statuses_that_say_nothing_failed_are_harmless() -> None:
    assert harmless_entry("nvmlInit failed: NVML_ERROR_DRIVER_NOT_LOADED") is None
    assert harmless_entry("Failed to initialize NVML: Driver/library version mismatch") is None


def test_the_not_supported_status_does_not_hide_a_death_after_it(tmp_path: Path) -> None:
    text = NVML_POLLER + "Segmentation fault (core dumped)\n"
    report = _report(tmp_path, text)
    assert _ending(report) is Ending.DIED
    assert report.verdict is not Verdict.NONE
