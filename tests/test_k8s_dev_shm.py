"""A pod's /dev/shm from its spec (`parsers/kubernetes/volumes.py`, fact `k8s.shm_private_bytes`)
and the rule that reads it (`shm-k8s-pod-default-64m`): specs and logs of their own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crashlens.parsers.kubernetes.objects import KubectlJsonParser
from crashlens.parsers.kubernetes.volumes import RUNTIME_DEFAULT_SHM, ShmSize, shm_sizes
from crashlens.pipeline import AnalyzeOptions, analyze

from conftest import sample_text


def _spec(**extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "trainer", "volumeMounts": []}]}
    spec.update(extra)
    return spec


def test_a_container_without_a_dev_shm_volume_has_the_runtime_default() -> None:
    assert list(shm_sizes(_spec())) == [ShmSize("trainer", RUNTIME_DEFAULT_SHM, True, None)]


def test_a_size_limit_past_any_float_bounds_nothing() -> None:
    spec = _spec(volumes=[{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "1e999"}}])
    spec["containers"][0]["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    assert list(shm_sizes(spec)) == []


def test_a_memory_volume_at_dev_shm_sets_the_size_from_its_limit() -> None:
    spec = _spec(volumes=[{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}])
    spec["containers"][0]["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm/"}]
    assert list(shm_sizes(spec)) == [ShmSize("trainer", 1 << 30, False, "dshm")]


def test_an_unlimited_memory_volume_or_the_hosts_ipc_bounds_nothing() -> None:
    spec = _spec(volumes=[{"name": "dshm", "emptyDir": {"medium": "Memory"}}])
    spec["containers"][0]["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    assert list(shm_sizes(spec)) == []
    assert list(shm_sizes(_spec(hostIPC="true"))) == []
    assert list(shm_sizes(_spec(hostIPC=True))) == []


def test_garbage_in_a_spec_is_skipped() -> None:
    assert list(shm_sizes({"containers": "x", "volumes": [1, None]})) == []
    assert list(shm_sizes({"containers": [{"volumeMounts": [{"mountPath": None}]}]})) == [
        ShmSize(None, RUNTIME_DEFAULT_SHM, True, None)
    ]


def test_the_sample_pod_gives_each_container_its_own_size() -> None:
    name = "kubectl_json/pod_yaml_dataloader_no_dev_shm_volume_REPRO.yaml"
    result = KubectlJsonParser().parse(sample_text(name), name)
    sizes = {
        f.attr("container"): (f.value, f.attr("default"), f.lineno)
        for f in result.facts
        if f.key == "k8s.shm_private_bytes"
    }
    assert sizes["trainer"] == (RUNTIME_DEFAULT_SHM, True, 8)
    assert sizes["sidecar"][:2] == (16 << 30, False)


POD = """apiVersion: v1
kind: Pod
metadata:
  name: resnet-train-0
spec:
  containers:
  - name: worker
    image: registry.example/resnet:1.0
  restartPolicy: Never
status:
  phase: Failed
"""
LOG = (
    "Epoch 0:  12%|#2        | 120/1000 [01:02<07:38,  1.92it/s]\n"
    "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
    "shared memory (shm).\n"
    "RuntimeError: DataLoader worker (pid 4121) is killed by signal: Bus error. It is possible "
    "that dataloader's workers are out of shared memory. Please try to raise your shared memory "
    "limit.\n"
)


def test_a_bus_error_in_a_pod_without_a_dev_shm_volume_cites_the_spec(tmp_path: Path) -> None:
    (tmp_path / "pod.yaml").write_text(POD, encoding="utf-8")
    (tmp_path / "train.log").write_text(LOG, encoding="utf-8")
    report = analyze([str(tmp_path)], AnalyzeOptions(use_model=False))
    assert str(report.verdict) == "shm"
    cited = {item.rule for item in report.causes[0].evidence}
    assert "shm-k8s-pod-default-64m" in cited
