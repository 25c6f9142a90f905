"""Zero leaks of a realistic planted job in every output, in either argument order, and no damage.

The job is written by tests/data/redaction/two_node_job.py (66 planted values: host names in
file names and pdsh prefixes, users outside /home, account ids inside bucket and storage-account
host names, connection strings, database passwords on command lines, W&B entities, GCP ids in
escaped JSON, tenant and subscription ids, InfiniBand GUIDs, scheduler host variables, IPv6
with zone ids after an interface name).
"""

from __future__ import annotations

import importlib.util
import json
import tarfile
from pathlib import Path
from types import ModuleType

import pytest
from typer.testing import CliRunner

from crashlens.cli import app
from crashlens.collect import CollectOptions, collect
from crashlens.redact import Redactor
from crashlens.redact.gates import Gates

RUNNER = CliRunner()
_SPEC = importlib.util.spec_from_file_location(
    "two_node_job", Path(__file__).parent / "data" / "redaction" / "two_node_job.py"
)
assert _SPEC is not None and _SPEC.loader is not None
JOB: ModuleType = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(JOB)


@pytest.fixture
def job(tmp_path: Path) -> list[str]:
    JOB.write_job(tmp_path / "job")
    return sorted(str(p) for p in (tmp_path / "job").iterdir())


def test_the_job_plants_at_least_60_values_that_it_holds(job: list[str]) -> None:
    assert len(JOB.PLANTED) >= 60
    everything = "\n".join(Path(p).name + "\n" + Path(p).read_text() for p in job)
    assert not [v for _, v in JOB.PLANTED if v.lower() not in everything.lower()]
    assert not JOB.damaged(everything)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("fmt", ["terminal", "json", "markdown", "html"])
def test_analyze_redact_leaks_nothing_in_any_format(
    job: list[str], fmt: str, reverse: bool
) -> None:
    paths = job[::-1] if reverse else job
    result = RUNNER.invoke(app, ["analyze", *paths, "-f", fmt, "--redact"])
    assert result.exit_code == 0, result.output
    assert not JOB.leaks(result.stdout)
    assert "shm" in result.stdout.lower()


def test_the_formats_agree_on_redacted_file_names(job: list[str]) -> None:
    shown = json.loads(RUNNER.invoke(app, ["analyze", *job, "-f", "json", "--redact"]).stdout)
    names = [item["path"] for item in shown["inputs"]]
    assert any(Path(n).name.startswith("env-host-") for n in names), names
    markdown = RUNNER.invoke(app, ["analyze", *job, "-f", "markdown", "--redact"]).stdout
    html = RUNNER.invoke(app, ["analyze", *job, "-f", "html", "--redact"]).stdout
    for name in names:
        assert Path(name).name in markdown and Path(name).name in html


def test_every_format_gets_the_same_mapping(job: list[str], tmp_path: Path) -> None:
    maps = []
    for fmt in ("terminal", "json", "markdown", "html"):
        mapping = tmp_path / f"{fmt}.json"
        result = RUNNER.invoke(
            app, ["analyze", *job, "-f", fmt, "--redact", "--redact-map", str(mapping)]
        )
        assert result.exit_code == 0, result.output
        maps.append(json.loads(mapping.read_text()))
    assert all(m == maps[0] for m in maps)


def _bundle_text(out: Path) -> tuple[str, list[str]]:
    with tarfile.open(out, "r:gz") as archive:
        names = archive.getnames()
        texts = []
        for member in archive.getmembers():
            stream = archive.extractfile(member)
            if stream is not None:
                texts.append(stream.read().decode("utf-8", errors="replace"))
    return "\n".join(texts), names


@pytest.mark.parametrize("reverse", [False, True])
def test_collect_bundles_leak_nothing_in_either_order(
    job: list[str], tmp_path: Path, reverse: bool
) -> None:
    out = tmp_path / "bundle.tar.gz"
    options = CollectOptions(logs=tuple(job[::-1] if reverse else job), timeout=2.0, steps=())
    collect(out, options)
    text, names = _bundle_text(out)
    assert not JOB.leaks(text + "\n".join(names))
    assert not JOB.damaged(text)


def test_a_log_collected_alone_leaks_nothing_in_its_name(job: list[str], tmp_path: Path) -> None:
    env = next(p for p in job if Path(p).name.startswith("env-"))
    out = tmp_path / "alone.tar.gz"
    collect(out, CollectOptions(logs=(env,), timeout=2.0, steps=()))
    text, names = _bundle_text(out)
    assert not JOB.leaks(text + "\n".join(names))


@pytest.mark.parametrize(
    ("line", "kept"),
    [
        ("cuDNN version: 8.9.2.26", None),
        ("nvidia_cublas_cu12-12.1.3.1-py3-none-manylinux1_x86_64.whl", None),
        ("TensorRT 8.6.1.6 and libnvinfer8_8.6.1.6-1+cuda12.0_amd64.deb", None),
        ("local = threading.local(); torchvision.io.read_image", None),
        ("nccl-tests: all_reduce_perf failed", None),
        ("NVRM: loading NVIDIA UNIX x86_64 Kernel Module (dvs-builder@U16-I3-B03-4-3)", None),
        ("[    0.000000] Linux version 5.15.0-98-generic (buildd@lcy02-amd64-27)", None),
        ("[default0]:2024-01-19 15:11:01 - WARNING - accelerate.utils.other - Detected", None),
        ("*** STEP 19.0 ON host-1 CANCELLED AT 2023-03-06 DUE TO NODE FAILURE ***", None),
        ("failed to alloc 4294967296 bytes on host: CUDA_ERROR_OUT_OF_MEMORY: out of memory", None),
        ("gpu-burn: 100.0% proc'd", None),
        ("Using ib0:fe80::ba59:9f03:a1:3e9c%ib0<0>", "ib0:ip-1%ib0<0>"),
        # C++ destructors in a library's log are not `~user` home folders
        ("MIOpen(HIP): Error [~FindDbRecord] Failed to store record to find-db at <x>", None),
        ("in Tensor::~Tensor () at tensor.cpp:88", None),
    ],
)
def test_no_over_redaction(line: str, kept: str | None) -> None:
    redactor = Redactor()
    redactor.learn(line)
    shown = redactor.text(line)
    if kept is None:
        assert shown == line
    else:
        assert kept in shown


def test_one_address_gets_one_pseudonym_whatever_its_zone() -> None:
    redactor = Redactor()
    shown = redactor.text("ib0:fe80::ba59:9f03:a1:3e9c%ib0 and fe80::ba59:9f03:a1:3e9c")
    assert shown == "ib0:ip-1%ib0 and ip-1"


def test_learning_first_makes_order_irrelevant() -> None:
    first, second = "user is logged in", "SLURM_JOB_USER=mkowalski"
    late = Redactor()
    early = Redactor()
    for text in (first, second):
        early.learn(text)
    assert early.text("ckpt of mkowalski_v2") == "ckpt of user-1_v2"
    assert late.text("ckpt of mkowalski_v2") == "ckpt of mkowalski_v2"


def test_both_gate_backends_propose_the_same_lines(job: list[str]) -> None:
    pytest.importorskip("hyperscan")
    from crashlens.redact.gates import fold
    from crashlens.redact.redactor import _LINE_ROWS

    patterns = [row.gate for row in _LINE_ROWS]
    fast, slow = Gates(patterns, backend="hyperscan"), Gates(patterns, backend="python")
    for path in job:
        folded = fold(Path(path).read_text())
        assert fast.lines(folded) == slow.lines(folded)


@pytest.mark.parametrize("line", ["cp model.pt ~alice/ckpt/", 'path="~alice"', "ls ~alice"])
def test_a_home_folder_after_a_tilde_is_still_a_user(line: str) -> None:
    redactor = Redactor()
    redactor.learn(line)
    assert "alice" not in redactor.text(line)
