"""Facts that only two inputs together show: the interface a job tells NCCL or Gloo to use, and
the interfaces a node really has.

NCCL takes `NCCL_SOCKET_IFNAME` as a list of name prefixes (`eth` matches `eth0`), exact names
after a leading `=`, and interfaces to leave out after a leading `^`; Gloo takes exact names.
One setting exported to every node (`mpirun -x`, a launch script) names an interface that a
node whose NIC is called otherwise does not have, and NCCL then fails its bootstrap with an
error that names no interface (`internal error`, `unhandled system error`). When a node's
listing (`ip addr`, `ifconfig`: facts `net.iface`) has no interface the setting (fact
`net.socket_ifname`) accepts that is not down, that is a fact of its own, for the rules'
explanations to read:

* `net.socket_ifname_unmatched`: str the setting's value; attrs `var`, `host` (the listing's
  node, when known), `reason` (`absent`: no interface of that name; `down`: only down ones),
  `interfaces` (the listing's names, comma-joined), `setting_at` (`path:line` of the setting).
  Its line is the listing's first interface.

A setting a node's prefix names (`host`) is compared with that node's listing only; a listing
that names no node is compared with every setting. An exclusion (`^...`) names nothing that
must exist.
"""

from __future__ import annotations

from collections.abc import Sequence

from crashlens.model import Fact
from crashlens.parsers.base import fact

UNMATCHED = "net.socket_ifname_unmatched"
SETTING = "net.socket_ifname"
INTERFACE = "net.iface"
MAX_DERIVED = 16


def _accepts(var: str, setting: str, name: str) -> bool:
    """Whether the setting selects the interface `name` (NCCL's and Gloo's rules)."""
    exact = var.startswith("GLOO") or setting.startswith("=")
    wanted = [part for part in setting.lstrip("=").split(",") if part]
    if exact:
        return name in wanted
    return any(name.startswith(prefix) for prefix in wanted)


def _listings(facts: Sequence[Fact]) -> dict[tuple[str, object], list[Fact]]:
    by_listing: dict[tuple[str, object], list[Fact]] = {}
    for item in facts:
        if item.key == INTERFACE:
            by_listing.setdefault((item.path, item.attr("listing")), []).append(item)
    return by_listing


def unmatched_interfaces(facts: Sequence[Fact]) -> list[Fact]:
    """One `net.socket_ifname_unmatched` fact per setting and node listing it fails on."""
    settings = [f for f in facts if f.key == SETTING and isinstance(f.value, str)]
    if not settings:
        return []
    listings = _listings(facts)
    derived: list[Fact] = []
    seen: set[tuple[str, str, object]] = set()
    for setting in settings:
        value, var = str(setting.value), str(setting.attr("var") or "NCCL_SOCKET_IFNAME")
        if value.startswith("^") or not value.lstrip("="):
            continue
        for members in listings.values():
            host = members[0].attr("host")
            named = setting.attr("host")
            if named is not None and host is not None and named != host:
                continue
            chosen = [m for m in members if _accepts(var, value, str(m.value))]
            if any(m.attr("state") != "down" for m in chosen):
                continue
            key = (var, value, host if host is not None else members[0].path)
            if key in seen or len(derived) >= MAX_DERIVED:
                continue
            seen.add(key)
            names = ", ".join(str(m.value) for m in members)
            reason = "down" if chosen else "absent"
            node = str(host) if host is not None else "the node"
            shown = (
                f"{node} has no interface up that {var}={value} selects "
                f"({'only down ones' if chosen else 'it lists'}: {names})"
            )
            where = f"{setting.path}:{setting.lineno}" if setting.lineno else setting.path
            derived.append(
                fact(
                    UNMATCHED,
                    value,
                    members[0].path,
                    members[0].lineno,
                    text=shown,
                    var=var,
                    host=host,
                    reason=reason,
                    interfaces=",".join(str(m.value) for m in members),
                    setting_at=where,
                )
            )
    return derived
