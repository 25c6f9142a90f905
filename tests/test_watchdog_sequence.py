"""A NCCL watchdog timeout reads differently by where it stands in its group's sequence.

ProcessGroupNCCL numbers a group's collectives (`WorkNCCL(SeqNum=N, ...)`) and NCCL sets up a
communicator's connections on its first ones. A timeout on one of the first collectives is what a
network that never connected looks like (a wrong interface, a firewall): `network`. A timeout
after a thousand collectives had completed over the same connections says another rank stopped
joining (stalled or died): the line shows that the run failed, and the cause comes from the other
evidence (a dead GPU in the kernel log) or is `unknown`. Logs written for the test."""

from __future__ import annotations

from pathlib import Path

from crashlens.pipeline import analyze, analyze_inputs

from conftest import sample

WATCHDOG = (
    "[rank5]:[E1203 04:11:52.530119206 ProcessGroupNCCL.cpp:616] [Rank 5] Watchdog caught"
    " collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=50331648,"
    " NumelOut=50331648, Timeout(ms)=600000) ran for 600042 milliseconds before timing out.\n"
)
TAIL = (
    "[rank5]:[E1203 04:11:52.530402117 ProcessGroupNCCL.cpp:630] [Rank 5] Some NCCL operations"
    " have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU"
    " operations might run on corrupted/incomplete data.\n"
    "[rank5]:[E1203 04:11:52.530417331 ProcessGroupNCCL.cpp:636] [Rank 5] To avoid data"
    " inconsistency, we are taking the entire process down.\n"
    "W1203 04:11:54.114000 88 torch/distributed/elastic/multiprocessing/api.py:897] Sending"
    " process 101 closing signal SIGTERM\n"
    "E1203 04:11:55.201000 88 torch/distributed/elastic/multiprocessing/api.py:869] failed"
    " (exitcode: -6) local_rank: 1 (pid: 102) of binary: /usr/bin/python3\n"
)
STEPS = "".join(
    f"{{'loss': {2.1 - step / 1000:.4f}, 'grad_norm': 0.41, 'epoch': 0.{step:02d}}}\n"
    for step in range(1, 6)
)
XID_79 = (
    "[Tue Dec  3 04:01:37 2024] NVRM: Xid (PCI:0000:3b:00): 79, pid=2211, name=python3, GPU has"
    " fallen off the bus.\n"
)


def _report(tmp_path: Path, seq: int, dmesg: str | None = None):  # type: ignore[no-untyped-def]
    folder = tmp_path / f"seq-{seq}"
    folder.mkdir()
    (folder / "train.log").write_text(STEPS + WATCHDOG.format(seq=seq) + TAIL, encoding="utf-8")
    if dmesg is not None:
        (folder / "dmesg.txt").write_text(dmesg, encoding="utf-8")
    return analyze([str(folder)])


def _rules(report) -> set[str]:  # type: ignore[no-untyped-def]
    return {item.rule for cause in report.causes for item in cause.evidence if item.rule}


def test_a_timeout_on_a_first_collective_counts_for_the_network(tmp_path: Path) -> None:
    report = _report(tmp_path, 1)
    assert str(report.verdict) == "network"
    assert "network-nccl-watchdog-timeout" in _rules(report)


def test_a_timeout_after_a_thousand_collectives_names_no_cause_by_itself(tmp_path: Path) -> None:
    report = _report(tmp_path, 48211)
    assert str(report.verdict) == "unknown", [(c.category, c.confidence) for c in report.causes]
    rules = _rules(report)
    assert "network-nccl-watchdog-timeout-after-traffic" in rules
    assert "network-nccl-watchdog-timeout" not in rules


def test_the_boundary_is_the_thousandth_collective(tmp_path: Path) -> None:
    assert "network-nccl-watchdog-timeout" in _rules(_report(tmp_path, 999))
    assert "network-nccl-watchdog-timeout-after-traffic" in _rules(_report(tmp_path, 1000))


def test_a_late_timeout_beside_a_dead_gpu_is_the_hardware(tmp_path: Path) -> None:
    report = _report(tmp_path, 48211, dmesg=XID_79)
    assert str(report.verdict) == "hardware"


def test_the_shared_sample_s_late_timeout_is_read_as_after_traffic() -> None:
    """The reproduced torchrun log times out on collective 48,211: the parser's `nccl.timeout`
    fact carries that number, and only the after-traffic rule hits its watchdog lines."""
    [analysis] = analyze_inputs(
        [str(sample("launcher/torchrun_nccl_watchdog_timeout_sigabrt_REPRO.log"))]
    )
    rules = {hit.rule_id for hit in analysis.hits}
    assert "network-nccl-watchdog-timeout-after-traffic" in rules
    assert "network-nccl-watchdog-timeout" not in rules
