"""Per-job verdicts of `crashlens scan` against the ground truth of gen_archive.py.

    python bench/scan_accuracy.py ARCHIVE [--manifest M] [--workers N]   # scans, then scores
    python bench/scan_accuracy.py --table OUT/jobs.parquet --manifest M  # scores a scan

Prints, per generated cause, how many jobs got the right category, `unknown`, another cause
or `none`; the share of failed jobs given the right cause (target >= 95 %), the share of
healthy jobs given a cause (target <= 1 %) and given `unknown`; and, for every miss, the most
common lead lines, so a gap in the rule library can be named precisely.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

EXPECTED = {
    "shm_bus_error": "shm",
    "cuda_oom": "gpu_oom",
    "oom_killer": "host_oom",
    "xid79": "hardware",
    "xid48": "hardware",
    "ext4_enospc": "filesystem",
    "permission_denied": "permissions",
    "driver_mismatch": "driver",
    "nccl_timeout": "network",
    "success": "none",
}
CAUSES = {"shm", "gpu_oom", "host_oom", "hardware", "driver", "filesystem", "permissions",
          "network"}  # fmt: skip


def report(table: Path, manifest: Path, show: int = 4) -> dict[str, float]:
    """Print the accuracy figures of one scan table against a manifest; return them."""
    import polars as pl

    truth = {}
    for line in manifest.read_text().splitlines():
        item = json.loads(line)
        truth[item["job"]] = item["cause"]
    rows = pl.read_parquet(table).select("job", "verdict", "reason", "signature", "evidence")
    outcome: dict[str, Counter[str]] = defaultdict(Counter)
    misses: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for row in rows.iter_rows(named=True):
        cause = truth.get(row["job"])
        if cause is None:
            continue
        verdict = row["verdict"] or f"unreadable ({row['reason']})"
        outcome[cause][verdict] += 1
        if verdict != EXPECTED[cause]:
            misses[(cause, verdict)][row["signature"] or row["evidence"] or "-"] += 1
    failed = {c: n for c, n in outcome.items() if c != "success"}
    failed_total = sum(sum(n.values()) for n in failed.values())
    failed_right = sum(n[EXPECTED[c]] for c, n in failed.items())
    healthy = outcome.get("success", Counter())
    healthy_total = sum(healthy.values())
    healthy_caused = sum(n for v, n in healthy.items() if v in CAUSES)
    healthy_unknown = healthy.get("unknown", 0)
    print(f"{'generated cause':<18} {'expected':<12} {'jobs':>5} {'right':>6}  other verdicts")
    for cause in sorted(outcome):
        counts = outcome[cause]
        right = counts[EXPECTED[cause]]
        others = ", ".join(f"{v} {n}" for v, n in counts.most_common() if v != EXPECTED[cause])
        print(f"{cause:<18} {EXPECTED[cause]:<12} {sum(counts.values()):>5} {right:>6}  {others}")
    figures = {
        "failed_right": failed_right / failed_total if failed_total else 1.0,
        "healthy_caused": healthy_caused / healthy_total if healthy_total else 0.0,
        "healthy_unknown": healthy_unknown / healthy_total if healthy_total else 0.0,
    }
    print(
        f"\nfailed jobs given the right cause: {failed_right}/{failed_total} = "
        f"{100 * figures['failed_right']:.1f} % (target >= 95 %)"
    )
    print(
        f"healthy jobs given a cause:        {healthy_caused}/{healthy_total} = "
        f"{100 * figures['healthy_caused']:.1f} % (target <= 1 %)"
    )
    print(
        f"healthy jobs given `unknown`:      {healthy_unknown}/{healthy_total} = "
        f"{100 * figures['healthy_unknown']:.1f} %"
    )
    if misses:
        print("\nmisses (generated cause -> verdict: most common lead lines)")
        for (cause, verdict), lines in sorted(misses.items(), key=lambda kv: -sum(kv[1].values())):
            print(f"  {cause} -> {verdict}: {sum(lines.values())} jobs")
            for text, count in lines.most_common(show):
                print(f"      {count:>4} x {text[:220]}")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("archive", nargs="?", type=Path, help="a gen_archive.py output folder")
    parser.add_argument("--manifest", type=Path, default=None)
    parser.add_argument("--table", type=Path, default=None, help="score this jobs.parquet")
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args()
    if args.table is None and args.archive is None:
        parser.error("give an ARCHIVE to scan or a --table to score")
    manifest = args.manifest or Path(str(args.archive).rstrip("/") + ".manifest.jsonl")
    table = args.table
    if table is None:
        out = Path(tempfile.mkdtemp(prefix="crashlens-accuracy-"))
        command = [
            sys.executable,
            "-m",
            "crashlens",
            "scan",
            str(args.archive),
            "--out",
            str(out),
            "--no-cache",
            "--workers",
            str(args.workers),
            "--summary",
            "json",
        ]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        table = out / "jobs.parquet"
    report(table, manifest)


if __name__ == "__main__":
    main()
