"""The errno catalog (patterns/tables/errno.toml): every Linux errno, as software prints it."""

from __future__ import annotations

import errno
import os
import sys
import tomllib

import pytest

from crashlens.library import tables_dir
from crashlens.match.catalogs import Catalog, CatalogEntry, load_catalog, referenced_entries
from crashlens.match.rules import Rule, default_pattern_dir, load_rules
from crashlens.model import Category

TABLE: Catalog = load_catalog(tables_dir() / "errno.toml")
BY_ID = {entry.id: entry for entry in TABLE.entries}
RULES = load_rules(default_pattern_dir())
CAUSES = {category.value for category in Category}
NO_BARE = {"EIO", "ETIMEDOUT", "EACCES"}
"""Entries whose bare message is also printed without an errno (retrying transports, ssh)."""

on_glibc = pytest.mark.skipif(
    sys.platform != "linux" or os.strerror(errno.ENOSPC) != "No space left on device",
    reason="the messages are glibc's",
)


def _referencing(entry: CatalogEntry) -> list[Rule]:
    found = []
    for rule in RULES:
        raw = _catalog_spec(rule)
        if raw is not None and entry in referenced_entries(raw, rule.source):
            found.append(rule)
    return found


def _catalog_spec(rule: Rule) -> object:
    with open(rule.source, "rb") as handle:
        return tomllib.load(handle).get("match", {}).get("catalog")


def test_every_linux_errno_is_listed_once_by_name_and_number() -> None:
    codes = [entry.code for entry in TABLE.entries]
    assert len(codes) == len(set(codes)) == 131
    # Linux numbers its errors 1..133 and leaves 41 and 58 unused (old EWOULDBLOCK/EDEADLOCK slots).
    assert set(codes) == set(range(1, 134)) - {41, 58}
    assert BY_ID["ENOSPC"].code == 28 and BY_ID["EDQUOT"].code == 122
    assert BY_ID["EHWPOISON"].code == 133 and BY_ID["EDEADLK"].code == 35


@on_glibc
@pytest.mark.parametrize("entry", TABLE.entries, ids=[e.id for e in TABLE.entries])
def test_names_numbers_and_messages_are_the_c_librarys(entry: CatalogEntry) -> None:
    assert entry.code is not None
    if entry.code in errno.errorcode and entry.id not in ("EDEADLK",):
        assert errno.errorcode[entry.code] == entry.id
    message = os.strerror(entry.code)
    # Python's own OSError prints `[Errno N] message`: the table's Python form is that string.
    assert f"[Errno {entry.code}] {message}" in str(OSError(entry.code, message, "/x"))
    assert f"[Errno {entry.code}] {message}" in entry.texts
    assert f"{message} ({entry.code})" in entry.texts  # c10: "...: message (N)"
    assert f"errno = {entry.code}, error message = '{message}'" in entry.texts  # HDF5 / h5py
    assert f"{message} [{entry.code}]" in entry.texts  # glog's PLOG / PCHECK
    assert f"{message} (os error {entry.code})" in entry.texts  # Rust's io::Error
    assert (message in entry.texts) is (entry.id not in NO_BARE)


def test_socket_errors_carry_the_c10d_form() -> None:
    for name, code in (("EADDRINUSE", 98), ("ECONNREFUSED", 111), ("ETIMEDOUT", 110)):
        message = os.strerror(code) if sys.platform == "linux" else ""
        texts = BY_ID[name].texts
        assert any(text.startswith(f"errno: {code} - ") for text in texts), name
        assert not message or f"errno: {code} - {message}" in texts


@pytest.mark.parametrize(
    ("name", "category", "also"),
    [
        ("ENOSPC", "filesystem", {Category.SHM}),
        ("EROFS", "filesystem", set()),
        ("EDQUOT", "filesystem", set()),
        ("ESTALE", "filesystem", set()),
        ("EIO", "filesystem", {Category.HARDWARE}),
        ("EACCES", "permissions", set()),
        ("EPERM", "permissions", set()),
        ("EMFILE", "permissions", set()),
        ("ENFILE", "permissions", set()),
        ("ENOMEM", "ambiguous", {Category.HOST_OOM, Category.PERMISSIONS}),
        ("ECONNREFUSED", "network", set()),
        ("ECONNRESET", "network", set()),
        ("ETIMEDOUT", "network", set()),
        ("EHOSTUNREACH", "network", set()),
        ("ENETUNREACH", "network", set()),
        ("EADDRINUSE", "network", set()),
        ("EHWPOISON", "hardware", set()),
        ("ENOENT", "application", set()),
        ("EINTR", "noise", set()),
    ],
)
def test_categories(name: str, category: str, also: set[Category]) -> None:
    entry = BY_ID[name]
    assert entry.category == category
    assert {cause for cause, _ in entry.also} == also


def test_knock_on_wordings_are_symptoms() -> None:
    for name in ("ECONNRESET", "EPIPE", "ECONNABORTED", "ETIMEDOUT", "ECONNREFUSED"):
        assert BY_ID[name].role.value == "symptom", name


@pytest.mark.parametrize(
    "entry",
    [e for e in TABLE.entries if e.category in CAUSES],
    ids=[e.id for e in TABLE.entries if e.category in CAUSES],
)
def test_every_cause_entry_has_a_rule_of_its_category_that_hits_its_example(
    entry: CatalogEntry,
) -> None:
    rules = _referencing(entry)
    assert rules, f"no rule references {entry.id}"
    hitting = [rule for rule in rules if rule.match_line(entry.example) is not None]
    assert hitting, f"no rule referencing {entry.id} hits {entry.example!r}"
    assert {rule.category.value for rule in hitting} == {entry.category}


def test_ambiguous_entries_name_their_causes_and_route_to_one_of_them() -> None:
    ambiguous = [entry for entry in TABLE.entries if entry.category == "ambiguous"]
    assert {entry.id for entry in ambiguous} == {"EAGAIN", "ENOMEM", "ENODEV", "ENOTCONN"}
    for entry in ambiguous:
        assert entry.also
        for rule in _referencing(entry):
            assert rule.category in {cause for cause, _ in entry.also}, (entry.id, rule.id)


def _hits(line: str) -> set[str]:
    return {rule.id for rule in RULES if rule.match_line(line) is not None}


def test_enospc_is_shm_under_dev_shm_and_filesystem_on_a_disk() -> None:
    disk = "OSError: [Errno 28] No space left on device: '/checkpoints/run-7/model.pt'"
    shm = "RuntimeError: unable to write to file </torch_4242_1234_0>: No space left on device (28)"
    assert "filesystem-no-space-left" in _hits(disk)
    assert not any(rule.startswith("filesystem-") for rule in _hits(shm))
    assert any(rule.startswith("shm-") for rule in _hits(shm))


def test_glog_and_rust_forms_route_like_the_python_form() -> None:
    # The same errno printed by a glog PLOG/PCHECK (Paddle's old trainer, brpc) and by a Rust
    # extension raising OSError (safetensors) reaches the rules of the Python form's category.
    python = "ConnectionError: [Errno 110] Connection timed out"
    glog = (
        "F0911 14:31:16.057638  5678 SocketChannel.cpp:54] Check failed: len >= 0  "
        "peer=10.0.0.42: Connection timed out [110]"
    )
    rust = "OSError: Connection timed out (os error 110)"
    assert "network-connect-timed-out" in _hits(python)
    assert "network-connect-timed-out" in _hits(glog)
    assert "network-connect-timed-out" in _hits(rust)
    disk = "OSError: No space left on device (os error 28)"
    assert "filesystem-no-space-left" in _hits(disk)
    # a bare number in brackets is not an errno form
    assert "network-connect-timed-out" not in _hits("step [110] loss 0.31 timed out waiting")


def test_wordings_printed_without_a_failure_are_left_alone() -> None:
    retry = (
        "W0722 18:02:40.552301 1403 socket.cpp:558] [c10d] The client socket has failed to "
        "connect to [localhost]:29500 (errno: 99 - Cannot assign requested address)."
    )
    assert "network-errno-no-network" not in _hits(retry)
    nonblocking = "BlockingIOError: [Errno 11] Resource temporarily unavailable"
    assert "permissions-errno-task-limit" not in _hits(nonblocking)
    thread = "terminate called after throwing an instance of 'std::system_error'"
    assert not _hits(thread) & {"permissions-errno-task-limit"}
    assert "permissions-errno-task-limit" in _hits("  what():  Resource temporarily unavailable")


def test_retrying_transports_do_not_count_as_errno() -> None:
    # UCX and NCCL print these messages while they retry; only the errno-carrying forms count.
    assert "filesystem-io-error" not in _hits("org.openucx.jucx.UcxException: Input/output error")
    assert "filesystem-io-error" in _hits(
        "RuntimeError: unable to write to file </data/x.bin>: Input/output error (5)"
    )
    nccl = "NCCL INFO Call to connect returned Connection timed out, retrying"
    assert "network-connect-timed-out" not in _hits(nccl)
    assert "network-connect-timed-out" in _hits("TimeoutError: [Errno 110] Connection timed out")
