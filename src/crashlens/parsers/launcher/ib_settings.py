"""The InfiniBand/RoCE adapters a job tells NCCL to use, as its log shows it (fact
`nccl.ib_hca`).

`NCCL_IB_HCA` lists the verbs devices NCCL may use for its network transport (`mlx5_0,mlx5_3`,
with `:port`, or `^` to exclude some, `=` for exact names). A job script that sets it runs NCCL
over InfiniBand/RoCE verbs, which pin (register) every buffer they hand the adapter: a small
locked-memory limit then fails the registration (NCCL's troubleshooting guide). The setting
shows as the script's trace or text (`+ export NCCL_IB_HCA=mlx5_0`, `NCCL_IB_HCA=mlx5_0 torchrun
...`, `mpirun -x NCCL_IB_HCA=mlx5_0`), an environment dump (`'NCCL_IB_HCA': 'mlx5_0'`) or
NCCL's own echo (`NCCL INFO NCCL_IB_HCA set by environment to mlx5_0`).

Fact (the first setting only):

* `nccl.ib_hca`: str the device list as written; attr `source` (`nccl` for NCCL's echo,
  `command` otherwise).
"""

from __future__ import annotations

import re

ANCHOR = r"NCCL_IB_HCA"
"""The scan pattern of the lines read (line-safe)."""

_ECHO = re.compile(r"NCCL INFO NCCL_IB_HCA set by environment to ([^ \t\n]+)")
_ASSIGNED = re.compile(
    # a device name starts with a letter (`mlx5_0`, `ibp12s0`), after an optional `^` / `=`
    r"\bNCCL_IB_HCA['\"]?[ \t]*[=:][ \t]*['\"]?([=^]?[A-Za-z][A-Za-z0-9_.:,+^=-]*)"
)


def ib_hca_setting(text: str) -> tuple[str, str] | None:
    """(devices, source) of the `NCCL_IB_HCA` setting a line shows, or None."""
    if (m := _ECHO.search(text)) is not None:
        return m.group(1), "nccl"
    if (m := _ASSIGNED.search(text)) is not None:
        return m.group(1), "command"
    return None
