"""Every failure the fuzz campaign found, as its minimal input.

A failure in code outside the renderers is handed to its owner: its test is marked
`xfail(strict=True)` with the reason, so that it turns red (XPASS) the day it is fixed and
the mark comes off. `OPEN` lists their fuzz signatures (`fuzz_harnesses.signature`), so the
CI fuzz run (`tests/test_fuzz.py`) does not fail again on what is already reported here.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crashlens.cli import app
from crashlens.model import InputKind
from crashlens.parsers import PARSERS
from crashlens.parsers.base import DocumentParser, Parser, collect_text
from crashlens.redact import Redactor
from fuzz_harnesses import deadline

OPEN: set[str] = set()
"""Signatures of the failures below that are still open (remove one when its test passes)."""
DATA = Path(__file__).parent / "data" / "fuzz"
SAMPLES = Path(__file__).parent / "data" / "samples"


def _parser(kind: InputKind) -> Parser:
    return next(p for p in PARSERS if p.kind is kind)


def _document_parser(kind: InputKind) -> DocumentParser:
    parser = _parser(kind)
    assert isinstance(parser, DocumentParser)
    return parser


@pytest.mark.parametrize("kind", [p.kind for p in PARSERS if isinstance(p, DocumentParser)])
@pytest.mark.parametrize("text", ["[" * 100_000, '{"a":' * 100_000], ids=["list", "object"])
def test_deeply_nested_json_in_any_document(kind: InputKind, text: str) -> None:
    """Found as a RecursionError in torchelastic's and docker inspect's JSON (fixed by S3)."""
    result = _document_parser(kind).parse(text, "input.json")
    assert isinstance(result.facts, tuple)


def test_a_carriage_return_in_nvidia_smi_csv() -> None:
    """Found as _csv.Error (new-line character seen in unquoted field), fixed by S3."""
    text = (
        "\rtimestamp, gpu_name, gpu_bus_id, pid, process_name, used_gpu_memory [MiB]\n"
        "2026/07/14 09:00:44.742, NVIDIA H100 80GB HBM3, 00000000:00:09.0, 21180, "
        "/root/tools/memhog, 2296 MiB\n"
    )
    result = _document_parser(InputKind.NVIDIA_SMI).parse(text, "query.csv")
    assert isinstance(result.facts, tuple)


def test_a_long_run_of_letters_in_a_launcher_log() -> None:
    """Found as a hang: an anchor quadratic on a long run of letters (40 KB: 19 s), fixed by S3."""
    with deadline(2.0):
        collect_text(_parser(InputKind.LAUNCHER), "A" * 40_000 + "\n", "train.log")


def test_a_launcher_log_of_blank_crlf_lines() -> None:
    """Found as a hang: a Slurm job's output with 198,000 blank CRLF lines after its lines took
    13 s line by line (every anchor searched in Python on every line); each distinct line is
    searched once now. The lines before the blanks still give their facts."""
    head = (
        "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=191.batch cgroup. Some of"
        " your processes may have been killed by the cgroup out-of-memory handler.\r\n"
    )
    text = head + "\r\n" * 200_000
    with deadline(5.0):
        lines, facts = collect_text(_parser(InputKind.LAUNCHER), text, "slurm-191.out")
    assert len(lines) == 200_001
    assert facts


def test_a_deeply_nested_kubectl_pod_list() -> None:
    """Found as a hang: a pod list with 81,000 levels of nesting spliced in took 4.5 s, its
    first half 0.04 s (the truncation repair stripped trailing commas from the whole text once
    per cut point it tried). The facts before the nesting are kept."""
    raw = gzip.decompress((DATA / "kubectl_json_pod_list_nested_slow.json.gz").read_bytes())
    with deadline(2.0):
        result = _document_parser(InputKind.KUBECTL_JSON).parse(
            raw.decode("utf-8", "replace"), "pods.json"
        )
    assert ("k8s.node", "node-05") in {(f.key, f.value) for f in result.facts}


def test_deeply_nested_elements_in_nvidia_smi_xml() -> None:
    """Found as a RecursionError out of parse() (_xml_errs recursed into every child of a
    <gpu> element): the nesting is left unread with a warning, the GPU's fields are kept."""
    xml = (SAMPLES / "nvidia_smi" / "qx_a100-sxm4-v12.xml").read_text(encoding="utf-8")
    inside = xml.index(">", xml.index("<gpu ")) + 1
    nested = "<a>" * 3000 + "<b>ERR!</b>" + "</a>" * 3000
    parser = _document_parser(InputKind.NVIDIA_SMI)
    plain = parser.parse(xml, "query.xml")
    result = parser.parse(xml[:inside] + nested + xml[inside:], "query.xml")
    assert {(f.key, f.value) for f in result.facts} == {(f.key, f.value) for f in plain.facts}
    assert any("nested deeper" in warning for warning in result.warnings), result.warnings


def test_a_tag_name_cut_into_a_long_run_in_nvidia_smi_xml() -> None:
    """Found as a hang (session 18, 62-minute run): a byte-mutated `nvidia-smi -q -x` whose
    `</power_draw>` became `</pow` and 31,000 digits took 79 s in the tolerant XML reader (the
    tag name's repeat retried at every split with the attributes: quadratic). The GPU's
    fields before the damage are kept."""
    xml = (SAMPLES / "nvidia_smi" / "qx_tesla-t4.xml").read_text(encoding="utf-8")
    cut = xml.index("</power_draw>") + len("</pow")
    parser = _document_parser(InputKind.NVIDIA_SMI)
    with deadline(10.0):
        result = parser.parse(xml[:cut] + "9" * 32_000 + "\n" + xml[cut:], "query.xml")
    facts = {f.key for f in result.facts}
    assert facts, "the GPU read before the damage is lost"
    assert facts <= {f.key for f in parser.parse(xml, "query.xml").facts}


def test_a_wrong_json_type_in_a_kubectl_pod_list() -> None:
    """Found as a TypeError (unhashable type: 'list') out of parse(): `"kind": []` in a pod
    list. The object is read by its shape, as a pod without a kind is."""
    text = (DATA / "kubectl_json_list_where_a_string_belongs.json").read_text(encoding="utf-8")
    result = _document_parser(InputKind.KUBECTL_JSON).parse(text, "pods.json")
    facts = {(f.key, f.value) for f in result.facts}
    assert {("k8s.reason", "Evicted"), ("k8s.eviction", "ephemeral-storage")} <= facts


def test_scan_of_a_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    job = tmp_path / "archive" / "job-1"
    job.mkdir(parents=True)
    with open(os.fsencode(job) + b"/train-\x9b\xff.log", "wb") as stream:
        stream.write(b"Bus error (core dumped)\n")
    result = CliRunner().invoke(app, ["scan", str(job.parent), "-o", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    # the name's undecodable bytes are shown, not dropped: the row still says which file
    cached = (tmp_path / "o" / "scan-cache.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in cached]
    evidence = [str(row.get("row", row).get("evidence")) for row in rows]
    assert any("train-\\x9b\\xff.log" in text for text in evidence), evidence


def test_a_df_header_with_no_column_between_its_ends() -> None:
    """Found as an IndexError in df's row split (sniff and parse): `Filesystem   Mounted on`
    with nothing between, then a row. Such a header names no column: no row is read by it."""
    text = "Filesystem   Mounted on\nshm              64M   63M  1.0M  99% /dev/shm\n"
    parser = _document_parser(InputKind.DF)
    assert 0.0 <= parser.sniff(text) <= 1.0
    result = parser.parse(text, "df.txt")
    assert not [f for f in result.facts if f.key == "df.shm_size_bytes"]


def test_a_slurm_node_range_of_thousands_of_digits(tmp_path: Path) -> None:
    """Found as a ValueError (int() past Python's 4300-digit limit) in sacct's NodeList range
    `node-[01-0999...]`, which cost the whole input (`could not be read`); fixed by bounding the
    range's digits: such a NodeList names no node count, the rest of the input is read."""
    from crashlens.pipeline import analyze

    huge = "0" + "9" * 5000
    text = (
        "JobID|JobName|State|ExitCode|Elapsed|NodeList|ReqMem|MaxRSS\n"
        f"5120033|train_lm|CANCELLED by 1234|0:0|02:11:05|node-[01-{huge}]|240G|\n"
        "5120033.batch|batch|CANCELLED|0:15|02:11:05|node-01||3912584K\n"
        "5120034|train_lm|NODE_FAIL|1:0|00:42:10|node-04|240G|\n"
    )
    path = tmp_path / "sacct.txt"
    path.write_text(text)
    report = analyze([str(path)])
    assert all("could not be read" not in (item.reason or "") for item in report.inputs)
    assert report.inputs[0].kind is InputKind.SLURM_JOB


def test_redacting_host_prefixes_followed_by_a_no_break_space() -> None:
    """Found in review as a hang: a remembered pdsh host prefix was looked for up to the next
    `: ` wherever it stood, and a line whose gate saw `: ` in a folded `:\\xa0` has none, so
    every such line searched on to the text's end (60,000 lines: 28 s). The search stops within
    a prefix's reach now; the host is still replaced on every line."""
    redactor = Redactor()
    redactor.learn("node-01: training started\n")
    text = "node-01:\xa0step done\n" * 60_000
    with deadline(5.0):
        out = redactor.text(text)
    assert "node-01" not in out
    assert out.count("\n") == 60_000
