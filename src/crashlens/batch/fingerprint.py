"""Fingerprints: the same failure in two jobs gets the same id, whatever its pids and paths.

A fingerprint hashes three things: the verdict, the rule of the job's lead evidence (the
strongest root line of the winning cause, ties broken by rule id, never by file order) and
that line's text *normalized*: everything that differs between two occurrences of one failure
(pids, tids, ranks, host names, paths, addresses, PCI bus ids, UUIDs, sizes, durations,
timestamps, long numbers) is replaced by a placeholder, while the small numbers that name a
failure (Xid 79, Errno 28, signal 7, exit code -9, CUDA error 804) are kept.

The id is `fp<version>-<16 hex>`. Any change to the normalization or to what is hashed bumps
FINGERPRINT_VERSION, so an upgrade shows up as new ids (and invalidates the scan cache)
instead of silently regrouping old history under old ids.
"""

from __future__ import annotations

import hashlib
import re

FINGERPRINT_VERSION = 2
"""2: block device names (`EXT4-fs (md0)`, `dev nvme0n1p2`) are masked, and a path is masked
whole even where an id inside it was masked first (`/cache/data-<hex>.arrow`)."""
MAX_SIGNATURE_CHARS = 240

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_DEVICE = (
    r"(?:sd|vd|xvd)[a-z]{1,3}\d*|hd[a-z]\d*|nvme\d+(?:n\d+(?:p\d+)?)?|md\d+(?:p\d+)?|dm-\d+"
    r"|loop\d+|mmcblk\d+(?:p\d+)?"
)
"""Linux block device names (SCSI/virtio/Xen/IDE disks, NVMe, md RAID, device mapper...)."""
_PREFIXES = re.compile(
    r"^(?:\s*(?:<host>:?|<time>|\[<time>\]|\[ ?<num>\]|<\d>|" + _MONTH + r" +\d{1,2}(?= )"
    r"|\[(?:rank|default)(?:\d+|<n>)\]:|rank(?:\d+|<n>):|\[ *\d+\.\d+\]"
    r"|\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [^\]\n]*\]|[\w.<>-]+ kernel:|kernel:)\s*)+"
)
_SUBSTITUTIONS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, flags), replacement)
    for pattern, replacement, flags in (
        # identifiers first: their digits must not be taken for numbers below
        (r"\bGPU-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b", "<uuid>", 0),
        (r"\b[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b", "<uuid>", 0),
        (
            r"\b(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\b"
            r"|\b[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\b",
            "<pci>",
            0,
        ),
        (r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b", "<ip>", 0),
        (
            r"\b\d{4}-\d{2}-\d{2}(?:[T _]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d+)?)?"
            r"(?:Z|[+-]\d{2}:?\d{2})?\b",
            "<time>",
            0,
        ),
        (r"\b[IWEF]\d{4} \d{2}:\d{2}:\d{2}(?:\.\d+)?(?: +\d+\b)?", "<time>", 0),
        (r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b", "<time>", 0),
        (r"\b0x[0-9a-fA-F]+\b", "<hex>", 0),
        (r"\b(python|pt_main_thread)[0-9.]*\b", r"\1", 0),
        (r"\bname=[^,\s]+", "name=<proc>", 0),
        (r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{8,}\b", "<hex>", 0),
        # a path, with any id already masked inside it (`/cache/data-<hex>.arrow`)
        (
            r"(?<![\w.<>])(?:~|\.{1,2})?(?:/(?:[^\s'\"<>():,;=\]\[]|<[a-z]+>)+)+/?",
            "<path>",
            0,
        ),
        # block devices, where the kernel names them (`EXT4-fs (md0)`, `dev sda,`, `nvme0:`):
        # the same disk failure on another node's disk is the same failure
        (r"\((?:" + _DEVICE + r")\)", "(<dev>)", 0),
        (r"\b(dev|device|disk|drive|on|of) (?:" + _DEVICE + r")\b", r"\1 <dev>", 0),
        (r"(?<![\w/-])(?:" + _DEVICE + r")(?=:)", "<dev>", 0),
        (r"\b([\w-]+\.(?:py|cc|cpp|cxx|c|h|hpp|cu|cuh|rs|go|java)):\d+", r"\1:<n>", 0),
        (r"\b(line) \d+", r"\1 <n>", re.IGNORECASE),
        (
            r"-?\d+(?:\.\d+)?\s?(?:[KMGTPE]i?B|[kKMGTPE]B|bytes?|B)\b",
            "<size>",
            0,
        ),
        (
            r"\b\d+(?:\.\d+)?\s?(?:ms|us|µs|ns|sec|secs|seconds?|milliseconds?|minutes?|s)\b",
            "<dur>",
            0,
        ),
        (r"\b(rank|default|node|worker|gpu|cuda|device|dev)(\d+)\b", r"\1<n>", re.IGNORECASE),
        (
            r"\b(pids?|tids?|rank|local_rank|global_rank|gpu|device|cuda|node|node_rank|worker"
            r"|uid|gid|inode|offset|group|block|partition|subpartition|port|process|task|job"
            r"|step|epoch|iteration|iter|seqnum|numelin|numelout|opid|comm|cpu|core|socket)"
            r"(\(s\))?(\s*[:=#]?\s*\(?\s*)-?\d+(?:\s*,\s*\d+)*",
            r"\1\2\3<n>",
            re.IGNORECASE,
        ),
        (r"\[\d{1,4}\]", "[<n>]", 0),
        (r"(?<![\w.])(?:\d+\.\d+|\.\d+)(?:[eE][-+]?\d+)?\b", "<num>", 0),
        (r"(?<=[\w)\]])=-?\d+\b", "=<n>", 0),
        (r"\b\d{4,}\b", "<num>", 0),
        (r"\s+", " ", 0),
    )
)


def normalize(text: str, host: str | None = None) -> str:
    """The failure line with everything that varies between occurrences replaced."""
    if host:
        text = text.replace(host, "<host>")
    text = _PREFIXES.sub("", text)
    for pattern, replacement in _SUBSTITUTIONS:
        text = pattern.sub(replacement, text)
    text = _PREFIXES.sub("", text.strip())
    return text[:MAX_SIGNATURE_CHARS]


def fingerprint(verdict: str, rule: str | None, signature: str) -> str:
    """The stable id of one failure: `fp<version>-<hash>`."""
    key = f"{FINGERPRINT_VERSION}\x1f{verdict}\x1f{rule or ''}\x1f{signature}"
    return f"fp{FINGERPRINT_VERSION}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
