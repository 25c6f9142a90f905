"""Lines real tools printed on this machine for real failures (bash 5.2.15 and dash refusing to
execute a file, Python 3.11's urllib, requests, sqlite3, concurrent.futures and joblib, NumPy
2.4), each read by exactly one rule, the one of its mechanism: a line counted by two rules
would weigh twice in the decision. Captured by running the failure (a file without its execute
bit, a closed port, a name that does not resolve, a full tmpfs, a killed worker); hosts and
paths are this machine's scratch ones."""

from __future__ import annotations

import pytest

from mechanism_helpers import rules_hitting

CAPTURED = [
    ("bash: line 1: exec: /tmp/tr: cannot execute: Permission denied", "permissions-exec-refused"),
    ("sh: 1: ./noexec.sh: Permission denied", "permissions-exec-refused"),
    ("sh: 1: cannot create /tmp/rootonly/f: Permission denied", "permissions-permission-denied"),
    (
        "urllib.error.URLError: <urlopen error [Errno 111] Connection refused>",
        "network-url-fetch-refused",
    ),
    (
        "urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>",
        "network-name-resolution",
    ),
    (
        "requests.exceptions.ConnectionError: HTTPConnectionPool(host='127.0.0.1', port=9): Max"
        ' retries exceeded with url: /x (Caused by NewConnectionError("HTTPConnection(host='
        "'127.0.0.1', port=9): Failed to establish a new connection: [Errno 111] Connection"
        ' refused"))',
        "network-connection-refused-client",
    ),
    (
        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co',"
        " port=443): Max retries exceeded with url: /api/models/gpt2 (Caused by"
        " NameResolutionError(\"HTTPSConnection(host='huggingface.co', port=443): Failed to"
        " resolve 'huggingface.co' ([Errno -2] Name or service not known)\"))",
        "network-name-resolution",
    ),
    ("sqlite3.OperationalError: database or disk is full", "filesystem-sqlite-database-full"),
    ("OSError: 1000000 requested and 32752 written", "filesystem-array-file-short-write"),
    (
        "concurrent.futures.process.BrokenProcessPool: A process in the process pool was"
        " terminated abruptly while the future was running or pending.",
        "host-oom-worker-process-vanished",
    ),
    ("The exit codes of the workers are {SIGKILL(-9)}", "host-oom-sigkill-exit"),
]


@pytest.mark.parametrize(("line", "rule"), CAPTURED)
def test_a_captured_line_is_read_by_its_mechanisms_rule_alone(line: str, rule: str) -> None:
    assert rules_hitting(line) == [rule]
