"""Python's tempfile writes where TMPDIR (else TEMP, else TMP) points: a container started with
TMPDIR=/dev/shm fills its shared-memory tmpfs with temporary files, and the ENOSPC that follows
names no path. docker inspect's `Config.Env` decides between shm and a full disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crashlens.model import Verdict
from crashlens.pipeline import analyze_inputs
from mechanism_helpers import report_of

from conftest import ROOT

SAMPLE = (
    ROOT
    / "tests/data/samples/docker_inspect/docker_inspect_gpus_all_default_shm64m_exited1_REPRO.json"
)

TEMPFILE_ENOSPC = """\
Traceback (most recent call last):
  File "/workspace/prepare_shards.py", line 88, in <module>
    write_shard(buf)
  File "/workspace/prepare_shards.py", line 41, in write_shard
    with tempfile.NamedTemporaryFile(suffix=".tar") as tmp:
  File "/usr/lib/python3.12/tempfile.py", line 483, in func_wrapper
    return func(*args, **kwargs)
OSError: [Errno 28] No space left on device
"""


def _inspect(extra_env: list[str]) -> str:
    document = json.loads(SAMPLE.read_text(encoding="utf-8"))
    document[0]["Config"]["Env"].extend(extra_env)
    return json.dumps(document, indent=4)


def _tmpdir_facts(tmp_path: Path, env: list[str]) -> list[tuple[object, object]]:
    (tmp_path / "docker_inspect.json").write_text(_inspect(env), encoding="utf-8")
    facts = [f for a in analyze_inputs([str(tmp_path)]) for f in a.facts]
    return [(f.value, f.attr("var")) for f in facts if f.key == "docker.env_tmpdir"]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (["TMPDIR=/dev/shm"], [("/dev/shm", "TMPDIR")]),
        (["TMP=/scratch", "TEMP=/dev/shm/t"], [("/dev/shm/t", "TEMP")]),
        (["TMPDIR=", "TMP=/scratch"], [("/scratch", "TMP")]),
        ([], []),
    ],
)
def test_the_temporary_directory_is_read_in_tempfile_s_order(
    tmp_path: Path, env: list[str], expected: list[tuple[str, str]]
) -> None:
    assert _tmpdir_facts(tmp_path, env) == expected


def test_a_tempfile_enospc_is_shm_when_tmpdir_is_dev_shm(tmp_path: Path) -> None:
    files = {"prepare.log": TEMPFILE_ENOSPC, "docker_inspect.json": _inspect(["TMPDIR=/dev/shm"])}
    report = report_of(tmp_path / "job", files)
    assert report.verdict is Verdict.SHM, [(c.category, c.confidence) for c in report.causes]
    evidence = {item.rule for item in report.causes[0].evidence}
    assert "shm-tmpdir-on-dev-shm-explains-enospc" in evidence
    assert any("tempfile" in note for note in report.notes)


def test_with_tmpdir_on_a_disk_the_enospc_stays_a_disk_s(tmp_path: Path) -> None:
    env = ["TMPDIR=/scratch/tmp"]
    files = {"prepare.log": TEMPFILE_ENOSPC, "docker_inspect.json": _inspect(env)}
    report = report_of(tmp_path / "job", files)
    assert report.verdict is not Verdict.SHM
    assert report.causes[0].category.value == "filesystem"
    assert not any("tempfile" in note for note in report.notes)
