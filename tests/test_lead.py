"""The report's lead line cites the rule that gives the verdict its category."""

from __future__ import annotations

import json
from pathlib import Path

from crashlens.model import Verdict
from crashlens.pipeline import analyze

TRACEBACK = """\
Epoch 3/10: 100%|##########| 812/812 [04:11<00:00,  3.23it/s]
Traceback (most recent call last):
  File "/opt/job/fit.py", line 88, in <module>
    torch.save(state, "/results/ckpt/epoch-3.pt")
OSError: [Errno 30] Read-only file system: '/results/ckpt/epoch-3.pt'
"""


def _inspect(mode: str) -> list[dict[str, object]]:
    mounts = [
        {
            "Type": "bind",
            "Source": "/srv/jobs/42",
            "Destination": "/results",
            "Mode": mode,
            "RW": mode == "rw",
            "Propagation": "rprivate",
        },
    ]
    return [
        {
            "Id": "f00d",
            "Name": "/fit",
            "State": {"Status": "exited", "ExitCode": 1},
            "HostConfig": {"ShmSize": 8589934592},
            "Mounts": mounts,
        }
    ]


def test_an_explained_symptom_leads_under_the_explaining_rule(tmp_path: Path) -> None:
    (tmp_path / "fit.log").write_text(TRACEBACK, encoding="utf-8")
    (tmp_path / "inspect.json").write_text(json.dumps(_inspect("ro")), encoding="utf-8")
    report = analyze([str(tmp_path)])
    assert report.verdict is Verdict.PERMISSIONS
    assert report.lead is not None
    assert "Read-only file system" in report.lead.text
    assert (report.lead.rule or "").startswith("permissions-"), report.lead.rule


def test_an_unexplained_symptom_keeps_its_own_rule(tmp_path: Path) -> None:
    (tmp_path / "fit.log").write_text(TRACEBACK, encoding="utf-8")
    (tmp_path / "inspect.json").write_text(json.dumps(_inspect("rw")), encoding="utf-8")
    report = analyze([str(tmp_path)])
    assert report.lead is not None
    assert (report.lead.rule or "").startswith("filesystem-"), (report.verdict, report.lead.rule)
