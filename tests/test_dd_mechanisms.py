"""Mechanisms learned from batch 2026-12-06-dd's misses, each tested on lines and logs written for
the test, not taken from the cases: a traceback chain the terminal's `^C` echo opens, cut off
among its frames (the user's interrupt: no exception line says anything else), MIOpen's text
user database that a rank cannot read or store, and vLLM's KV-cache preemption warning, which
its project calls a throughput matter."""

from __future__ import annotations

from crashlens.model import Ending

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "MIOpen(HIP): Error [FlushUnsafe] File is unreadable: /home/user/.config/miopen/gfx90a68"
        ".HIP.2_1_0.updb.txt",
        "filesystem-miopen-text-db-unreadable",
    ),
    (
        "MIOpen(HIP): Error [~FindDbRecord] Failed to store record to find-db at"
        " </scratch/user/.config/miopen/gfx900_56.HIP.2_1_0.ufdb.txt>",
        "filesystem-miopen-text-db-unreadable",
    ),
    (
        "INFO 03-02 11:20:41 metrics.py:351] Avg prompt throughput: 0.0 tokens/s. WARNING 03-02"
        " 11:20:41 scheduler.py:1560] Sequence group 17 is preempted by PreemptionMode.RECOMPUTE"
        " mode because there is not enough KV cache space. This can affect the end-to-end"
        " performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV"
        " cache memory. total_num_cumulative_preemption=3",
        "gpu-oom-vllm-kv-cache-preemption-harmless",
    ),
]

_RAY_WAIT = (
    "Epoch 3:  41%|####      | 412/1000 [02:11<03:07,  3.14it/s]\n"
    "^CTraceback (most recent call last):\n"
    '  File "/opt/env/lib/python3.10/site-packages/ray/_private/worker.py", line 2510, in wait\n'
    "    ready_ids, remaining_ids = worker.core_worker.wait(\n"
    '  File "python/ray/_raylet.pyx", line 3120, in ray._raylet.CoreWorker.wait\n'
    "ConnectionError: Raylet connection closed.\n"
    "\n"
    "During handling of the above exception, another exception occurred:\n"
    "\n"
    "Traceback (most recent call last):\n"
    '  File "/home/user/tune.py", line 61, in <module>\n'
    "    main()\n"
    '  File "/home/user/tune.py", line 54, in main\n'
    "    results = tuner.fit()\n"
)

# read by tests/test_mechanism_endings.py
LOGS_AND_ENDINGS = [
    ("interrupted-chain-cut-among-frames", _RAY_WAIT, Ending.STOPPED),
    (
        "the-same-chain-without-the-echo",
        _RAY_WAIT.replace("^CTraceback", "Traceback"),
        Ending.UNKNOWN,
    ),
    (
        "vllm-preemption-then-nothing",
        "WARNING 03-02 11:20:41 scheduler.py:1560] Sequence group 17 is preempted by"
        " PreemptionMode.SWAP mode because there is not enough KV cache space. This can affect"
        " the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to"
        " provide more KV cache memory. total_num_cumulative_preemption=3\n",
        Ending.ONGOING,
    ),
]
