"""A machine shut down from outside under a job, as the machine's own logs say it: read by the
launcher parser (a worker's or a job's log that holds syslog lines) and by the kernel-log
parser (a node's journal or syslog), which both give a `platform.shutdown` fact.

* `power key`: systemd-logind's `Power key pressed` (`Power key pressed short.` in newer
  releases): the ACPI power button, which hypervisors press to stop or preempt a cloud VM (GCE's
  preemption, a stop from the console), or a person's hand.
* `preemption`: Taskcluster's worker passing on GCP's preemption notice (`GCP Metadata Service
  says termination is imminent`).

A stop, not a failure: `decide.failure` reads it as the machine's shutdown from outside, and a
failure line before it still decides the run's ending.
"""

from __future__ import annotations

ANCHOR = (
    r"systemd-logind(?:\[[0-9]+\])?:? Power key pressed"
    r"|GCP Metadata Service says termination is imminent"
)
"""Line-safe: the lines `shutdown_kind` reads."""


def shutdown_kind(text: str) -> str | None:
    """Who shut the machine down, as one line says it (`power key`, `preemption`), or None."""
    if "GCP Metadata Service says termination is imminent" in text:
        return "preemption"
    if "systemd-logind" in text and "Power key pressed" in text:
        return "power key"
    return None
