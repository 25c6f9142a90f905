"""Batch scanning: a whole archive of job logs in one pass (`crashlens scan`).

jobs.py finds the jobs under a root; job.py analyzes one job through the pipeline into one
row (a pure function of the job's files); pool.py maps it over every job in a process pool
(batches, retries, the job timeout); fingerprint.py groups the same failure across
jobs; hotspots.py ranks the hosts and GPUs implicated in hardware faults; cache.py makes a
rescan skip unchanged jobs; summary.py aggregates the rows and render.py prints them; output.py
writes the table with polars (imported only here, never on the `analyze` path).
"""
