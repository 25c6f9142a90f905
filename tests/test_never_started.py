"""A job whose pod the scheduler never placed never started: its ending cites the
FailedScheduling event, says that nothing of the run failed and what to do
(`decide.never_started`), instead of "no ending was found"."""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Ending, Verdict
from crashlens.render.json import render_json
from mechanism_helpers import report_of

PENDING = """\
Name:             bert-ft-worker-1
Namespace:        research
Node:             <none>
Status:           Pending
Conditions:
  Type           Status
  PodScheduled   False
Events:
  Type     Reason            Age                 From               Message
  ----     ------            ----                ----               -------
  Warning  FailedScheduling  90s (x12 over 40m)  default-scheduler  0/6 nodes are available: \
6 Insufficient nvidia.com/gpu. preemption: 0/6 nodes are available: 6 No preemption victims \
found for incoming pod.
"""

TAINTED = """\
Name:             bert-ft-worker-2
Namespace:        research
Node:             <none>
Status:           Pending
Events:
  Type     Reason            Age   From               Message
  ----     ------            ----  ----               -------
  Warning  FailedScheduling  2m    default-scheduler  0/3 nodes are available: 3 node(s) had \
untolerated taint {nvidia.com/gpu: present}. preemption: 0/3 nodes are available: 3 \
Preemption is not helpful for scheduling.
"""

WAITING_MASTER = (
    "[2025-05-02 10:00:01] INFO Loading tokenizer\n"
    "[2025-05-02 10:00:09] INFO Initializing process group (world size 2)\n"
)

DYING_MASTER = (
    "Traceback (most recent call last):\n"
    '  File "/app/train.py", line 40, in <module>\n'
    "    dist.init_process_group('nccl')\n"
    "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. "
    "1/2 clients joined.\n"
)


def test_a_pod_never_scheduled_is_an_ending_that_cites_the_event(tmp_path: Path) -> None:
    report = report_of(tmp_path, {"worker-1.describe.txt": PENDING})
    assessed = report.assessment
    assert report.verdict is Verdict.NONE and assessed is not None
    assert assessed.ending is Ending.STOPPED
    assert assessed.sign is not None and assessed.sign.path.endswith("worker-1.describe.txt")
    assert assessed.sign.line == 11 and "FailedScheduling" in assessed.sign.text
    reason = assessed.reason
    assert reason.startswith("The job never started") and "bert-ft-worker-1" in reason
    assert "6 Insufficient nvidia.com/gpu" in reason and "preemption" not in reason
    assert "free or add GPUs" in reason and "resubmit" in reason
    assert "no ending was found" not in reason.lower()
    # the JSON report keeps to the contract's endings
    assert '"ending": "stopped"' in render_json(report)


def test_the_advice_follows_what_blocked_the_pod(tmp_path: Path) -> None:
    report = report_of(tmp_path, {"worker-2.describe.txt": TAINTED})
    assert report.assessment is not None
    reason = report.assessment.reason
    assert "tolerations" in reason and "free or add GPUs" not in reason


def test_ranks_that_started_waited_for_the_pod_that_never_ran(tmp_path: Path) -> None:
    report = report_of(tmp_path, {"master-0.log": WAITING_MASTER, "worker-1.describe.txt": PENDING})
    assert report.verdict is Verdict.NONE and report.assessment is not None
    assert report.assessment.ending is Ending.STOPPED
    assert "ranks that started waited" in report.assessment.reason


def test_a_rank_that_died_still_decides(tmp_path: Path) -> None:
    report = report_of(tmp_path, {"master-0.log": DYING_MASTER, "worker-1.describe.txt": PENDING})
    assert report.assessment is not None and report.assessment.ending is Ending.DIED
    assert report.verdict is Verdict.UNKNOWN


def test_a_pod_scheduled_in_the_end_is_no_ending(tmp_path: Path) -> None:
    scheduled = PENDING.replace("Node:             <none>", "Node:             gpu-03/10.0.0.3")
    report = report_of(tmp_path, {"worker-1.describe.txt": scheduled})
    assert report.assessment is not None and report.assessment.ending is Ending.UNKNOWN
