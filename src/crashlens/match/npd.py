"""node-problem-detector's log-monitor rules, converted into crashlens site rules.

NPD (https://github.com/kubernetes/node-problem-detector) watches the kernel log, journald or
a file with a JSON config: `rules[]`, each with `type` (`temporary`: an event; `permanent`: a
node condition, named by `condition`), a `reason` and a Go regex `pattern`. `convert_config`
turns each into a rule file for `--rules DIR` (`match/site.py`):

- the category comes from `STOCK_REASONS` (NPD's stock reasons, with a role and weight), else
  from `--category REASON=CATEGORY`; a reason with neither is listed as not convertible;
- the pattern is rewritten for crashlens's single-line matching (`rewrite_pattern`): `\\s`
  becomes `[ \\t]`, a negated class also excludes `\\n`, a trailing `.*` / `.?` is dropped
  (`search` needs no tail), `.*` and `.+` elsewhere are bounded to `MAX_GAP` characters, a
  leading `^` is dropped (crashlens sees the line's prefixes: timestamps, `kernel:`); the
  result must hold a literal of 4+ characters;
- the examples: a real line of NPD's kind from the stock table when the pattern matches it,
  else a line generated from the pattern; the near miss is that line with one character of
  its literal text removed. A rule whose example cannot be generated (lookarounds,
  back-references) is written as `<id>.toml.todo` with a TODO header: `.todo` files are not
  loaded, so the rule counts only once its examples are filled in and the file renamed;
- not convertible, with the reason: a pattern over several lines (NPD's `bufferSize` buffer),
  a custom plugin's rule (a script, no pattern), a lookbehind, a regex Python cannot compile.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from re import _constants as _sre  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any

from crashlens.match.site import line_safety_problems

MAX_GAP = 500
"""Characters a `.*` or `.+` in the middle of an NPD pattern may span once converted."""


@dataclass(frozen=True, slots=True)
class StockReason:
    """How crashlens reads one of NPD's stock reasons."""

    category: str
    role: str
    weight: float
    step: str
    """What to do, one sentence."""
    example: str
    """A real kernel line of this kind (a body as /dev/kmsg gives it, with a dmesg prefix)."""


STOCK_REASONS: Mapping[str, StockReason] = {
    "OOMKilling": StockReason(
        "host_oom", "root", 0.9,
        "Give the job more host memory or lower its footprint (DataLoader workers, prefetch).",
        "[ 8211.523112] Out of memory: Killed process 41022 (python) total-vm:31020232kB, "
        "anon-rss:23467008kB, file-rss:1204kB, shmem-rss:0kB",
    ),
    "TaskHung": StockReason(
        "filesystem", "symptom", 0.3,
        "Find what the hung task waited on (its stack trace below the line: NFS, a disk).",
        "[ 2456.781230] INFO: task python:9331 blocked for more than 122 seconds.",
    ),
    "DockerHung": StockReason(
        "filesystem", "symptom", 0.3,
        "Find what the container runtime waited on (its stack trace below the line).",
        "INFO: task docker:20744 blocked for more than 120 seconds.",
    ),
    "AUFSUmountHung": StockReason(
        "filesystem", "symptom", 0.3,
        "Find what blocked the unmount (its stack trace below the line).",
        "INFO: task umount.aufs:21568 blocked for more than 120 seconds.",
    ),
    "UnregisterNetDevice": StockReason(
        "network", "symptom", 0.4,
        "Drain the node: a leaked network device reference blocks new pods' networking.",
        "unregister_netdevice: waiting for lo to become free. Usage count = 1",
    ),
    "UnregisterNetDeviceIssue": StockReason(
        "network", "symptom", 0.4,
        "Drain the node: a leaked network device reference blocks new pods' networking.",
        "unregister_netdevice: waiting for lo to become free. Usage count = 1",
    ),
    "KernelOops": StockReason(
        "driver", "symptom", 0.35,
        "Read the oops's module list and call trace: a kernel module (often a driver) crashed.",
        "BUG: unable to handle kernel NULL pointer dereference at 0000000000000078",
    ),
    "KernelPanic": StockReason(
        "driver", "symptom", 0.35,
        "Read the oops's module list and call trace: a kernel module (often a driver) crashed.",
        "divide error: 0000 [#1] SMP ",
    ),
    "Ext4Error": StockReason(
        "filesystem", "root", 0.85,
        "Unmount and check the filesystem (fsck), and check the disk's health.",
        "[ 5083.906722] EXT4-fs error (device nvme1n1p1): ext4_journal_check_start:83: "
        "comm python: Detected aborted journal",
    ),
    "Ext4Warning": StockReason(
        "filesystem", "context", 0.3,
        "Check the filesystem and the disk if the warnings repeat.",
        "[ 5083.906014] EXT4-fs warning (device nvme1n1p1): ext4_end_bio:347: I/O error 10 "
        "writing to inode 52428801 starting block 244190464)",
    ),
    "IOError": StockReason(
        "filesystem", "symptom", 0.6,
        "Check the disk behind the device (smartctl, nvme smart-log) and its filesystem.",
        "[ 5083.905601] Buffer I/O error on dev nvme1n1p1, logical block 244190208, "
        "lost async page write",
    ),
    "XfsHasShutdown": StockReason(
        "filesystem", "root", 0.9,
        "Unmount the filesystem, repair it (xfs_repair) and check the disk under it.",
        "[ 6120.331102] XFS (md0): Log I/O Error (0x2) detected at xlog_ioend_work+0x71/0x80 "
        "[xfs] (fs/xfs/xfs_log.c:1378).  Shutting down filesystem.",
    ),
    "FilesystemIsReadOnly": StockReason(
        "filesystem", "root", 0.85,
        "Find why the kernel remounted the filesystem read-only (the errors before the line).",
        "EXT4-fs (sda1): Remounting filesystem read-only",
    ),
    "MemoryReadError": StockReason(
        "hardware", "context", 0.3,
        "Watch the DIMM's corrected-error count (edac-util); replace it if the count grows.",
        "[1209871.204610] EDAC MC2: 1 CE memory read error on CPU_SrcID#1_MC#0_Chan#1_DIMM#0 "
        "(channel:1 slot:0 page:0x3f2e1d offset:0x4c0 grain:32 syndrome:0x0)",
    ),
    "CorruptDockerImage": StockReason(
        "filesystem", "symptom", 0.5,
        "Remove the corrupt image layers (docker image prune) and pull the image again.",
        "Error trying v2 registry: failed to register layer: rename "
        "/var/lib/docker/image/overlay2/layerdb/tmp/write-set-091 "
        "/var/lib/docker/image/overlay2/layerdb/sha256/4a1b: directory not empty",
    ),
    "CorruptDockerOverlay2": StockReason(
        "filesystem", "symptom", 0.5,
        "Remove the broken overlay2 layer (restart docker, prune) and check the disk under it.",
        "returned error: readlink /var/lib/docker/overlay2/l/ABCDEFGHIJ: invalid argument",
    ),
}  # fmt: skip
"""NPD's stock reasons (its `config/*.json`) and how crashlens reads them. A hung task is a
`filesystem` symptom because most hung tasks of a training node wait on storage (NFS, a
dying disk); a corrected memory error is context (it was corrected); an oops is a weak
`driver` symptom (a module crashed; its call trace names which)."""


@dataclass(frozen=True, slots=True)
class Converted:
    """One NPD rule as a crashlens rule file."""

    reason: str
    rule_id: str
    pattern: str
    text: str
    """The TOML file's content."""
    complete: bool
    """False when its examples could not be generated: written as `<id>.toml.todo`."""

    @property
    def filename(self) -> str:
        """`<id>.toml`, or `<id>.toml.todo` for a rule that needs its examples filled in."""
        return f"{self.rule_id}.toml" + ("" if self.complete else ".todo")


@dataclass(frozen=True, slots=True)
class Skipped:
    """An NPD rule that was not converted, and why."""

    reason: str
    why: str


@dataclass(frozen=True, slots=True)
class Conversion:
    """What `convert_config` made of one NPD config."""

    rules: tuple[Converted, ...]
    """Complete rules (they load and their examples pass)."""
    todo: tuple[Converted, ...]
    """Rules whose examples must be written by hand (not loaded until then)."""
    skipped: tuple[Skipped, ...]


class Unconvertible(ValueError):
    """An NPD pattern crashlens cannot match on one line; the message says why."""


def convert_config(
    config: object, categories: Mapping[str, str] | None = None, source: str = "config"
) -> Conversion:
    """Convert an NPD log-monitor config (parsed JSON); `categories` maps extra reasons."""
    categories = categories or {}
    if not isinstance(config, dict) or not isinstance(config.get("rules"), list):
        return Conversion((), (), (Skipped("-", "not an NPD monitor config (no `rules` list)"),))
    custom = config.get("plugin") == "custom"
    rules: list[Converted] = []
    todo: list[Converted] = []
    skipped: list[Skipped] = []
    used: set[str] = set()
    for index, item in enumerate(config["rules"]):
        if not isinstance(item, dict):
            skipped.append(Skipped(f"rules[{index}]", "not a JSON object"))
            continue
        reason = str(item.get("reason") or f"rules[{index}]")
        pattern = item.get("pattern")
        if custom or not isinstance(pattern, str):
            script = item.get("path", "?")
            why = f"a custom plugin's rule runs a script ({script}): there is no log pattern"
            skipped.append(Skipped(reason, why))
            continue
        category = categories.get(reason) or _stock_category(reason)
        if category is None:
            why = f"no category for this reason: pass --category {reason}=CATEGORY"
            skipped.append(Skipped(reason, why))
            continue
        try:
            converted = rewrite_pattern(pattern)
        except Unconvertible as error:
            skipped.append(Skipped(reason, str(error)))
            continue
        rule_id = _unique(f"{category.replace('_', '-')}-npd-{_kebab(reason)}", used)
        rule = _rule(item, reason, rule_id, category, pattern, converted, source, index)
        (rules if rule.complete else todo).append(rule)
    return Conversion(tuple(rules), tuple(todo), tuple(skipped))


def _stock_category(reason: str) -> str | None:
    stock = STOCK_REASONS.get(reason)
    return stock.category if stock is not None else None


def _kebab(name: str) -> str:
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1-\2", name))
    return re.sub(r"[^a-z0-9]+", "-", words.lower()).strip("-") or "rule"


def _unique(rule_id: str, used: set[str]) -> str:
    candidate, number = rule_id, 2
    while candidate in used:
        candidate, number = f"{rule_id}-{number}", number + 1
    used.add(candidate)
    return candidate


_POSIX = {
    "alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z", "lower": "a-z",
    "xdigit": "0-9a-fA-F", "space": " \\t", "blank": " \\t", "word": "\\w",
}  # fmt: skip


def rewrite_pattern(pattern: str) -> str:
    """NPD's Go regex as a line-safe Python one; raises Unconvertible with the reason."""
    if "\n" in pattern or re.search(r"(?<!\\)(?:\\\\)*\\n", pattern):
        lines = len(re.split(r"\\n|\n", pattern))
        raise Unconvertible(
            f"the pattern spans {lines} lines (NPD matches its bufferSize buffer); crashlens "
            "rules match one line: write a rule for the most telling line by hand"
        )
    if "(?<" in pattern.replace("(?P<", ""):
        raise Unconvertible("the pattern has a lookbehind, which line scanning cannot use")
    out: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            escaped = pattern[index + 1]
            out.append({"s": "[ \\t]", "z": "\\Z"}.get(escaped, "\\" + escaped))
            index += 2
        elif char == "[":
            text, index = _char_class(pattern, index)
            out.append(text)
        elif char == "." and pattern[index + 1 : index + 2] in ("*", "+", "?"):
            lazy = pattern[index + 2 : index + 3] == "?"
            out.append(pattern[index : index + 2])
            index += 3 if lazy else 2
        else:
            out.append(char)
            index += 1
    while out and out[-1] in (".*", ".?"):  # `search` needs no tail
        out.pop()
    if out and out[-1] == ".+":
        out[-1] = "."
    if out and out[0] == "^":  # crashlens sees the prefixes NPD strips (timestamps, kernel:)
        out.pop(0)
    gaps = {".*": f".{{0,{MAX_GAP}}}", ".+": f".{{1,{MAX_GAP}}}", ".?": ".?"}
    result = "".join(gaps.get(token, token) for token in out)
    try:
        re.compile(result)
    except re.error as error:
        raise Unconvertible(f"not a regex Python can compile ({error})") from None
    problems = line_safety_problems(result)
    if problems:
        raise Unconvertible("; ".join(problems))
    return result


def _char_class(pattern: str, start: int) -> tuple[str, int]:
    """One `[...]` class from `start`, rewritten; returns it and the index after it."""
    index = start + 1
    negated = pattern[index : index + 1] == "^"
    index += negated
    members: list[str] = []
    first = True
    while index < len(pattern):
        char = pattern[index]
        if char == "]" and not first:
            break
        first = False
        if char == "\\" and index + 1 < len(pattern):
            escaped = pattern[index + 1]
            members.append(" \\t" if escaped == "s" else "\\" + escaped)
            index += 2
            continue
        posix = re.match(r"\[:(\^?)([a-z]+):\]", pattern[index:])
        if posix:
            if posix.group(1) or posix.group(2) not in _POSIX:
                raise Unconvertible(f"POSIX class {posix.group(0)} has no Python equivalent")
            members.append(_POSIX[posix.group(2)])
            index += posix.end()
            continue
        members.append(char)
        index += 1
    else:
        raise Unconvertible("an unterminated character class")
    body = "".join(members)
    if negated and "\\n" not in body:
        body += "\\n"  # a negated class must not cross into the next line
    return "[" + ("^" if negated else "") + body + "]", index + 1


class _CannotGenerate(Exception):
    pass


def example_for(pattern: str) -> str | None:
    """A line `pattern` matches, built from its parse tree; None for lookarounds and the like."""
    try:
        text = _generate(list(_parser.parse(pattern)))
    except (_CannotGenerate, re.error, RecursionError):
        return None
    return text if re.search(pattern, text) else None


_CATEGORY_CHAR = {
    _sre.CATEGORY_DIGIT: "1", _sre.CATEGORY_NOT_DIGIT: "a", _sre.CATEGORY_WORD: "a",
    _sre.CATEGORY_NOT_WORD: " ", _sre.CATEGORY_SPACE: " ", _sre.CATEGORY_NOT_SPACE: "a",
}  # fmt: skip


def _generate(items: list[tuple[Any, Any]]) -> str:
    parts: list[str] = []
    for op, arg in items:
        if op is _sre.LITERAL:
            parts.append(chr(arg))
        elif op is _sre.NOT_LITERAL:
            parts.append("x" if chr(arg) != "x" else "y")
        elif op is _sre.ANY:
            parts.append("x")
        elif op is _sre.IN:
            parts.append(_class_char(arg))
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT):
            low, high, sub = arg
            count = min(max(low, 1), high)
            parts.append(_generate(list(sub)) * count)
        elif op is _sre.SUBPATTERN:
            parts.append(_generate(list(arg[-1])))
        elif op is _sre.ATOMIC_GROUP:
            parts.append(_generate(list(arg)))
        elif op is _sre.BRANCH:
            parts.append(_generate(list(arg[1][0])))
        elif op is _sre.AT:
            continue
        else:  # lookarounds, back-references, conditionals
            raise _CannotGenerate(str(op))
    return "".join(parts)


def _class_char(members: list[tuple[Any, Any]]) -> str:
    negated = bool(members) and members[0][0] is _sre.NEGATE
    if not negated:
        op, arg = members[0]
        if op is _sre.LITERAL:
            return chr(arg)
        if op is _sre.RANGE:
            return chr(arg[0])
        if op is _sre.CATEGORY:
            return _CATEGORY_CHAR.get(arg, "a")
        raise _CannotGenerate(str(op))
    for candidate in "ax1_ .-:":
        if not _in_class(candidate, members[1:]):
            return candidate
    raise _CannotGenerate("negated class")


def _in_class(char: str, members: list[tuple[Any, Any]]) -> bool:
    code = ord(char)
    for op, arg in members:
        if op is _sre.LITERAL and arg == code:
            return True
        if op is _sre.RANGE and arg[0] <= code <= arg[1]:
            return True
        if op is _sre.CATEGORY and re.fullmatch(_CATEGORY_REGEX.get(arg, "."), char):
            return True
    return False


_CATEGORY_REGEX = {
    _sre.CATEGORY_DIGIT: r"\d", _sre.CATEGORY_NOT_DIGIT: r"\D", _sre.CATEGORY_WORD: r"\w",
    _sre.CATEGORY_NOT_WORD: r"\W", _sre.CATEGORY_SPACE: r"\s", _sre.CATEGORY_NOT_SPACE: r"\S",
}  # fmt: skip


def near_miss(pattern: str, line: str) -> str | None:
    """`line` with one letter taken out so that `pattern` no longer matches it."""
    middle = len(line) // 2
    order = sorted(range(len(line)), key=lambda i: (not line[i].isalpha(), abs(i - middle)))
    for index in order:
        candidate = line[:index] + line[index + 1 :]
        if re.search(pattern, candidate) is None:
            return candidate
    return None


def _rule(
    item: Mapping[str, Any],
    reason: str,
    rule_id: str,
    category: str,
    original: str,
    pattern: str,
    source: str,
    index: int,
) -> Converted:
    stock = STOCK_REASONS.get(reason)
    permanent = item.get("type") == "permanent"
    role = stock.role if stock else ("root" if permanent else "symptom")
    weight = stock.weight if stock else (0.8 if permanent else 0.5)
    example = stock.example if stock and re.search(pattern, stock.example) else None
    generated = example is None
    example = example or example_for(pattern)
    miss = near_miss(pattern, example) if example is not None else None
    complete = example is not None and miss is not None
    condition = item.get("condition")
    what = f"a node condition `{condition}`" if permanent and condition else "an event"
    step = stock.step if stock else f"Look into {reason} on this node: see the matched line."
    header = [
        f"# Converted by `crashlens rules import-npd` from {source}, rules[{index}]",
        f"# (NPD reason {reason}, type {item.get('type', '?')}: {what}).",
        f"# NPD's pattern: {original}",
    ]
    if complete and generated:
        header.append("# The examples were generated from the pattern: a real line is better.")
    if not complete:
        header += [
            "# TODO: no example line could be generated from this pattern. Write a real line",
            "# it must match in [examples] match and a near miss in no_match, then rename this",
            f"# file to {rule_id}.toml: files ending in .todo are not loaded.",
        ]
    body = [
        f"id = {_toml(rule_id)}",
        f"category = {_toml(category)}",
        f"role = {_toml(role)}",
        f"weight = {weight}",
        f"title = {_toml(f'node-problem-detector: {reason}')}",
        f"summary = {_toml(f'The node logged what node-problem-detector reports as {reason}.')}",
        "inputs = ['logs']",
        "",
        "[match]",
        f"any = [{_toml(pattern)}]",
        "",
        "[remediation]",
        f"steps = [{{ text = {_toml(step)} }}]",
        "next_checks = [",
        "  { text = 'Read the kernel log around the matched line.', command = 'dmesg -T | tail -n "
        "200' },",
        "]",
        "references = ['https://github.com/kubernetes/node-problem-detector']",
        "",
        "[examples]",
        f"match = [{_toml(example)}]" if complete and example else "match = []",
        f"no_match = [{_toml(miss)}]" if complete and miss else "no_match = []",
    ]
    text = "\n".join(header + body) + "\n"
    return Converted(reason=reason, rule_id=rule_id, pattern=pattern, text=text, complete=complete)


def _toml(value: str) -> str:
    """A TOML string: a literal one ('...', backslashes as they are) when it can be."""
    if "'" not in value and not any(ord(c) < 32 or ord(c) == 127 for c in value):
        return f"'{value}'"
    return json.dumps(value, ensure_ascii=False)


def write_conversion(conversion: Conversion, out: Path) -> list[Path]:
    """Write every converted rule into `out` (created); returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for rule in (*conversion.rules, *conversion.todo):
        path = out / rule.filename
        path.write_text(rule.text, encoding="utf-8")
        written.append(path)
    return written
