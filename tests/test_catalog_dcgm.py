"""DCGM's diagnostic failure messages (patterns/tables/dcgm_errors.toml): each entry's example is
read by the rule of its category, and a node's diagnostic output decides a job's failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.library import tables_dir
from crashlens.match.catalogs import CatalogEntry, load_catalog
from mechanism_helpers import report_of, rules_hitting

TABLE = load_catalog(tables_dir() / "dcgm_errors.toml")
RULE_OF = {
    ("hardware", "root"): "hardware-dcgm-diag-gpu-fault",
    ("hardware", "symptom"): "hardware-dcgm-diag-gpu-warning",
    ("driver", "symptom"): "driver-dcgm-diag-gpu-setup",
    ("driver", "root"): "driver-dcgm-diag-gpu-setup",
    ("ambiguous", "symptom"): "hardware-dcgm-diag-xid-or-context",
    ("noise", "context"): "hardware-dcgm-diag-notice-harmless",
}


@pytest.mark.parametrize("entry", TABLE.entries, ids=[entry.id for entry in TABLE.entries])
def test_each_message_is_read_by_the_rule_of_its_category(entry: CatalogEntry) -> None:
    rule = RULE_OF[(entry.category, entry.role.value)]
    assert rule in rules_hitting(entry.example), (entry.id, rules_hitting(entry.example))


def test_a_failed_diagnostic_decides_a_collective_timeout(tmp_path: Path) -> None:
    """Every rank timed out in a collective; the node's diagnostic names the faulty GPU."""
    report = report_of(
        tmp_path / "job",
        {
            "train.log": (
                "step 1200 loss 2.113\n"
                "[rank3]:[E1104 02:11:09.553401 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog"
                " caught collective operation timeout: WorkNCCL(SeqNum=90311, OpType=ALLREDUCE,"
                " NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600042 milliseconds before"
                " timing out.\n"
            ),
            "dcgmi-diag.txt": (
                "Successfully ran diagnostic for group.\n"
                "Memory                    | Fail - GPU: 3\n"
                "Warning                   | GPU 3 had uncorrectable memory errors and row"
                " remapping failed.\n"
            ),
        },
    )
    assert str(report.verdict) == "hardware"
    assert "hardware-dcgm-diag-gpu-fault" in {item.rule for item in report.causes[0].evidence}
