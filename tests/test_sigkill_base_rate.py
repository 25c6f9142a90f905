"""A bare SIGKILL is host_oom at the rate the corpus measures: likely, never near-certain.

The kernel's OOM killer is what most often SIGKILLs a training process (corpus/: every case
whose only failure evidence is the shell's `Killed`, an exit -9 or an exit 137 is host_oom),
but a scheduler's limit, a person's `kill -9` and the kernel's memory-failure handler send the
same signal. So the three SIGKILL rules stay thin evidence (under the classifier's
`EVIDENCE_FLOOR`): the combined answer names host_oom as likely, a stronger cause in the same
inputs wins, and a proven hardware fault explains the kill. The logs here are written for the
test, in the formats of other public reports.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.decide.classifier import EVIDENCE_FLOOR
from crashlens.match.rules import shipped_rules
from crashlens.model import Category, Report, Verdict
from crashlens.pipeline import analyze
from crashlens.render import NEAR_CERTAIN
from mechanism_helpers import report_of, write_folder

SIGKILL_RULES = ("host-oom-shell-killed", "host-oom-sigkill-exit", "host-oom-docker-exit-137")

BARE_KILLS = {
    # Keras' progress bar with the shell's word glued to it (keras-team/keras#3476)
    "keras": (
        "Epoch 1/1\n"
        "296960/296960 [==============================] - 641s - loss: 2.3065 - val_loss: 3.8720\n"
        "Epoch 1/1\n"
        "165376/296960 [===============>..............] - ETA: 365s - loss: 2.1371Killed\n"
    ),
    # torchelastic's report of a rank that died of SIGKILL, nothing else
    "torchrun": (
        "[rank0]: step 120 loss 1.93\n"
        "E0214 03:11:52.402000 88121 torch/distributed/elastic/multiprocessing/api.py:869] "
        "failed (exitcode: -9) local_rank: 0 (pid: 88190) of binary: /usr/bin/python3\n"
    ),
    # a platform's wording of a container's exit 137
    "platform": "[job] epoch 2 done\n[job] Training end with exit status 137\n",
}


def _shares(report: Report) -> dict[Category, float]:
    return {cause.category: cause.confidence for cause in report.causes}


def test_a_sigkill_stays_thin_evidence() -> None:
    weights = {rule.id: rule.weight for rule in shipped_rules() if rule.id in SIGKILL_RULES}
    assert weights.keys() == set(SIGKILL_RULES)
    assert all(w < EVIDENCE_FLOOR for w in weights.values()), weights


@pytest.mark.parametrize("name", sorted(BARE_KILLS))
def test_a_bare_sigkill_reads_as_likely_host_oom(tmp_path: Path, name: str) -> None:
    report = analyze([str(write_folder(tmp_path, name, {"train.log": BARE_KILLS[name]}))])
    assert report.verdict is Verdict.HOST_OOM, _shares(report)
    assert 0.5 <= report.causes[0].confidence < NEAR_CERTAIN
    assert {item.rule for item in report.causes[0].evidence} & set(SIGKILL_RULES)


def test_a_cuda_oom_before_the_kill_is_the_cause(tmp_path: Path) -> None:
    log = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 79.10 GiB of which 1.12 GiB is free.\n"
        "E0214 03:11:52.402000 88121 torch/distributed/elastic/multiprocessing/api.py:869] "
        "failed (exitcode: -9) local_rank: 1 (pid: 88191) of binary: /usr/bin/python3\n"
    )
    report = report_of(tmp_path / "job", {"train.log": log})
    assert report.verdict is Verdict.GPU_OOM, _shares(report)


def test_the_memory_failure_handler_s_kill_is_hardware(tmp_path: Path) -> None:
    # mm/memory-failure.c SIGKILLs a process mapping a poisoned page it cannot unmap
    dmesg = (
        "[88211.402113] mce: [Hardware Error]: Machine check events logged\n"
        "[88211.402160] Memory failure: 0x1f2a3b4: forcibly killing python3:88191 because of "
        "failure to unmap corrupted page\n"
        "[88211.402181] Memory failure: 0x1f2a3b4: recovery action for dirty LRU page: Failed\n"
    )
    log = (
        "E0214 03:11:52.402000 88121 torch/distributed/elastic/multiprocessing/api.py:869] "
        "failed (exitcode: -9) local_rank: 1 (pid: 88191) of binary: /usr/bin/python3\n"
    )
    report = report_of(tmp_path / "job", {"train.log": log, "dmesg.txt": dmesg})
    assert report.verdict is Verdict.HARDWARE, _shares(report)
    assert _shares(report).get(Category.HOST_OOM, 0.0) < 0.2
