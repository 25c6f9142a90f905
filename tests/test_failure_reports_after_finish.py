"""A report the process went on from, printed after the finish line, fails nothing.

`decide.failure` counts the log's last output after the finish line as a death when a rule
names it as a cause or the catalogs know it (a memory monitor's kill of the final save). An
exception that a finalizer or a thread printed (`Exception ignored in:`, `Exception in
thread`) is the last output of many finished runs as the interpreter tears down their
objects: its exception line is no death, whatever a rule or a catalog reads in it, as the same
traceback's `log.ends_with` is none.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.decide.failure import assess
from crashlens.model import Ending
from crashlens.pipeline import analyze_inputs

FINISHED = (
    "{'train_runtime': 5123.4, 'train_samples_per_second': 12.3, 'train_loss': 0.4412, "
    "'epoch': 3.0}\n"
    "Training completed. Do not forget to share your model on huggingface.co/models =)\n"
)
FINALIZER = (
    "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f3c2c1d5ea0>\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py", '
    "line 1479, in __del__\n"
    "    self._shutdown_workers()\n"
)
THREAD = (
    "Exception in thread Thread-7 (_push):\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.10/threading.py", line 1016, in _bootstrap_inner\n'
    "    self.run()\n"
    '  File "/srv/upload.py", line 40, in _push\n'
    "    urllib.request.urlopen(url)\n"
)
RESOLUTION = (
    "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>\n"
)
"""A rule names it as a cause (network-name-resolution)."""
CUDA_OOM = "RuntimeError: CUDA error: out of memory\n"
"""The CUDA error catalog knows it (cudaErrorMemoryAllocation)."""


def _ending(tmp_path: Path, text: str) -> Ending:
    (tmp_path / "train.log").write_text(text, encoding="utf-8")
    return assess(analyze_inputs([str(tmp_path)])).ending


@pytest.mark.parametrize("report", [FINALIZER, THREAD], ids=["finalizer", "thread"])
@pytest.mark.parametrize("error", [RESOLUTION, CUDA_OOM], ids=["rule", "catalog"])
def test_a_report_gone_on_from_after_the_finish_line_is_no_death(
    tmp_path: Path, report: str, error: str
) -> None:
    assert _ending(tmp_path, FINISHED + report + error) is Ending.COMPLETED


@pytest.mark.parametrize("error", [RESOLUTION, CUDA_OOM], ids=["rule", "catalog"])
def test_the_same_line_uncaught_after_the_finish_line_still_fails(
    tmp_path: Path, error: str
) -> None:
    uncaught = (
        "Traceback (most recent call last):\n"
        '  File "/srv/train.py", line 212, in <module>\n'
        "    trainer.save_model()\n"
    )
    assert _ending(tmp_path, FINISHED + uncaught + error) is Ending.DIED


WANDB_UPLOAD = (
    "wandb: ERROR Error while calling W&B API: HTTPSConnectionPool(host='api.wandb.ai', "
    'port=443): Max retries exceeded (Caused by NameResolutionError("Failed to resolve '
    "'api.wandb.ai' ([Errno -3] Temporary failure in name resolution)\"))\n"
)
PEER_TEARDOWN = (
    "node-01:1234:1290 [0] NET/IB : Got completion from peer 10.0.0.12<46127> with status=12 "
    "opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.11\n"
)
RAY_KILL = (
    "(raylet) Memory on the node (IP: 10.0.0.11, ID: 3c1f0a) where the task (actor ID: 9ad2, "
    "name=Worker.__init__, pid=4411) was running was 230.54GB / 240.00GB (0.96), which "
    "exceeds the memory usage threshold of 0.95. Ray killed this worker (ID: 5e1b) because "
    "it was the most recently scheduled task\n"
)


@pytest.mark.parametrize("line", [WANDB_UPLOAD, PEER_TEARDOWN], ids=["upload", "peer"])
def test_a_network_error_as_the_last_output_after_the_finish_line_is_no_death(
    tmp_path: Path, line: str
) -> None:
    # The work is done: an upload failing or a peer's teardown does not undo it.
    assert _ending(tmp_path, FINISHED + line) is Ending.COMPLETED


def test_a_memory_kill_as_the_last_output_after_the_finish_line_still_fails(
    tmp_path: Path,
) -> None:
    assert _ending(tmp_path, FINISHED + RAY_KILL) is Ending.DIED
