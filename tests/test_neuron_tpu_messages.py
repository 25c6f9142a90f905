"""AWS Neuron and Google TPU/XLA failures read through their catalogs and rules
(patterns/tables/neuron_runtime.toml, the TPU/XLA rules of patterns/gpu_oom, the harmless
entries of tables/harmless_output.toml), end to end on logs in the shapes those stacks print,
each built from a report or a vendor page other than the staging cases that prompted the
rules (host names, paths and ids replaced):

* the Neuron runtime refusing an old driver, an HBM uncorrectable error, a tensor allocation
  failure on an inf2, EFA missing on a multi-instance job, XLA's compile-time TPU HBM abort and
  a GCE VM token without the API's scope each name their cause;
* a torch-neuronx run's import-time OpKernel lines, Neuron collectives retrying while a peer
  compiles and XLA's slow-compile alarm, each followed by training going on, are no failure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from crashlens.library import tables_dir
from crashlens.match.catalogs import load_catalog
from mechanism_helpers import assert_leads, log_report

NEURON_START = (
    "2023-Mar-02 10:11:04.0901 2210:2210  INFO   NRT:nrt_init"
    "                                Neuron Runtime 2.12.23.0 built on Feb 14 2023\n"
)

FAILED = {
    # The runtime guide's message for a driver older than the runtime, then torch-neuronx's
    # RuntimeError as it surfaces in the training script.
    "neuron-driver-too-old": (
        NEURON_START + "2023-Mar-02 10:11:05.0412 2210:2210 ERROR   NRT:nrt_init"
        "      This runtime requires Neuron Driver version 2.0 or greater."
        " Please upgrade aws-neuron-dkms package.\n"
        "Traceback (most recent call last):\n"
        '  File "/home/ubuntu/train.py", line 41, in <module>\n'
        "    device = xm.xla_device()\n"
        "RuntimeError: Neuron runtime cannot be initialized\n",
        "driver",
    ),
    # The runtime's FATAL-RT-UNDEFINED-STATE report of HBM errors, mid-training.
    "neuron-hbm-uncorrectable": (
        NEURON_START + "step 1200 loss 2.31\n"
        "2024-Feb-02 11:20:31.0990 4410:4410 ERROR  TDRV:exec_consume_infer_status_notifications"
        " (FATAL-RT-UNDEFINED-STATE) encountered uncorrectable memory error on Neuron Device 3,"
        " execution results may be invalid.  Please terminate or start/stop this instance to"
        " recover from bad hardware.\n"
        "Aborted (core dumped)\n",
        "hardware",
    ),
    # vllm-project/vllm#12443: loading a model onto an inf2's NeuronCores.
    "neuron-tensor-allocation-failure": (
        "INFO 02-11 14:19:50 neuron_model_runner.py:126] Loading model weights\n"
        'ERROR 02-11 14:20:32 engine.py:389]   File "/opt/conda/lib/python3.10/site-packages/'
        'transformers_neuronx/ops.py", line 49, in parallel_to_nc\n'
        "ERROR 02-11 14:20:32 engine.py:389]     return torch.ops.neuron._parallel_to_neuron("
        "tensors)\n"
        "ERROR 02-11 14:20:32 engine.py:389] RuntimeError: nrt_tensor_allocate status=4"
        ' message="Allocation Failure"\n'
        "Process SpawnProcess-1:\n",
        "gpu_oom",
    ),
    # A trn1 run's log in a public repository (2023): the plugin cannot start EFA, then the
    # collective has no transport between the instances.
    "neuron-efa-not-enabled": (
        NEURON_START
        + "2023-May-21 14:27:33.0030 102203:102204 [0] nccl_net_ofi_init:1415 CCOM WARN"
        " NET/OFI aws-ofi-nccl initialization failed\n"
        "2023-May-21 14:27:33.0030 102203:102204 [0] init.cc:99 CCOM WARN OFI plugin initNet()"
        " failed is EFA enabled?\n"
        "2023-May-21 14:27:33.0045 102203:102204 [0] transport.cc:36 CCOM WARN No transport"
        " found between devices 0 and 0. Possible replica group misconfiguration\n",
        "network",
    ),
    # XLA's error page E1000: the TPU compiler's early abort, through JAX.
    "xla-tpu-compile-early-abort": (
        "I0412 09:02:11.120331 140221 train.py:88] Compiling train_step\n"
        "Traceback (most recent call last):\n"
        '  File "/home/user/train.py", line 120, in <module>\n'
        "    state, metrics = train_step(state, batch)\n"
        "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Compilation failure: Aborting"
        " compilation early because it's unlikely to have enough memory. Requires 212.40G, has"
        " 31.25G available. If more detailed logging is desired, set"
        " --xla_tpu_impure_oom_fast_exit_threshold=-1\n",
        "gpu_oom",
    ),
    # XLA's E0200 class of a halted TPU core, in the async driver's line as a vLLM-on-TPU log
    # prints it.
    "tpu-core-halted-on-hardware": (
        "INFO 06-02 11:20:41 [core.py:210] Running decode step\n"
        "F0602 11:20:43.128833 5112 async_driver.cc:779] [/dev/vfio/2 tpu1:pe2:3] vf_id:0"
        " !!!! FATAL ERROR !!!! observed errors are: [HARDWARE]. Now taking a TPU core dump...\n",
        "hardware",
    ),
    # A GCE VM without the cloud-platform scope asking the Cloud TPU API for its node.
    "gce-vm-token-without-scope": (
        "Traceback (most recent call last):\n"
        '  File "/home/user/tpu_launch.py", line 30, in <module>\n'
        "    node = tpu.projects().locations().nodes().get(name=name).execute()\n"
        "googleapiclient.errors.HttpError: <HttpError 403 when requesting https://tpu.googleapis"
        '.com/v1/projects/p/locations/us-central1-b/nodes/n?alt=json returned "Request had'
        ' insufficient authentication scopes.". Details: "ACCESS_TOKEN_SCOPE_INSUFFICIENT">\n',
        "permissions",
    ),
}

GOING_ON = {
    # A torch_xla training script's output (cc12m diffusion training): the OpKernel lines at
    # import, then the run.
    "torch-xla-opkernel-lines-at-import": (
        "2022-02-27 04:32:51.146314: E tensorflow/core/framework/op_kernel.cc:1676] OpKernel"
        ' (\'op: "TPURoundRobin" device_type: "CPU"\') for unknown op: TPURoundRobin\n'
        "2022-02-27 04:32:51.146380: E tensorflow/core/framework/op_kernel.cc:1676] OpKernel"
        ' (\'op: "TpuHandleToProtoKey" device_type: "CPU"\') for unknown op:'
        " TpuHandleToProtoKey\n"
        "epoch 0 step 10 loss 0.912\n"
        "epoch 0 step 20 loss 0.874\n"
    ),
    # The torch-neuronx guide's warning while a peer compiles, then the peers join.
    "neuron-collectives-waiting-for-a-compiling-peer": (
        NEURON_START + "2022-Nov-21 05:14:02.0661 30811:31002 [1] NCCL WARN Timeout waiting for RX"
        " (waited 120 sec) - retrying\n"
        "2022-Nov-21 05:16:02.0662 30811:31002 [1] NCCL WARN Timeout waiting for RX"
        " (waited 120 sec) - retrying\n"
        "step 1 loss 10.93\n"
        "step 2 loss 10.71\n"
    ),
    # A JAX run that unrolls a loop inside jit: the alarm while it compiles, then the steps.
    "xla-slow-compile-alarm": (
        "2024-09-08 12:07:09.900690: E external/xla/xla/service/slow_operation_alarm.cc:65]\n"
        "********************************\n"
        "[Compiling module jit_n_steps] Very slow compile? If you want to file a bug, run with"
        " envvar XLA_FLAGS=--xla_dump_to=/tmp/foo and attach the results.\n"
        "********************************\n"
        "step: 100 loss: 0.4121\n"
        "step: 200 loss: 0.3877\n"
    ),
}


@pytest.mark.parametrize("name", sorted(FAILED))
def test_failed_run_names_the_cause(tmp_path: Path, name: str) -> None:
    text, category = FAILED[name]
    report = log_report(tmp_path / name, text)
    assert_leads(report, category)
    assert str(report.verdict) == category


@pytest.mark.parametrize("name", sorted(GOING_ON))
def test_harmless_lines_with_the_run_going_on_are_no_failure(tmp_path: Path, name: str) -> None:
    report = log_report(tmp_path / name, GOING_ON[name])
    assert str(report.verdict) == "none", [
        (c.category.value, round(c.confidence, 2)) for c in report.causes
    ]


def test_neuron_catalog_is_fully_covered(shipped_coverage: dict[str, Any]) -> None:
    rows = shipped_coverage
    entries = load_catalog(tables_dir() / "neuron_runtime.toml").entries
    assert rows["neuron_runtime"].missing == ()
    assert rows["neuron_runtime"].covered == len(entries)


def test_a_lone_could_not_open_device_line_stays_undecided(tmp_path: Path) -> None:
    """`Could not open the ndX` is a missing device or a job asking for more devices than the
    instance has: alone it leans to hardware but does not reach a verdict."""
    report = log_report(
        tmp_path / "nd",
        NEURON_START + "2024-May-21 16:08:34.244955 58100:58100 ERROR  TDRV:tdrv_init_mla_phase1"
        "                    Could not open the nd3\n",
    )
    assert report.causes and report.causes[0].category.value == "hardware"
    assert str(report.verdict) == "unknown"
