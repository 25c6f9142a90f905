"""Cross-file explanations as data: the loader's checks, every example in the rules, and each
mechanism end to end on a two-file input folder (the same code `crashlens analyze` runs)."""

# ruff: noqa: E501  (log lines are kept whole, as the programs print them)

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from crashlens.decide.explain import apply_explanations
from crashlens.decide.policy import decide
from crashlens.errors import PatternError
from crashlens.library import default_pattern_dir
from crashlens.match.explanations import Example, Explanation, RuleOut
from crashlens.match.rules import Rule, fact_from_line, load_rules, parse_rule, shipped_rules
from crashlens.model import Category, Fact, Hit, Role, Verdict
from crashlens.pipeline import AnalyzeOptions, analyze

from conftest import sample

RULES = shipped_rules()
BY_ID = {rule.id: rule for rule in RULES}
EXPLAINING = [(rule, item) for rule in RULES for item in rule.explains]
RULING_OUT = [(rule, item) for rule in RULES for item in rule.rules_out]


def _facts(example: Example) -> list[Fact]:
    # Each fact is its own input: `foreign` asks whether *another* input names a value.
    return [fact_from_line(line, path=f"<input {n}>") for n, line in enumerate(example.facts)]


def _hits(line: str, targets: list[Rule]) -> list[Hit]:
    """The hits the target rules make on one example line (or `key=value` fact)."""
    found = []
    for rule in targets:
        if rule.facts and re.match(r"^[a-z_][a-z0-9_.]*=", line):
            matched = rule.match_fact(fact_from_line(line))
        else:
            matched = rule.match_line(line) is not None
        if matched:
            found.append(Hit(rule.id, rule.category, rule.role, rule.weight, "<symptom>", 1, line))
    return found


def _targets(explanation: Explanation) -> list[Rule]:
    return [
        rule
        for rule in RULES
        if rule.id in explanation.symptom_rules
        or (rule.category is explanation.symptom_category and rule.role is not Role.CONTEXT)
    ]


def _label(pair: tuple[Rule, object]) -> str:
    return pair[0].id


def test_the_library_has_the_explanations_the_issue_asks_for() -> None:
    explained = {name for _, item in EXPLAINING for name in item.symptom_rules}
    assert {"filesystem-read-only", "gpu-oom-cublas-cudnn-alloc-failed"} <= explained
    assert {"shm-nccl-system-error", "shm-bus-error-crash", "driver-sigsegv-exit"} <= explained
    assert any("shm-docker-default-64m" in item.rules for _, item in RULING_OUT)


@pytest.mark.parametrize("pair", EXPLAINING, ids=_label)
def test_explanation_examples(pair: tuple[Rule, Explanation]) -> None:
    rule, explanation = pair
    targets = _targets(explanation)
    for example in explanation.examples_match:
        hits = _hits(example.line, targets)
        assert hits, f"{rule.source}: no symptom rule of the explanation hits {example.line!r}"
        facts = _facts(example)
        assert any(explanation.grounds(hit, facts) for hit in hits), (
            f"{rule.source}: should explain {example.line!r} given {example.facts}"
        )
    for example in explanation.examples_no_match:
        facts = _facts(example)
        for hit in _hits(example.line, targets):
            assert explanation.grounds(hit, facts) is None, (
                f"{rule.source}: should not explain {example.line!r} given {example.facts}"
            )


@pytest.mark.parametrize("pair", RULING_OUT, ids=_label)
def test_rules_out_examples(pair: tuple[Rule, RuleOut]) -> None:
    rule, ruling = pair
    targets = [BY_ID[name] for name in sorted(ruling.rules)]
    for example in ruling.examples_match:
        hits = _hits(example.line, targets)
        assert hits, f"{rule.source}: no ruled-out rule hits {example.line!r}"
        assert all(ruling.grounds(hit, _facts(example)) for hit in hits), rule.source
    for example in ruling.examples_no_match:
        for hit in _hits(example.line, targets):
            assert ruling.grounds(hit, _facts(example)) is None, rule.source


# ---- the loader ----------------------------------------------------------------------------

_BASE = {
    "id": "permissions-x",
    "category": "permissions",
    "role": "root",
    "weight": 0.9,
    "title": "t",
    "remediation": {"steps": ["Do it."]},
}
_EXPLAINS = {
    "symptom_rules": ["filesystem-read-only"],
    "when": [{"key": "docker.mount", "op": "regex", "value": "^/"}],
    "weight": 0.9,
    "note": "n",
    "examples": {
        "match": [{"line": "Read-only file system", "facts": ["docker.mount=/"]}],
        "no_match": [{"line": "Read-only file system", "facts": []}],
    },
}


def _rule_with(**explains: object) -> Rule:
    return parse_rule({**_BASE, "explains": [{**_EXPLAINS, **explains}]}, "permissions-x.toml")


def test_a_rule_that_only_explains_needs_no_match() -> None:
    rule = _rule_with()
    assert rule.patterns == () and rule.facts == ()
    assert rule.explains[0].symptom_rules == frozenset({"filesystem-read-only"})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"becomes": "shm"}, r"`explains\[0\]` has unknown fields: becomes"),
        ({"symptom_rules": []}, "needs `symptom_rules` or `symptom_category`"),
        ({"symptom_category": "disk"}, r"`explains\[0\].symptom_category` is not a category"),
        ({"when": []}, r"`explains\[0\].when` must be a non-empty list"),
        ({"when": [{"key": "k", "op": "near", "value": 1}]}, r"`explains\[0\].when\[0\]`: .*op"),
        ({"when": [[]]}, r"`explains\[0\].when\[0\]` is an empty list"),
        ({"same": ["a b"]}, r"`explains\[0\].same` must list qualifier names"),
        ({"weight": 1.5}, r"`explains\[0\].weight` must be a number in \(0, 1\]"),
        ({"note": ""}, r"`explains\[0\]` needs `note`"),
        ({"path": "/(?P<p>x)"}, r"`explains\[0\].path` needs a `\(\?P<path>...\)` group"),
        ({"path": "("}, r"`explains\[0\].path` does not compile"),
        ({"symptom_line": "("}, r"`explains\[0\].symptom_line` does not compile"),
        ({"foreign": "not a name"}, r"`explains\[0\].foreign` must be a qualifier name"),
        ({"examples": {"match": []}}, r"`explains\[0\].examples.match` needs at least one"),
        (
            {"examples": {"match": [{"text": "x"}], "no_match": [{"line": "y"}]}},
            r"`explains\[0\].examples.match` items are tables of `line` and `facts`",
        ),
    ],
)
def test_a_malformed_explanation_names_the_file_and_the_field(
    change: dict[str, object], message: str
) -> None:
    with pytest.raises(PatternError, match=message) as error:
        _rule_with(**change)
    assert str(error.value).startswith("permissions-x.toml: ")


def test_a_malformed_ruling_out_names_the_field() -> None:
    table = {"rules": [], "when": _EXPLAINS["when"], "note": "n", "examples": {}}
    with pytest.raises(PatternError, match=r"permissions-x.toml: `rules_out\[0\].rules` must name"):
        parse_rule(
            {**_BASE, "match": {"any": ["abcd"]}, "rules_out": [table]}, "permissions-x.toml"
        )


def _library(tmp_path: Path, text: str) -> Path:
    library = tmp_path / "patterns"
    shutil.copytree(default_pattern_dir() / "remedies", library / "remedies")
    for rule in ("filesystem-read-only", "shm-docker-default-64m"):
        folder = BY_ID[rule].category.value
        (library / folder).mkdir(exist_ok=True)
        shutil.copy(BY_ID[rule].source, library / folder)
    (library / "permissions").mkdir()
    (library / "permissions" / "permissions-x.toml").write_text(text, encoding="utf-8")
    return library


_FILE = """id = 'permissions-x'
category = 'permissions'
role = 'root'
weight = 0.9
title = 't'
[remediation]
steps = ['Do it.']
[[explains]]
symptom_rules = ['{target}']
when = [{{ key = 'docker.mount', op = 'regex', value = '^/' }}]
weight = 0.9
note = 'n'
[explains.examples]
match = [{{ line = 'Read-only file system', facts = ['docker.mount=/'] }}]
no_match = [{{ line = 'Read-only file system' }}]
"""


def test_an_explanation_of_an_unknown_or_context_rule_is_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CRASHLENS_CACHE_DIR", str(tmp_path / "cache"))
    library = _library(tmp_path, _FILE.format(target="filesystem-read-onyl"))
    with pytest.raises(PatternError, match=r"permissions-x.toml: .*names unknown rule"):
        load_rules(library)
    library = _library(tmp_path / "2", _FILE.format(target="shm-docker-default-64m"))
    with pytest.raises(PatternError, match="a context rule: explain a failure line"):
        load_rules(library)
    library = _library(tmp_path / "3", _FILE.format(target="filesystem-read-only"))
    assert any(rule.explains for rule in load_rules(library))


# ---- the policy step ---------------------------------------------------------------------


def _hit(rule_id: str, text: str, path: str = "train.log") -> Hit:
    rule = BY_ID[rule_id]
    return Hit(rule.id, rule.category, rule.role, rule.weight, path, 7, text, also=rule.also)


def test_an_explained_hit_moves_under_the_explaining_rule_and_keeps_its_line() -> None:
    symptom = _hit("filesystem-read-only", "OSError: [Errno 30] Read-only file system: '/d/x'")
    mount = fact_from_line("docker.mount=/d rw=false", path="inspect.json")
    result = apply_explanations([symptom], [mount], RULES)
    (moved,) = result.hits
    assert (moved.rule_id, moved.category) == (
        "permissions-read-only-mount-explains-erofs",
        Category.PERMISSIONS,
    )
    assert (moved.path, moved.lineno, moved.text, moved.role) == (
        "train.log",
        7,
        symptom.text,
        symptom.role,
    )
    assert moved.capture("path") == "/d/x"
    (note,) = result.notes
    assert "train.log:7 (filesystem-read-only) is explained by inspect.json" in note
    assert "docker.mount=/d rw=false" in note


def test_nothing_changes_without_the_fact() -> None:
    symptom = _hit("filesystem-read-only", "OSError: [Errno 30] Read-only file system: '/d/x'")
    result = apply_explanations([symptom], [], RULES)
    assert result.hits == (symptom,) and result.notes == ()


# ---- end to end: one two-file folder per mechanism ---------------------------------------


def _report(folder: Path):  # type: ignore[no-untyped-def]
    return analyze([str(folder)], AnalyzeOptions(use_model=False))


def _case(tmp_path: Path, name: str, files: dict[str, str | Path]) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    for file_name, content in files.items():
        target = folder / file_name
        if isinstance(content, Path):
            shutil.copy(content, target)
        else:
            target.write_text(content, encoding="utf-8")
    return folder


_EROFS_LOG = """[rank0]: Traceback (most recent call last):
[rank0]:   File "/workspace/train.py", line 88, in <module>
[rank0]:     dataset.save_to_disk(cache_dir)
[rank0]: OSError: [Errno 30] Read-only file system: '{path}'
E0412 10:02:11.441000 140 torch/distributed/elastic/multiprocessing/api.py:826] failed (exitcode: 1) local_rank: 0 (pid: 4412) of binary: /usr/bin/python
"""
_INSPECT = sample("docker_inspect/docker_inspect_gpus_all_default_shm64m_exited1_REPRO.json")


def test_erofs_on_a_read_only_bind_mount_is_a_container_configuration(tmp_path) -> None:
    log = _EROFS_LOG.format(path="/workspace/data/cache/tokenized.arrow")
    report = _report(_case(tmp_path, "ro", {"train.log": log, "docker_inspect.json": _INSPECT}))
    assert report.verdict is Verdict.PERMISSIONS
    cause = report.causes[0]
    assert cause.evidence[0].rule == "permissions-read-only-mount-explains-erofs"
    assert "/workspace/data/cache/tokenized.arrow" in cause.summary
    assert "explained by" in (cause.evidence[0].note or "")
    note = next(n for n in report.notes if "is explained by" in n)
    assert "train.log:4" in note and "docker_inspect.json:161" in note


def test_erofs_on_a_writable_mount_stays_a_filesystem_failure(tmp_path) -> None:
    log = _EROFS_LOG.format(path="/workspace/output/ckpt/step_100.pt")
    report = _report(_case(tmp_path, "rw", {"train.log": log, "docker_inspect.json": _INSPECT}))
    assert report.verdict is Verdict.FILESYSTEM
    assert not any("is explained by" in note for note in report.notes)


_NCCL_CUDA_LOG = """$ ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8
# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
node-07: Test NCCL failure common.cu:777 'unhandled cuda error'
"""


def test_gpus_held_by_other_processes_explain_an_nccl_cuda_failure(tmp_path) -> None:
    held = sample("nvidia_smi/q_535.154.05_8xh100.txt")
    report = _report(_case(tmp_path, "held", {"run.log": _NCCL_CUDA_LOG, "nvidia-smi.txt": held}))
    assert report.verdict is Verdict.GPU_OOM
    assert report.causes[0].evidence[0].rule == "gpu-oom-memory-held-by-other-process"
    assert any("nvidia-smi.txt:" in note and "run.log:3" in note for note in report.notes)


def test_idle_gpus_leave_an_nccl_cuda_failure_to_the_driver(tmp_path) -> None:
    idle = sample("nvidia_smi/table_550.90.07_8xh100_no_processes.txt")
    report = _report(_case(tmp_path, "idle", {"run.log": _NCCL_CUDA_LOG, "nvidia-smi.txt": idle}))
    assert report.causes[0].category is Category.DRIVER
    # no process held memory: nothing for gpu_oom; the idle GPU is named as the reason
    assert not any("gpu-oom-memory-held-by-other-process" in note for note in report.notes)
    assert any("driver-idle-gpus-explain-nccl-cuda-error" in note for note in report.notes)


_CUBLAS_LOG = """Loading checkpoint shards: 100%|##########| 4/4 [00:06<00:00,  1.52s/it]
Traceback (most recent call last):
  File "generate.py", line 21, in <module>
RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`
"""


def test_an_allocation_failure_names_the_process_holding_the_gpu(tmp_path) -> None:
    held = sample("nvidia_smi/q_535.154.05_8xh100.txt")
    report = _report(_case(tmp_path, "cublas", {"gen.log": _CUBLAS_LOG, "smi.txt": held}))
    assert report.verdict is Verdict.GPU_OOM
    cause = report.causes[0]
    assert cause.evidence[0].rule == "gpu-oom-memory-held-by-other-process"
    assert "another process" in cause.summary
    assert any("nvidia-smi" in action.command for action in cause.remediation if action.command)


_IB_SYSTEM_ERROR_LOG = """node-01:233510:233510 [0] NCCL INFO Bootstrap : Using bond0:10.0.0.11<0>
node-01:233510:233529 [0] NCCL INFO NET/IB : {devices}
node-01:233510:233529 [0] NCCL INFO Using network {network}
[rank0]: Traceback (most recent call last):
[rank0]:   File "/workspace/train.py", line 41, in <module>
[rank0]:     dist.all_reduce(tensor)
[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3
"""


_IB_DEVICES = "Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB bond0:10.0.0.11<0>"


def test_a_small_memlock_with_infiniband_explains_an_nccl_system_error(tmp_path) -> None:
    files = {
        "train.log": _IB_SYSTEM_ERROR_LOG.format(network="IB", devices=_IB_DEVICES),
        "ulimit.txt": sample("ulimit/ulimit_a_bash4_memlock_64_REPRO.txt"),
    }
    report = _report(_case(tmp_path, "ib", files))
    assert report.verdict is Verdict.PERMISSIONS
    assert report.causes[0].evidence[0].rule == "permissions-memlock-with-infiniband"
    note = next(n for n in report.notes if "is explained by" in n)
    assert "ulimit.txt:" in note and "train.log:7" in note
    # The verbs devices alone (older NCCL prints no `Using network` line) say the same.
    files["train.log"] = "\n".join(
        line for line in files["train.log"].split("\n") if "Using network" not in line
    )
    report = _report(_case(tmp_path, "ib-devices", files))
    assert report.verdict is Verdict.PERMISSIONS
    note = next(n for n in report.notes if "is explained by" in n)
    assert "train.log:2 `" in note


def test_the_same_error_over_sockets_is_not_the_memlock(tmp_path) -> None:
    files = {
        "train.log": _IB_SYSTEM_ERROR_LOG.format(network="Socket", devices="No device found."),
        "ulimit.txt": sample("ulimit/ulimit_a_bash4_memlock_64_REPRO.txt"),
    }
    report = _report(_case(tmp_path, "socket", files))
    assert report.verdict is not Verdict.PERMISSIONS  # the limit alone is context, capped
    assert not any("is explained by" in note for note in report.notes)


_BUS_ERROR_LOG = """epoch 3: 41%|####      | 410/1000 [12:01<17:18,  1.76s/it]
E0412 10:02:11.441000 140 torch/distributed/elastic/multiprocessing/api.py:826] failed (exitcode: -7) local_rank: 0 (pid: 4412) of binary: /usr/bin/python
"""
_COMPOSE_64M = """services:
  trainer:
    image: nvcr.io/nvidia/pytorch:24.01-py3
    shm_size: 64m
    command: torchrun --nproc_per_node=8 train.py
"""


def test_ipc_host_rules_out_a_small_shm_size(tmp_path) -> None:
    ipc_host = sample(
        "docker_inspect/docker_inspect_ipc_host_ulimits_runtime_nvidia_oomkilled_137_REPRO.json"
    )
    files = {"train.log": _BUS_ERROR_LOG, "docker-compose.yml": _COMPOSE_64M}
    plain = _report(_case(tmp_path, "compose", files))
    cited = {e.rule for cause in plain.causes for e in cause.evidence}
    assert "shm-compose-small" in cited
    report = _report(_case(tmp_path, "host", {**files, "docker_inspect.json": ipc_host}))
    cited = {e.rule for cause in report.causes for e in cause.evidence}
    assert "shm-compose-small" not in cited
    note = next(n for n in report.notes if "ruled out" in n)
    assert "docker-compose.yml:4" in note and "docker_inspect.json:" in note
    assert "IpcMode" in note


_DF_FULL_ROOT = """Filesystem      Size  Used Avail Use% Mounted on
overlay         200G  200G     0 100% /
tmpfs            64M     0   64M   0% /dev
tmpfs            32G     0   32G   0% /dev/shm
/dev/nvme1n1    3.5T  1.2T  2.3T  35% /data
"""


def test_a_bus_error_with_a_full_disk_and_a_roomy_dev_shm_is_the_disk(tmp_path) -> None:
    report = _report(_case(tmp_path, "df", {"train.log": _BUS_ERROR_LOG, "df.txt": _DF_FULL_ROOT}))
    assert report.verdict is Verdict.FILESYSTEM
    assert report.causes[0].evidence[0].rule == "filesystem-full-disk-explains-bus-error"
    full_shm = _DF_FULL_ROOT.replace(
        "32G     0   32G   0% /dev/shm", "32G   32G     0 100% /dev/shm"
    )
    report = _report(_case(tmp_path, "df2", {"train.log": _BUS_ERROR_LOG, "df.txt": full_shm}))
    assert report.verdict is Verdict.SHM


def test_a_segfault_on_a_node_logging_memory_errors_is_hardware(tmp_path) -> None:
    log = "epoch 89 step 120 loss 0.712\nSegmentation fault (core dumped)\n"
    kernel = sample("dmesg/dmesg_raw_mce_ghes_edac_hardware_error_REPRO.txt")
    report = _report(_case(tmp_path, "segv", {"train.log": log, "dmesg.txt": kernel}))
    assert report.causes[0].category is Category.HARDWARE
    assert any("train.log:2" in note and "dmesg.txt:" in note for note in report.notes)
    alone = _report(_case(tmp_path, "segv-alone", {"train.log": log}))
    assert not alone.causes or alone.causes[0].category is not Category.HARDWARE


def test_decide_applies_explanations_given_analyses_only(tmp_path) -> None:
    """The policy needs nothing but the analyses and the rules (no per-case code)."""
    log = _EROFS_LOG.format(path="/workspace/data/x")
    folder = _case(tmp_path, "d", {"train.log": log, "docker_inspect.json": _INSPECT})
    from crashlens.pipeline import analyze_inputs

    decision = decide(analyze_inputs([str(folder)]), RULES)
    assert decision.candidates[0].category is Category.PERMISSIONS
    assert any("is explained by" in note for note in decision.notes)
