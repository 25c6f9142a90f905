"""How much a file's first 64 KiB look like a kernel log: the share of lines with a kernel
prefix, or else of kernel message bodies (a node-problem-detector dump has no prefixes)."""

from __future__ import annotations

import re

from crashlens.parsers.dmesg.prefixes import DECODE, JOURNAL_ISO, SYSLOG, has_kernel_prefix

_SNIFF_HEADER = re.compile(
    r"^(?:-- (?:Logs begin at |Journal begins at |Boot [0-9a-f]{32} --|No entries --)"
    r"|(?:Panic|Oops|Emergency|Shutdown|Unknown)#\d+ Part\d+)",
    re.MULTILINE,
)
_SNIFF_KERNEL = re.compile(
    r"Call Trace:|Modules linked in:|\[Hardware Error\]|EXT[234]-fs |XFS \(|Killed process \d"
    r"|invoked oom-killer|out of memory: Kill|oom-kill:constraint=|INFO: task .+ blocked for"
    r"|unregister_netdevice: |BUG: unable to handle|Kernel panic - not syncing|NVRM: "
    r"|Oops: \d|divide error: \d|\]: segfault at |Tainted: |RIP: [0-9a-f]{4}:|EDAC MC"
    r"|pcieport [0-9a-f]{4}:|VFS: |blk_update_request|Buffer I/O error|nvidia-peermem "
)
# Markers of the other kinds that quote kernel messages (a launcher log with a traceback and a
# `Killed process`, an nvidia-smi or df dump beside them): kernel words amid these are not a log.
_OTHER_KINDS = re.compile(
    r"Traceback \(most recent call last\)|torch\.distributed|\[rank\d+\]|srun: |slurmstepd"
    r"|NCCL (?:INFO|WARN)|ChildFailedError|deepspeed|accelerate launch|torchrun"
    r"|NVIDIA-SMI|\"Id\": |Filesystem +(?:1K-blocks|Size|Inodes)"
)
_LOG_LEVELS = frozenset({"TRACE", "DEBUG", "INFO", "WARN", "WARNING", "ERROR", "FATAL", "CRITICAL"})
"""Level words that stand where a syslog or journal line has its host: an application's own
timestamped log (Rust's tracing, `2024-05-02T10:11:12.000000Z ERROR shard-manager: ...`) is
not a kernel log."""
_SNIFF_LINES = 60
"""Lines the sniffer classifies: enough to judge the share of kernel-prefixed lines."""


def sniff_kernel_log(head: str) -> float:
    """Score that `head` is a kernel log (see `KernelLogParser.sniff`)."""
    if _SNIFF_HEADER.search(head[:4096]):
        return 0.95
    if '"apiVersion"' in head[:4096] and head.lstrip()[:1] in ("{", "["):
        return 0.0  # Kubernetes events JSON quotes the kernel's OOM line in its messages
    lines = [line.rstrip("\r") for line in head.split("\n")[:_SNIFF_LINES] if line.strip()]
    if not lines:
        return 0.0
    strong = syslog = kernel_ident = 0
    for line in lines:
        decoded = DECODE.match(line)
        body = line[decoded.end() :] if decoded else line
        if has_kernel_prefix(body):
            strong += 1
        elif _system_log_line(body):
            syslog += 1
            kernel_ident += " kernel: " in body
    total = len(lines)
    if strong / total >= 0.5:
        return 0.75 + 0.2 * strong / total
    if syslog / total >= 0.5:
        return 0.7 + 0.25 * kernel_ident / syslog
    if (strong + syslog) / total >= 0.3:
        return 0.6
    # Kernel words are counted only here: a log with kernel prefixes never needs them.
    words = sum(1 for line in lines if _SNIFF_KERNEL.search(line))
    return _sniff_bodies(head, words, total)


def _system_log_line(body: str) -> bool:
    """A syslog or journal line whose host field is a host, not an application's level word."""
    if m := SYSLOG.match(body):
        return m.group(7) not in _LOG_LEVELS
    if m := JOURNAL_ISO.match(body):
        return m.group(9) not in _LOG_LEVELS
    return False


def _sniff_bodies(head: str, words: int, total: int) -> float:
    """Unprefixed text: kernel message bodies (node-problem-detector) or something else."""
    if not words:
        return 0.0
    if _OTHER_KINDS.search(head) and words < total / 2:
        return 0.2
    return 0.6 + 0.3 * min(1.0, words / max(3.0, total * 0.3))
