"""The anchored rows (`redact.anchors`) give what `pattern.sub` gives.

A row with an anchor is tried only where its gate's match ends say a match can start: it
must call the replace function on the same matches, in the same order, and return the same
line as `sub`, on every ASCII line of the samples and corpus, on lines built to sit at the
edges, and on random lines made of the pieces the rules look at (keywords, separators, name
characters, dots, digits, quotes). The gate ends come from Hyperscan, as in `Redactor`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from crashlens.redact import Redactor
from crashlens.redact.anchors import anchored, run_start
from crashlens.redact.gates import fold
from crashlens.redact.redactor import _LINE_ROWS, gates
from crashlens.redact.replacements import Replacement

ROOT = Path(__file__).resolve().parents[1]
ANCHORED = [(index, row) for index, row in enumerate(_LINE_ROWS) if row.anchor is not None]

pytestmark = pytest.mark.skipif(
    gates().backend != "hyperscan", reason="gate match ends come from Hyperscan only"
)


def _lines() -> list[str]:
    lines: set[str] = set()
    for folder in (ROOT / "tests" / "data", ROOT / "corpus"):
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.suffix not in (".gz", ".zst", ".zip"):
                text = path.read_bytes().decode("utf-8", "surrogateescape")
                lines.update(line for line in text.split("\n") if line.isascii())
    return sorted(lines)


LINES = _lines()

EDGES = [
    "",
    "password=hunter2 token=abc123456 api_key: 'x' db.password : \"y\"",
    'GCP="{\\"private_key_id\\": \\"0f9e8d7c6b5a\\", \\"client_secret\\": \\"zz\\"}"',
    "my_secret_token=1 my-secret-token=2 a.b.password=3 _password=4 x_password =5",
    "a.com.io trn-h100-032.cluster.orion.internal user@host.example.com x_y.internal",
    "https://node-7.corp.example.com:8443/path foo.com. bar.com- baz.com_ q.io",
    "10.0.0.1 10.0.0.1.2 1.2.3.4.5.6.7.8 v1.2.3.4 999.1.1.1 1.2.3.4-1 a1.2.3.4",
    "hostname=node-1 host: node-2 --host node-3 --hostname=n4 MASTER_ADDR=10.1.1.1",
    "slurmd_nodename=gpu-7 launch_node_ipaddr=10.2.2.2 batchhost=b-1 --rdzv-endpoint x:1",
    "srun_comm_host=s-1 pbs_o_host = p-2 SLURMCTLD_HOST='c-3' host=host=host=h-4",
    "failed to connect to host node-3 on node node-4 from machine m-5 pdsh@login-1:",
    "connecting to https://x.org connect to (n-1) connect to [n-2] unknown host: u-3",
    "hostname=" + "a" * 300 + " password=" + "b-" * 200 + "=" + "c" * 70,
    "a." * 400 + "internal",
    "1." * 500 + "1",
]

_PIECES = [
    "password",
    "passwd",
    "token",
    "secret",
    "api_key",
    "access_key_id",
    "auth",
    "dsn",
    "host",
    "hostname",
    "node_name",
    "master_addr",
    "slurmd_nodename",
    "launch_node_ipaddr",
    "--host",
    "--hostname",
    "--rdzv-endpoint",
    "--node",
    "connect to host ",
    "on node ",
    "connecting to ",
    "pdsh@",
    "hostfile ",
    "virtualMachines/",
    "example.com",
    ".internal",
    ".io",
    ".co",
    ".com",
    "node-1",
    "gpu-07",
    "10.0.0.1",
    "1.2",
    ".3.4",
    "::",
    "=",
    ":",
    " ",
    "  ",
    "\t",
    '"',
    "'",
    "\\",
    '\\"',
    "_",
    "-",
    ".",
    "/",
    "@",
    "%",
    "[",
    "]",
    ",",
    "a",
    "Z",
    "9",
    "x1",
    "ab-",
    "0",
]


def _random_lines(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choices(_PIECES, k=rng.randint(1, 14))) for _ in range(count)]


def _replace(calls: list[tuple[int, int, str]]) -> Callable[[re.Match[str]], str]:
    """A replace function that records each match it is given and writes something new."""

    def replace(match: re.Match[str]) -> str:
        calls.append((match.start(), match.end(), match.group(0)))
        return f"<{len(calls)}:{match.group(0)[::-1]}>"

    return replace


@pytest.mark.parametrize(("index", "row"), ANCHORED, ids=lambda v: str(v)[:40])
def test_an_anchored_row_substitutes_as_sub_does(index: int, row: Replacement) -> None:
    assert row.anchor is not None
    fast = anchored(row.pattern, row.anchor)
    matched = 0
    for line in [*EDGES, *LINES, *_random_lines(6000, index)]:
        ends = gates().ends(fold(line)).get(index, [])
        expected_calls: list[tuple[int, int, str]] = []
        calls: list[tuple[int, int, str]] = []
        expected = row.pattern.sub(_replace(expected_calls), line)
        assert fast(_replace(calls), line, ends) == expected, line
        assert calls == expected_calls, line
        matched += bool(calls)
    assert matched >= 50  # the lines reach the rows' matches, not only their misses


def test_the_anchored_rows_are_those_that_cost_most_on_launcher_logs() -> None:
    from crashlens.redact import patterns as p

    assert {row.pattern for _, row in ANCHORED} == {
        p.KEY_VALUE,
        p.FQDN_RE,
        p.IPV4,
        p.KV_HOST,
        p.PROSE_HOST,
    }


def test_run_start_reads_back_over_each_class_in_turn() -> None:
    assert run_start("x = my.secret_token :", 21, "=: ", "abcdefghijklmnopqrstuvwxyz_.") == 4
    assert run_start("a" * 1000, 1000, "a") == 0
    assert run_start("b" + "a" * 1000, 1001, "a") == 1
    assert run_start("", 0, "a") == 0


def test_the_sharper_ipv6_gate_skips_scopes_and_keeps_addresses() -> None:
    proposed = gates().lines(fold("c10d::ProcessGroupNCCL::WorkNCCL std::chrono::duration"))
    assert proposed == {}
    for line in ("fe80::1%ib0 up", "[::1]:8080", "::ffff:10.0.0.1,", "a 1:2:3:4:5:6:7:8"):
        assert gates().lines(fold(line)), line
        redactor = Redactor()
        assert redactor.text(line) != line or "::1" in line, line


def test_a_redactor_with_and_without_anchors_writes_the_same() -> None:
    """The Python backend runs every row as `sub` (no match ends) behind the gates `re` can
    search, the Hyperscan one the anchored rows from their gates and behind the sharper
    gates: learned from the same pieces, they write the same (pieces under 64 KB: on bigger
    ones the two look learned names up differently, by design)."""
    lines = [*EDGES, *LINES[::7], *_random_lines(4000, 7)]
    pieces = ["\n".join(lines[at : at + 100]) for at in range(0, len(lines), 100)]
    assert max(map(len, pieces)) < 64 * 1024
    written = []
    for backend in ("hyperscan", "python"):
        redactor = Redactor(backend=backend)
        for piece in pieces:
            redactor.learn(piece)
        written.append(([redactor.text(piece) for piece in pieces], redactor.mapping()))
    assert written[0] == written[1]
