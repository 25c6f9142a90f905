"""Redaction: zero leaks of planted personal and secret values, and an unchanged analysis.

tests/data/redaction/job/ is a failed two-node job whose logs carry planted values of every
kind the redactor handles (hosts, IPv4/IPv6, MACs, users and home folders, e-mails, cloud
account and instance ids, GPU UUIDs and serials, HF/OpenAI/GitHub/AWS/GCP/W&B/Slack tokens,
private keys, password/token/Authorization values, URL credentials), inside tracebacks, JSON,
URLs, NCCL and syslog lines, nvidia-smi output and docker inspect. planted.tsv lists them all.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crashlens.cli import app
from crashlens.inputs.context import add_context
from crashlens.model import (
    Action,
    Category,
    Cause,
    Evidence,
    InputState,
    InputStatus,
    Report,
    Role,
    Verdict,
)
from crashlens.pipeline import analyze
from crashlens.redact import PSEUDONYM_RE, Redactor, redact_report
from crashlens.render.html import render_html
from crashlens.render.json import render_json
from crashlens.render.markdown import render_markdown

DATA = Path(__file__).resolve().parent / "data" / "redaction"
JOB = DATA / "job"
RUNNER = CliRunner()


def _planted() -> list[tuple[str, str]]:
    rows = []
    for line in (DATA / "planted.tsv").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            kind, value = line.split("\t", 1)
            rows.append((kind, value))
    return rows


PLANTED = _planted()


def _leaks(text: str) -> list[str]:
    lower = text.lower()
    return [value for _, value in PLANTED if value.lower() in lower]


def _job_lines() -> list[tuple[str, int, str]]:
    lines = []
    for path in sorted(JOB.iterdir()):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            lines.append((path.name, number, line))
    return lines


def test_the_corpus_plants_every_kind() -> None:
    kinds = {kind for kind, _ in PLANTED}
    assert kinds >= {
        "host",
        "ip",
        "mac",
        "user",
        "email",
        "account",
        "instance",
        "gpu-uuid",
        "serial",
        "secret",
    }
    everything = "\n".join(line for _, _, line in _job_lines()).lower()
    missing = [value for _, value in PLANTED if value.lower() not in everything]
    assert not missing, f"planted.tsv lists values the corpus does not hold: {missing}"


def test_every_line_of_the_corpus_is_redacted_without_leaks() -> None:
    redactor = Redactor()
    lines = _job_lines()
    for _, _, line in lines:
        redactor.text(line)  # learn first, as redact_report does
    leaks = []
    for name, number, line in lines:
        shown = redactor.text(line)
        leaks.extend(f"{name}:{number}: {value}" for value in _leaks(shown))
    assert not leaks, "\n".join(leaks)


def test_whole_files_are_redacted_without_leaks() -> None:
    # multi-line strings: a private key block across lines, a JSON document
    redactor = Redactor()
    for path in sorted(JOB.iterdir()):
        shown = redactor.text(path.read_text(encoding="utf-8"))
        assert not _leaks(shown), (path.name, _leaks(shown))


def _synthetic_report() -> Report:
    """Every corpus line cited as evidence, with hosts and context: the worst case."""
    evidence = []
    lines = _job_lines()
    for index, (name, number, line) in enumerate(lines):
        context = tuple(
            (n, text) for other, n, text in lines if other == name and 0 < abs(n - number) <= 2
        )
        evidence.append(
            Evidence(
                path=f"/home/jdoe42/jobs/42/{name}",
                line=number,
                text=line,
                rule="shm-dataloader-bus-error",
                role=Role.SYMPTOM,
                note="gpu-node-18 failed first" if index == 0 else None,
                rank=index % 8,
                host="gpu-node-18" if index % 2 else "gpu-node-17",
                timestamp=1_749_564_000.0 + index,
                context=context,
            )
        )
    cause = Cause(
        category=Category.SHM,
        confidence=0.8,
        summary="Bus error on gpu-node-18 (10.42.7.18): /dev/shm is 64 MiB",
        evidence=tuple(evidence),
        remediation=(
            Action("ssh to gpu-node-18 and check", "ssh jdoe42@gpu-node-18 df -h /dev/shm"),
        ),
        next_checks=(Action("Check the token hf_QwErTyUiOpAsDfGhJkLzXcVbNm1234567890", None),),
        demoted_because=None,
    )
    return Report(
        verdict=Verdict.SHM,
        causes=(cause,),
        inputs=(
            InputStatus(
                path="/home/jdoe42/jobs/42/train.log",
                kind=None,
                status=InputState.ANALYZED,
                reason=None,
            ),
        ),
        failure_seen=True,
        first_failure=evidence[0],
        notes=("gpu-node-17 timed out waiting for gpu-node-18",),
        crashlens_version="test",
    )


def test_a_report_citing_every_line_leaks_nothing_in_any_format() -> None:
    original = _synthetic_report()
    redacted = redact_report(original)
    for text in (render_json(redacted), render_markdown(redacted), render_html(redacted)):
        assert not _leaks(text), _leaks(text)
    # structure is unchanged: verdict, categories, rules, roles, lines, ranks, times
    assert redacted.verdict == original.verdict
    before, after = original.causes[0], redacted.causes[0]
    assert after.category is before.category and after.confidence == before.confidence
    for old, new in zip(before.evidence, after.evidence, strict=True):
        assert (new.line, new.rule, new.role, new.rank, new.timestamp) == (
            old.line,
            old.rule,
            old.role,
            old.rank,
            old.timestamp,
        )
        assert [n for n, _ in new.context] == [n for n, _ in old.context]
        if not _leaks(old.text) and "jdoe42" not in old.text:
            assert new.text == old.text, "a line with nothing personal was changed"


def test_pseudonyms_are_stable_across_files_and_fields() -> None:
    redacted = redact_report(_synthetic_report())
    cause = redacted.causes[0]
    hosts = {item.host for item in cause.evidence}
    assert hosts == {"host-1", "host-2"} or hosts == {"host-2", "host-1"}
    host_of_18 = cause.evidence[1].host
    assert host_of_18 is not None
    # the same host is the same pseudonym inside text, summary, remediation and notes
    assert host_of_18 in cause.summary
    assert cause.remediation[0].command == f"ssh user-1@{host_of_18} df -h /dev/shm"
    assert all(item.path.startswith("/home/user-1/jobs/42/") for item in cause.evidence)
    assert redacted.inputs[0].path == "/home/user-1/jobs/42/train.log"
    nccl = [e.text for e in cause.evidence if "NCCL INFO Bootstrap" in e.text]
    assert nccl and nccl[0].startswith("host-") and ":88231:88231 [0]" in nccl[0]


def test_redaction_is_idempotent() -> None:
    once = redact_report(_synthetic_report())
    twice = redact_report(once)
    assert render_json(twice) == render_json(once)


@pytest.mark.parametrize(
    "line",
    [
        "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.",
        "Caught signal 7 (Bus error: nonexistent physical address)",
        "exits with return code = -7",
        "docker.shm_size_bytes=67108864",
        "shm 64M 64M 0 100% /dev/shm",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB "
        "(GPU 0; 79.35 GiB total capacity; 76.12 GiB already allocated)",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        "[E610 14:33:01.402117 88231 ProcessGroupNCCL.cpp:616] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=8812, OpType=ALLREDUCE, Timeout(ms)=1800000)",
        "NCCL version 2.18.5+cuda12.2",
        "NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]",
        "GPU 00000000:07:00.0: Detected Critical Xid Error",
        'File "/usr/lib/python3.10/multiprocessing/connection.py", line 414, in _recv_bytes',
        "tokenizer: pad_token=<pad> eos_token=</s> max_new_tokens=512",
        "connect to 127.0.0.1:29500 failed; binding 0.0.0.0:8080; ::1 loopback",
        "Driver Version: 550.54.15   CUDA Version: 12.4",
        "see https://pytorch.org/docs/stable/notes/cuda.html#environment-variables",
        "root@localhost: Permission denied (publickey)",
        "Killed process 4242 (python) total-vm:123456kB, anon-rss:98765kB, oom_score_adj:0",
    ],
)
def test_what_matters_to_the_analysis_is_kept(line: str) -> None:
    assert Redactor().text(line) == line


@pytest.mark.parametrize(
    ("line", "gone"),
    [
        ("HF_TOKEN: hf_abcdefghijklmnopqrstuvwxyz012345", "hf_abcdefghij"),
        ('{"api_key": "sk-abcdefghijklmnop0123456789"}', "sk-abcdefghijklmnop"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA"),
        ("--password 'p@ss w0rd'", "p@ss w0rd"),
        ("password: hunter2", "hunter2"),
        ("https://user:pa55@example.internal/x", "pa55"),
        ("ssh carol@10.1.2.3", "carol"),
        ("C:\\Users\\carol\\AppData\\Local\\Temp", "carol"),
        ('"email": "Carol.Smith@Example.co.uk"', "Carol.Smith"),
        ("inet6 2001:db8::42/64 scope global", "2001:db8::42"),
        ("[fe80::1%eth0]:29500", "fe80::1"),
        ("Accepted key for bob from 203.0.113.9", "203.0.113.9"),
        ("MIG-4b3c2d1e-0f9a-4b8c-9d7e-6f5a4b3c2d1e", "4b3c2d1e-0f9a"),
        ("AWS_SECRET_ACCESS_KEY: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
        ("arn:aws:iam::111122223333:user/bob", "111122223333"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "eyJhbGci"),
    ],
)
def test_each_kind_is_replaced(line: str, gone: str) -> None:
    shown = Redactor().text(line)
    assert gone.lower() not in shown.lower(), shown
    assert PSEUDONYM_RE.search(shown), shown


def test_the_real_analysis_is_unchanged_by_redaction(tmp_path: Path) -> None:
    paths = [str(JOB)]
    report = add_context(analyze(paths), paths)
    redacted = redact_report(report)
    assert report.verdict != "none" and report.causes
    assert redacted.verdict == report.verdict
    assert [(c.category, c.confidence) for c in redacted.causes] == [
        (c.category, c.confidence) for c in report.causes
    ]
    for before, after in zip(report.causes, redacted.causes, strict=True):
        assert [(e.line, e.rule, e.role, e.rank, e.timestamp) for e in after.evidence] == [
            (e.line, e.rule, e.role, e.rank, e.timestamp) for e in before.evidence
        ]
        assert len(after.remediation) == len(before.remediation)
    for text in (render_json(redacted), render_markdown(redacted), render_html(redacted)):
        assert not _leaks(text), _leaks(text)
    # analyzing the redacted logs gives the same verdict and cites the same lines
    clean = tmp_path / "job"
    clean.mkdir()
    redactor = Redactor()
    originals = {p.name: p.read_text(encoding="utf-8") for p in sorted(JOB.iterdir())}
    for text in originals.values():
        redactor.text(text)
    for name, text in originals.items():
        (clean / name).write_text(redactor.text(text), encoding="utf-8")
    again = analyze([str(clean)])
    assert again.verdict == report.verdict
    assert [c.category for c in again.causes] == [c.category for c in report.causes]
    assert [(Path(e.path).name, e.line, e.rule) for e in again.causes[0].evidence] == [
        (Path(e.path).name, e.line, e.rule) for e in report.causes[0].evidence
    ]


def test_cli_redacts_markdown_and_html_by_default(tmp_path: Path) -> None:
    for fmt in ("markdown", "html"):
        result = RUNNER.invoke(app, ["analyze", str(JOB), "-f", fmt])
        assert result.exit_code == 0, result.output
        assert not _leaks(result.stdout), (fmt, _leaks(result.stdout))
        assert "host-1" in result.stdout


def test_cli_json_and_terminal_are_not_redacted_unless_asked() -> None:
    plain = RUNNER.invoke(app, ["analyze", str(JOB), "-f", "json"])
    assert plain.exit_code == 0
    assert "gpu-node-18" in plain.stdout
    redacted = RUNNER.invoke(app, ["analyze", str(JOB), "-f", "json", "--redact"])
    assert redacted.exit_code == 0
    assert not _leaks(redacted.stdout)
    assert json.loads(redacted.stdout)["verdict"] == json.loads(plain.stdout)["verdict"]
    no = RUNNER.invoke(app, ["analyze", str(JOB), "-f", "markdown", "--no-redact"])
    assert "gpu-node-18" in no.stdout


def test_cli_writes_the_map_for_the_user_only(tmp_path: Path) -> None:
    mapping = tmp_path / "map.json"
    result = RUNNER.invoke(
        app, ["analyze", str(JOB), "-f", "markdown", "--redact-map", str(mapping)]
    )
    assert result.exit_code == 0, result.output
    table = json.loads(mapping.read_text(encoding="utf-8"))
    assert table["host-1"] in ("gpu-node-18", "gpu-node-17")
    assert all(PSEUDONYM_RE.fullmatch(key) for key in table)
    for pseudonym in table:
        if pseudonym in result.stdout:
            break
    else:
        pytest.fail("no pseudonym of the map appears in the report")
    if os.name == "posix":
        assert stat.S_IMODE(mapping.stat().st_mode) == 0o600
    refused = RUNNER.invoke(
        app, ["analyze", str(JOB), "--no-redact", "--redact-map", str(tmp_path / "m")]
    )
    assert refused.exit_code == 2


CORPUS = Path(__file__).resolve().parents[1] / "corpus"


# Over the whole corpus (cost grows with it); coverage's tracer would double it, and the code
# it drives is measured by the rest of the suite.
@pytest.mark.no_cover
def test_redacting_every_corpus_case_keeps_its_verdict(tmp_path: Path) -> None:
    """Redacted logs must still tell the same story: same verdict, same ranked causes."""
    cases = sorted(p for p in CORPUS.glob("*/logs") if p.is_dir())
    if not cases:
        pytest.skip("no corpus in this checkout")
    changed = []
    for index, logs in enumerate(cases):
        redactor = Redactor()
        files = [p for p in sorted(logs.rglob("*")) if p.is_file()]
        texts = {}
        for path in files:
            try:
                texts[path] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                texts[path] = None
        for text in texts.values():
            if text:
                redactor.text(text)
        target = tmp_path / str(index)
        for path, text in texts.items():
            out = target / path.relative_to(logs)
            out.parent.mkdir(parents=True, exist_ok=True)
            if text is None:
                out.write_bytes(path.read_bytes())
            else:
                out.write_text(redactor.text(text), encoding="utf-8")
        before, after = analyze([str(logs)]), analyze([str(target)])
        if before.verdict != after.verdict or [c.category for c in before.causes] != [
            c.category for c in after.causes
        ]:
            changed.append(f"{logs.parent.name}: {before.verdict} -> {after.verdict}")
    assert not changed, "\n".join(changed)


@pytest.mark.parametrize(
    "text",
    ["0:" * 50_000, "a-" * 50_000 + "@", "a." * 50_000, "a-" * 50_000 + ": x", "ab:cd-" * 20_000],
)
def test_pathological_strings_are_redacted_in_linear_time(text: str) -> None:
    import time

    start = time.perf_counter()
    Redactor().text(text)
    assert time.perf_counter() - start < 5.0


def test_the_lead_line_is_redacted_like_the_evidence() -> None:
    report = analyze([str(JOB)])
    assert report.lead is not None and _leaks(report.lead.text + report.lead.path)
    lead = redact_report(report).lead
    assert lead is not None and not _leaks(lead.text + lead.path)
    assert (lead.line, lead.rule) == (report.lead.line, report.lead.rule)


SAMPLES = Path(__file__).resolve().parent / "data" / "samples"
PERSONAL_SAMPLES = frozenset(
    {
        "df/df_h_host_checkpoint_disk_full_nfs_lustre_REPRO.txt",
        "dmesg/dev_kmsg_raw_records.log",
        "dmesg/dmesg_T_xid119_gsp_timeout.log",
        "dmesg/journalctl_default_logs_begin_header_azhpc.log",
        "dmesg/journalctl_k_default_boot_separators_REPRO.log",
        "dmesg/journalctl_k_short_iso.log",
        "dmesg/journalctl_k_short_iso_precise_REPRO.log",
        "dmesg/kern_log_memcg_oom_docker_cgroupv2_REPRO.log",
        "dmesg/kern_log_rminitadapter_failed_REPRO.log",
        "dmesg/kern_log_syslog_pciehp_xid79_REPRO.log",
        "dmesg/pstore_dmesg_kernel_panic_part1.txt",
        "docker_inspect/docker_inspect_gpus_all_default_shm64m_exited1_REPRO.json",
        "docker_inspect/docker_inspect_ipc_host_ulimits_runtime_nvidia_oomkilled_137_REPRO.json",
        "docker_inspect/docker_inspect_runlike_fixture6_privileged_capadd_memory.json",
        "docker_inspect/docker_inspect_running_shm16g_privileged_device_ids_REPRO.json",
        "docker_inspect/docker_inspect_watchtower_container_running.json",
        "docker_inspect/docker_inspect_watchtower_memory_limit_trailing_garbage.json",
        "docker_inspect/podman_inspect_docs_example_trailing_commas.json",
        "ip_addr/ifconfig_net_tools_1_60_link_encap_REPRO.txt",
        "ip_addr/ifconfig_net_tools_2_10_container.txt",
        "ip_addr/ip_addr_container_eth0_ifb_down.txt",
        "ip_addr/ip_addr_show_bond_bridge_veth_REPRO.txt",
        "ip_addr/ip_br_addr_container_eth0_ifb_down.txt",
        "ip_addr/ip_br_addr_two_hosts_prompts_REPRO.txt",
        "kubectl_json/events_json_npd_oomkilling_REPRO.json",
        "kubectl_json/pod_json_k8s_1.1_memtest_error_137_REPRO.json",
        "kubectl_json/pod_list_evicted_ephemeral_storage_REPRO.json",
        "kubectl_json/pod_yaml_oomkilled_exit_code_0_phase_succeeded_REPRO.yaml",
        "kubectl_text/describe_pod_last_state_oomkilled_restarts_REPRO.txt",
        "launcher/accelerate_launch_multi_gpu_childfailederror_REPRO.log",
        "launcher/deepspeed_launcher_single_node_return_code_-9_REPRO.log",
        "launcher/deepspeed_pdsh_multinode_ansi_return_code_-7_REPRO.log",
        "launcher/nccl_2.7_warn_posix_fallocate_shm_REPRO.log",
        "launcher/nccl_debug_info_init_socket_REPRO.log",
        "launcher/nccl_warn_ib_retry_exceeded_remote_error_REPRO.log",
        "launcher/slurm_job_oom_kill_event_stepid_REPRO.out",
        "launcher/torchrun_glog_prefix_sigkill_host_oom_progress_cr_REPRO.log",
        "launcher/torchrun_legacy_logging_dataloader_bus_error_sigbus_REPRO.log",
        "launcher/torchrun_nccl_watchdog_timeout_sigabrt_REPRO.log",
        "launcher/torchrun_rank_prefixed_cuda_oom_error_file_two_failures_REPRO.log",
        "mounts/findmnt_o_target_source_fstype_ecryptfs_home_REPRO.txt",
        "mounts/findmnt_util_linux_outputs_default_ascii_tree.txt",
        "nvidia_smi/list_L_590.48.01_h100_mig.txt",
        "nvidia_smi/q_460.32.03_8xa100.txt",
        "nvidia_smi/q_535.154.05_8xh100.txt",
        "nvidia_smi/q_535.183.01_h100_truncated_bad_indent.txt",
        "nvidia_smi/qx_a100-sxm4-v12.xml",
        "nvidia_smi/qx_quadro-p400.xml",
        "nvidia_smi/qx_rtx-3080-v13.xml",
        "nvidia_smi/qx_tesla-t4.xml",
        "slurm_job/scontrol_show_job_failed_nonzero_exit_REPRO.txt",
        "slurm_job/scontrol_show_job_running_min_memory_cpu_REPRO.txt",
    }
)
"""Shared samples that hold real personal values (host, user and container names, addresses,
GPU UUIDs and serials, a copyright e-mail), each reviewed: redaction must change them. Every
other sample holds none and must come out byte-identical."""


def _sample_files() -> list[Path]:
    skip = (".gz", ".zst", ".zip", ".md")
    return [p for p in sorted(SAMPLES.rglob("*")) if p.is_file() and p.suffix not in skip]


def test_benign_samples_are_byte_identical_after_redaction() -> None:
    damaged, unchanged = [], []
    for path in _sample_files():
        name = path.relative_to(SAMPLES).as_posix()
        text = path.read_bytes().decode("utf-8", errors="replace")
        redactor = Redactor()
        redactor.learn(text)
        shown = redactor.text(text)
        if name in PERSONAL_SAMPLES:
            if shown == text:
                unchanged.append(name)
        elif shown != text:
            changed = [
                (a, b)
                for a, b in zip(text.splitlines(), shown.splitlines(), strict=False)
                if a != b
            ]
            damaged.append(f"{name}: {changed[:2]}")
    assert not damaged, "\n".join(damaged)
    assert not unchanged, f"listed as personal but unchanged: {unchanged}"
    assert len(_sample_files()) - len(PERSONAL_SAMPLES) >= 80


# Over the whole corpus (cost grows with it); coverage's tracer would double it, and the code
# it drives is measured by the rest of the suite.
@pytest.mark.no_cover
def test_redacting_every_corpus_case_keeps_its_evidence(tmp_path: Path) -> None:
    """Learned over all of a case's files first, then written: the same verdict, causes and
    cited lines (file, line, rule) as the original logs."""
    cases = sorted(p for p in CORPUS.glob("*/logs") if p.is_dir())
    if not cases:
        pytest.skip("no corpus in this checkout")
    changed = []
    for index, logs in enumerate(cases):
        redactor = Redactor()
        texts: dict[Path, str | None] = {}
        for path in sorted(p for p in logs.rglob("*") if p.is_file()):
            try:
                texts[path] = path.read_bytes().decode("utf-8")  # `\r` kept: lines count
            except UnicodeDecodeError:
                texts[path] = None
        for text in texts.values():
            if text:
                redactor.learn(text)
        target = tmp_path / str(index)
        for path, text in texts.items():
            out = target / path.relative_to(logs)
            out.parent.mkdir(parents=True, exist_ok=True)
            if text is None:
                out.write_bytes(path.read_bytes())
            else:
                out.write_bytes(redactor.text(text).encode("utf-8"))
        before, after = analyze([str(logs)]), analyze([str(target)])

        def cited(report: Report, root: Path) -> list[tuple[str, int | None, str | None]]:
            return [
                (Path(e.path).relative_to(root).as_posix(), e.line, e.rule)
                for c in report.causes
                for e in c.evidence
            ]

        if (before.verdict, [c.category for c in before.causes], cited(before, logs)) != (
            after.verdict,
            [c.category for c in after.causes],
            cited(after, target),
        ):
            changed.append(f"{logs.parent.name}: {before.verdict} -> {after.verdict}")
    assert not changed, "\n".join(changed)


def test_a_path_ending_in_user_before_a_colon_names_no_user() -> None:
    # a `user:` key is a user's name; `/home/user: permission denied` is a path and its error
    line = "Error: mkdir /home/user: permission denied"
    redactor = Redactor()
    redactor.learn(line)
    assert redactor.text(line) == line
    assert redactor.text("user: alice") == "user: user-1"
