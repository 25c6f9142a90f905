"""PyTorch's store-based barrier counting more processes than the job has.

`init_process_group` waits in a barrier on the rendezvous store until `world_size` processes have
added their key, and logs the count (`Waiting in store based barrier to initialize process group
for rank: 0, key: store_based_barrier_key:1 (world_size=6, worker_count=287, timeout=0:30:00)`;
on a timeout `Timed out initializing process group in store based barrier on rank 1, for key:
... (world_size=2, num_workers_joined=4, ...)`). A count above the world size cannot come from
this job's processes: the store holds keys of other runs. PyTorch's documentation of the
`file://` init method says the file is not deleted and must not be reused, and a TCPStore on a
master address and port another job also uses mixes their keys the same way. The barrier then
never completes (it waits for the count to equal the world size): a rendezvous fault.

* `rendezvous.overcount`: int how many more processes the barrier counted than the world size
  (the first line that shows it); attrs world_size, joined.
"""

from __future__ import annotations

import re
from typing import Any

from crashlens.model import Line
from crashlens.parsers.base import Anchor, AnchoredCollector
from crashlens.text.values import bounded_int

_COUNTS = re.compile(
    r"\(world_size=([0-9]{1,9}), (?:worker_count|num_workers_joined)=([0-9]{1,9})\b"
)


def _on_barrier(collector: AnchoredCollector, line: Line) -> None:
    m = _COUNTS.search(line.text)
    if m is None:
        return
    world, joined = bounded_int(m.group(1)), bounded_int(m.group(2))
    if world is None or joined is None or joined <= world:
        return
    collector.keep_first(
        "rendezvous.overcount", joined - world, line, world_size=world, joined=joined
    )


BARRIER_ANCHORS: tuple[Anchor[Any], ...] = (
    Anchor(
        r"in store based barrier[^\n]{0,200}?\(world_size=[0-9]",
        _on_barrier,
        settles=("rendezvous.overcount",),
    ),
)
"""The store-based barrier's waiting and timeout lines."""
