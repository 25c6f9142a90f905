"""Slurm's record of a job (kind `slurm_job`): `sacct` and `scontrol show job`.

`sacct` prints one row per job and per step (`123`, `123.batch`, `123.extern`, `123.0`), either
`--parsable2` / `-P` (cells joined by `|`; `--parsable` / `-p` adds a trailing `|`) or the
default fixed-width table, whose `----------` rule line gives the columns and whose cells are
cut to the column's width with a `+` (`OUT_OF_ME+`, `4471920.bat+`); a cut state is read whole.
`State` may carry who cancelled (`CANCELLED by 41207`); `ExitCode` is `exit:signal` (`0:125`
is how an OOM-killed step reads, `0:15` a SIGTERM). Without a header (`-n`) the state and exit
code are found by their shape. `scontrol show job` prints `Key=Value` words (`JobState=FAILED
Reason=NonZeroExitCode ... ExitCode=1:0 ... NodeList=node-01`), one block per job, or one line
with `-o`. The slurmstepd and srun lines of a job's own output are the launcher parser's
(`slurm.cancelled`, `slurm.oom_kill_events`, `slurm.task_failure`).

Facts (line number and the row as text; `step` is the row's JobID, `job` the job's id):

* `slurm.state`: str the job's or step's state (`OUT_OF_MEMORY`, `FAILED`, `NODE_FAIL`,
  `TIMEOUT`, `PREEMPTED`, `CANCELLED`, `COMPLETED`, `BOOT_FAIL`, `DEADLINE`, `RUNNING`...; the
  key the launcher collector writes too, read by the failure detector); attrs step, job,
  exit_code, signal, by (the uid that cancelled), reason (scontrol's), node.
* `slurm.max_rss_bytes`: int a step's `MaxRSS`; attrs step, node (`MaxRSSNode`).
* `slurm.req_mem_bytes`: int the memory asked for (`ReqMem`; scontrol's `MinMemoryNode` /
  `MinMemoryCPU`); attrs step, per (`node` or `cpu` where the output says).
* `slurm.mem_peak_percent`: float a step's `MaxRSS` as a percent of the memory it could use on
  a node (`ReqMem` per node, per CPU times the node's CPUs, or the job's total over its
  nodes); attrs step, job, state, killed, peak, job_oom, max_rss_bytes, limit_bytes, per
  (`memory.py`).
* `slurm.node_list`: str the job's or step's nodes (`NodeList`); attrs step.
* `slurm.reason`: str scontrol's `Reason` when it names one (`NonZeroExitCode`, `TimeLimit`,
  `NodeDown`, `OutOfMemory`...); attrs job.
"""
