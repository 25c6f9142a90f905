"""Typed values passed between the pipeline stages.

discover -> detect -> parse/scan -> match -> decide -> render. Every stage takes and returns
the frozen dataclasses below; nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class InputKind(StrEnum):
    """What an input file is, decided from its content (the name only adds confidence).

    Each member has exactly one parser under `crashlens.parsers`, which finds it by itself, and a
    sample folder `tests/data/samples/<value>/` (both checked by `tests/test_registry.py`);
    adding a kind: CONTRIBUTING.md, "Add an input kind".
    """

    LAUNCHER = "launcher"
    """stdout/stderr of deepspeed, torchrun, accelerate, llamafactory-cli, python, slurm jobs."""
    DMESG = "dmesg"
    """Kernel log: dmesg (raw, -T, iso), journalctl -k, /var/log/kern.log, /dev/kmsg."""
    DOCKER_INSPECT = "docker_inspect"
    """`docker inspect` / `podman inspect` JSON."""
    DOCKER_COMPOSE = "docker_compose"
    """A docker-compose YAML file."""
    NVIDIA_SMI = "nvidia_smi"
    """nvidia-smi table, -q, -q -x, CSV queries, topo -m and its one-line failures."""
    DF = "df"
    """`df` / `df -h` / `df -i` output."""
    IPCS = "ipcs"
    """`ipcs -m` / `ipcs -l` output."""
    ULIMIT = "ulimit"
    """`ulimit -a` output (bash or dash)."""
    IP_ADDR = "ip_addr"
    """A node's network interfaces: `ip -br addr`, `ip addr`, `ifconfig` (several nodes' listings
    under their shell prompts may share a file)."""
    TORCHELASTIC_ERROR = "torchelastic_error"
    """The JSON file written to TORCHELASTIC_ERROR_FILE by a failed worker."""
    KUBECTL_JSON = "kubectl_json"
    """Kubernetes objects as `kubectl get -o json` / `-o yaml` prints them: a pod or a list of
    pods, events, a Kubeflow PyTorchJob or a JobSet with its status."""
    KUBECTL_TEXT = "kubectl_text"
    """`kubectl describe pod` text and the `kubectl get events` table."""
    SLURM_JOB = "slurm_job"
    """Slurm's record of a job: `sacct` (`--parsable2` or the fixed-width table) and
    `scontrol show job`."""
    MOUNTS = "mounts"
    """A mount table: `findmnt`, `mount` or `/proc/mounts` (which filesystem type is where)."""
    OTHER = "other"
    """Plain text of unknown origin: every line is still scanned by the generic rules."""


class Clock(StrEnum):
    """What a float timestamp counts, as the parser that read it knows (set beside the float).

    Only the parser sees the prefix a time came from, so it says which clock it is; consumers
    (timelines, "which line came first", age checks) compare times of one clock only.
    """

    WALL = "wall"
    """Epoch seconds (UTC): a full date was printed (deepspeed `[2025-03-14 10:02:04,122]`,
    `dmesg -T` / `--time-format iso`, journalctl ISO). Comparable across files and hosts."""
    BOOT = "boot"
    """Seconds since the host booted (raw dmesg `[ 1234.5]`, /dev/kmsg). Comparable only
    within one boot of one host; never a date."""
    YEARLESS = "yearless"
    """Epoch seconds of a wall time printed without a year (glog `E0325 20:57:27.62`, syslog
    `Mar 25 20:57:27`): the parser filled in a placeholder leap year (`GLOG_YEAR`,
    `SYSLOG_YEAR`, both 2000). Orders lines of one file; the date is not the real one, and
    comparing with a `wall` time needs the real year from elsewhere."""


class Category(StrEnum):
    """Root-cause categories (a contract, see docs/taxonomy.md)."""

    SHM = "shm"
    GPU_OOM = "gpu_oom"
    HOST_OOM = "host_oom"
    HARDWARE = "hardware"
    DRIVER = "driver"
    FILESYSTEM = "filesystem"
    PERMISSIONS = "permissions"
    NETWORK = "network"


class Verdict(StrEnum):
    """A report's verdict (a contract, see docs/report-contract.md): a category, or no cause named.

    The members mirror `Category` value for value, in the same order, then the two answers
    that name no cause; `Verdict.of(category)` and `Verdict.category` convert between them.
    """

    SHM = "shm"
    GPU_OOM = "gpu_oom"
    HOST_OOM = "host_oom"
    HARDWARE = "hardware"
    DRIVER = "driver"
    FILESYSTEM = "filesystem"
    PERMISSIONS = "permissions"
    NETWORK = "network"
    UNKNOWN = "unknown"
    """A failure is visible, but no cause has enough evidence."""
    NONE = "none"
    """The inputs show no failure at all."""

    @classmethod
    def of(cls, category: Category) -> Verdict:
        """The verdict that names `category`."""
        return cls(category.value)

    @property
    def category(self) -> Category | None:
        """The category this verdict names; None for `unknown` and `none`."""
        return None if self in (Verdict.UNKNOWN, Verdict.NONE) else Category(self.value)

    @property
    def names_cause(self) -> bool:
        """Whether the verdict is a category (not `unknown`, not `none`)."""
        return self.category is not None


class Role(StrEnum):
    """How a piece of evidence relates to the failure."""

    ROOT = "root"
    """Names the cause itself (an Xid 79, `CUDA out of memory`, the OOM killer's report)."""
    SYMPTOM = "symptom"
    """Shows a failure whose cause must be inferred (Bus error, exit -9, NCCL timeout)."""
    CONTEXT = "context"
    """A condition that makes a cause plausible but is not a failure (ShmSize 64 MiB)."""


FactValue = str | int | float | bool


@dataclass(frozen=True, slots=True)
class Line:
    """One line of an input, located and split into prefix fields and message."""

    path: str
    """The input's display path, as the user gave it (inside an archive: `archive!member`)."""
    lineno: int
    """1-based line number, counting `\\n` only (so it matches what an editor shows)."""
    raw: str
    """The line with ANSI escapes and NUL bytes removed, otherwise as written."""
    text: str
    """The message with launcher / kernel prefixes (rank, host, timestamp) removed."""
    rank: int | None = None
    """Global rank the line came from, when a `[rankN]:` style prefix says so."""
    host: str | None = None
    """Host the line came from (pdsh `host: ` prefix, NCCL `host:pid:tid`, syslog host)."""
    timestamp: float | None = None
    """Seconds: epoch seconds when the log has wall-clock times, else seconds since boot."""
    clock: Clock | None = None
    """What `timestamp` counts (wall, since boot, or yearless), set by the parser with it;
    None when there is no timestamp."""


@dataclass(frozen=True, slots=True)
class Fact:
    """A typed observation taken from an input (a parsed field, not a pattern hit)."""

    key: str
    """Dotted name, e.g. `docker.shm_size_bytes`, `launcher.exit_code`, `gpu.xid`."""
    value: FactValue
    path: str
    """The input's display path."""
    lineno: int | None
    """1-based line the fact was read from; None for a field of a structured document."""
    text: str
    """What to show as evidence: the source line, or `key = value` for structured fields."""
    attrs: tuple[tuple[str, FactValue], ...] = ()
    """Qualifiers: rank, host, gpu index, pci bus id, mount point... as (name, value) pairs."""

    def attr(self, name: str) -> FactValue | None:
        """Return one qualifier, or None."""
        for key, value in self.attrs:
            if key == name:
                return value
        return None

    @property
    def line_text(self) -> str:
        """The fact as one `key=value` line: what fact rules and their examples match."""
        value = str(self.value).lower() if isinstance(self.value, bool) else str(self.value)
        return f"{self.key}={value}"

    def cited(self, note: str | None) -> Evidence:
        """This fact as a report citation (a symptom no rule names), with `note` saying why it
        is cited; its `rank` and `host` qualifiers when it has them."""
        rank = self.attr("rank")
        host = self.attr("host")
        return Evidence(
            path=self.path,
            line=self.lineno,
            text=self.text,
            rule=None,
            role=Role.SYMPTOM,
            note=note,
            rank=rank if isinstance(rank, int) and not isinstance(rank, bool) else None,
            host=str(host) if host is not None else None,
        )


@dataclass(frozen=True, slots=True)
class Detection:
    """Why an input was given its kind."""

    kind: InputKind
    score: float
    reason: str


class InputState(StrEnum):
    """Whether an input was read (report-contract `inputs[].status`)."""

    ANALYZED = "analyzed"
    SKIPPED = "skipped"
    """Not analyzed; the input's `reason` always says why."""


@dataclass(frozen=True, slots=True)
class InputStatus:
    """One input as listed in the report (report-contract `inputs[]`)."""

    path: str
    kind: InputKind | None
    status: InputState
    reason: str | None = None
    """Why it was skipped, or a warning about how it was read (encoding, truncation)."""
    size_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    """A rule that matched a line or a fact."""

    rule_id: str
    category: Category
    role: Role
    weight: float
    """How strongly this hit, alone, supports `category` (0..1) before cross-evidence."""
    path: str
    lineno: int | None
    text: str
    captures: tuple[tuple[str, str], ...] = ()
    rank: int | None = None
    host: str | None = None
    timestamp: float | None = None
    clock: Clock | None = None
    """What `timestamp` counts (see `Clock`); copied from the line."""
    also: tuple[tuple[Category, float], ...] = ()
    """Weaker support this same hit gives to other categories (a Bus error -> hardware)."""
    against: bool = False
    """Counter-evidence: the hit lowers `category` by `weight` instead of supporting it."""

    def capture(self, name: str) -> str | None:
        """Return one named capture group, or None."""
        for key, value in self.captures:
            if key == name:
                return value
        return None

    def cited(self, note: str | None) -> Evidence:
        """This hit as a report citation, with `note` saying why it is cited."""
        return Evidence(
            path=self.path,
            line=self.lineno,
            text=self.text,
            rule=self.rule_id,
            role=self.role,
            note=note,
            rank=self.rank,
            host=self.host,
            timestamp=self.timestamp,
            clock=self.clock,
        )


@dataclass(frozen=True, slots=True)
class InputAnalysis:
    """Everything taken from one input: its status, the hits and the facts."""

    status: InputStatus
    hits: tuple[Hit, ...] = ()
    facts: tuple[Fact, ...] = ()


@dataclass(frozen=True, slots=True)
class Evidence:
    """One cited line in a report (report-contract `causes[].evidence[]`)."""

    path: str
    line: int | None
    text: str
    rule: str | None
    role: Role
    note: str | None = None
    """Why this line matters here, e.g. 'rank 3 failed first' or 'knock-on of the Xid'."""
    rank: int | None = None
    host: str | None = None
    timestamp: float | None = None
    """Seconds (epoch, or since boot for raw dmesg): orders a timeline across files."""
    clock: Clock | None = None
    """What `timestamp` counts (see `Clock`): only times of one clock order against each other."""
    context: tuple[tuple[int, str], ...] = ()
    """Neighbouring lines as (line number, text), the cited line excluded. Empty unless
    `crashlens.inputs.context.add_context` filled it (the HTML report shows them)."""


@dataclass(frozen=True, slots=True)
class Action:
    """A remediation step or a next check: what to do, and the command when there is one."""

    text: str
    command: str | None = None
    lang: str = "shell"
    """What `command` is: `shell` (run at a prompt) or a snippet of a file (`yaml`, `python`,
    `conf`: the rule library's `SNIPPET_LANGS`), which renderers show as a block, not as a
    command."""


@dataclass(frozen=True, slots=True)
class Cause:
    """One ranked explanation of the failure."""

    category: Category
    confidence: float
    summary: str
    evidence: tuple[Evidence, ...]
    remediation: tuple[Action, ...]
    next_checks: tuple[Action, ...]
    demoted_because: str | None = None
    """Set when this cause's evidence was judged a knock-on of a higher-ranked cause."""


class Ending(StrEnum):
    """How the run ended, decided before its cause (`crashlens.decide.failure`)."""

    DIED = "died"
    """A death sign: the run failed (the verdict is never `none`)."""
    COMPLETED = "completed"
    """A normal finish: final metrics, a completion line, a clean exit 0."""
    STOPPED = "stopped"
    """Stopped from outside, not a failure: a user's Ctrl-C or scancel, a scheduler's time
    limit or preemption; also a job that never started (a pod the scheduler never placed)."""
    ONGOING = "ongoing"
    """No ending in view, but the run's log shows it going on well where it ends: past the
    lines that look alarming (reports it went on from, warnings, NCCL WARNs), at a harmless
    notice (a warning, a skipped fp16 step, a retry), serving requests, or reporting metrics;
    and no failure line. Not a failure: the verdict is `none` unless the evidence names one."""
    UNKNOWN = "unknown"
    """No evidence of an ending either way. With the run's own log (or its container's state)
    in the inputs, the log simply stops: a hang or a kill that left no trace looks like this,
    so the verdict is never `none` (`unknown`, or the cause the evidence names); the sign is
    the log's last line. With no input telling the run's story (a kernel log, a GPU table),
    the sign is None and the inputs are judged on what they show."""


@dataclass(frozen=True, slots=True)
class Assessment:
    """Did the run fail, and where does that show (report-contract `ending`)."""

    ending: Ending
    sign: Evidence | None
    """The line that shows the death (or the completion, or the stop); None when unknown."""
    reason: str
    """One sentence: why this ending."""
    harmless: tuple[str, ...] = ()
    """Why alarming lines were judged harmless (a run that completed or was stopped)."""


@dataclass(frozen=True, slots=True)
class Report:
    """The result of one analysis; renderers consume only this."""

    verdict: Verdict
    """A category id, `unknown` (a failure without enough evidence) or `none`."""
    causes: tuple[Cause, ...]
    inputs: tuple[InputStatus, ...]
    next_checks: tuple[Action, ...] = ()
    """What to collect when the verdict is `unknown` (or evidence is thin)."""
    failure_seen: bool = False
    first_failure: Evidence | None = None
    """The earliest failure line across inputs (rank that failed first, else earliest time)."""
    lead: Evidence | None = None
    """The line that stands for the failure (what `crashlens scan` groups jobs by): the
    strongest non-context line of the top cause's category (a root before a symptom, then by
    weight, ties by rule id), at its earliest occurrence; else the first failure's rule, at
    its earliest occurrence. Never chosen by file order alone, so two runs with the same
    failure stand for it with the same rule. None when the verdict is `none`. Not in the JSON."""
    first_failure_rank: int | None = None
    """The rank torchelastic names as the first observed failure, when it names one."""
    first_failure_at: float | None = None
    """Epoch seconds (UTC) of the first failure, when a failure line is dated (a yearless time
    placed in `yearless_year`); see `crashlens.decide.when`. Not in the JSON."""
    yearless_year: int | None = None
    """The year the inputs' yearless times (glog, syslog) belong to, when a dated line or
    torchelastic's report tells it. Not in the JSON."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    """Reasoning the report wants a person to read (why a symptom was demoted...)."""
    assessment: Assessment | None = None
    """How the run ended and the line that shows it; None when no assessment was made."""
    schema_version: int = 1
    crashlens_version: str = ""
