"""`crashlens collect`: fake tools on PATH print the real sample outputs; no GPU, no root.

Every tool collect runs is a small shell script in tmp_path/bin that `cat`s a shared sample
(or exits 1 with a refusal, or sleeps past the time limit), and PATH holds only that folder,
so the tests see exactly what a machine without GPUs and without root would give.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import shutil
import stat
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crashlens.cli import app
from crashlens.collect import (
    KERNEL_LOG,
    MANIFEST,
    REPORT,
    STEPS,
    Attempt,
    CollectError,
    CollectOptions,
    cgroup_memory_text,
    collect,
)
from crashlens.model import Report
from crashlens.pipeline import analyze

from conftest import sample

CAT = shutil.which("cat") or "/bin/cat"
SLEEP = shutil.which("sleep") or "/bin/sleep"
RUNNER = CliRunner()

XID79_DMESG = "dmesg/dmesg_raw_pcie_aer_surprise_down_xid79_REPRO.txt"
OOM_DMESG = "dmesg/dmesg_raw_global_oom_killer_full_report_REPRO.txt"
NCCL_TIMEOUT_LOG = "launcher/torchrun_nccl_watchdog_timeout_sigabrt_REPRO.log"
SIGKILL_LOG = "launcher/torchrun_glog_prefix_sigkill_host_oom_progress_cr_REPRO.log"
SMI_TABLE = "nvidia_smi/table_550.90.07_8xh100_no_processes.txt"
SMI_Q = "nvidia_smi/q_535.154.05_8xh100.txt"


def _tool(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie waiting for its parent does not run)."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat_line.rsplit(")", 1)[1].split()[0] != "Z"


def _cat(relative: str) -> str:
    return f"exec {CAT} '{sample(relative)}'"


@pytest.fixture
def fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH with fake nvidia-smi, dmesg, df, bash (ulimit) and ipcs printing real samples."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _tool(
        bin_dir,
        "nvidia-smi",
        f'if [ "$1" = "-q" ]; then {_cat(SMI_Q)}; fi\n{_cat(SMI_TABLE)}',
    )
    _tool(bin_dir, "dmesg", _cat(XID79_DMESG))
    _tool(
        bin_dir,
        "df",
        f'if [ "$2" = "/dev/shm" ]; then {_cat("df/df_h_dev_shm_host_or_ipc_host_REPRO.txt")}; fi\n'
        f'if [ "$1" = "-i" ]; then {_cat("df/df_i_inodes_exhausted_REPRO.txt")}; fi\n'
        f"{_cat('df/df_h_centos7_jc_fixture.txt')}",
    )
    _tool(bin_dir, "bash", _cat("ulimit/ulimit_a_bash52_memlock_8192_REPRO.txt"))
    _tool(
        bin_dir,
        "ipcs",
        f'if [ "$1" = "-l" ]; then {_cat("ipcs/ipcs_l_limits_REPRO.txt")}; fi\n'
        f"{_cat('ipcs/ipcs_m_empty_REPRO.txt')}",
    )
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def _no_cgroup(tmp_path: Path) -> dict[str, Path]:
    return {"cgroup_root": tmp_path / "no-cgroup", "proc_self_cgroup": tmp_path / "no-proc"}


def _kernel_files(tmp_path: Path, kern_log: Path | None = None) -> tuple:
    """STEPS with the kernel log's file fallbacks pointed into tmp_path."""
    attempts = tuple(
        a if a.argv else dataclasses.replace(a, path=str(kern_log or tmp_path / "no-kern.log"))
        for a in KERNEL_LOG.attempts
    )
    kernel = dataclasses.replace(KERNEL_LOG, attempts=attempts)
    return tuple(kernel if s.name == KERNEL_LOG.name else s for s in STEPS)


def _members(bundle: Path) -> dict[str, bytes]:
    with tarfile.open(bundle, "r:gz") as archive:
        found = {}
        for member in archive.getmembers():
            stream = archive.extractfile(member)
            assert stream is not None
            found[member.name] = stream.read()
            assert member.uname == "" and member.uid == 0  # no owner names in the archive
    return found


def _record(bundle: Path) -> dict:
    return json.loads(_members(bundle)[f"crashlens-collect/{REPORT}"])


def _step(record: dict, name: str) -> dict:
    return next(s for s in record["steps"] if s["name"] == name)


def _rules(report: Report) -> set[str]:
    return {e.rule for c in report.causes for e in c.evidence if e.rule}


def test_bundle_of_a_node_with_xid79_is_hardware(fake_bin: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle.tar.gz"
    options = CollectOptions(
        logs=(str(sample(NCCL_TIMEOUT_LOG)),), steps=_kernel_files(tmp_path), **_no_cgroup(tmp_path)
    )
    result = collect(bundle, options)

    members = _members(bundle)
    names = {name.split("/", 1)[1] for name in members}
    assert {MANIFEST, REPORT, "nvidia-smi.txt", "nvidia-smi-q.txt", "dmesg.txt"} <= names
    assert {"df-h.txt", "df-h-dev-shm.txt", "df-i.txt", "ulimit-a.txt", "ipcs-m.txt"} <= names
    assert "logs/torchrun_nccl_watchdog_timeout_sigabrt_REPRO.log" in names
    record = _record(bundle)
    assert record["crashlens_collect"] == 1 and record["redacted"] is True
    statuses = {s["name"]: s["status"] for s in record["steps"]}
    assert statuses["nvidia-smi"] == statuses["nvidia-smi-q"] == "ok"
    assert statuses["kernel-log"] == statuses["df"] == statuses["ulimit"] == "ok"
    assert statuses["log"] == "ok"
    assert statuses["cgroup-memory"] == "failed"
    assert statuses["container"] in ("skipped", "failed")  # no docker on this PATH
    assert [s.name for s in result.steps] == [s["name"] for s in record["steps"]]
    manifest = members[f"crashlens-collect/{MANIFEST}"].decode()
    assert "ok       kernel-log     dmesg.txt" in manifest

    report = analyze([str(bundle)])
    assert report.verdict == "hardware"
    cited = {e.path for c in report.causes[:1] for e in c.evidence}
    assert f"{bundle}!crashlens-collect/dmesg.txt" in cited
    skipped = {i.path: i.reason for i in report.inputs if i.status == "skipped"}
    assert set(skipped) == {
        f"{bundle}!crashlens-collect/{MANIFEST}",
        f"{bundle}!crashlens-collect/{REPORT}",
    }


def test_refusals_timeouts_and_missing_tools_are_recorded_never_fatal(
    fake_bin: Path, tmp_path: Path
) -> None:
    (fake_bin / "nvidia-smi").unlink()  # no GPU, no driver: the tool is not there
    _tool(
        fake_bin,
        "dmesg",
        "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2\nexit 1",
    )
    sleeper = tmp_path / "sleeper.pid"  # journalctl hangs past the limit, in a child
    _tool(fake_bin, "journalctl", f"{SLEEP} 30 & echo $! > '{sleeper}'\nwait\n{_cat(OOM_DMESG)}")
    _tool(fake_bin, "ipcs", "echo 'ipcs: Permission denied' >&2\nexit 1")
    kern_log = tmp_path / "kern.log"
    shutil.copyfile(sample(OOM_DMESG), kern_log)
    bundle = tmp_path / "bundle.tar.gz"
    options = CollectOptions(
        logs=(str(sample(SIGKILL_LOG)), str(tmp_path / "no-such.log")),
        # A fake tool answers in milliseconds; the limit is generous, so that a loaded machine
        # does not turn the quick refusals into timeouts too.
        timeout=3.0,
        steps=_kernel_files(tmp_path, kern_log),
        **_no_cgroup(tmp_path),
    )
    collect(bundle, options)
    assert not _alive(int(sleeper.read_text())), "the hung journalctl's child was not killed"

    record = _record(bundle)
    smi = _step(record, "nvidia-smi")
    assert smi["status"] == "failed"
    assert smi["attempts"][0]["outcome"] == "not-found"
    kernel = _step(record, "kernel-log")
    outcomes = [a["outcome"] for a in kernel["attempts"]]
    assert outcomes == ["permission-denied (exit 1)", "timeout", "ok"]
    assert "read kernel buffer failed" in kernel["attempts"][0]["detail"]
    assert kernel["status"] == "ok" and kernel["outputs"] == ["kern.log"]
    assert _step(record, "ipcs-m")["attempts"][0]["outcome"] == "permission-denied (exit 1)"
    assert _step(record, "log")["status"] == "ok"
    missing = [s for s in record["steps"] if s["name"] == "log"][1]
    assert missing["status"] == "failed"
    assert missing["attempts"][0]["detail"] == "no such file or directory"
    manifest = _members(bundle)[f"crashlens-collect/{MANIFEST}"].decode()
    assert "dmesg -T: permission-denied (exit 1) (dmesg: read kernel buffer failed" in manifest
    assert "journalctl -k --since -2h --no-pager: timeout (killed after 3 s)" in manifest

    # the refusals recorded in the manifest are not evidence: the kernel's OOM report decides
    report = analyze([str(bundle)])
    assert report.verdict == "host_oom"
    assert not any(c.category.value == "permissions" for c in report.causes)
    assert "host-oom-kernel-killed-process" in _rules(report)


def test_no_step_needs_root_or_a_gpu() -> None:
    for step in STEPS:
        for attempt in step.attempts:
            if attempt.argv:
                assert attempt.argv[0] not in ("sudo", "su", "doas", "pkexec", "runuser")
    assert all(isinstance(a, Attempt) for s in STEPS for a in s.attempts)


def test_cgroup_oom_kills_make_a_bare_sigkill_host_oom(fake_bin: Path, tmp_path: Path) -> None:
    _tool(fake_bin, "dmesg", "exit 1")
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "memory.max").write_text("17179869184\n")
    (root / "memory.peak").write_text("17179860000\n")
    (root / "memory.events").write_text(
        "low 0\nhigh 0\nmax 41\noom 2\noom_kill 2\noom_group_kill 0\n"
    )
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text("0::/\n")
    bundle = tmp_path / "bundle.tar.gz"
    options = CollectOptions(
        logs=(str(sample(SIGKILL_LOG)),),
        steps=_kernel_files(tmp_path),
        cgroup_root=root,
        proc_self_cgroup=proc,
    )
    collect(bundle, options)
    text = _members(bundle)["crashlens-collect/cgroup-memory.txt"].decode()
    assert f"{root}/memory.max: 17179869184 (16.0 GiB)" in text
    assert f"{root}/memory.events: oom_kill 2" in text
    record = _record(bundle)
    assert _step(record, "cgroup-memory")["note"] == "the cgroup's OOM killer has killed processes"

    report = analyze([str(bundle)])
    assert report.verdict == "host_oom"
    assert "host-oom-cgroup-oom-kill-counter" in _rules(report)


def test_cgroup_v1_fallback(tmp_path: Path) -> None:
    memory = tmp_path / "memory" / "docker" / "abc"
    memory.mkdir(parents=True)
    (memory / "memory.limit_in_bytes").write_text("8589934592\n")
    (memory / "memory.failcnt").write_text("17\n")
    (memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
    proc = tmp_path / "cgroup"
    proc.write_text("12:memory:/docker/abc\n0::/\n")
    text, note = cgroup_memory_text(tmp_path, proc)
    assert f"{memory}/memory.limit_in_bytes: 8589934592 (8.0 GiB)" in text
    assert f"{memory}/memory.oom_control: oom_kill 1" in text
    assert note
    with pytest.raises(FileNotFoundError):
        cgroup_memory_text(tmp_path / "nothing", proc)


def test_logs_are_redacted_by_default(fake_bin: Path, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        sample(SIGKILL_LOG).read_text()
        + "loading /home/alicia/data/shard-0001.arrow\n"
        + "MASTER_ADDR=gpu-node-17.cluster.internal\n"
    )
    out = tmp_path / "bundle"
    mapping = tmp_path / "map.json"
    result = RUNNER.invoke(
        app,
        ["collect", str(log), "--out", str(out), "--timeout", "5", "--redact-map", str(mapping)],
    )
    assert result.exit_code == 0, result.output
    copied = (out / "logs" / "train.log").read_text()
    assert "alicia" not in copied and "gpu-node-17" not in copied
    assert "/home/user-" in copied
    assert "alicia" not in (out / MANIFEST).read_text() + (out / REPORT).read_text()
    assert "alicia" in mapping.read_text()
    assert "redacted" in result.stdout

    plain = tmp_path / "plain"
    result = RUNNER.invoke(app, ["collect", str(log), "--out", str(plain), "--no-redact"])
    assert result.exit_code == 0, result.output
    assert "/home/alicia/" in (plain / "logs" / "train.log").read_text()
    assert "NOT redacted" in result.stdout
    assert analyze([str(plain)]).verdict == analyze([str(out)]).verdict


def test_huge_and_compressed_logs(fake_bin: Path, tmp_path: Path) -> None:
    huge = tmp_path / "huge.log"
    with huge.open("wb") as stream:
        for n in range(60_000):
            stream.write(f"step {n} loss 0.{n:05d}\n".encode())
        stream.write(sample(SIGKILL_LOG).read_bytes())
    packed = tmp_path / "rank1.log.gz"
    packed.write_bytes(gzip.compress(sample(NCCL_TIMEOUT_LOG).read_bytes()))
    out = tmp_path / "bundle"
    options = CollectOptions(
        logs=(str(huge), str(packed)),
        redact=False,
        max_log_bytes=256 * 1024,
        steps=_kernel_files(tmp_path),
        **_no_cgroup(tmp_path),
    )
    result = collect(out, options)
    copied = (out / "logs" / "huge.log").read_bytes()
    assert len(copied) <= 256 * 1024
    assert copied.startswith(b"step ") and copied.endswith(sample(SIGKILL_LOG).read_bytes())
    assert (out / "logs" / "rank1.log").read_bytes() == sample(NCCL_TIMEOUT_LOG).read_bytes()
    logs = [s for s in result.steps if s.name == "log"]
    assert "kept the last" in logs[0].note and logs[0].status == "partial"
    assert "kept the last" in (out / MANIFEST).read_text()


def test_bad_out_is_the_only_fatal_error(fake_bin: Path, tmp_path: Path) -> None:
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("x")
    with pytest.raises(CollectError):
        collect(busy, CollectOptions())
    result = RUNNER.invoke(app, ["collect", "--out", str(busy)])
    assert result.exit_code == 2
    assert "cannot write the bundle" in result.stderr
    result = RUNNER.invoke(app, ["collect", "--out", str(tmp_path / "no" / "b.tar.gz")])
    assert result.exit_code == 2


def test_a_redacted_log_is_cut_like_a_plain_one_where_redaction_keeps_up() -> None:
    from crashlens.collect import MAX_LOG_BYTES, MAX_LOG_BYTES_REDACTED, redacted_log_limit

    try:
        import hyperscan  # noqa: F401
    except ImportError:
        assert redacted_log_limit() == MAX_LOG_BYTES_REDACTED
    else:
        assert redacted_log_limit() == MAX_LOG_BYTES
