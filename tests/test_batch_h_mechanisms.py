"""Mechanisms learned from the batch-h first-sight misses, decided end to end on logs of their
own (built from other public threads' lines, never the batch's text), analyzed as
`crashlens analyze` does.

* Ray's memory monitor reports its own OOM kills, in a wording per Ray generation (the old
  Python monitor's RayOutOfMemoryError, the killed task's OutOfMemoryError, the raylet's
  "Workers (tasks / actors) killed due to memory pressure" summary, hard-wrapped or not): each
  is host_oom. Ray's generic "a worker died" report lists the OOM killer as one cause of
  several, so alone it ranks host_oom first without deciding.
* xformers' CUTLASS kernels say themselves that they were built for another GPU architecture
  ("this function is for sm80, but was built for sm750", "kernel `...` is for sm80-sm90, but
  was built for sm70"): kernels not built for this GPU, i.e. driver (no kernel image).
* torch.multiprocessing.spawn's `process N terminated with signal SIGKILL` is a SIGKILL's
  death line like torchelastic's: a bare SIGKILL, host_oom first.
* find(1) walking system folders as a non-root user reports each folder it may not read and
  goes on: those `find: '/usr/...': Permission denied` lines are not the run's permissions
  failure; a denial on the job's own paths still is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.pipeline import AnalyzeOptions, analyze
from mechanism_helpers import Scenario, assert_scenario_verdict, write_folder

RAYLET_ADVICE = (
    "(raylet) \n"
    "(raylet) Refer to the documentation on how to address the out of memory issue: "
    "https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html. Consider "
    "provisioning more memory on this node or reducing task parallelism by requesting more CPUs "
    "per task. To adjust the kill threshold, set the environment variable "
    "`RAY_memory_usage_threshold` when starting Ray. To disable worker killing, set the "
    "environment variable `RAY_memory_monitor_refresh_ms` to zero.\n"
)

RAY_GET_TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main\n'
    "    return _run_code(code, main_globals, None,\n"
    '  File "/usr/local/lib/python3.10/dist-packages/ray/_private/worker.py", line 2755, in get\n'
    "    values, debugger_breakpoint = worker.get_objects(object_refs, timeout=timeout)\n"
)

SCENARIOS = (
    Scenario(
        # the raylet's summary, then the driver's traceback of the actor that died of it
        "raylet-summary-before-an-actor-died-traceback",
        {
            "train.log": "Compute log probs:  76%|########   | 244/320 [08:56<02:05,  1.65s/it]\n"
            "(raylet) [2025-04-02 15:02:00,117 E 135782 135782] (raylet) node_manager.cc:3069: 1"
            " Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due"
            " to other reasons at node (ID: 351e406b196f66bb45eaad02a3b8b4725babfa8cc12949432f7a"
            "d7d8, IP: 10.0.0.11) over the last time period. To see more information about the "
            "Workers killed on this node, use `ray logs raylet.out -ip 10.0.0.11`\n"
            + RAYLET_ADVICE
            + RAY_GET_TRACEBACK
            + "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this "
            "task.\n",
        },
        "host_oom",
        "host-oom-ray-memory-monitor",
    ),
    Scenario(
        # a log viewer 115 columns wide breaks the summary after "(tasks /"
        "raylet-summary-hard-wrapped",
        {
            "serve.log": "INFO 01-12 10:02:11 llm_engine.py:72] Initializing an LLM engine with"
            " config: tensor_parallel_size=4\n"
            "(raylet) [2024-08-25 19:21:02,241 E 1111013 1111013] (raylet) node_manager.cc:3064:"
            " 12 Workers (tasks /\n"
            " actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons"
            " at node (ID: b8aad7ac53c083fcae4851424e0362cec4a21916876b69bb1722ed29, IP: 10.0.0.12"
            ") over the last time period.\n" + RAYLET_ADVICE,
        },
        "host_oom",
        "host-oom-ray-memory-monitor",
    ),
    Scenario(
        "ray-2-killed-task-out-of-memory-error",
        {
            "run_sim.log": RAY_GET_TRACEBACK
            + "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on "
            "memory.\n"
            "Memory on the node (IP: 10.0.0.11, ID: fc2befb2867ce88e73a8a45572c43a640751ae1f2b5e1"
            "5bd8315f293) where the task (actor ID: f9cc340f5aef7b479d86345001000000, name=SimEnv"
            ".__init__, pid=4331, memory used=2.22GB) was running was 59.49GB / 62.58GB (0.950744"
            "), which exceeds the memory usage threshold of 0.95. Ray killed this worker (ID: d98"
            "ac96cdd66ea8c0a2604609381c3256c8285b87822896c767f7714) because it was the most "
            "recently scheduled task.\n",
        },
        "host_oom",
        "host-oom-ray-memory-monitor",
    ),
    Scenario(
        # the old monitor's error also mentions the object store's shared memory: not /dev/shm
        "ray-1-memory-monitor-error-with-object-store-note",
        {
            "train.log": '  File "/usr/local/lib/python3.6/site-packages/ray/memory_monitor.py",'
            " line 78, in raise_if_low_memory\n"
            "    self.error_threshold))\n"
            "ray.memory_monitor.RayOutOfMemoryError: More than 95% of the memory on node node-01"
            " is used (380.32 / 397.05 GB). The top 5 memory consumers are:\n"
            "\n"
            "PID\tMEM\tCOMMAND\n"
            "1\t7.57GB\tpython scripts/run.py\n"
            "160\t4.2GB\tray_worker\n"
            "\n"
            "In addition, ~4.12 GB of shared memory is currently being used by the Ray object "
            "store.\n",
        },
        "host_oom",
        "host-oom-ray-memory-monitor",
    ),
    Scenario(
        "xformers-kernel-built-for-another-gpu-arch",
        {
            "train.log": "Launching training on one GPU.\n"
            "Steps:   0%|          | 0/1500 [00:00<?, ?it/s]\n"
            "FATAL: kernel `fmha_cutlassF_f32_aligned_32x128_gmem_sm80` is for sm80-sm90, but was "
            "built for sm70\n"
            "FATAL: kernel `fmha_cutlassF_f32_aligned_32x128_gmem_sm80` is for sm80-sm90, but was "
            "built for sm70\n",
        },
        "driver",
        "driver-no-kernel-image",
    ),
)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_scenario_verdict(tmp_path: Path, scenario: Scenario) -> None:
    assert_scenario_verdict(tmp_path, scenario)


def test_the_object_store_note_is_no_shm_evidence(tmp_path: Path) -> None:
    scenario = SCENARIOS[3]
    report = analyze([str(write_folder(tmp_path, scenario.name, scenario.files))])
    assert "shm" not in {cause.category for cause in report.causes}


def test_rays_generic_worker_died_report_ranks_host_oom_without_deciding(tmp_path: Path) -> None:
    # Ray lists the OOM killer, `ray stop --force` and a native crash as possible causes
    folder = write_folder(
        tmp_path,
        "worker-died",
        {
            "train.log": "2021-11-22 15:10:23,194\tWARNING worker.py:1228 -- A worker died or "
            "was killed while executing a task by an unexpected system error. To troubleshoot "
            "the problem, check the logs for the dead worker. RayTask ID: ffffffffffffffff341cd0"
            "30556402df7c59625701000000 Worker ID: 4f72e151e496fac468e1c730556e291e00ec1cfb29882"
            "f51097186fd Worker IP address: 10.0.0.11 Worker port: 41747 Worker PID: 18687\n"
            "Traceback (most recent call last):\n"
            '  File "run_sim.py", line 46, in <module>\n'
            "    envs, task_loader = setup_envs(dataset=dataset_path, **vars(args))\n"
            "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this "
            "task.\n",
        },
    )
    report = analyze([str(folder)])
    assert report.causes[0].category == "host_oom"
    cited = {(item.rule, str(item.role)) for item in report.causes[0].evidence}
    assert ("host-oom-ray-worker-died", "symptom") in cited
    # the rules alone do not name a cause on this line (the classifier may lift it)
    assert str(analyze([str(folder)], AnalyzeOptions(use_model=False)).verdict) == "unknown"


def test_spawns_sigkill_report_is_a_bare_sigkill(tmp_path: Path) -> None:
    folder = write_folder(
        tmp_path,
        "spawn",
        {
            "train.log": "Epoch 3: 41%|####      | 2050/5000 [11:02<15:53, 3.09it/s]\n"
            "Traceback (most recent call last):\n"
            '  File "main.py", line 231, in <module>\n'
            "    mp.spawn(train, args=(world_size, cfg), nprocs=world_size, join=True)\n"
            '  File "/usr/local/lib/python3.6/site-packages/torch/multiprocessing/spawn.py", '
            "line 107, in join\n"
            "    (error_index, name)\n"
            "torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with "
            "signal SIGKILL\n"
            "/usr/lib/python3.6/multiprocessing/semaphore_tracker.py:143: UserWarning: "
            "semaphore_tracker: There appear to be 1 leaked semaphores to clean up at shutdown\n"
            "  len(cache))\n",
        },
    )
    report = analyze([str(folder)])
    assert str(report.verdict) != "none"
    assert report.causes[0].category == "host_oom", [
        (c.category, c.confidence) for c in report.causes
    ]
    assert "host-oom-sigkill-exit" in {item.rule for item in report.causes[0].evidence}


FIND_WALK = (
    "find: '/usr/lib/x86_64-linux-gnu/openssl/private': Permission denied\n"
    "find: \u2018/proc/1/map_files\u2019: Permission denied\n"
    "find: '/root/.cache': Permission denied\n"
)


def test_finds_walk_of_system_folders_is_not_a_permissions_failure(tmp_path: Path) -> None:
    folder = write_folder(
        tmp_path,
        "find-walk",
        {
            "train.log": "Starting the container as uid 1000680000\n"
            + FIND_WALK
            + "epoch 1 step 100 loss 2.31\n"
            "epoch 2 step 200 loss 1.92\n"
            "Training finished: saved /workspace/output/model.pt\n",
        },
    )
    report = analyze([str(folder)])
    assert str(report.verdict) == "none", [(c.category, c.confidence) for c in report.causes]
    assert "permissions" not in {cause.category for cause in report.causes}


def test_a_denial_after_finds_walk_is_still_cited(tmp_path: Path) -> None:
    folder = write_folder(
        tmp_path,
        "find-then-ln",
        {
            "entrypoint.log": FIND_WALK
            + "ln: failed to create symbolic link '/opt/server/lib/libnvidia-ml.so.1': "
            "Permission denied\n",
        },
    )
    report = analyze([str(folder)])
    cited = [item.text for cause in report.causes for item in cause.evidence]
    assert any(text.startswith("ln: ") for text in cited), cited
    assert not any(text.startswith("find: ") for text in cited), cited
