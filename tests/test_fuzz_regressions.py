"""Every failure the fuzz campaign found, as its minimal input.

A failure in code outside the renderers is handed to its owner: its test is marked
`xfail(strict=True)` with the reason, so that it turns red (XPASS) the day it is fixed and
the mark comes off. `OPEN` lists their fuzz signatures (`fuzz_harnesses.signature`), so the
CI fuzz run (`tests/test_fuzz.py`) does not fail again on what is already reported here.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crashlens.cli import app
from crashlens.model import InputKind
from crashlens.parsers import PARSERS
from crashlens.parsers.base import DocumentParser

OPEN = {
    "parse-RecursionError-torchelastic_error-torchelastic._strict_fields",
    "parse-Error-nvidia_smi-csv._csv_rows",
}
"""Signatures of the failures below that are still open (remove one when its test passes)."""


def _document_parser(kind: InputKind) -> DocumentParser:
    parser = next(p for p in PARSERS if p.kind is kind)
    assert isinstance(parser, DocumentParser)
    return parser


@pytest.mark.xfail(
    strict=True,
    reason="parsers (S3): torchelastic's json.loads recurses on deeply nested JSON "
    "(RecursionError escapes parse(); the engine's catch-all then drops the whole input)",
)
def test_deeply_nested_json_in_a_torchelastic_error_file() -> None:
    result = _document_parser(InputKind.TORCHELASTIC_ERROR).parse("[" * 100_000, "error.json")
    assert isinstance(result.facts, tuple)


@pytest.mark.xfail(
    strict=True,
    reason="parsers (S3): nvidia-smi CSV rows go through csv.reader one line at a time; a lone "
    "\\r in a line raises _csv.Error (new-line character seen in unquoted field)",
)
def test_a_carriage_return_in_nvidia_smi_csv() -> None:
    text = (
        "\rtimestamp, gpu_name, gpu_bus_id, pid, process_name, used_gpu_memory [MiB]\n"
        "2026/07/14 09:00:44.742, NVIDIA H100 80GB HBM3, 00000000:00:09.0, 21180, "
        "/root/tools/memhog, 2296 MiB\n"
    )
    result = _document_parser(InputKind.NVIDIA_SMI).parse(text, "query.csv")
    assert isinstance(result.facts, tuple)


@pytest.mark.xfail(
    strict=True,
    reason="batch (scan): a file name that is not UTF-8 crashes `crashlens scan` with "
    "UnicodeEncodeError: batch/jobs.py JobSpec.signature encodes names strictly, and with that "
    "fixed (encode(errors='surrogateescape')) batch/output.py's polars table fails next",
)
def test_scan_of_a_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    job = tmp_path / "archive" / "job-1"
    job.mkdir(parents=True)
    with open(os.fsencode(job) + b"/train-\x9b\xff.log", "wb") as stream:
        stream.write(b"Bus error (core dumped)\n")
    result = CliRunner().invoke(app, ["scan", str(job.parent), "-o", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
