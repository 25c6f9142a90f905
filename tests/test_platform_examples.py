"""examples/slurm/epilog.sh and examples/k8s/collect-pytorchjob.sh, run for real.

The platform's own tools are stand-ins on PATH (a fake `scontrol`, `kubectl` and, for the
epilog, `crashlens`) that answer with real samples and record how they were called; bash,
the scripts and (for Kubernetes) crashlens itself are the real ones.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EPILOG = ROOT / "examples" / "slurm" / "epilog.sh"
K8S = ROOT / "examples" / "k8s" / "collect-pytorchjob.sh"
SAMPLES = ROOT / "tests" / "data" / "samples"
SCONTROL_FAILED = SAMPLES / "slurm_job" / "scontrol_show_job_failed_nonzero_exit_REPRO.txt"

BASH = shutil.which("bash") or "bash"
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _tool(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(0o755)


def _epilog_env(tmp_path: Path, record: str | None, **env: str) -> dict[str, str]:
    """A bin folder with fake scontrol and crashlens; the job's stdout file exists."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    calls = tmp_path / "calls"
    _tool(
        bin_dir,
        "crashlens",
        f'printf "%s\\n" "$@" > "{calls}.tmp"; mv "{calls}.tmp" "{calls}"\n',
    )
    if record is None:
        _tool(bin_dir, "scontrol", "echo 'slurm_load_jobs error: Invalid job id' >&2; exit 1\n")
    else:
        (tmp_path / "record.txt").write_text(record)
        _tool(bin_dir, "scontrol", f'cat "{tmp_path / "record.txt"}"\n')
    return {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "CRASHLENS_BUNDLE_DIR": str(tmp_path / "bundles"),
        **env,
    }


def _record(tmp_path: Path, state: str = "FAILED", exit_code: str = "1:0") -> str:
    stdout = tmp_path / "job" / "slurm-2.out"
    stdout.parent.mkdir(exist_ok=True)
    stdout.write_text("[rank0]: RuntimeError: CUDA error: an illegal memory access\n")
    text = SCONTROL_FAILED.read_text()
    text = text.replace("JobState=FAILED", f"JobState={state}").replace(
        "ExitCode=1:0", f"ExitCode={exit_code}"
    )
    text = text.replace("StdOut=/home/user/outfile", f"StdOut={tmp_path}/job/slurm-%j.out")
    return text


def _run_epilog(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([BASH, str(EPILOG)], env=env, capture_output=True, text=True, timeout=30)


def _wait_for(path: Path, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists():
            return True
        time.sleep(0.05)
    return False


def test_epilog_collects_a_failed_job_detached_with_its_stdout(tmp_path: Path) -> None:
    env = _epilog_env(tmp_path, _record(tmp_path), SLURM_JOB_ID="2", SLURM_JOB_EXIT_CODE="256")
    done = _run_epilog(env)
    assert done.returncode == 0
    assert _wait_for(tmp_path / "calls")
    args = (tmp_path / "calls").read_text().splitlines()
    assert args[0] == "collect"
    assert str(tmp_path / "job" / "slurm-2.out") in args  # %j expanded from the record
    scontrol_copy = next(a for a in args if a.endswith(".scontrol.txt"))
    assert "JobState=FAILED" in Path(scontrol_copy).read_text()
    out = args[args.index("--out") + 1]
    assert out.startswith(str(tmp_path / "bundles" / "job-2-")) and out.endswith(".tar.gz")


@pytest.mark.parametrize(
    ("env", "state", "exit_code"),
    [
        ({"SLURM_JOB_DERIVED_EC": "0:9"}, "COMPLETING", "0:0"),  # a step killed by a signal
        ({}, "COMPLETING", "137:0"),  # no exit code in the environment: the record's
        ({"SLURM_JOB_EXIT_CODE": "0"}, "OUT_OF_MEMORY", "0:125"),
    ],
)
def test_epilog_reads_the_exit_codes_and_state_it_is_given(
    tmp_path: Path, env: dict[str, str], state: str, exit_code: str
) -> None:
    full = _epilog_env(tmp_path, _record(tmp_path, state, exit_code), SLURM_JOB_ID="2", **env)
    assert _run_epilog(full).returncode == 0
    assert _wait_for(tmp_path / "calls")


def test_epilog_leaves_a_job_that_succeeded_alone(tmp_path: Path) -> None:
    record = _record(tmp_path, "COMPLETED", "0:0")
    env = _epilog_env(tmp_path, record, SLURM_JOB_ID="2", SLURM_JOB_EXIT_CODE="0")
    assert _run_epilog(env).returncode == 0
    time.sleep(0.3)
    assert not (tmp_path / "calls").exists()
    assert not (tmp_path / "bundles").exists()


def test_epilog_exits_zero_whatever_breaks(tmp_path: Path) -> None:
    # scontrol fails, crashlens fails, the bundle folder cannot be made, no job id at all
    env = _epilog_env(tmp_path, None, SLURM_JOB_ID="2", SLURM_JOB_EXIT_CODE="256")
    _tool(tmp_path / "bin", "crashlens", "exit 3\n")
    assert _run_epilog(env).returncode == 0
    (tmp_path / "file").write_text("")
    env["CRASHLENS_BUNDLE_DIR"] = str(tmp_path / "file" / "sub")
    assert _run_epilog(env).returncode == 0
    del env["SLURM_JOB_ID"]
    assert _run_epilog(env).returncode == 0
    env = _epilog_env(tmp_path, None, SLURM_JOB_ID="2", SLURM_JOB_EXIT_CODE="256")
    env["CRASHLENS_BIN"] = str(tmp_path / "not-installed" / "crashlens")
    assert _run_epilog(env).returncode == 0


def test_epilog_is_detached_and_returns_before_collect_ends(tmp_path: Path) -> None:
    env = _epilog_env(tmp_path, _record(tmp_path), SLURM_JOB_ID="2", SLURM_JOB_EXIT_CODE="256")
    _tool(tmp_path / "bin", "crashlens", f'sleep 3; touch "{tmp_path}/calls"\n')
    started = time.monotonic()
    assert _run_epilog(env).returncode == 0
    assert time.monotonic() - started < 2.5
    assert _wait_for(tmp_path / "calls", 10)


FAKE_KUBECTL = """\
echo "$*" >> "{log}"
args=" $* "
case "$args" in
  *" get pytorchjob "*) echo 'Error from server (NotFound): not found' >&2; exit 1 ;;
  *" get pods "*"-o json"*) cat "{pods}" ;;
  *" get pods "*"-o name"*) echo pod/memtest ;;
  *" get pod memtest "*"jsonpath"*) echo -n memtest ;;
  *" get events "*) cat "{events}" ;;
  *" describe pod memtest"*) echo "Name: memtest"; echo "Status: Failed" ;;
  *" logs memtest "*"--previous"*) echo "previous terminated container not found" >&2; exit 1 ;;
  *" logs memtest "*) cat "{log_text}" ;;
  *) echo "unexpected: $*" >&2; exit 1 ;;
esac
"""


def test_k8s_script_gathers_the_pods_and_runs_analyze(tmp_path: Path) -> None:
    pod = json.loads(
        (SAMPLES / "kubectl_json" / "pod_json_k8s_1.1_memtest_error_137_REPRO.json")
        .read_text()
        .split("\n", 1)[1]  # after the `$ kubectl ...` line
    )
    pods = tmp_path / "pods-list.json"
    pods.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [pod]}))
    log_text = tmp_path / "container.log"
    log_text.write_text("step 10 loss 2.1\nstep 20 loss 1.9\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "kubectl-calls"
    _tool(
        bin_dir,
        "kubectl",
        FAKE_KUBECTL.format(
            log=calls,
            pods=pods,
            events=SAMPLES / "kubectl_json" / "events_json_npd_oomkilling_REPRO.json",
            log_text=log_text,
        ),
    )
    crashlens = Path(sys.executable).parent / "crashlens"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CRASHLENS": str(crashlens)}
    out = tmp_path / "gathered"
    done = subprocess.run(
        [BASH, str(K8S), "train", "-n", "research", "-o", str(out), "--", "-f", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == [
        "events.json",
        "pods.json",
        "pods/memtest.describe.txt",
        "pods/memtest.memtest.log",
    ]
    assert "skipped pytorchjob.json" in done.stderr  # a failing call is reported, not fatal
    assert "-l training.kubeflow.org/job-name=train" in calls.read_text()
    assert "-n research" in calls.read_text()
    report = json.loads(done.stdout)
    assert report["verdict"] == "host_oom"
    assert any(i["kind"] == "kubectl_json" for i in report["inputs"])
