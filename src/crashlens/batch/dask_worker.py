"""What a Dask worker runs for `crashlens scan --dask`: the warm-up and the batch task.

A fork pool's workers inherit the parent's rule library and compiled scan database; a Dask
worker is a process of its own, so it loads them itself. It does so once, when it joins the
scan (`WarmWorker`, a worker plugin the driver registers: Dask runs it on every worker there
is and on every worker that joins later, a restarted one too), not inside the first task: a
task then only analyzes. The warm-up loads the database from the on-disk cache
(`match/diskcache.py`) when the worker's machine has it, else compiles and stores it.

Site rules travel once per worker too: the plugin carries the driver's site rule files and
keeps them under their digest; each task names the digest only. A task whose worker does
not know the digest (never expected: Dask sets plugins up before a worker takes tasks) fails,
and the driver runs its jobs again with the files themselves.

A site's own long-lived workers can warm up before any scan: `dask worker --preload
crashlens.batch.dask_worker` loads the library of the worker's CRASHLENS_RULES at start.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import os
from typing import Any

from distributed import WorkerPlugin

from crashlens.batch import job as job_module
from crashlens.batch.cache import code_digest
from crashlens.batch.jobs import JobSpec
from crashlens.batch.pool import prepare
from crashlens.batch.row import JobRow
from crashlens.match.site import SiteRuleFile

SiteFiles = tuple[SiteRuleFile, ...]
"""The driver's site rule files, as they travel to the workers."""

LOADED_CODE = code_digest()
"""The crashlens source this process loaded (read at import): a worker started before an
upgrade keeps running the old code even though the files on disk changed."""

_SITES: dict[str, SiteFiles] = {}
"""Site rule files this worker was sent, by digest."""
_PREPARED: set[tuple[str, str]] = set()
"""(backend, site digest) whose scan database this process has built (or inherited)."""
_FROZEN_IN: int | None = None
"""The process that froze its heap after the warm-up (a forked worker inherits another's)."""


class UnknownSiteRules(LookupError):
    """A task named site rules this worker was never sent."""


def site_digest(site: SiteFiles) -> str:
    """A short name for a set of site rule files (their paths, folders and text)."""
    digest = hashlib.blake2b(digest_size=12)
    for item in site:
        digest.update(repr(item).encode("utf-8", "surrogateescape"))
        digest.update(b"\0")
    return digest.hexdigest()


def load(backend: str, site: SiteFiles) -> str:
    """Build (or load from the disk cache) what the analysis needs, once per process and set
    of site rule files; keep the files for the tasks that name them. Their digest.

    The driver of `--dask local` calls it before it forks the workers, as the local pool's
    parent does: they inherit the library and the database instead of building their own."""
    from crashlens.match.site import carrying

    key = site_digest(site)
    _SITES[key] = site
    if (backend, key) not in _PREPARED:
        with carrying(site):
            prepare(backend)
        _PREPARED.add((backend, key))
    return key


def warm(backend: str, site: SiteFiles) -> str:
    """`load`, then freeze this worker's heap once: the library, the database and Dask's own
    modules live as long as the worker, so out of the garbage collector's sight its full
    collections walk only what the analysis allocates (about a quarter less CPU per job in a
    Dask worker, bench/scan_scale.py). A forked worker freezes what it inherited, as the
    local pool's workers do. The site rules' digest."""
    global _FROZEN_IN
    built = (backend, site_digest(site)) not in _PREPARED
    key = load(backend, site)
    if built or os.getpid() != _FROZEN_IN:
        if built:  # not inherited: the build's garbage is still in the heap
            gc.collect()
        gc.freeze()
        _FROZEN_IN = os.getpid()
    return key


class WarmWorker(WorkerPlugin):  # type: ignore[misc]  # distributed is Any to mypy
    """Warms each worker of the scan once, when the plugin is registered or the worker joins."""

    def __init__(self, backend: str, site: SiteFiles) -> None:
        self.backend = backend
        self.site = site
        self.name = plugin_name(backend, site)

    async def setup(self, worker: Any) -> None:
        # In a thread: a compile takes seconds, and the worker's event loop must keep
        # answering the scheduler's heartbeats meanwhile.
        await asyncio.get_running_loop().run_in_executor(None, warm, self.backend, self.site)


def plugin_name(backend: str, site: SiteFiles) -> str:
    """One plugin per backend and set of site rules: scans with other rules keep theirs."""
    return f"crashlens-warm-{backend}-{site_digest(site)}"


def analyze_batch(
    jobs: list[JobSpec], root: str, backend: str, site: str | SiteFiles
) -> list[JobRow]:
    """The task: rows for a batch of jobs. `site` is the digest of site rule files the worker
    was sent (`WarmWorker`), or the files themselves (a job retried alone)."""
    from crashlens.match.site import carrying

    if isinstance(site, str):
        files = _SITES.get(site)
        if files is None:
            raise UnknownSiteRules(f"site rules {site} were never sent to this worker")
        if (backend, site) not in _PREPARED or os.getpid() != _FROZEN_IN:
            warm(backend, files)
    else:
        files = site
        warm(backend, files)
    with carrying(files):
        # Looked up on the module at each call, so a test can stand in a job that kills its worker.
        return [job_module.analyze_job(job, root, backend) for job in jobs]


def loaded_code(site: SiteFiles) -> str:
    """What decides a row besides the job, as this process loaded it: the crashlens source,
    the rule library (with the driver's site rule files) and the classifier. A worker reports
    it to the driver's check."""
    from crashlens.batch.cache import rules_digest
    from crashlens.decide.classifier import shipped_model
    from crashlens.match.site import carried_library

    loaded = shipped_model()
    text = loaded.to_json() if loaded is not None else "no model"
    model = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
    return f"{LOADED_CODE}/{rules_digest(carried_library(site))}/{model}"


def dask_setup(worker: Any) -> None:
    """`dask worker --preload crashlens.batch.dask_worker`: warm up at the worker's start, with
    the site rules of its own CRASHLENS_RULES (a scan with other rules warms for those)."""
    from crashlens.match.site import site_files

    warm("auto", site_files())
