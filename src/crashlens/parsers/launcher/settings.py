"""The network interface a job tells NCCL or Gloo to use, as its log shows it (fact
`net.socket_ifname`).

NCCL echoes the setting at start-up with `NCCL_DEBUG=INFO` (`NCCL INFO NCCL_SOCKET_IFNAME set
by environment to eth0`, prefixed by its host); launch lines set it for every node (`mpirun -x
NCCL_SOCKET_IFNAME=enp6s0`, `export NCCL_SOCKET_IFNAME=eno1`, `NCCL_SOCKET_IFNAME=bond0
torchrun ...`, an environment dump's `'GLOO_SOCKET_IFNAME': 'eth0'`). `decide/interfaces.py`
compares the setting with the interfaces each node lists (`parsers/ip_addr.py`).

Fact (one per distinct variable, value and host; at most `MAX_SETTINGS`):

* `net.socket_ifname`: str the setting as written (`eth0`, `=enp90s0np0`, `^docker,lo`,
  `ens,eth`); attrs `var` (`NCCL_SOCKET_IFNAME`, `GLOO_SOCKET_IFNAME`), `host` (the line's
  host, when its prefix names one), `source` (`nccl` for NCCL's echo, `command` otherwise).
"""

from __future__ import annotations

import re

ANCHOR = r"(?:NCCL|GLOO)_SOCKET_IFNAME"
"""The scan pattern of the lines read (line-safe)."""
MAX_SETTINGS = 32

_ECHO = re.compile(r"NCCL INFO (NCCL_SOCKET_IFNAME) set by environment to ([^ \t\n]+)")
_ASSIGNED = re.compile(
    r"\b((?:NCCL|GLOO)_SOCKET_IFNAME)['\"]?(?:[ \t]*[=:][ \t]*)['\"]?([=^]?[A-Za-z0-9_.:,+-]+)"
)


def socket_ifname_settings(text: str) -> list[tuple[str, str, str]]:
    """(variable, value, source) of each interface setting a line shows."""
    if (m := _ECHO.search(text)) is not None:
        return [(m.group(1), m.group(2), "nccl")]
    return [(m.group(1), m.group(2), "command") for m in _ASSIGNED.finditer(text)]
