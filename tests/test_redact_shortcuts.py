"""The address rows' shortcuts give what the full checks give.

`_ipv6` answers a run of hex digits and colons without `::` and with fewer than six colons
(a time of day, `a:b:c`) without trying its tails as addresses; `_ipv4` remembers whether the
words before a four-part number name a version. Both must leave the output as it was.
"""

from __future__ import annotations

import ipaddress
import random
import re
from functools import partial

from crashlens.redact import Redactor
from crashlens.redact import patterns as p
from crashlens.redact.replacements import _ipv6, _version_before


def _is_ipv6(text: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(text), ipaddress.IPv6Address)
    except ValueError:
        return False


def _runs(seed: int, count: int) -> list[str]:
    """Runs of hex groups joined by `:` (and dots, for IPv4 tails), many of them addresses."""
    rng = random.Random(seed)
    runs: list[str] = []
    for _ in range(count):
        groups = [
            "".join(rng.choice("0123456789abcdef") for _ in range(rng.randint(0, 4)))
            for _ in range(rng.randint(2, 9))
        ]
        if rng.random() < 0.3:
            groups[-1] = ".".join(str(rng.randint(0, 255)) for _ in range(4))
        runs.append(":".join(groups))
    return runs


def test_a_run_without_double_colon_and_under_six_colons_holds_no_ipv6_address() -> None:
    """The premise of the shortcut: no tail of such a run is an IPv6 address."""
    checked = 0
    for run in _runs(12, 20_000):
        if "::" in run or run.count(":") >= 6:
            continue
        checked += 1
        tails = [run[i:] for i in range(len(run))]
        assert not any(_is_ipv6(tail) for tail in tails), run
    assert checked > 5_000


def test_ipv6_rows_redact_as_the_address_check_decides() -> None:
    """Whole lines: an address in a run is replaced, a time of day or a scope is kept."""
    lines = [
        "12:34:56 NCCL INFO ring 00 : 0 1 2 3",
        "[2026-12-02 01:02:03,456] c10d::Error at a:b:c",
        "connect fd00:0:0:0:0:0:0:18 port 29500",
        "peer 1:2:3:4:5:6:10.0.0.7 via ib0",
        "route fe80::1%ib0 and 2001:db8::7",
        "time 01:02:03.456789 then 1:2:3:4:5:1.2.3.4",
    ]
    redactor = Redactor()
    redacted = [redactor.text(line) for line in lines]
    assert redacted[0] == lines[0]
    assert redacted[1] == lines[1]
    assert "fd00" not in redacted[2] and "ip-" in redacted[2]
    assert "10.0.0.7" not in redacted[3]
    assert "fe80::1" not in redacted[4] and "2001:db8::7" not in redacted[4]
    assert "%ib0" in redacted[4]
    assert redacted[5].startswith("time 01:02:03.456789 then ")


def _ipv6_by_every_tail(redactor: Redactor, match: re.Match[str]) -> str:
    """The IPv6 row's decision trying every tail of the run (the row before its shortcut)."""
    whole = match.group(0)
    after = match.string[match.end() : match.end() + 1]
    if after and (after.isalnum() or after == "_"):
        return whole
    zone = match.group(1) or ""
    run = whole[: len(whole) - len(zone)].rstrip(".")
    if len(run) > 256:
        return whole
    before = match.string[match.start() - 1 : match.start()]
    starts = [] if before.isalnum() or before == "_" else [0]
    starts += [
        i + 1
        for i, c in enumerate(run)
        if c == ":" and run[i + 1 : i + 2] != ":" and (i == 0 or run[i - 1] != ":")
    ]
    for start in starts:
        candidate = run[start:]
        groups = [g for g in p.IP_SEPARATOR.split(candidate) if g]
        if len(groups) >= 2 and ":" in candidate and p.is_ip(candidate):
            if candidate in p.KEEP_IPS:
                return whole
            pseudonym = redactor.pseudonym("ip", candidate, p.ip_key(candidate))
            return run[:start] + pseudonym + whole[len(run) :]
    return whole


def test_the_ipv6_row_decides_as_trying_every_tail_does() -> None:
    shortcut, every_tail = Redactor(), Redactor()
    lines = [
        f"{prefix}{run}{suffix}"
        for run in _runs(7, 4_000)
        for prefix, suffix in (("a ", " b"), ("x", "%ib0 y"))
    ]
    for line in lines:
        expected = p.IPV6_RUN.sub(partial(_ipv6_by_every_tail, every_tail), line)
        assert p.IPV6_RUN.sub(partial(_ipv6, shortcut), line) == expected, line
    assert shortcut.mapping() == every_tail.mapping()
    assert len(shortcut.mapping()) > 100


def test_the_remembered_ipv6_answers_decide_as_trying_every_tail_does() -> None:
    """`_ipv6_address` remembers each run's address (by the run and whether it starts inside
    a word): a second sight of a run, with another Redactor and in the other position,
    decides as the first."""
    runs = _runs(9, 1_500)
    for order in (("a ", "x"), ("x", "a ")):
        shortcut, every_tail = Redactor(), Redactor()
        for prefix in (*order, *order):
            for run in runs:
                line = f"{prefix}{run} b"
                expected = p.IPV6_RUN.sub(partial(_ipv6_by_every_tail, every_tail), line)
                assert p.IPV6_RUN.sub(partial(_ipv6, shortcut), line) == expected, line
        assert shortcut.mapping() == every_tail.mapping()


def test_the_remembered_version_check_agrees_with_the_pattern() -> None:
    rng = random.Random(3)
    words = ["version", "ver", "v", "cuDNN", "nccl", "driver", "fw", "==", ">=", "-", "_", "at"]
    contexts = ["", " ", "addr=", "MASTER_ADDR="]
    for _ in range(3_000):
        before = rng.choice(contexts) + rng.choice(words) + rng.choice(["", " ", ": ", "="])
        before = before[-24:]
        expected = p.VERSION_BEFORE.search(before) is not None
        assert _version_before(before) is expected  # computed
        assert _version_before(before) is expected  # remembered


def test_versions_are_kept_and_addresses_replaced_each_time() -> None:
    redactor = Redactor()
    for _ in range(2):
        assert redactor.text("cuDNN 8.9.2.26 loaded") == "cuDNN 8.9.2.26 loaded"
        assert "10.1.2.3" not in redactor.text("MASTER_ADDR=10.1.2.3")


def test_addresses_are_told_from_other_text_as_ipaddress_tells_them() -> None:
    """`is_ip` answers text holding a character no address is written with at once: the
    same answer `ipaddress` gives, on addresses, near-addresses and host names."""
    rng = random.Random(5)
    alphabet = "0123456789abcdefABCDEF.:%gxz-_ \u0660\uff11"
    texts = [*_runs(11, 3_000), "10.0.0.1", "fe80::1%ib0", "::", "", "node-07", "1.2.3.4 "]
    texts += [run.upper() for run in _runs(13, 2_000)]  # `FE80::1`: ipaddress takes it
    texts += [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 20))) for _ in range(5_000)
    ]
    texts += [
        f"{a}.{b}.{c}.{d}" for a, b, c, d in (rng.choices(range(300), k=4) for _ in range(2_000))
    ]
    for text in texts:
        try:
            ipaddress.ip_address(text.split("%", 1)[0])
            expected = True
        except ValueError:
            expected = False
        assert p.is_ip(text) is expected, text
