"""The network interfaces of a node: `ip -br addr`, `ip addr` (iproute2) and `ifconfig` (net-tools
2.x `eth0: flags=4163<UP,...>` and 1.60 `eth0  Link encap:Ethernet`).

NCCL and Gloo pick the interface they talk over by name (`NCCL_SOCKET_IFNAME`,
`GLOO_SOCKET_IFNAME`); a node without an interface of that name, or with it down, cannot
take part, and the error it gives says nothing of interfaces (`internal error`, `unhandled
system error`). This parser only lists what each node has; `decide/interfaces.py` compares it
with the settings the job's logs show.

A file may hold several nodes' listings one after the other, each under the shell prompt that
ran it (`user@node-2:~$ ip -br addr`, `[root@node-3 ~]# ifconfig`): a prompt or a bare `$ ip
...` line starts a new listing, and the prompt's host is the node's. A `name@ifN` suffix (a
veth's peer, a VLAN's parent) is left out of the name.

Fact (one per interface; the line is the interface's first line):

* `net.iface`: str the interface name; attrs `state` (`up`; `down`: administratively down or
  no carrier, iproute2 `state DOWN`, ifconfig without RUNNING; `unknown`: iproute2's
  `UNKNOWN`, which loopback and tunnels report while they work), `address` (the first IPv4
  address, with its prefix length when printed), `listing` (int, 1-based, which listing of
  the file), `host` (the prompt's host, when there is one), `format` (`ip-brief`, `ip`,
  `ifconfig`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from crashlens.model import Fact, InputKind
from crashlens.parsers.base import DocumentParser, DocumentResult, clean_line, fact

MAX_INTERFACES = 512
"""Interfaces read per file, at most (a node with thousands of veths lists the rest unread)."""

_NAME = r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,30}"
_IPV4 = r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}"
_PROMPT = re.compile(
    r"^(?:\([^)\n]{1,40}\)[ \t]+)?\[?[A-Za-z0-9_.-]{1,32}@([A-Za-z0-9_.-]{1,64})"
    r"[: ][^\n$#]{0,80}[$#][ \t]*(.*)$"
)
_BARE_COMMAND = re.compile(r"^[$#][ \t]*((?:sudo[ \t]+)?(?:ip|ifconfig)\b.*)$")
_BRIEF = re.compile(
    rf"^({_NAME})(?:@[A-Za-z0-9_.-]+)?[ \t]+"
    r"(UP|DOWN|UNKNOWN|LOWERLAYERDOWN|DORMANT|NOTPRESENT|TESTING)(?:[ \t]+(\S+))?"
)
_IP_HEADER = re.compile(
    rf"^[0-9]+:[ \t]+({_NAME})(?:@[A-Za-z0-9_.-]+)?:[ \t]+<([A-Z0-9_,-]*)>[ \t]+mtu[ \t]"
)
_IP_STATE = re.compile(r"[ \t]state[ \t]+([A-Z]+)")
_IP_INET = re.compile(rf"^[ \t]+inet[ \t]+({_IPV4}(?:/[0-9]{{1,2}})?)")
_IFCONFIG_HEADER = re.compile(rf"^({_NAME}):[ \t]+flags=[0-9]+<([A-Z0-9_,-]*)>")
_IFCONFIG_INET = re.compile(rf"^[ \t]+inet[ \t]+({_IPV4})[ \t]+netmask")
_OLD_HEADER = re.compile(rf"^({_NAME})[ \t]+Link encap:")
_OLD_INET = re.compile(rf"^[ \t]+inet addr:({_IPV4})")
_OLD_FLAGS = re.compile(r"^[ \t]+((?:[A-Z]+[ \t]+)*[A-Z]+)[ \t]+MTU:[0-9]+")

_SNIFF_STRONG = re.compile(
    rf"^[0-9]+:[ \t]+{_NAME}(?:@[A-Za-z0-9_.-]+)?:[ \t]+<[A-Z0-9_,-]*>[ \t]+mtu[ \t]+[0-9]"
    rf"|^{_NAME}:[ \t]+flags=[0-9]+<[A-Z0-9_,-]*>[ \t]+mtu[ \t]+[0-9]"
    rf"|^{_NAME}[ \t]+Link encap:",
    re.MULTILINE,
)
# Possessive blanks: `[ \t]+` then `[ \t]*$` backtracked quadratically on a long run of spaces.
_SNIFF_BRIEF = re.compile(
    rf"^{_NAME}(?:@[A-Za-z0-9_.-]+)?[ \t]++(?:UP|DOWN|UNKNOWN)"
    rf"(?:[ \t]++(?:{_IPV4}/[0-9]{{1,2}}|[0-9a-f:]++/[0-9]{{1,3}}|$)|$)",
    re.MULTILINE,
)


LISTING_SHARE = 0.6
"""Share of the head's first lines a listing must fill (headers, rows, prompts, their indented
detail lines) for the input to be a listing rather than a log that quotes one."""
SNIFF_LINES = 200
_LISTING_LINES = (_PROMPT, _BARE_COMMAND, _IP_HEADER, _IFCONFIG_HEADER, _OLD_HEADER, _BRIEF)


def _listing_share(head: str) -> float:
    """The share of the head's first non-blank lines that belong to interface listings."""
    total = listed = 0
    for raw in head.split("\n", SNIFF_LINES)[:SNIFF_LINES]:
        text = raw.rstrip("\r")
        if not text.strip():
            continue
        total += 1
        listed += text[0] in " \t" or any(
            pattern.match(text) is not None for pattern in _LISTING_LINES
        )
    return listed / total if total else 0.0


@dataclass(slots=True)
class _Iface:
    name: str
    lineno: int
    text: str
    state: str
    format: str
    listing: int
    host: str | None
    address: str | None = None


def _iproute_state(state: str | None, flags: str) -> str:
    if state in ("UP", "DOWN", "UNKNOWN"):
        return state.lower()
    if state is not None:
        return "down"  # LOWERLAYERDOWN, DORMANT, NOTPRESENT: nothing passes
    return "up" if "UP" in flags.split(",") else "down"


class _Reader:
    """Interfaces of one file, listing by listing."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.listing = 0
        self.host: str | None = None
        self.current: _Iface | None = None
        self.found: list[_Iface] = []

    def start_listing(self, host: str | None) -> None:
        self.listing += 1
        self.host = host
        self.current = None

    def add(self, name: str, lineno: int, text: str, state: str, kind: str) -> _Iface:
        if self.listing == 0:
            self.listing = 1
        item = _Iface(name, lineno, text, state, kind, self.listing, self.host)
        if len(self.found) < MAX_INTERFACES:
            self.found.append(item)
        self.current = item
        return item

    def line(self, lineno: int, text: str) -> None:
        if (m := _PROMPT.match(text)) is not None:
            self.start_listing(m.group(1))
            return
        if _BARE_COMMAND.match(text):
            self.start_listing(None)
            return
        if (m := _IP_HEADER.match(text)) is not None:
            state_word = _IP_STATE.search(text)
            state = _iproute_state(state_word.group(1) if state_word else None, m.group(2))
            self.add(m.group(1), lineno, text, state, "ip")
        elif (m := _IFCONFIG_HEADER.match(text)) is not None:
            flags = m.group(2).split(",")
            state = "up" if "UP" in flags and "RUNNING" in flags else "down"
            self.add(m.group(1), lineno, text, state, "ifconfig")
        elif (m := _OLD_HEADER.match(text)) is not None:
            self.add(m.group(1), lineno, text, "down", "ifconfig")  # until its flags say UP
        elif (m := _BRIEF.match(text)) is not None:
            item = self.add(m.group(1), lineno, text, _iproute_state(m.group(2), ""), "ip-brief")
            address = m.group(3)
            if address is not None and re.fullmatch(rf"{_IPV4}(?:/[0-9]{{1,2}})?", address):
                item.address = address
        elif self.current is not None:
            self._detail(text)

    def _detail(self, text: str) -> None:
        current = self.current
        assert current is not None
        inet = _IP_INET.match(text) or _IFCONFIG_INET.match(text) or _OLD_INET.match(text)
        if inet is not None and current.address is None:
            current.address = inet.group(1)
        elif current.format == "ifconfig" and (m := _OLD_FLAGS.match(text)) is not None:
            words = m.group(1).split()
            current.state = "up" if "UP" in words and "RUNNING" in words else "down"

    def facts(self) -> list[Fact]:
        return [
            fact(
                "net.iface",
                item.name,
                self.path,
                item.lineno,
                text=item.text,
                state=item.state,
                address=item.address,
                listing=item.listing,
                host=item.host,
                format=item.format,
            )
            for item in self.found
        ]


class IpAddrParser(DocumentParser):
    """`ip -br addr`, `ip addr` and `ifconfig` listings, one node or several."""

    kind = InputKind.IP_ADDR
    name = "network interfaces (ip addr / ifconfig)"
    filenames = ("ip_addr*", "ip-addr*", "ip_a.*", "ifconfig*", "ip-br*", "ip_br*")

    @staticmethod
    def sniff(head: str) -> float:
        if ("mtu" in head or "Link encap:" in head) and _SNIFF_STRONG.search(head) is not None:
            score = 0.9
        elif len(_SNIFF_BRIEF.findall(head, 0, 16384)) >= 2:
            score = 0.7
        else:
            return 0.0
        # A listing pasted at the top of a job's log is still that log: it must be read line by
        # line by the log rules, so the listing has to be most of what the head holds.
        return score if _listing_share(head) >= LISTING_SHARE else 0.0

    def parse(self, text: str, path: str) -> DocumentResult:
        reader = _Reader(path)
        for lineno, raw in enumerate(text.split("\n"), start=1):
            reader.line(lineno, clean_line(raw))
        found = reader.facts()
        warnings = () if found else ("no network interface found",)
        return DocumentResult(tuple(found), warnings)
