"""Rules whose wording a pod's record prints read the pod's input kinds too."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.pipeline import analyze_inputs

DESCRIBE = """\
Name:             train-worker-{code}
Namespace:        research
Node:             gpu-pool-b-7/10.4.2.17
Status:           Running
Containers:
  trainer:
    Image:          registry.local/train:2.4
    State:          Running
      Started:      Mon, 02 Mar 2026 09:14:07 +0000
    Last State:     Terminated
      Reason:       Error
      Exit Code:    {code}
      Started:      Mon, 02 Mar 2026 08:01:55 +0000
      Finished:     Mon, 02 Mar 2026 09:13:58 +0000
    Ready:          True
    Restart Count:  1
Events:
  Type    Reason   Age   From     Message
  ----    ------   ----  ----     -------
  Normal  Pulled   12m   kubelet  Container image "registry.local/train:2.4" already present
"""


@pytest.mark.parametrize(
    ("code", "rule"), [(137, "host-oom-docker-exit-137"), (135, "shm-docker-exit-135")]
)
def test_a_container_exit_status_in_kubectl_describe_is_read(
    tmp_path: Path, code: int, rule: str
) -> None:
    (tmp_path / "pod.txt").write_text(DESCRIBE.format(code=code), encoding="utf-8")
    (analysis,) = analyze_inputs([str(tmp_path)])
    assert analysis.status.kind is not None and analysis.status.kind.value == "kubectl_text"
    assert rule in {hit.rule_id for hit in analysis.hits}
