"""A pod the scheduler never placed is no failure of the run: the peer-wait lines of the
ranks that did start are ruled out (a note cites the FailedScheduling event and says what to
do), and a job that never started at all gets no cause."""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Verdict
from mechanism_helpers import report_of

from conftest import sample_text

PENDING_DESCRIBE = """\
Name:             llm-pretrain-worker-3
Namespace:        ml
Node:             <none>
Status:           Pending
Containers:
  pytorch:
    Image:      registry.example/llm:2.4
Conditions:
  Type           Status
  PodScheduled   False
Events:
  Type     Reason            Age                  From               Message
  ----     ------            ----                 ----               -------
  Warning  FailedScheduling  4m12s (x31 over 2h)  default-scheduler  0/12 nodes are available: \
4 Insufficient nvidia.com/gpu, 6 node(s) didn't match Pod's node affinity/selector, 2 node(s) \
had untolerated taint {node.kubernetes.io/unreachable: }. preemption: 0/12 nodes are available: \
12 Preemption is not helpful for scheduling.
"""


MASTER_LOG = (
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/lib/python3.11/site-packages/torch/distributed/elastic/rendezvous/'
    'static_tcp_rendezvous.py", line 55, in next_rendezvous\n'
    "    self._store = TCPStore(  # type: ignore[call-arg]\n"
    "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. "
    "3/4 clients joined.\n"
)


def test_a_rendezvous_timeout_waiting_for_an_unscheduled_pod_is_not_a_network_fault(
    tmp_path: Path,
) -> None:
    alone = report_of(tmp_path / "alone", {"master-0.log": MASTER_LOG})
    assert alone.verdict is Verdict.NETWORK
    both = report_of(
        tmp_path / "both", {"master-0.log": MASTER_LOG, "worker-3.describe.txt": PENDING_DESCRIBE}
    )
    assert both.verdict is Verdict.UNKNOWN
    (note,) = [n for n in both.notes if "network-store-timeout" in n]
    assert "worker-3.describe.txt:" in note and "Insufficient nvidia.com/gpu" in note
    assert "never scheduled" in note and "node selector" in note


def test_a_job_that_never_started_gets_no_cause(tmp_path: Path) -> None:
    events = sample_text("kubectl_text/get_events_failed_scheduling_evicted_REPRO.txt")
    pending = report_of(tmp_path / "pending", {"worker-3.describe.txt": PENDING_DESCRIBE})
    assert pending.verdict is Verdict.NONE and not pending.causes
    # beside a real failure (trainer-0 evicted for memory), trainer-1's FailedScheduling
    # changes nothing: the eviction decides
    evicted = report_of(tmp_path / "evicted", {"events.txt": events})
    assert evicted.verdict is Verdict.HOST_OOM
