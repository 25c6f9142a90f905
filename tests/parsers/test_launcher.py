"""LauncherParser: sniffing, prefix splitting and the facts of every launcher sample."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from crashlens.inputs.discover import Source
from crashlens.match.engine import analyze_source
from crashlens.match.rules import shipped_rules
from crashlens.model import Fact, InputKind
from crashlens.parsers.base import collect_text, safe_sniff
from crashlens.parsers.launcher import GLOG_YEAR, LauncherParser, parse_cuda_oom
from crashlens.parsers.torchelastic import TorchElasticErrorParser

from conftest import SAMPLES, sample_text

PARSER = LauncherParser()
LAUNCHER = sorted(
    p.name for p in (SAMPLES / "launcher").iterdir() if not p.name.startswith("torchelastic_error")
)
OTHER_KINDS = sorted(
    str(p.relative_to(SAMPLES))
    for folder in (
        "dmesg",
        "df",
        "ipcs",
        "ulimit",
        "nvidia_smi",
        "docker_inspect",
        "docker_compose",
    )
    for p in (SAMPLES / folder).iterdir()
)


def facts_of(name: str) -> list[Fact]:
    _, facts = collect_text(PARSER, sample_text(f"launcher/{name}"), name)
    return facts


def only(facts: list[Fact], key: str, **attrs: object) -> list[Fact]:
    return [f for f in facts if f.key == key and all(f.attr(k) == v for k, v in attrs.items())]


def one(facts: list[Fact], key: str, **attrs: object) -> Fact:
    found = only(facts, key, **attrs)
    assert len(found) == 1, f"{key} {attrs}: {found}"
    return found[0]


# --- sniffing ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", LAUNCHER)
def test_sniff_launcher_samples(name: str) -> None:
    head = sample_text(f"launcher/{name}")[:65536]
    score = safe_sniff(PARSER, head)
    assert score >= 0.6
    assert score > safe_sniff(TorchElasticErrorParser, head)


@pytest.mark.parametrize("name", OTHER_KINDS)
def test_sniff_is_low_on_other_kinds(name: str) -> None:
    assert safe_sniff(PARSER, sample_text(name)[:65536]) < 0.3


@pytest.mark.parametrize("head", ["", "abc", "\x00\xff\xfe" * 50, "{", "}{ ]["])
def test_sniff_bad_input(head: str) -> None:
    assert 0.0 <= safe_sniff(PARSER, head) < 0.6


# --- split_line -------------------------------------------------------------------------------


def test_split_rank_prefix_keeps_indentation() -> None:
    split = PARSER.split_line('[rank1]:   File "/workspace/train.py", line 212')
    assert (split.rank, split.text) == (1, '  File "/workspace/train.py", line 212')


def test_split_default_and_tee_prefixes() -> None:
    assert PARSER.split_line("[default3]:Epoch 1").rank == 3
    split = PARSER.split_line("2: RuntimeError: boom")
    assert (split.rank, split.text) == (2, "RuntimeError: boom")


def test_split_pdsh_host_and_deepspeed_time() -> None:
    split = PARSER.split_line("node-02: [2025-03-15 08:14:09,330] [ERROR] [launch.py:325:x] y")
    assert split.host == "node-02"
    assert split.text == "[ERROR] [launch.py:325:x] y"
    assert split.timestamp == pytest.approx(1742026449.330)


def test_split_pdsh_at_prefix_records_remote_host() -> None:
    split = PARSER.split_line("pdsh@node-01: node-02: ssh exited with exit code 249")
    assert (split.host, split.text) == ("node-02", "ssh exited with exit code 249")


def test_split_nccl_host_keeps_device() -> None:
    split = PARSER.split_line("3f9c1e2d7a4b:126319:126336 [1] NCCL INFO init.cc:818 -> 2")
    assert (split.host, split.text) == ("3f9c1e2d7a4b", "[1] NCCL INFO init.cc:818 -> 2")


def test_split_glog_python_prefix() -> None:
    split = PARSER.split_line(
        "E0325 20:57:27.620000 2606 site-packages/torch/distributed/elastic/multiprocessing/"
        "api.py:869] failed (exitcode: -9) local_rank: 3 (pid: 2611)"
    )
    assert split.text == "failed (exitcode: -9) local_rank: 3 (pid: 2611)"
    assert split.timestamp is not None
    later = PARSER.split_line("E0325 20:57:28.120000 2606 api.py:1] x").timestamp
    assert later is not None and later - split.timestamp == pytest.approx(0.5)


def test_split_stacked_prefixes() -> None:
    split = PARSER.split_line(
        "gpu-node-07: [rank3]:[E314 12:40:11.274431018 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog"
    )
    assert (split.host, split.rank, split.text) == ("gpu-node-07", 3, "[Rank 3] Watchdog")
    assert split.timestamp is not None
    import time

    assert time.gmtime(split.timestamp)[:3] == (GLOG_YEAR, 3, 14)


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "ERROR: Unexpected bus error encountered in worker.",
        "WARNING:torch.distributed.run:",
        "srun: error: node-0101: task 4: Out Of Memory",
        "  time      : 2025-03-14_09:31:04",
        "rank0: step 100 loss 3.4",
        "E9999 99:99:99.000000 1 a.py:1] not a real date",
    ],
)
def test_split_leaves_non_prefixes_alone(line: str) -> None:
    split = PARSER.split_line(line)
    assert (split.text, split.rank, split.host) == (line, None, None)


def test_split_bad_input() -> None:
    assert PARSER.split_line("").text == ""
    assert PARSER.split_line("\ufffd\ufffd[rank").text == "\ufffd\ufffd[rank"


# --- facts per sample -------------------------------------------------------------------------


@pytest.mark.parametrize("name", LAUNCHER)
def test_every_sample_parses_with_a_tool(name: str) -> None:
    facts = facts_of(name)
    assert all(f.lineno is not None and f.lineno >= 1 for f in facts)
    if not name.startswith("nccl_"):
        assert only(facts, "launcher.tool")


def test_deepspeed_pdsh_minus_7() -> None:
    facts = facts_of("deepspeed_pdsh_multinode_ansi_return_code_-7_REPRO.log")
    code = one(facts, "launcher.exit_code", source="deepspeed", host="node-02")
    assert (code.value, code.attr("local_rank")) == (-7, 1)
    assert one(facts, "launcher.exit_code", source="deepspeed", host="node-01").value == -6
    assert one(facts, "launcher.signal", source="exit-code", host="node-02").value == "SIGBUS"
    exc = one(facts, "python.exception")
    assert exc.attr("rank") == 5 and exc.attr("host") == "node-02"
    assert str(exc.value).startswith("RuntimeError: DataLoader worker (pid 88122)")
    assert one(facts, "launcher.tool").value == "deepspeed"
    assert one(facts, "launcher.nnodes").value == 2
    assert one(facts, "launcher.world_size").value == 8


def test_deepspeed_single_node_minus_9() -> None:
    facts = facts_of("deepspeed_launcher_single_node_return_code_-9_REPRO.log")
    code = one(facts, "launcher.exit_code")
    assert (code.value, code.attr("local_rank"), code.attr("source")) == (-9, 7, "deepspeed")
    assert one(facts, "launcher.signal").value == "SIGKILL"
    assert one(facts, "launcher.nproc_per_node").value == 8
    assert one(facts, "launcher.world_size").value == 8
    assert one(facts, "launcher.cpu_memory_percent").value == pytest.approx(96.7)


def test_torchrun_cuda_oom_two_failures() -> None:
    facts = facts_of("torchrun_rank_prefixed_cuda_oom_error_file_two_failures_REPRO.log")
    oom = one(facts, "cuda.oom")
    assert oom.value == 2 * 1024**3
    assert (oom.attr("gpu"), oom.attr("rank")) == (1, 1)
    assert oom.attr("free_bytes") == int(round(1.06 * 1024**3))
    first = one(facts, "launcher.first_failure")
    assert (first.value, first.attr("host"), first.attr("exit_code")) == (1, "gpu-node-07", 1)
    assert str(first.attr("error_file")).endswith("attempt_0/1/error.json")
    failure = one(facts, "launcher.exit_code", source="torchelastic-failure")
    assert (failure.attr("rank"), failure.value) == (3, 1)
    by_rank = {f.attr("rank"): f.attr("type") for f in only(facts, "python.exception")}
    assert by_rank == {1: "torch.OutOfMemoryError", 3: "torch.distributed.DistBackendError"}
    assert one(facts, "nccl.error").attr("rank") == 3
    assert one(facts, "nccl.version").value == "2.23.4"


def test_torchrun_watchdog_timeout() -> None:
    facts = facts_of("torchrun_nccl_watchdog_timeout_sigabrt_REPRO.log")
    timeout = one(facts, "nccl.timeout")
    assert timeout.value == 600000
    assert (timeout.attr("rank"), timeout.attr("op")) == (3, "ALLREDUCE")
    assert (timeout.attr("ran_ms"), timeout.attr("seq")) == (600017, 48211)
    first = one(facts, "launcher.first_failure")
    assert (first.value, first.attr("local_rank"), first.attr("host")) == (11, 3, "gpu-node-08")
    signal = one(facts, "launcher.signal")
    assert (signal.value, signal.attr("rank"), signal.attr("pid")) == ("SIGABRT", 11, 2291)
    agent = one(facts, "launcher.exit_code", source="elastic-agent")
    assert (agent.value, agent.attr("local_rank")) == (-6, 3)


def test_torchrun_glog_sigkill() -> None:
    facts = facts_of("torchrun_glog_prefix_sigkill_host_oom_progress_cr_REPRO.log")
    assert one(facts, "launcher.first_failure").value == 2
    signal = one(facts, "launcher.signal")
    assert (signal.value, signal.attr("rank"), signal.attr("pid")) == ("SIGKILL", 2, 140290)
    root = one(facts, "launcher.exit_code", source="torchelastic-root-cause")
    assert (root.value, root.attr("host")) == (-9, "gpu-node-07")
    assert one(facts, "launcher.tool").value == "torchrun"


def test_torchrun_legacy_bus_error() -> None:
    facts = facts_of("torchrun_legacy_logging_dataloader_bus_error_sigbus_REPRO.log")
    assert one(facts, "launcher.first_failure").value == 1
    failure = one(facts, "launcher.exit_code", source="torchelastic-failure")
    assert (failure.value, failure.attr("rank")) == (-7, 2)
    assert one(facts, "launcher.signal", source="torchelastic").value == "SIGBUS"
    assert one(facts, "launcher.signal", source="dataloader-worker").attr("pid") == 31907
    assert one(facts, "torch.version").value == "1.13.1"
    assert len(only(facts, "python.exception")) == 2


def test_torch_19_old_layout() -> None:
    facts = facts_of("torch_distributed_launch_1.9_old_report_layout_sigabrt_REPRO.log")
    first = one(facts, "launcher.first_failure")
    assert (first.value, first.attr("exit_code"), first.attr("host")) == (0, -6, None)
    assert one(facts, "launcher.signal").value == "SIGABRT"
    assert one(facts, "launcher.restarts").value == 1


def test_accelerate_multi_gpu() -> None:
    facts = facts_of("accelerate_launch_multi_gpu_childfailederror_REPRO.log")
    assert one(facts, "launcher.tool").value == "accelerate"
    assert one(facts, "launcher.first_failure").value == 2
    exc = one(facts, "python.exception")
    assert exc.attr("rank") == 2 and "illegal memory access" in str(exc.value)
    assert one(facts, "launcher.world_size").value == 4
    assert one(facts, "launcher.nnodes").value == 1


def test_accelerate_rich_sigkill() -> None:
    facts = facts_of("accelerate_launch_simple_launcher_rich_ansi_sigkill_REPRO.log")
    code = one(facts, "launcher.exit_code")
    assert (code.value, code.attr("source")) == (-9, "accelerate")
    assert one(facts, "launcher.signal").value == "SIGKILL"
    assert one(facts, "python.exception").attr("type") == "CalledProcessError"


def test_nccl_shm_fallocate() -> None:
    facts = facts_of("nccl_2.7_warn_posix_fallocate_shm_REPRO.log")
    warns = only(facts, "nccl.warn", host="3f9c1e2d7a4b", dev=1)
    assert "posix_fallocate failed : No space left on device" in str(warns[0].value)
    assert one(facts, "nccl.error").value == "ncclSystemError"
    assert one(facts, "nccl.version").value == "2.7.3"


def test_nccl_info_bring_up() -> None:
    facts = facts_of("nccl_debug_info_init_socket_REPRO.log")
    assert one(facts, "nccl.version").value == "2.23.4"
    assert one(facts, "cuda.version").value == "12.6"
    assert one(facts, "nccl.transport").value == "Socket"


def test_nccl_ib_remote_error() -> None:
    facts = facts_of("nccl_warn_ib_retry_exceeded_remote_error_REPRO.log")
    assert "IBV_WC_RETRY_EXC_ERR" in str(only(facts, "nccl.warn", host="node-02")[0].value)
    assert one(facts, "nccl.error").attr("rank") == 6


def test_slurm_step_oom() -> None:
    facts = facts_of("slurm_job_oom_kill_event_stepid_REPRO.out")
    assert one(facts, "slurm.oom_kill_events").attr("step") == "412233.0"
    task = one(facts, "slurm.task_failure", node="gpu-node-08")
    assert (task.value, task.attr("task")) == ("Out Of Memory", "1")
    assert one(facts, "slurm.cancelled").attr("node") == "gpu-node-07"
    assert one(facts, "launcher.signal", source="agent-received").value == "SIGTERM"
    assert one(facts, "launcher.world_size").value == 16
    tool = one(facts, "launcher.tool")
    assert tool.value == "torchrun" and "slurm" in str(tool.attr("seen"))


def test_slurm_wording_variants() -> None:
    facts = facts_of("slurm_oom_kill_wording_variants_REPRO.out")
    steps = [f.attr("step") for f in only(facts, "slurm.oom_kill_events")]
    assert steps == ["191.batch", "3495064.0", "11300781.0"]
    assert one(facts, "launcher.exit_code", source="srun").value == -7
    assert one(facts, "launcher.signal", source="shell").attr("pid") == 8156
    assert len(only(facts, "slurm.cancelled")) == 2


# --- synthetic lines --------------------------------------------------------------------------


def test_interleaved_ranks_attributed() -> None:
    text = "\n".join(
        [
            "[rank0]: Traceback (most recent call last):",
            "[rank2]: Traceback (most recent call last):",
            "[rank2]: ValueError: bad shape",
            "[rank0]: KeyError: 'labels'",
        ]
    )
    _, facts = collect_text(PARSER, text, "x.log")
    got = {(f.attr("rank"), f.value) for f in only(facts, "python.exception")}
    assert got == {(2, "ValueError: bad shape"), (0, "KeyError: 'labels'")}


@pytest.mark.parametrize(
    ("line", "tried", "gpu", "wording"),
    [
        (
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 "
            "has a total capacty of 79.15 GiB of which 3.25 MiB is free. Process 1 has 79.14 GiB "
            "memory in use.",
            20 * 1024**2,
            0,
            "2.1",
        ),
        (
            "RuntimeError: CUDA out of memory. Tried to allocate 256.00 MiB (GPU 3; 23.69 GiB "
            "total capacity; 21.60 GiB already allocated; 118.06 MiB free; 22.92 GiB reserved "
            "in total by PyTorch)",
            256 * 1024**2,
            3,
            "legacy",
        ),
        ("RuntimeError: CUDA error: out of memory", 0, None, "cuda_error"),
    ],
)
def test_cuda_oom_wordings(line: str, tried: int, gpu: int | None, wording: str) -> None:
    parsed = parse_cuda_oom(line)
    assert parsed is not None
    assert parsed[0] == tried
    assert parsed[1].get("gpu") == gpu and parsed[1]["wording"] == wording


def test_world_layout_and_workers_from_args() -> None:
    text = (
        "torchrun --nnodes=4 --nproc-per-node 8 t.py --preprocessing_num_workers 2 --num_workers 6"
    )
    _, facts = collect_text(PARSER, text, "x.log")
    assert one(facts, "launcher.nnodes").value == 4
    assert one(facts, "launcher.nproc_per_node").value == 8
    world = one(facts, "launcher.world_size")
    assert (world.value, world.attr("derived")) == (32, True)
    assert one(facts, "launcher.num_workers").value == 6


def test_world_info_dict() -> None:
    text = (
        "[2025-03-14 10:02:04,122] [INFO] [launch.py:146:main] WORLD INFO DICT: "
        "{'a': [0, 1, 2], 'b': [0, 1, 2]}"
    )
    _, facts = collect_text(PARSER, text, "x.log")
    got = [one(facts, f"launcher.{k}").value for k in ("nnodes", "nproc_per_node", "world_size")]
    assert got == [2, 3, 6]


def test_mpirun_and_cancel_reason() -> None:
    text = (
        "mpirun noticed that process rank 3 with PID 4242 on node n-1 exited on signal 9 (Killed)\n"
        "slurmstepd: error: *** JOB 77 ON n-1 CANCELLED AT 2025-01-01T00:00 DUE TO TIME LIMIT ***\n"
    )
    _, facts = collect_text(PARSER, text, "x.log")
    code = one(facts, "launcher.exit_code", source="mpirun")
    assert (code.value, code.attr("rank"), code.attr("host")) == (-9, 3, "n-1")
    assert one(facts, "slurm.cancelled").value == "TIME LIMIT"


@pytest.mark.parametrize(
    "text",
    ["", "\x00\x01\x02\ufffd" * 100, "Root Cause (first observed failure):\n[0]:\n  rank      : "],
)
def test_bad_input_does_not_raise(text: str) -> None:
    _, facts = collect_text(PARSER, text, "bad.log")
    assert all(f.key != "launcher.first_failure" for f in facts)


def test_truncated_report_keeps_what_it_has() -> None:
    text = sample_text("launcher/torchrun_glog_prefix_sigkill_host_oom_progress_cr_REPRO.log")
    cut = text[: text.index("  error_file")]
    _, facts = collect_text(PARSER, cut, "cut.log")
    assert one(facts, "launcher.first_failure").value == 2


def test_anchors_are_line_safe() -> None:
    for pattern in PARSER.anchors:
        assert "\\s" not in pattern and "(?<" not in pattern
        assert "[^" not in pattern or all("\\n" in cls for cls in pattern.split("[^")[1:]), pattern


def test_sample_folder_exists() -> None:
    assert Path(SAMPLES / "launcher").is_dir() and len(LAUNCHER) >= 14


def test_completion_marker_is_kept_at_its_last_line() -> None:
    text = (
        "[default6]:Traceback (most recent call last):\n"
        "[default6]:PIL.UnidentifiedImageError: cannot identify image file <_io.BytesIO>\n"
        "{'train_runtime': 812.4, 'train_samples_per_second': 9.8}\n"
        "Training completed. Do not forget to share your model on huggingface.co/models =)\n"
    )
    _, facts = collect_text(PARSER, text, "train.log")
    completed = [f for f in facts if f.key == "launcher.completed"]
    assert [(f.value, f.lineno) for f in completed] == [(True, 4)]


def _engine_facts(text: str, name: str) -> list[tuple[str, str, int | None]]:
    source = Source(
        path=name,
        open=lambda: io.BytesIO(text.encode("utf-8")),
        size_bytes=len(text),
        name=name,
    )
    analysis = analyze_source(source, shipped_rules(), InputKind.LAUNCHER)
    return sorted((f.key, str(f.value), f.lineno) for f in analysis.facts)


@pytest.mark.parametrize("name", LAUNCHER)
def test_skipping_settled_lines_changes_no_fact(name: str) -> None:
    """The engine skips lines of anchors the collector has settled; feeding all gives the same."""
    text = sample_text(f"launcher/{name}")
    _, every_line = collect_text(PARSER, text, name)
    assert _engine_facts(text, name) == sorted((f.key, str(f.value), f.lineno) for f in every_line)


def test_only_the_first_transport_line_is_kept_and_later_errors_still_count() -> None:
    ranks = [
        f"[rank{r}]:node-1:100:{200 + r} [{r}] NCCL INFO Using network {'IB' if r else 'Socket'}"
        for r in range(64)
    ]
    warning = "[rank3]:node-1:100:203 [3] NCCL WARN NET/IB : Got completion"
    text = "\n".join([*ranks, warning]) + "\n"
    facts = _engine_facts(text, "train.log")
    assert ("nccl.transport", "Socket", 1) in facts
    assert [f for f in facts if f[0] == "nccl.transport"] == [("nccl.transport", "Socket", 1)]
    assert any(f[0] == "nccl.warn" and f[2] == 65 for f in facts)


def test_settled_version_lines_are_skipped_but_other_versions_still_found() -> None:
    ranks = [
        f"[rank{r}]:node-1:100:{200 + r} [{r}] NCCL INFO NCCL version 2.18.1+cuda12.1"
        for r in range(32)
    ]
    later = ["[rank0]:PyTorch version: 2.3.0", "[rank0]:DataLoader num_workers=8, world_size=32"]
    facts = _engine_facts("\n".join(ranks + later) + "\n", "train.log")
    assert ("nccl.version", "2.18.1", 1) in facts
    assert [f for f in facts if f[0] == "cuda.version"] == [("cuda.version", "12.1", 1)]
    assert ("torch.version", "2.3.0", 33) in facts
    assert ("launcher.num_workers", "8", 34) in facts


def test_tool_gates_hold_on_every_sample_line() -> None:
    """Each tool's pattern has a literal gate, and the gate lets through every sample line the
    pattern matches (the literals are derived from the pattern, so it cannot drift)."""
    from crashlens.parsers.launcher.tools import TOOLS

    lines = [line for name in LAUNCHER for line in sample_text(f"launcher/{name}").splitlines()]
    for tool in TOOLS:
        assert tool.says.literals, tool.name
        for line in lines:
            if any(pattern.search(line) for pattern in tool.says.patterns):
                assert tool.says.may_match(line), (tool.name, line)


def test_infiniband_devices_nccl_opened() -> None:
    """`NET/IB : Using [0]mlx5_0:1/IB ...` says verbs are in use (what a memlock limit hits)."""
    facts = facts_of("nccl_warn_ib_retry_exceeded_remote_error_REPRO.log")
    devices = one(facts, "nccl.ib_devices")
    assert devices.value == "mlx5_0:1/IB,mlx5_3:1/IB,mlx5_4:1/IB,mlx5_5:1/IB"
    assert devices.lineno == 1
    lines = [
        "node-1:100:200 [0] NCCL INFO NET/IB : No device found.",
        "node-1:100:200 [0] NCCL INFO NET/IB : Using [0]mlx5_bond_0:1/RoCE [RO]; OOB eth0:10.1.1.1",
        "node-1:100:201 [1] NCCL INFO NET/IB : Using [0]mlx5_1:1/IB ; OOB ib0:10.1.1.1<0>",
    ]
    _, found = collect_text(PARSER, "\n".join(lines) + "\n", "train.log")
    assert [(f.value, f.lineno) for f in found if f.key == "nccl.ib_devices"] == [
        ("mlx5_bond_0:1/RoCE", 2)
    ]
    engine = _engine_facts("\n".join(lines) + "\n", "train.log")
    assert [f for f in engine if f[0] == "nccl.ib_devices"] == [
        ("nccl.ib_devices", "mlx5_bond_0:1/RoCE", 2)
    ]
    # found by fuzzing: a vertical tab inside the list tore a device from its `[N]`
    torn = "node-1:100:200 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_\x0b4:1/IB ; OOB x\n"
    _, found = collect_text(PARSER, torn, "train.log")
    assert [f.value for f in found if f.key == "nccl.ib_devices"] == ["mlx5_0:1/IB,mlx5_"]
