"""Remediation specific to the evidence: rule steps with `{placeholders}` filled from facts.

A rule's steps are data (patterns/*.toml, shared blocks in patterns/remedies/); what makes
them specific is the values computed here from everything the inputs said: the GPU count and
DataLoader workers give a concrete `--shm-size`, an Xid's PCI id is matched to the GPU's index
and serial from nvidia-smi, the OOM killer's figures, the two versions that conflict. The
names are those of `crashlens.match.rules.PLACEHOLDERS`, the registry the loader checks rule
texts against. A step whose placeholders cannot all be filled is dropped, so no report shows
a half-empty command.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType

from crashlens.library import default_pattern_dir
from crashlens.match.rules import (
    GENERIC_UNKNOWN,
    UNKNOWN_WITH_NAMES,
    Remedy,
    Rule,
    Step,
    load_remedies,
)
from crashlens.model import (
    Action,
    Category,
    Cause,
    Fact,
    FactValue,
    Hit,
    InputAnalysis,
    InputState,
)
from crashlens.text.ids import pci_label
from crashlens.text.sizes import human_bytes
from crashlens.text.values import finite_float, int_of_float

_FORMATTER = string.Formatter()


def recommend_shm(gpu_count: int | None, num_workers: int | None) -> str:
    """A --shm-size that fits the job: about 1 GiB per DataLoader process, at least 8g.

    Each GPU rank runs `num_workers` worker processes that each hold a couple of prefetched
    batches in /dev/shm; NCCL's shared-memory transport needs a few hundred MiB per rank more.
    Rounded up to a power of two so the number looks like what people type.
    """
    if not gpu_count and num_workers is None:
        return "16g"  # nothing known about the job: the size most guides start from
    ranks = gpu_count if gpu_count and gpu_count > 0 else 1
    workers = num_workers if num_workers is not None and num_workers >= 0 else 4
    gib = max(8.0, ranks * (workers + 1) * 0.5)
    return f"{2 ** math.ceil(math.log2(gib))}g"


def _shm_basis(gpu_count: int | None, num_workers: int | None) -> str:
    """'4 GPUs x 4 DataLoader workers', saying which figure was assumed."""
    gpus = f"{gpu_count} GPU{'s' if gpu_count != 1 else ''}" if gpu_count else "1 GPU (assumed)"
    workers = (
        f"{num_workers} DataLoader workers each"
        if num_workers is not None
        else "4 DataLoader workers each (assumed)"
    )
    return f"{gpus} x {workers}"


def _first(facts: Sequence[Fact], key: str) -> Fact | None:
    return next((f for f in facts if f.key == key), None)


_MAX_FIGURE = 2**64
"""Counts and sizes beyond this are garbage read from a log: no figure is computed from
them (the shm size and the byte sizes shown would overflow a float)."""


def _int(value: FactValue | str | None) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        number: int | None = value
    else:
        number = int_of_float(finite_float(str(value)))
    return number if number is not None and abs(number) <= _MAX_FIGURE else None


def base_context(facts: Sequence[Fact]) -> dict[str, str]:
    """Placeholder values every cause can use, from the facts of all inputs."""
    ctx: dict[str, str] = {}
    gpu_count = None
    for key in ("nvidia_smi.gpu_count", "launcher.nproc_per_node", "docker.gpu_count"):
        found = _first(facts, key)
        count = _int(found.value) if found else None
        if count is not None and count > 0:
            gpu_count = count
            break
    workers_fact = _first(facts, "launcher.num_workers")
    num_workers = _int(workers_fact.value) if workers_fact else None
    if gpu_count is not None:
        ctx["gpu_count"] = str(gpu_count)
    if num_workers is not None:
        ctx["num_workers"] = str(num_workers)
    if gpu_count is not None or num_workers is not None:
        # Only a size computed from what the job used: otherwise the rules' generic 16g step.
        ctx["shm_recommend"] = recommend_shm(gpu_count, num_workers)
        ctx["shm_basis"] = _shm_basis(gpu_count, num_workers)
    for key in ("docker.shm_size_bytes", "df.shm_size_bytes", "compose.shm_size_bytes"):
        found = _first(facts, key)
        size = _int(found.value) if found else None
        if size:
            ctx["shm_size_h"] = human_bytes(size)
            break
    simple = {
        "driver_version": "nvidia_smi.driver_version",
        "cuda_version": "nvidia_smi.cuda_version",
    }
    for name, key in simple.items():
        found = _first(facts, key)
        if found:
            ctx[name] = str(found.value)
    limit = _first(facts, "docker.memory_limit_bytes")
    if limit and _int(limit.value):
        ctx["memory_limit_h"] = human_bytes(_int(limit.value) or 0)
    first = _first(facts, "launcher.first_failure")
    if first:
        ctx["rank"] = str(first.value)
        for attr in ("host", "exit_code"):
            value = first.attr(attr)
            if value is not None:
                ctx[attr] = str(value)
    return ctx


def _gpu_by_pci(facts: Sequence[Fact], pci: str) -> Fact | None:
    wanted = pci_label(pci)
    for item in facts:
        attr = item.attr("pci")
        if item.key == "gpu.name" and attr is not None and pci_label(str(attr)) == wanted:
            return item
    return None


def hit_context(hits: Iterable[Hit], facts: Sequence[Fact]) -> dict[str, str]:
    """Placeholder values from the hits of one cause (captures first, the strongest hit wins)."""
    ctx: dict[str, str] = {}
    for hit in hits:
        for name, value in hit.captures:
            ctx.setdefault(name, value)
        if hit.host:
            ctx.setdefault("host", hit.host)
        if hit.rank is not None:
            ctx.setdefault("rank", str(hit.rank))
    _derive_gpu(ctx, facts)
    _derive_figures(ctx, facts)
    return ctx


def _derive_gpu(ctx: dict[str, str], facts: Sequence[Fact]) -> None:
    xid = next((f for f in facts if f.key == "kernel.xid"), None)
    if "xid" not in ctx and xid is not None:
        ctx["xid"] = str(xid.value)
    if xid is not None:
        for attr, name in (("meaning", "xid_meaning"), ("action", "xid_action"), ("pci", "pci")):
            value = xid.attr(attr)
            if value is not None:
                ctx.setdefault(name, str(value))
    if "pci" in ctx:  # a capture of the hit, else the Xid's bus id
        ctx.setdefault("gpu_pci", pci_label(ctx["pci"]))
    if "gpu_pci" in ctx:
        gpu = _gpu_by_pci(facts, ctx["gpu_pci"])
        if gpu is not None:
            for attr, name in (
                ("index", "gpu_index"),
                ("serial", "gpu_serial"),
                ("uuid", "gpu_uuid"),
            ):
                value = gpu.attr(attr)
                if value is not None:
                    ctx.setdefault(name, str(value))
    if "index" in ctx:
        ctx.setdefault("gpu_index", ctx["index"])
    if "gpu" in ctx:
        ctx.setdefault("gpu_index", ctx["gpu"])


def _derive_figures(ctx: dict[str, str], facts: Sequence[Fact]) -> None:
    oom = next((f for f in facts if f.key == "kernel.oom_kill"), None)
    if oom is not None:
        ctx.setdefault("oom_victim", str(oom.value))
        rss = _int(oom.attr("anon_rss_kb"))
        if rss:
            ctx.setdefault("anon_rss_h", human_bytes(rss * 1024))
    cuda = next((f for f in facts if f.key == "cuda.oom"), None)
    if cuda is not None:
        tried = _int(cuda.value)
        if tried:
            ctx.setdefault("tried_h", human_bytes(tried))
        for attr, name in (("total_bytes", "total_h"), ("free_bytes", "free_h")):
            value = _int(cuda.attr(attr))
            if value is not None:
                ctx.setdefault(name, human_bytes(value))
        gpu = cuda.attr("gpu")
        if gpu is not None:
            ctx.setdefault("gpu_index", str(gpu))
    mismatch = next((f for f in facts if f.key == "kernel.nvrm_mismatch"), None)
    if mismatch is not None:
        for attr in ("module_version", "client_version"):
            version = mismatch.attr(attr)
            if version is not None:
                ctx.setdefault(attr, str(version))
    full = [
        f
        for f in facts
        if f.key == "df.use_percent" and isinstance(f.value, int | float) and f.value >= 95
    ]
    if full:
        worst = max(full, key=lambda f: float(f.value))
        mount = worst.attr("mount")
        if mount is not None:
            ctx.setdefault("mount", str(mount))


def fill(template: str, ctx: Mapping[str, str]) -> str | None:
    """Fill `{name}` placeholders; None when one of them has no value."""
    names = [field for _, field, _, _ in _FORMATTER.parse(template) if field]
    if any(name not in ctx for name in names):
        return None
    return template.format_map(ctx) if names else template


def _opening(text: str) -> str:
    """The first four words: two rules' "Drain the node in the scheduler ..." are one step."""
    return "text:" + " ".join(text.lower().split()[:4])


_DEVICE_SELECTOR = re.compile(r"\s(?:-[id]|--id|--device)(?:=|\s+)[0-9]{1,4}(?=\s|$)")
"""A tool's choice of one device (`nvidia-smi -i 0`, `xpu-smi stats -d 0`): the same check of
one GPU and of all of them reads as one check."""
_THEN = re.compile(r"\s*(?:&&|\|\||;)\s*")
"""Where a compound command's next part starts."""


def _command_words(command: str) -> list[str]:
    """A command's words, its trailing comment and any device choice left out."""
    return _DEVICE_SELECTOR.sub("", command.split("#", 1)[0]).split()


def _plain_command(command: str) -> str:
    """A command as a reader compares it: its comment, a leading sudo and a device choice
    aside, spacing normalised."""
    words = _command_words(command)
    return " ".join(words[1:] if words[:1] == ["sudo"] else words)


def _leading_parts(command: str) -> list[str]:
    """`a && b; c` -> `a`, `a && b`: the checks a compound command already runs first (`a ||
    b` too: `a` runs either way)."""
    plain = _plain_command(command)
    return [plain[: match.start()] for match in _THEN.finditer(plain)]


_SIZE_VALUE = re.compile(r"=[0-9]+(?:\.[0-9]+)?(?:[kKmMgGtTpP]i?)?[bB]?(?=\s|$)")
"""A number or size given to an option (`--shm-size=16g`, `--mem=0`, `NCCL_P2P_DISABLE=1`)."""


def _command_key(command: str) -> str:
    """What makes two commands the same fix: the program and its first two words, whatever
    number or size an option is given (a rule's computed `--shm-size=8g` and the fallback
    `--shm-size=16g` for when nothing was computed are one fix) and whatever device is chosen
    (`sudo` kept, so two kernel-log searches for different lines both stay)."""
    return " ".join(_SIZE_VALUE.sub("=<n>", word) for word in _command_words(command)[:3])


def actions(steps: Iterable[Step], ctx: Mapping[str, str], limit: int = 6) -> list[Action]:
    """The steps whose placeholders could all be filled, in order, without repeats.

    Several rules of one cause often carry the same fix in other words (every hardware rule
    says to drain the node); a step whose command starts like an earlier one, or whose text
    repeats one, is dropped, and at most `limit` steps are kept so the first ones stay read.
    """
    result: list[Action] = []
    seen: set[str] = set()
    for step in steps:
        text = fill(step.text, ctx)
        command = fill(step.command, ctx) if step.command else None
        if text is None or (step.command and command is None):
            continue
        keys = {text, _opening(text)} | ({_command_key(command)} if command else set())
        if keys & seen:
            continue
        seen |= keys
        result.append(Action(text=text, command=command, lang=step.lang))
        if len(result) >= limit:
            break
    return result


def _check_keys(item: Action) -> set[str]:
    """What makes two checks the same in a reader's eyes: the same words, or the same
    command (spacing, a leading sudo, a device choice and a trailing comment aside)."""
    keys = {"text:" + " ".join(item.text.lower().split())}
    if item.command:
        keys.add("command:" + _plain_command(item.command))
    return keys


def _shown_keys(item: Action) -> set[str]:
    """The checks a shown step has given: its own, and each first part of its command
    (`free -g && ps aux ...` has shown `free -g`)."""
    parts = _leading_parts(item.command) if item.command else []
    return _check_keys(item) | {"command:" + part for part in parts}


_SEARCH = re.compile(
    r"(?P<source>[^|]+?)\s*\|\s*grep\s+(?:-iE|-Ei|-i\s+-E|-E\s+-i|-i)\s+'(?P<pattern>[^']*)'"
)
"""A case-insensitive search of a command's output for some words: `dmesg -T | grep -iE 'a|b'`."""

Search = tuple[str, frozenset[str]]


def _search(item: Action) -> Search | None:
    """(what is searched, the words searched for) of a check that is such a search."""
    command = item.command
    match = _SEARCH.fullmatch(_plain_command(command)) if command is not None else None
    if command is None or match is None:
        return None
    flags = command.split("grep", 1)[1].split("'", 1)[0]
    if "|" in match["pattern"] and "E" not in flags:
        return None  # a basic regex: `|` is a character, not a choice
    words = frozenset(w.strip().lower() for w in match["pattern"].split("|") if w.strip())
    return match["source"].strip(), words


def _covered(search: Search | None, by: Iterable[Search]) -> bool:
    """Whether another search of the same output looks for every word this one does."""
    return search is not None and any(
        source == search[0] and search[1] <= words for source, words in by
    )


def without_repeated_checks(
    causes: Sequence[Cause], checks: Sequence[Action]
) -> tuple[tuple[Cause, ...], tuple[Action, ...]]:
    """Each check shown once, where the report first shows it.

    A report reads its causes in rank order, each with its "What to do" steps and "To confirm"
    checks, then "What to collect next": a category's generic checks end every cause of it and
    the `unknown` verdict's list too, and a fix step may run the same command as a check, so
    without this the same command is printed two or three times.
    """
    seen: set[str] = set()
    searched: list[Search] = []

    def first_time(items: Sequence[Action]) -> tuple[Action, ...]:
        searches = [_search(item) for item in items]
        kept = []
        for item, search in zip(items, searches, strict=True):
            # a search of the same output for these words and more: shown above, or further
            # down this list (a category's generic check after a rule's narrower one)
            wider = [
                other
                for other in searches
                if other is not None and search is not None and other[1] > search[1]
            ]
            if not (_check_keys(item) & seen or _covered(search, [*searched, *wider])):
                kept.append(item)
                if search is not None:
                    searched.append(search)
            seen.update(_shown_keys(item))
        return tuple(kept)

    kept_causes = []
    for cause in causes:
        # a command its "What to do" already gives (a Flight Recorder dump is both a fix
        # step and a check) is not asked for again under "To confirm"
        seen.update(
            key
            for item in cause.remediation
            for key in _shown_keys(item)
            if key.startswith("command:")
        )
        kept_causes.append(replace(cause, next_checks=first_time(cause.next_checks)))
    return tuple(kept_causes), first_time(checks)


def summary(rule: Rule, ctx: Mapping[str, str]) -> str:
    """The rule's one-sentence summary, filled; its title when a placeholder is missing."""
    return fill(rule.summary, ctx) or rule.title


def _block_actions(remedy: Remedy) -> tuple[Action, ...]:
    """A block's steps as the report shows them (a generic block's hold no placeholders)."""
    return tuple(Action(step.text, step.command, step.lang) for step in remedy.steps)


def _generic_category(remedy: Remedy) -> Category | None:
    """The category a `generic_for` block ends; None: the `unknown` verdict's list."""
    assert remedy.generic_for is not None
    return None if remedy.generic_for == GENERIC_UNKNOWN else Category(remedy.generic_for)


def generic_checks(remedies: Mapping[str, Remedy]) -> Mapping[Category | None, tuple[Action, ...]]:
    """The checks of the `generic_for` blocks, by category; None: what `unknown` ends with.

    Every key is present (empty when no block names it), so a caller need not guess.
    """
    checks: dict[Category | None, tuple[Action, ...]] = dict.fromkeys((None, *Category), ())
    for remedy in remedies.values():
        if remedy.generic_for is not None and remedy.accelerator is None:
            checks[_generic_category(remedy)] = _block_actions(remedy)
    return MappingProxyType(checks)


def accelerator_checks(
    remedies: Mapping[str, Remedy],
) -> Mapping[tuple[Category | None, str], tuple[Action, ...]]:
    """The `generic_for` blocks written for one accelerator family, by (category, family)."""
    return MappingProxyType(
        {
            (_generic_category(remedy), remedy.accelerator): _block_actions(remedy)
            for remedy in remedies.values()
            if remedy.generic_for is not None and remedy.accelerator is not None
        }
    )


def checks_for(category: Category | None, accelerator: str | None) -> tuple[Action, ...]:
    """The generic checks of `category` (None: an `unknown` verdict's) for a run on
    `accelerator`: its family's block where one is written, else the default."""
    if accelerator is not None:
        own = ACCELERATOR_CHECKS.get((category, accelerator))
        if own is not None:
            return own
    return GENERIC_CHECKS[category]


def source_checks(remedies: Mapping[str, Remedy]) -> Mapping[str, tuple[Action, ...]]:
    """The checks of the `unknown_with` blocks, by launcher, platform or input kind."""
    return MappingProxyType(
        {
            source: _block_actions(remedy)
            for remedy in remedies.values()
            for source in remedy.unknown_with
        }
    )


def sources_of(analyses: Sequence[InputAnalysis]) -> tuple[str, ...]:
    """What the run went through, as `unknown_with` names it: the launchers its logs show
    (`launcher.tool` and the others its `seen` attribute lists), the platform that hosted it
    (`platform.name`), then the kinds of its inputs that were read; in `UNKNOWN_WITH_NAMES`
    order, once each."""
    named: set[str] = set()
    for analysis in analyses:
        if analysis.status.kind is not None and analysis.status.status is InputState.ANALYZED:
            named.add(analysis.status.kind.value)
        for item in analysis.facts:
            if item.key == "platform.name":
                named.add(str(item.value))
            elif item.key == "launcher.tool":
                named.add(str(item.value))
                seen = item.attr("seen")
                if isinstance(seen, str):
                    named.update(seen.split(","))
    return tuple(name for name in UNKNOWN_WITH_NAMES if name in named)


_REMEDIES = load_remedies(default_pattern_dir())
GENERIC_CHECKS = generic_checks(_REMEDIES)
"""Checks every cause of a category ends with, and those an `unknown` verdict shows (key
None): the `patterns/remedies/checks-*.toml` blocks, read once per process."""
ACCELERATOR_CHECKS = accelerator_checks(_REMEDIES)
"""The same for a run on another accelerator family than NVIDIA's (`crashlens.decide.accelerator`),
where its tools answer what nvidia-smi and NCCL's log would."""
SOURCE_CHECKS = source_checks(_REMEDIES)
"""What an `unknown` verdict adds for a run each launcher started or each kind of input shows:
where it keeps what the logs lack (the `patterns/remedies/checks-with-*.toml` blocks)."""
