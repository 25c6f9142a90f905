"""The OOM killer's report, put back together from the lines the scan stops at.

A kill is told in up to four lines, any of which may be missing (rate-limited printk, a cut
log) or printed by an older kernel in another shape:

    memory: usage 8388608kB, limit 8388608kB, failcnt 412          (a cgroup limit)
    oom-kill:constraint=CONSTRAINT_MEMCG,...,task=python,pid=4242,uid=0   (summary, 4.19+)
    Memory cgroup out of memory: Kill process 4242 (python) score 998   (announce, older)
    Killed process 4242 (python) total-vm:..., anon-rss:...kB, ...   (the kill itself)

`OomReader` keeps the pending parts and emits one `kernel.oom_kill` per victim into the store,
with what each part added; a summary or announce that no kill line completed still counts.
"""

from __future__ import annotations

import re

from crashlens.model import Line
from crashlens.parsers.dmesg.store import PENDING_LINES, EventStore, Pending, to_int
from crashlens.text.values import bounded_int

_OOM_SUMMARY = re.compile(r"oom-kill:(.*)")
_OOM_ANNOUNCE = re.compile(
    r"(Memory cgroup out of memory|Out of memory[^:]*): Kill process (\d+) \((.*?)\)"
    r"(?: score (\d+))?"
)
_OOM_KILLED = re.compile(
    r"(?:(Memory cgroup out of memory|Out of memory[^:]*): )?Killed process (\d+),? "
    r"(?:UID \d+, )?\((.*?)\)(.*)"
)
_OOM_SIZES = re.compile(r"(total-vm|anon-rss|file-rss|shmem-rss):[ \t]*(\d+)[ \t]*kB")
_MEMCG_LIMIT = re.compile(r"^memory: usage (\d+)kB, limit (\d+)kB")


class OomReader:
    """The pending parts of OOM kill reports of one kernel log."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.summary: Pending | None = None
        self.announce: Pending | None = None
        self.memcg_limit: Pending | None = None

    def read_summary(self, line: Line) -> None:
        found = _OOM_SUMMARY.search(line.text)
        if not found:
            return
        self.flush_summary()
        fields: dict[str, str] = {}
        for item in found[1].split(","):
            name, _, value = item.partition("=")
            if name in ("constraint", "oom_memcg", "task_memcg", "task", "pid") and value:
                fields[name] = value.strip()
        self.summary = Pending(line, fields)

    def read_memcg_limit(self, line: Line) -> None:
        found = _MEMCG_LIMIT.search(line.text)
        if found:
            self.memcg_limit = Pending(line, {"limit": found[2]})

    def read_announce(self, line: Line) -> None:
        found = _OOM_ANNOUNCE.search(line.text)
        if not found:
            return
        self.flush_announce()
        fields = {"pid": found[2], "name": found[3], "score": found[4] or ""}
        if found[1].startswith("Memory cgroup"):
            fields["memcg"] = "1"
        self.announce = Pending(line, fields)

    def read_killed(self, line: Line) -> None:
        found = _OOM_KILLED.search(line.text)
        if not found:
            return
        pid, name = found[2], found[3]
        read = ((key, bounded_int(value)) for key, value in _OOM_SIZES.findall(found[4]))
        sizes = {key: size for key, size in read if size is not None}
        announce = self.announce
        where, memcg, score = line, bool(found[1] and found[1].startswith("Memory cgroup")), None
        if announce is not None and announce.fields["pid"] == pid:
            self.announce = None
            where = announce.line
            memcg = memcg or "memcg" in announce.fields
            score = to_int(announce.fields["score"])
        else:
            self.flush_announce()
        summary = self._take_summary(line.lineno, pid, name)
        self._add_kill(where, pid, name, memcg, summary, sizes, score)

    def _take_summary(self, lineno: int, pid: str, name: str) -> dict[str, str]:
        """The `oom-kill:` summary printed just before this kill, if it names the same task."""
        summary = self.summary
        if summary is None or lineno - summary.lineno > PENDING_LINES:
            self.flush_summary()
            return {}
        fields = summary.fields
        same = (
            "pid" not in fields
            or fields["pid"] == pid
            or name.startswith(fields.get("task", "\0"))
            or fields.get("task", "\0").startswith(name)
        )
        if not same:
            self.flush_summary()
            return {}
        self.summary = None
        return fields

    def _add_kill(
        self, where: Line, pid: str, name: str, memcg: bool, summary: dict[str, str],
        sizes: dict[str, int], score: int | None, from_summary: bool | None = None,
    ) -> None:  # fmt: skip
        constraint = summary.get("constraint")
        memcg = memcg or constraint == "CONSTRAINT_MEMCG" or "oom_memcg" in summary
        limit = None
        if self.memcg_limit is not None and where.lineno - self.memcg_limit.lineno < 200:
            limit = to_int(self.memcg_limit.fields["limit"]) if memcg else None
            self.memcg_limit = None
        self.store.add(
            ("oom", pid, name), "kernel.oom_kill", name, where, pid=to_int(pid),
            anon_rss_kb=sizes.get("anon-rss"), total_vm_kb=sizes.get("total-vm"),
            file_rss_kb=sizes.get("file-rss"), shmem_rss_kb=sizes.get("shmem-rss"),
            memcg=memcg, cgroup=summary.get("task_memcg") or summary.get("oom_memcg"),
            constraint=constraint, memcg_limit_kb=limit, score=score, from_summary=from_summary,
        )  # fmt: skip

    def flush_summary(self) -> None:
        """A summary no kill line completed still names the victim: keep it."""
        summary, self.summary = self.summary, None
        if summary is None or "task" not in summary.fields or "pid" not in summary.fields:
            return
        where = summary.line
        fields = summary.fields
        self._add_kill(where, fields["pid"], fields["task"], False, fields, {}, None, True)

    def flush_announce(self) -> None:
        announce, self.announce = self.announce, None
        if announce is None:
            return
        where = announce.line
        fields = announce.fields
        self._add_kill(
            where, fields["pid"], fields["name"], "memcg" in fields, {}, {}, to_int(fields["score"])
        )

    def flush(self) -> None:
        """At the end of the log: keep what pending parts still name."""
        self.flush_announce()
        self.flush_summary()
