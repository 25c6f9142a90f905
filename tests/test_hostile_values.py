"""A value never costs an input: an absurd number, float, nesting or field in a real sample.

Each case takes a real sample of one kind, adds or plants a hostile value (5000 digits, which
Python's `int()` refuses; `1e999`, which overflows a float; 10,000 levels of JSON nesting; a
CSV field over the csv module's limit) and runs the engine on it. The input must still be
analyzed (not skipped as "could not be read"), and every fact of the clean sample must still
be there, except the ones the damaged value itself carried.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Callable

import pytest

from crashlens.inputs.discover import Source
from crashlens.match.engine import analyze_source
from crashlens.match.rules import shipped_rules
from crashlens.model import InputAnalysis, InputState
from crashlens.text.tolerant_json import blank_deep, loads
from crashlens.text.values import bounded_int, finite_float, int_of_float

from conftest import sample

HUGE = "9" * 5000
"""More digits than `int()` accepts (4300)."""
DEEP = "[" * 10_000 + "]" * 10_000


def _analyze(data: bytes, name: str) -> InputAnalysis:
    source = Source(path=name, open=lambda: io.BytesIO(data), size_bytes=len(data), name=name)
    return analyze_source(source, shipped_rules())


def _facts(analysis: InputAnalysis) -> Counter[tuple[str, str]]:
    return Counter((f.key, str(f.value)) for f in analysis.facts)


def _append(*lines: str) -> Callable[[str], str]:
    return lambda text: text.rstrip("\n") + "\n" + "\n".join(lines) + "\n"


def _prepend(*lines: str) -> Callable[[str], str]:
    return lambda text: "\n".join(lines) + "\n" + text


def _json(change: Callable[[dict[str, object]], None]) -> Callable[[str], str]:
    def edit(text: str) -> str:
        data = json.loads(text)
        target = data[0] if isinstance(data, list) else data
        change(target)
        return json.dumps(data, indent=2).replace('"@HUGE@"', HUGE).replace('"@DEEP@"', DEEP)

    return edit


def _set(path: tuple[str, ...], value: object) -> Callable[[dict[str, object]], None]:
    def change(data: dict[str, object]) -> None:
        node: object = data
        for key in path[:-1]:
            assert isinstance(node, dict)
            node = node.setdefault(key, {})
        assert isinstance(node, dict)
        node[path[-1]] = value

    return change


CASES: dict[str, tuple[str, Callable[[str], str], set[str]]] = {
    # kind/sample, the damage, the fact keys the damaged value itself carried
    "launcher numbers": (
        "launcher/deepspeed_launcher_single_node_return_code_-9_REPRO.log",
        _prepend(
            f"[rank{HUGE}]: RuntimeError: boom",
            f"torchrun --nproc_per_node={HUGE} --nnodes={HUGE} train.py",
            f"num_workers = {HUGE}",
            f"CUDA out of memory. Tried to allocate {HUGE}.00 GiB. GPU {HUGE} has a total capacity"
            f" of 1e999 GiB of which {HUGE} MiB is free.",
            f"[PG ID 0 PG GUID 0 Rank {HUGE}] Watchdog caught collective operation timeout:"
            f" WorkNCCL(SeqNum={HUGE}, OpType=ALLREDUCE, Timeout(ms)={HUGE}) ran for {HUGE} ms",
            f"srun: error: node-1: task 0: Exited with exit code {HUGE}",
            f"[2024-03-14 10:02:04,122] [INFO] [launch.py:316:sigkill_handler] exits with"
            f" return code = {HUGE}",
            f"cpu memory usage: {HUGE} GiB ({HUGE}.5%)",
        ),
        set(),
    ),
    "dmesg numbers": (
        "dmesg/dmesg_T_xid119_gsp_timeout.log",
        _append(
            f"[{HUGE}.000000] NVRM: Xid (PCI:0000:3b:00): {HUGE}, pid=1, name=python",
            f"6,1234,{HUGE},-;NVRM: Xid (PCI:0000:3c:00): 79, GPU has fallen off the bus.",
            f"[    5.000000] potentially unexpected fatal signal {HUGE}.",
            f"[    6.000000] VFS: file-max limit {HUGE} reached",
            f"[    7.000000] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): {HUGE}, Non-fatal",
        ),
        {"kernel.gpu_off_bus"},
    ),
    "df numbers": (
        "df/df_h_centos7_jc_fixture.txt",
        _append(f"tmpfs  {HUGE}  {HUGE}  1.0G  {HUGE}%  /dev/shm2"),
        set(),
    ),
    "ipcs numbers": (
        "ipcs/ipcs_l_limits_REPRO.txt",
        lambda text: text.replace("max number of segments = ", f"max number of segments = {HUGE}"),
        {"ipcs.shmmni"},
    ),
    "ulimit numbers": (
        "ulimit/ulimit_a_bash4_memlock_64_REPRO.txt",
        lambda text: text.replace("(kbytes, -s) ", f"(kbytes, -s) {HUGE}", 1),
        {"ulimit.stack_kb"},
    ),
    "nvidia-smi csv field": (
        "nvidia_smi/csv_query_gpu_all_fields_590.48.01_h100.csv",
        _append('0, "' + "x" * 200_000 + '", 0'),
        set(),
    ),
    "docker inspect numbers and nesting": (
        "docker_inspect/docker_inspect_gpus_all_default_shm64m_exited1_REPRO.json",
        _json(
            lambda data: (
                _set(("Config", "Labels"), "@DEEP@")(data),
                _set(("State", "Pid"), "@HUGE@")(data),
                _set(("HostConfig", "NanoCpus"), 1e308)(data),
            )
        ),
        set(),
    ),
    "torchelastic numbers and nesting": (
        "torchelastic_error/torchelastic_error_file_rank1_REPRO.json",
        _json(
            lambda data: (
                _set(("message", "extraInfo", "timestamp"), "@HUGE@")(data),
                _set(("deep",), "@DEEP@")(data),
            )
        ),
        {"torchelastic.timestamp"},
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_a_hostile_value_costs_only_itself(case: str) -> None:
    relative, damage, lost = CASES[case]
    path = sample(relative)
    clean_text = path.read_bytes().decode("utf-8", "replace")
    clean = _analyze(clean_text.encode(), path.name)
    hostile = _analyze(damage(clean_text).encode(), path.name)
    assert hostile.status.status is InputState.ANALYZED, hostile.status.reason
    assert hostile.status.kind == clean.status.kind
    missing = _facts(clean) - _facts(hostile)
    assert not {key for key, _ in missing} - lost, f"facts lost: {sorted(missing)}"


def test_bounded_readers() -> None:
    assert bounded_int("42") == 42
    assert bounded_int(" -7 ") == -7
    assert bounded_int(HUGE) is None
    assert bounded_int("12345678901234567890") == 12345678901234567890
    assert bounded_int("123456789012345678901") is None
    assert bounded_int("4x") is None and bounded_int(None) is None
    assert finite_float("1.5") == 1.5
    assert finite_float("1e999") is None and finite_float("nan") is None
    assert finite_float(HUGE) is None
    assert int_of_float(2.7) == 2 and int_of_float(float("inf")) is None


def test_json_keeps_the_document_around_an_absurd_value() -> None:
    text = '{"a": ' + HUGE + ', "b": [1e999, NaN, Infinity], "c": ' + DEEP + ', "d": "kept"}'
    value = loads(text)
    assert (value["a"], value["b"], value["d"]) == (None, [None, None, None], "kept")
    depth, node = 0, value["c"]
    while isinstance(node, list):
        depth, node = depth + 1, node[0]
    assert node is None and depth < 300  # cut at MAX_DEPTH, the rest read as null
    blanked = blank_deep('{"x": [[[1]]],\n "y": 2}', limit=2)
    assert len(blanked) == len('{"x": [[[1]]],\n "y": 2}')
    assert json.loads(blanked) == {"x": [None], "y": 2}


def test_remediation_and_clocks_survive_absurd_figures() -> None:
    """The shm-size and GPU-count figures and the HTML clock raised on such values."""
    from crashlens.decide.remedy import base_context
    from crashlens.model import Clock
    from crashlens.parsers.base import fact
    from crashlens.render.html.text import time_label

    facts = [
        fact("nvidia_smi.gpu_count", 10**400, "smi.txt", 1),
        fact("launcher.num_workers", 10**30, "train.log", 2),
        fact("docker.shm_size_bytes", 10**400, "inspect.json", 3),
        fact("docker.memory_limit_bytes", float("inf"), "inspect.json", 4),
    ]
    context = base_context(facts)
    assert "shm_size_h" not in context and "memory_limit_h" not in context
    for stamp in (1e18, float("inf"), -1e18):
        for clock in (Clock.WALL, Clock.YEARLESS, Clock.BOOT):
            assert time_label(stamp, clock)
    assert time_label(0.0, Clock.WALL) == "1970-01-01 00:00:00"
