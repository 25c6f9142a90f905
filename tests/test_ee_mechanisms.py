"""Mechanisms learned from batch 2026-12-07-ee's misses (leads of earlier builders, blogs, an
HPC support forum), tested on lines written for the tests, none a case's own: slurmstepd unable
to enter the job's directory on the node, sbatch's write failure on the controller's side,
Theano's GPU allocation failure raised as MemoryError, and the NVIDIA Container Toolkit's
createContainer hooks failing."""

from __future__ import annotations

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "slurmstepd: error: couldn't chdir to `/scratch/proj/run-7': No such file or directory:"
        " going to /tmp instead",
        "filesystem-slurm-workdir-missing-on-node",
    ),
    (
        "sbatch: error: Batch job submission failed: I/O error writing script/environment to file",
        "filesystem-slurm-controller-state-write-failed",
    ),
    (
        "MemoryError: ('Error allocating 402653184 bytes of device memory (out of memory).',"
        " \"you might consider using 'theano.shared(..., borrow=True)'\")",
        "gpu-oom-framework-allocator-exhausted",
    ),
    (
        "Error: OCI runtime create failed: error running createContainer hook #1: exit status 1,"
        ' stdout: , stderr: time="2025-05-05T05:05:05Z" level=error msg="failed to run'
        ' nvidia-cdi-hook update-ldcache: exit status 1"',
        "driver-container-toolkit-error",
    ),
]
