"""Two Kubernetes pod events that end a GPU job before it runs, read from `kubectl describe pod`
(the kubelet's own wording, as Kubernetes prints it; names changed):

* `UnexpectedAdmissionError ... requested number of devices unavailable for nvidia.com/gpu`: a
  GPU the node advertised went missing (the device plugin marks a faulty GPU unhealthy), so
  `hardware` leads;
* `FailedMount ... MountVolume.SetUp failed for volume`: the pod's storage could not be
  mounted, so `filesystem` leads.
"""

from __future__ import annotations

from pathlib import Path

from mechanism_helpers import assert_leads, report_of

_HEAD = (
    "Name:             trainer-worker-1\n"
    "Namespace:        research\n"
    "Node:             gpu-node-07/10.0.0.17\n"
    "Status:           Failed\n"
)


def _events(*rows: str) -> str:
    return (
        _HEAD
        + "Events:\n"
        + "  Type     Reason                    Age   From     Message\n"
        + "  ----     ------                    ----  ----     -------\n"
        + "".join(f"  {row}\n" for row in rows)
    )


def test_gpus_unavailable_at_admission_point_at_the_node_gpus(tmp_path: Path) -> None:
    report = report_of(
        tmp_path / "admission",
        {
            "describe_pod.txt": _events(
                "Normal   Scheduled                 3m    default-scheduler  Successfully"
                " assigned research/trainer-worker-1 to gpu-node-07",
                "Warning  UnexpectedAdmissionError  3m    kubelet  Allocate failed due to"
                " requested number of devices unavailable for nvidia.com/gpu. Requested: 8,"
                " Available: 7, which is unexpected",
            )
        },
    )
    assert_leads(report, "hardware")


def test_volume_that_cannot_be_mounted_is_the_storage(tmp_path: Path) -> None:
    report = report_of(
        tmp_path / "mount",
        {
            "describe_pod.txt": _events(
                "Normal   Scheduled    20m                 default-scheduler  Successfully"
                " assigned research/trainer-worker-1 to gpu-node-07",
                "Warning  FailedMount  2m (x12 over 20m)  kubelet  MountVolume.SetUp failed"
                ' for volume "datasets" : mount failed: exit status 32',
            )
        },
    )
    assert_leads(report, "filesystem")
