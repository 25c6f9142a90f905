"""Mechanisms learned from the network, permissions and shm misses of batches l-o, decided
end to end on logs of their own (built from other public threads' lines and the tools' own
message formats, never the batch's text), analyzed as `crashlens analyze` does.

* Ray refuses to start when the object store it is asked for exceeds /dev/shm (a ValueError
  naming /dev/shm), and the plasma store / raylet says the same before it shrinks the store
  ("System memory request exceeds memory available in /dev/shm"): shm.
* PyTorch's "dataloader's workers are out of shared memory" hint, on a line of its own once a
  notebook or a pipeline UI wrapped the DataLoader's Bus error report: shm.
* XLA quotes NCCL's last warning in its status (`NCCL operation ncclGroupEnd() failed:
  unhandled system error ... 'Error while creating shared memory segment /dev/shm/nccl-...'`);
  wrapped by a terminal, the segment's path still names NCCL's /dev/shm segment: shm.
* gRPC's `failed to connect to all addresses` (status 14) from Ray's task submission to a
  remote node, Ray's `Couldn't reconnect to GCS server`, and a JAX process whose RegisterTask
  RPC to the coordinator failed: network; a peer that died first makes them knock-ons.
* transformers' warning that its cache folder is not writable, before model loading fails:
  permissions. The same warning in a run that finished is no failure.
* IPython's traceback header names the exception first: a cut `PermissionError  Traceback`
  cell is permissions.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.pipeline import analyze
from mechanism_helpers import Scenario, assert_scenario_verdict, write_folder

RAY_INIT_FRAMES = (
    "Traceback (most recent call last):\n"
    '  File "main.py", line 34, in <module>\n'
    "    ray.init(num_cpus=4)\n"
    '  File "/opt/conda/lib/python3.8/site-packages/ray/_private/services.py", line 1706, in'
    " determine_plasma_store_config\n"
    "    raise ValueError(\n"
)

SCENARIOS = (
    Scenario(
        # alumae/kiirkirjutaja#5: ray.init in a container whose /dev/shm is smaller
        "ray-init-object-store-exceeds-dev-shm",
        {
            "app.log": "2022-05-16 20:36:49,653 INFO services.py:1267 -- View the Ray dashboard"
            " at http://127.0.0.1:8265/\n"
            + RAY_INIT_FRAMES
            + "ValueError: The configured object store size (11.81114368 GB) exceeds /dev/shm"
            " size (11.8111232 GB). This will harm performance. Consider deleting files in"
            " /dev/shm or increasing its size with --shm-size in Docker. To ignore this warning,"
            " set RAY_OBJECT_STORE_ALLOW_SLOW_STORAGE=1.\n"
        },
        "shm",
        "shm-ray-object-store-exceeds-dev-shm",
    ),
    Scenario(
        # the plasma store's own check (Ray PR #174: it exits when /dev/shm is too small)
        "plasma-store-request-exceeds-dev-shm",
        {
            "plasma_store.err": "F0312 09:41:07.510233  4127  4127 store.cc:1083] System memory"
            " request exceeds memory available in /dev/shm. The request is for 1000000000"
            " bytes, and the amount available is 67108864 bytes. You may be able to free up"
            " space by deleting files in /dev/shm. If you are inside a Docker container, you"
            " may need to pass an argument with the flag '--shm-size' to 'docker run'.\n"
            "*** Check failure stack trace: ***\n"
            "    @     0x55d0c1a3b2c4  google::LogMessage::Fail()\n"
        },
        "shm",
        "shm-plasma-store-request-exceeds-dev-shm",
    ),
    Scenario(
        # a wrapped DataLoader report, as a cloud notebook printed it
        "dataloader-hint-on-its-own-line",
        {
            "cell_output.txt": "Epoch 3:  41%|####1     | 118/288 [01:02<01:29,  1.90it/s]\n"
            "ERROR: Unexpected bus error encountered in worker. This might be caused by"
            " insufficient shared memory (shm).\n"
            "Traceback (most recent call last):\n"
            '  File "train.py", line 88, in <module>\n'
            "    for images, labels in loader:\n"
            "RuntimeError: DataLoader worker (pid 4121) is killed by signal: Bus error.\n"
            "It is possible that dataloader's workers are out of shared memory.\n"
            "Please try to raise your shared memory limit.\n"
        },
        "shm",
        "shm-dataloader-out-of-shared-memory-hint",
    ),
    Scenario(
        # XLA's status with NCCL's last warning, wrapped at 100 columns (NVIDIA/nccl-tests#166's
        # segment warning as the quoted entry)
        "xla-status-quoting-nccl-segment-wrapped",
        {
            "worker.log": "E0311 04:12:09.118201    2201 pjrt_stream_executor_client.cc:2839]"
            " Execution of replica 3\n"
            "failed: INTERNAL: NCCL operation ncclCommInitRank(&comm, nranks, id, rank) failed:"
            " unhandled system error (run with\n"
            "NCCL_DEBUG=INFO for details). Last NCCL warning(error) log entry (may be unrelated)"
            "  'Error\n"
            "while creating shared memory segment /dev/shm/nccl-fjwOOB (size 5967872), error:"
            " No space\n"
            "left on device (28)'.\n"
        },
        "shm",
        "shm-nccl-segment-message-split",
    ),
    Scenario(
        # ray-project/ray#10781: the driver cannot reach the worker nodes it schedules on
        "ray-remote-node-unreachable",
        {
            "driver.log": "2020-09-14 16:15:01,371\tINFO worker.py:672 -- Connecting to existing"
            " Ray cluster at address: 10.0.0.11:6379\n"
            + "".join(
                f"E0914 16:15:0{i}.454917 1932514 1932528 direct_task_transport.cc:324] Retrying"
                " attempt to schedule task at remote node. Error: IOError: 14: failed to connect"
                " to all addresses\n"
                for i in range(6, 9)
            )
        },
        "network",
        "network-grpc-failed-to-connect-to-all-addresses",
    ),
    Scenario(
        # ray-project/ray#15235: a node that cannot get back to the head's GCS aborts
        "ray-node-cannot-reconnect-to-gcs",
        {
            "raylet.err": "[2021-03-22 14:35:51,321 C 9 315] service_based_gcs_client.cc:207:"
            " Couldn't reconnect to GCS server. The last attempted GCS server address was"
            " 10.0.0.11:6379\n"
            "*** StackTrace Information ***\n"
            "    @     0x55e9d2b1b0c5  google::GetStackTraceToString()\n"
            "    @     0x55e9d2b0f1be  ray::GetCallTrace()\n"
        },
        "network",
        "network-ray-gcs-reconnect-failed",
    ),
    Scenario(
        # google/paxml#77: a JAX process's RegisterTask call to the coordinator timed out
        "jax-register-task-deadline-exceeded",
        {
            "worker-3.log": "I0412 23:29:41.512301  1022 distributed.py:90] Connecting to JAX"
            " distributed service on 10.0.0.11:1234\n"
            "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Deadline Exceeded\n"
            "Additional GRPC error information from remote target"
            " unknown_target_for_coordination_leader while calling"
            " /tensorflow.CoordinationService/RegisterTask:\n"
            ':{"created":"@1712965181.656280441","description":"Deadline Exceeded","file":'
            '"external/com_github_grpc_grpc/src/core/ext/filters/deadline/deadline_filter.cc",'
            '"file_line":69,"grpc_status":4}\n'
        },
        "network",
        "network-jax-coordinator-registration-failed",
    ),
    Scenario(
        # a model server under an arbitrary UID, HOME=/ (the philschmid/serverless-machine-
        # learning#2 wording), dying while it loads the model
        "hf-cache-not-writable-then-load-fails",
        {
            "server.log": "There was a problem when trying to write in your cache folder"
            " (/.cache/huggingface/hub). You should set the environment variable"
            " TRANSFORMERS_CACHE to a writable directory.\n"
            "Traceback (most recent call last):\n"
            '  File "/app/serve.py", line 12, in <module>\n'
            "    tokenizer = AutoTokenizer.from_pretrained(model_name_or_path)\n"
            '  File "/opt/conda/lib/python3.10/site-packages/transformers/models/auto/'
            'tokenization_auto.py", line 718, in from_pretrained\n'
            "    tokenizer_config = get_tokenizer_config(pretrained_model_name_or_path, **kwargs)\n"
        },
        "permissions",
        "permissions-hf-cache-not-writable",
    ),
    Scenario(
        # a notebook cell cut before its last line: IPython's header names the exception
        "ipython-permissionerror-header",
        {
            "notebook.log": "---------------------------------------------------------------"
            "------------\n"
            "PermissionError                           Traceback (most recent call last)\n"
            "<ipython-input-5-8c4c4e7de105> in <module>\n"
            '----> 1 os.makedirs("/srv/shared/outputs/run-7")\n'
        },
        "permissions",
        "permissions-ipython-permissionerror-header",
    ),
)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_mechanism_decides_its_category(tmp_path: Path, scenario: Scenario) -> None:
    assert_scenario_verdict(tmp_path, scenario)


def test_hf_cache_warning_in_a_finished_run_is_no_failure(tmp_path: Path) -> None:
    # The warning is harmless when the models are already local (a Singularity run that
    # trained to the end after printing it).
    folder = write_folder(
        tmp_path,
        "hf-cache-warning-finished",
        {
            "train.log": "There was a problem when trying to write in your cache folder"
            " (/home/user/.cache/huggingface/hub). You should set the environment variable"
            " TRANSFORMERS_CACHE to a writable directory.\n"
            "{'loss': 0.4121, 'learning_rate': 1.2e-05, 'epoch': 2.99}\n"
            "{'train_runtime': 812.4, 'train_samples_per_second': 41.2, 'epoch': 3.0}\n"
            "Training completed.\n"
        },
    )
    assert str(analyze([str(folder)]).verdict) == "none"


def test_remote_node_unreachable_is_a_knock_on_of_a_node_that_died(tmp_path: Path) -> None:
    # The worker node was OOM-killed first: the driver's failed connections to it follow.
    folder = write_folder(
        tmp_path,
        "ray-remote-node-died-first",
        {
            "driver.log": "(raylet) [2025-04-02 15:02:00,117 E 135782 135782] (raylet)"
            " node_manager.cc:3069: 1 Workers (tasks / actors) killed due to memory pressure"
            " (OOM), 0 Workers crashed due to other reasons at node (ID: 351e406b196f66bb45ea,"
            " IP: 10.0.0.12) over the last time period.\n"
            "E0402 15:02:03.454917 1932514 1932528 direct_task_transport.cc:324] Retrying"
            " attempt to schedule task at remote node. Error: IOError: 14: failed to connect to"
            " all addresses\n"
            "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on"
            " memory.\n"
        },
    )
    assert str(analyze([str(folder)]).verdict) == "host_oom"
