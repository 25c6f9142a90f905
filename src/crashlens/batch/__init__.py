"""Batch scanning: a whole archive of job logs in one pass (`crashlens scan`).

jobs.py finds the jobs under a root; runner.py maps the per-job analysis (a pure function of
the job's files) over them in a process pool; fingerprint.py groups the same failure across
jobs; hotspots.py ranks the hosts and GPUs implicated in hardware faults; cache.py makes a
rescan skip unchanged jobs; summary.py aggregates the rows and render.py prints them; output.py
writes the table with polars (imported only here, never on the `analyze` path).
"""
