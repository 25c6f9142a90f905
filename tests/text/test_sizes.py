"""Sizes in each tool's units read into bytes, and bytes shown in binary units."""

from __future__ import annotations

import pytest

from crashlens.text.sizes import (
    docker_size,
    human_bytes,
    human_size,
    is_human_size,
    to_bytes,
    unit_bytes,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("16gb", 16 * 1024**3),
        ("8G", 8 * 1024**3),
        ("'2g'", 2 * 1024**3),
        ('"1.5g"', int(1.5 * 1024**3)),
        ("512m", 512 * 1024**2),
        ("1024k", 1024**2),
        ("16GiB", 16 * 1024**3),
        ("100b", 100),
        ("8589934592", 8589934592),
        (67108864, 67108864),
        ("lots", None),
        ("8 x", None),
        (True, None),
        (None, None),
        (1.5, None),
    ],
)
def test_docker_size(raw: object, expected: int | None) -> None:
    assert docker_size(raw) == expected


@pytest.mark.parametrize(
    ("token", "block", "si", "expected"),
    [
        ("1.8T", None, False, int(1.8 * 1024**4)),
        ("0", None, False, 0),
        ("20K", None, False, 20480),
        ("5", 512, False, 2560),
        ("5", 1024, True, 5120),  # a block count does not change with -H
        ("460Gi", None, False, 460 * 1024**3),
        ("512Bi", None, False, 512),
        ("8.2k", None, True, 8200),
        ("68M", None, True, 68_000_000),
        ("1,5G", None, False, int(1.5 * 1024**3)),
        ("-", None, False, None),
        ("12%", None, False, None),
        ("/dev/shm", None, False, None),
    ],
)
def test_human_size(token: str, block: int | None, si: bool, expected: int | None) -> None:
    assert human_size(token, block, si) == expected


@pytest.mark.parametrize(("token", "expected"), [("1.8T", True), ("4096", True), ("-", False)])
def test_is_human_size(token: str, expected: bool) -> None:
    assert is_human_size(token) is expected


def test_unit_bytes() -> None:
    assert unit_bytes("") == 1
    assert unit_bytes("k") == unit_bytes("K") == 1024
    assert unit_bytes("G", 1000) == 10**9
    with pytest.raises(KeyError):
        unit_bytes("Q")


@pytest.mark.parametrize(
    ("number", "unit", "expected"),
    [
        ("2.00", "GiB", 2 * 1024**3),
        ("20.00", "MiB", 20 * 1024**2),
        ("1.5", "KiB", 1536),
        ("79.10", "GiB", round(79.10 * 1024**3)),
        ("3", "GB", 3 * 1024**3),  # torch's `GB` is binary as well
        ("512", "bytes", 512),
        ("7", "B", 7),
    ],
)
def test_to_bytes_reads_torch_sizes(number: str, unit: str, expected: int) -> None:
    assert to_bytes(number, unit) == expected


def test_to_bytes_rejects_an_unknown_unit() -> None:
    with pytest.raises(KeyError):
        to_bytes("1", "PiB")


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (67108864, "64.0 MiB"),
        (1073741824, "1.0 GiB"),
        (3 * 1024**5, "3072.0 TiB"),
        (-2048, "-2.0 KiB"),
    ],
)
def test_human_bytes(size: float, shown: str) -> None:
    assert human_bytes(size) == shown


@pytest.mark.parametrize("size", [1, 1536, 64 * 1024**2, 7 * 1024**3 + 12345])
def test_human_bytes_reads_back_with_docker_size_within_rounding(size: int) -> None:
    number, unit = human_bytes(size).split()
    letter = "" if unit == "B" else unit[0]
    read = docker_size(f"{number}{letter}")
    assert read is not None and abs(read - size) <= 0.05 * unit_bytes(letter)
