"""Remediation filled from the evidence: the placeholder values, and which steps are shown."""

from __future__ import annotations

import re

import pytest

from crashlens.decide.remedy import (
    GENERIC_CHECKS,
    actions,
    base_context,
    fill,
    generic_checks,
    hit_context,
    recommend_shm,
    summary,
)
from crashlens.match.rules import PLACEHOLDERS, Remedy, Step, parse_rule
from crashlens.model import Action, Category, Fact, FactValue, Hit, Role

GiB = 1024**3


def fact(key: str, value: FactValue, **attrs: FactValue) -> Fact:
    return Fact(key, value, "input.txt", 1, f"{key}={value}", tuple(attrs.items()))


def hit(*captures: tuple[str, str], host: str | None = None, rank: int | None = None) -> Hit:
    return Hit(
        rule_id="hardware-test",
        category=Category.HARDWARE,
        role=Role.ROOT,
        weight=0.9,
        path="dmesg.txt",
        lineno=3,
        text="NVRM: Xid",
        captures=captures,
        rank=rank,
        host=host,
    )


@pytest.mark.parametrize(
    ("gpus", "workers", "size"),
    [
        (None, None, "16g"),  # nothing known: the size most guides start from
        (8, 4, "32g"),  # 8 ranks x 5 processes x 0.5 GiB = 20 GiB, rounded up to a power of 2
        (4, None, "16g"),  # 4 workers assumed: 10 GiB
        (None, 2, "8g"),  # one rank assumed: 1.5 GiB, but never below 8g
        (0, 8, "8g"),  # a GPU count of 0 is no count
        (16, 16, "256g"),
    ],
)
def test_recommend_shm(gpus: int | None, workers: int | None, size: str) -> None:
    assert recommend_shm(gpus, workers) == size


def test_base_context_is_empty_without_facts() -> None:
    assert base_context([]) == {}


def test_gpu_count_comes_from_the_first_source_that_knows() -> None:
    facts = [fact("launcher.nproc_per_node", 4), fact("nvidia_smi.gpu_count", 8)]
    assert base_context(facts)["gpu_count"] == "8"
    no_smi = [fact("nvidia_smi.gpu_count", 0), fact("launcher.nproc_per_node", 4)]
    assert base_context(no_smi)["gpu_count"] == "4"
    assert "gpu_count" not in base_context([fact("docker.gpu_count", True)])


def test_shm_size_is_recommended_only_from_what_the_job_used() -> None:
    both = base_context([fact("nvidia_smi.gpu_count", 4), fact("launcher.num_workers", 2)])
    assert both["shm_recommend"] == "8g"
    assert both["shm_basis"] == "4 GPUs x 2 DataLoader workers each"
    gpus = base_context([fact("nvidia_smi.gpu_count", 1)])
    assert gpus["shm_basis"] == "1 GPU x 4 DataLoader workers each (assumed)"
    workers = base_context([fact("launcher.num_workers", 0)])
    assert workers["num_workers"] == "0"
    assert workers["shm_basis"] == "1 GPU (assumed) x 0 DataLoader workers each"
    unrelated = base_context([fact("nvidia_smi.driver_version", "550.54.15")])
    assert "shm_recommend" not in unrelated and "shm_basis" not in unrelated


def test_shm_size_prefers_docker_and_skips_an_empty_size() -> None:
    facts = [fact("df.shm_size_bytes", 32 * GiB), fact("docker.shm_size_bytes", 64 * 1024**2)]
    assert base_context(facts)["shm_size_h"] == "64.0 MiB"
    empty = [fact("docker.shm_size_bytes", 0), fact("df.shm_size_bytes", 32 * GiB)]
    assert base_context(empty)["shm_size_h"] == "32.0 GiB"


def test_versions_memory_limit_and_first_failure() -> None:
    ctx = base_context(
        [
            fact("nvidia_smi.driver_version", "550.54.15"),
            fact("nvidia_smi.cuda_version", "12.4"),
            fact("docker.memory_limit_bytes", 128 * GiB),
            fact("launcher.first_failure", 3, host="node-02", exit_code=-9),
        ]
    )
    assert ctx == {
        "driver_version": "550.54.15",
        "cuda_version": "12.4",
        "memory_limit_h": "128.0 GiB",
        "rank": "3",
        "host": "node-02",
        "exit_code": "-9",
    }
    # Docker's 0 means "no limit": there is nothing to quote.
    assert "memory_limit_h" not in base_context([fact("docker.memory_limit_bytes", 0)])


def test_captures_of_the_strongest_hit_win() -> None:
    strongest = hit(("path", "/data/ckpt"), host="node-01", rank=0)
    weaker = hit(("path", "/tmp/x"), ("device", "nvme0n1"), host="node-02", rank=5)
    ctx = hit_context([strongest, weaker], [])
    assert ctx == {"path": "/data/ckpt", "device": "nvme0n1", "host": "node-01", "rank": "0"}


def test_an_xid_is_tied_to_its_gpu_by_pci_id() -> None:
    facts = [
        fact("kernel.xid", 79, pci="0000:1b:00", meaning="fell off the bus", action="reboot"),
        fact(
            "gpu.name", "NVIDIA H100", pci="00000000:1B:00.0", index=2, serial="1650", uuid="GPU-a"
        ),
        fact(
            "gpu.name", "NVIDIA H100", pci="00000000:3B:00.0", index=3, serial="1651", uuid="GPU-b"
        ),
    ]
    ctx = hit_context([hit()], facts)
    assert ctx["xid"] == "79"
    assert ctx["xid_meaning"] == "fell off the bus"
    assert ctx["xid_action"] == "reboot"
    assert ctx["gpu_pci"] == "0000:1B:00.0"
    assert (ctx["gpu_index"], ctx["gpu_serial"], ctx["gpu_uuid"]) == ("2", "1650", "GPU-a")


def test_the_hits_own_gpu_beats_the_kernel_logs() -> None:
    facts = [
        fact("kernel.xid", 48, pci="0000:1b:00"),
        fact("gpu.name", "H100", pci="0000:3b:00.0", index=3),
    ]
    ctx = hit_context([hit(("xid", "79"), ("gpu_pci", "0000:3b:00"))], facts)
    assert ctx["xid"] == "79"
    assert ctx["gpu_pci"] == "0000:3b:00"  # a capture is kept as written
    assert ctx["gpu_index"] == "3"
    assert hit_context([hit(("index", "5"))], [])["gpu_index"] == "5"
    assert hit_context([hit(("gpu", "6"))], [])["gpu_index"] == "6"


def test_an_unknown_pci_id_names_no_gpu() -> None:
    facts = [fact("kernel.xid", 79, pci="0000:99:00"), fact("gpu.name", "H100", pci="0000:1b:00.0")]
    ctx = hit_context([hit()], facts)
    assert ctx["gpu_pci"] == "0000:99:00.0"
    assert "gpu_index" not in ctx and "gpu_serial" not in ctx


def test_oom_killer_and_cuda_oom_figures() -> None:
    facts = [
        fact("kernel.oom_kill", "python", anon_rss_kb=64 * 1024**2),
        fact("cuda.oom", 2 * GiB, total_bytes=80 * GiB, free_bytes=0, gpu=1),
    ]
    ctx = hit_context([], facts)
    assert ctx["oom_victim"] == "python"
    assert ctx["anon_rss_h"] == "64.0 GiB"
    assert (ctx["tried_h"], ctx["total_h"], ctx["free_h"]) == ("2.0 GiB", "80.0 GiB", "0 B")
    assert ctx["gpu_index"] == "1"
    nothing_tried = hit_context([], [fact("cuda.oom", 0, free_bytes="unknown")])
    assert "tried_h" not in nothing_tried and "free_h" not in nothing_tried


def test_driver_mismatch_versions() -> None:
    mismatch = fact("kernel.nvrm_mismatch", True, module_version="550.54", client_version="535.1")
    ctx = hit_context([], [mismatch])
    assert (ctx["module_version"], ctx["client_version"]) == ("550.54", "535.1")


def test_mount_is_the_fullest_filesystem_from_95_percent() -> None:
    facts = [
        fact("df.use_percent", 97, mount="/data"),
        fact("df.use_percent", 100, mount="/scratch"),
        fact("df.use_percent", 100.0),  # no mount to name
        fact("df.use_percent", 94, mount="/"),
    ]
    assert hit_context([], facts)["mount"] == "/scratch"
    assert "mount" not in hit_context([], [fact("df.use_percent", 94, mount="/")])


def test_every_computed_name_is_in_the_registry_and_every_name_is_computed() -> None:
    facts = [
        fact("nvidia_smi.gpu_count", 8),
        fact("launcher.num_workers", 4),
        fact("docker.shm_size_bytes", 64 * 1024**2),
        fact("nvidia_smi.driver_version", "550.54.15"),
        fact("nvidia_smi.cuda_version", "12.4"),
        fact("docker.memory_limit_bytes", 64 * GiB),
        fact("launcher.first_failure", 3, host="node-02", exit_code=-9),
        fact("kernel.xid", 79, pci="0000:1b:00", meaning="off the bus", action="reboot"),
        fact("gpu.name", "H100", pci="0000:1b:00.0", index=2, serial="1650", uuid="GPU-a"),
        fact("kernel.oom_kill", "python", anon_rss_kb=1024),
        fact("cuda.oom", GiB, total_bytes=80 * GiB, free_bytes=GiB, gpu=1),
        fact("kernel.nvrm_mismatch", True, module_version="550", client_version="535"),
        fact("df.use_percent", 100, mount="/data"),
    ]
    computed = base_context(facts) | hit_context([], facts)
    intermediate = {"pci"}  # the Xid's bus id, before it is normalised into gpu_pci
    assert computed.keys() - intermediate <= PLACEHOLDERS.keys()
    captured_only = {"path"}  # a named group of the rules that print a path
    assert PLACEHOLDERS.keys() - captured_only <= computed.keys()


def test_fill() -> None:
    assert fill("df -h {mount}", {"mount": "/data"}) == "df -h /data"
    assert fill("df -h {mount}", {}) is None
    # Without placeholders the text is shown as written: docker's template keeps its braces.
    template = "docker inspect --format '{{.State.OOMKilled}}' <container>"
    assert fill(template, {}) == template


def test_actions_drop_unfilled_steps_and_repeats_and_keep_the_order() -> None:
    steps = [
        Step("Drain {host} now.", "scontrol update nodename={host} state=drain"),
        Step("Drain the node in the scheduler, then reboot."),
        Step("Drain the node IN THE scheduler before anything else."),  # same first 4 words
        Step("Reset GPU {gpu_index}.", "nvidia-smi -r -i {gpu_index}"),  # no value: dropped
        Step("Reset the GPU.", "nvidia-smi -r -i 1    # or reboot"),
        Step("Reset it again.", "nvidia-smi -r -i 0"),  # same program and first two words
        Step("Drain the node in the scheduler, then reboot."),  # the same text
        Step("Run the field diagnostic.", "dcgmi diag -r 3"),
    ]
    shown = actions(steps, {"host": "node-01"})
    assert shown == [
        Action("Drain node-01 now.", "scontrol update nodename=node-01 state=drain"),
        Action("Drain the node in the scheduler, then reboot."),
        Action("Reset the GPU.", "nvidia-smi -r -i 1    # or reboot"),
        Action("Run the field diagnostic.", "dcgmi diag -r 3"),
    ]
    assert actions(steps, {"host": "node-01"}, limit=2) == shown[:2]


def test_a_fallback_size_is_dropped_when_a_size_was_computed() -> None:
    steps = [
        Step(
            "Recreate it with a larger /dev/shm.", "docker run --shm-size={shm_recommend} <image>"
        ),
        Step("Without a computed size: 16g.", "docker run --shm-size=16g <image>  # or --ipc=host"),
        Step("List the GPUs' names.", "nvidia-smi --query-gpu=name --format=csv"),
        Step("List their memory use.", "nvidia-smi --query-gpu=memory.used --format=csv"),
    ]
    computed = actions(steps, {"shm_recommend": "8g"})
    assert [a.command for a in computed] == [
        "docker run --shm-size=8g <image>",
        "nvidia-smi --query-gpu=name --format=csv",  # other fields are another check
        "nvidia-smi --query-gpu=memory.used --format=csv",
    ]
    # nothing computed: the fallback is shown
    assert actions(steps, {})[0].command == "docker run --shm-size=16g <image>  # or --ipc=host"


def test_summary_falls_back_to_the_title() -> None:
    rule = parse_rule(
        {
            "id": "filesystem-full",
            "category": "filesystem",
            "role": "root",
            "weight": 0.9,
            "title": "A filesystem is full",
            "summary": "{mount} is full.",
            "match": {"any": ["No space left on device"]},
        },
        "filesystem-full.toml",
    )
    assert summary(rule, {"mount": "/data"}) == "/data is full."
    assert summary(rule, {}) == "A filesystem is full"


def test_generic_checks_have_every_key_and_come_from_the_blocks() -> None:
    assert set(GENERIC_CHECKS) == {None, *Category}
    assert all(GENERIC_CHECKS[key] for key in GENERIC_CHECKS), "a category without checks"
    blocks = {
        "a": Remedy("a", "x", (Step("Check shm.", "df -h /dev/shm"),), "shm", "a.toml"),
        "b": Remedy("b", "x", (Step("Collect logs."),), "unknown", "b.toml"),
        "c": Remedy("c", "x", (Step("Only for rules."),), None, "c.toml"),
    }
    checks = generic_checks(blocks)
    assert checks[Category.SHM] == (Action("Check shm.", "df -h /dev/shm"),)
    assert checks[None] == (Action("Collect logs."),)
    assert checks[Category.HARDWARE] == ()


def test_steps_reading_the_same_container_fields_run_one_command() -> None:
    """A report merges steps by their command: two steps that both read a container's shm
    size or OOM flag (a rule's own, a shared block's, the category's generic checks) must use
    the same command, or "To confirm" shows the same check twice in two spellings."""
    from crashlens.library import default_pattern_dir
    from crashlens.match.rules import load_remedies, shipped_rules

    steps = [
        step for remedy in load_remedies(default_pattern_dir()).values() for step in remedy.steps
    ]
    for rule in shipped_rules():
        steps += [*rule.remediation, *rule.next_checks]
    fields_of: dict[str, frozenset[str]] = {}
    for step in steps:
        command = step.command or ""
        if "docker inspect" in command:
            found = set(re.findall(r"\b[A-Z][A-Za-z]+\b", command))
            fields_of[command] = frozenset(found - {"HostConfig", "State", "Config"})
    assert {"ShmSize", "OOMKilled", "Memory"} <= set().union(*fields_of.values())
    # one command's fields all read by another: the same check in two spellings
    covered = [
        (command, other)
        for command, fields in fields_of.items()
        for other, more in fields_of.items()
        if other != command and fields and fields <= more
    ]
    assert covered == []
