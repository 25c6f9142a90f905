"""Long fuzz runs of every harness in `tests/fuzz_harnesses.py`, spread over the time given.

    python bench/fuzz.py --minutes 30 [--jobs 2] [--harness parse,pipeline] [--seed 1]
    python bench/fuzz.py --engine atheris --harness parse --minutes 10

Each worker process cycles through the harnesses in slices of a few hundred examples, each
slice with a new seed. A failing example is shrunk by hypothesis, then recorded once per
distinct failure (exception type and the innermost crashlens frame) under
bench/out/fuzz/<signature>.txt with its minimal input, and fuzzing goes on: a known failure
is not reported again. Each worker runs under a memory limit (`--memory-gib`), so a blow-up
is a `MemoryError` finding, and each input under a wall-clock deadline (`--deadline`), so a
hang is a finding too. Prints examples, examples/s and crashes per harness.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out" / "fuzz"
sys.path.insert(0, str(ROOT / "tests"))

import fuzz_harnesses  # noqa: E402  (a test helper module, found through the path above)

SHRINK_SECONDS = 120.0
"""Time given to hypothesis to shrink one failure before the smallest so far is recorded."""


def _slice(name: str, seed: int, examples: int, deadline_s: float) -> tuple[int, list[str]]:
    """Run one slice of a harness; returns (examples run, signatures of new failures)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as with_seed

    harness = fuzz_harnesses.HARNESSES[name]
    from test_fuzz_regressions import OPEN  # handed over already: no need to find them again

    known = {p.stem for p in OUT.glob(f"{name}-*.txt")} | OPEN
    count = 0
    failing: dict[str, Any] = {}
    shrink_until = [0.0]

    @with_seed(seed)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )
    @given(harness.strategy)
    def run(drawn: Any) -> None:
        nonlocal count
        shrinking = "sig" in failing
        if shrinking and time.monotonic() > shrink_until[0]:
            return  # shrinking is over budget: the smallest failure so far is kept
        count += 1
        try:
            with fuzz_harnesses.deadline(deadline_s):
                harness.check(drawn)
        except Exception as error:
            found = fuzz_harnesses.signature(name, error)
            if found in known or (shrinking and found != failing["sig"]):
                return  # recorded already (or another failure): keep fuzzing for new ones
            if not shrinking:
                shrink_until[0] = time.monotonic() + SHRINK_SECONDS
            failing.update(sig=found, input=drawn, error=error)
            raise

    try:
        run()
    except Exception as error:
        if "sig" not in failing:
            raise
        _record(failing["sig"], failing["input"], failing["error"], error)
        return count, [failing["sig"]]
    return count, []


def _record(sig: str, drawn: Any, error: BaseException, outer: BaseException) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    if isinstance(drawn, tuple) and len(drawn) > 1 and isinstance(drawn[1], bytes):
        (OUT / f"{sig}.bin").write_bytes(drawn[1])  # the input itself, byte for byte
        shown = repr((drawn[0].kind, drawn[0].name, *drawn[2:], f"{len(drawn[1])} bytes in .bin"))
    else:
        shown = repr(drawn)[:200_000]
    text = [f"# {sig}", "", "minimal input (repr):", shown, "", "traceback:"]
    text.extend(traceback.format_exception(error))
    (OUT / f"{sig}.txt").write_text("\n".join(text), encoding="utf-8", errors="replace")


def _setup(args: argparse.Namespace) -> None:
    """Each worker process: a memory limit, quiet warnings, the scan backend asked for."""
    import warnings

    warnings.simplefilter("ignore")  # hypothesis warns about the repr of large inputs
    _warm_imports(args.backend)
    limit = int(args.memory_gib * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    fuzz_harnesses._BACKEND[0] = args.backend


def _warm_imports(backend: str) -> None:
    """Load, before the memory limit, what the harnesses otherwise load on first use.

    An import made under the address-space limit, after some input left the heap large, fails
    inside importlib (`SystemError`, `TypeError` in `find_spec`, a half-initialised polars) and
    was recorded as a finding of whichever input happened to come next; those inputs pass
    alone. Loading them first keeps the findings about the inputs."""
    import polars  # noqa: F401  (the redaction gates' fallback matcher, the scan tables)
    import rich.console  # noqa: F401

    import crashlens.pipeline  # noqa: F401
    import crashlens.render.html  # noqa: F401
    import crashlens.render.markdown  # noqa: F401
    import crashlens.render.terminal  # noqa: F401
    from crashlens.redact.redactor import gates

    gates(backend)


def slice_task(task: tuple[str, int, float, argparse.Namespace]) -> tuple[str, int, float, list]:
    """One slice in a worker (a fresh worker every few slices: memory an input left behind
    goes with it). Past the stop time it does nothing."""
    name, seed, stop_at, args = task
    if time.monotonic() >= stop_at:
        return name, 0, 0.0, []
    started = time.monotonic()
    try:
        count, found = _slice(name, seed, args.slice, args.deadline)
    except Exception as error:  # the harness itself broke: say so, go on
        print(f"[seed {seed}] {name}: harness error {error!r}"[:300], flush=True)
        count, found = 0, []
    seconds = time.monotonic() - started
    # one line per slice, so that an interrupted run can still be totted up
    print(f"slice {name} {count} {seconds:.1f}", flush=True)
    for sig in found:
        print(f"[seed {seed}] new failure: {sig}", flush=True)
    return name, count, seconds, found


def atheris_main(name: str, args: argparse.Namespace) -> None:
    """Coverage-guided fuzzing of one harness with atheris (libFuzzer), where it installs.

    atheris drives hypothesis's own strategy through `fuzz_one_input`, so the inputs are the
    same kind of hostile variants of the samples, chosen by coverage instead of at random. A
    failure ends the run with libFuzzer's crash file and hypothesis's falsifying example."""
    import atheris  # optional: `pip install atheris`
    from hypothesis import HealthCheck, given, settings

    with atheris.instrument_imports():
        import crashlens.inputs  # noqa: F401
        import crashlens.parsers  # noqa: F401
        import crashlens.pipeline  # noqa: F401
        import crashlens.redact  # noqa: F401
        import crashlens.render  # noqa: F401
    harness = fuzz_harnesses.HARNESSES[name]

    @settings(database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(harness.strategy)
    def run(drawn: Any) -> None:
        with fuzz_harnesses.deadline(args.deadline):
            harness.check(drawn)

    limit = int(args.memory_gib * 1024)
    seconds = int(args.minutes * 60)
    flags = [f"-max_total_time={seconds}", f"-rss_limit_mb={limit}", "-print_final_stats=1"]
    atheris.Setup([sys.argv[0], *flags], run.hypothesis.fuzz_one_input)
    atheris.Fuzz()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--harness", default=",".join(fuzz_harnesses.HARNESSES))
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100_000)
    parser.add_argument("--slice", type=int, default=200, help="examples per slice")
    parser.add_argument("--deadline", type=float, default=10.0, help="seconds per input")
    parser.add_argument("--memory-gib", type=float, default=3.0, help="per worker")
    parser.add_argument("--backend", default="auto", choices=["auto", "hyperscan", "python"])
    parser.add_argument(
        "--engine",
        default="hypothesis",
        choices=["hypothesis", "atheris"],
        help="atheris: coverage-guided, one harness, one process (optional dependency)",
    )
    args = parser.parse_args()
    names = [n for n in args.harness.split(",") if n]
    if args.engine == "atheris":
        atheris_main(names[0], args)
        return
    stop_at = time.monotonic() + args.minutes * 60
    started = time.monotonic()
    # more slices than can run (one takes over a second): those left when time is up return
    # at once
    slices = int(args.jobs * args.minutes * 60) + len(names)
    tasks = [(names[n % len(names)], args.seed * 100_003 + n, stop_at, args) for n in range(slices)]
    total: dict[str, dict] = {n: {"examples": 0, "seconds": 0.0, "crashes": []} for n in names}
    context = multiprocessing.get_context("fork")
    with context.Pool(args.jobs, _setup, (args,), maxtasksperchild=10) as pool:
        for name, count, seconds, found in pool.imap_unordered(slice_task, tasks):
            total[name]["examples"] += count
            total[name]["seconds"] += seconds
            total[name]["crashes"].extend(found)
    print(f"fuzzed {time.monotonic() - started:.0f} s with {args.jobs} worker(s), seed {args.seed}")
    print(f"{'harness':<10} {'examples':>9} {'cpu-min':>8} {'ex/s':>7}  new crashes")
    for name, item in total.items():
        rate = item["examples"] / item["seconds"] if item["seconds"] else 0.0
        crashes = ", ".join(item["crashes"]) or "0"
        print(
            f"{name:<10} {item['examples']:>9} {item['seconds'] / 60:>8.1f} {rate:>7.1f}  {crashes}"
        )
    print(f"failures recorded so far: {len(list(OUT.glob('*.txt')))} in {OUT}")


if __name__ == "__main__":
    main()
