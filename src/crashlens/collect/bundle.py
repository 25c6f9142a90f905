"""Turning the staged outputs into the bundle: redaction, the manifest and report, packing.

With redaction one `Redactor` first learns from every staged file and every name (the
outputs, the copied logs, their file names and source paths), then redacts each file, each
member name and the record with that full mapping: the order of the logs on the command line
never matters, and a log collected alone leaks nothing a sibling would have taught. The mapping
stays in memory (`Bundle.redactor`), never in the bundle.
"""

from __future__ import annotations

import contextlib
import dataclasses
import getpass
import json
import os
import shutil
import socket
import tarfile
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from crashlens.collect.files import text_chunks
from crashlens.collect.staging import LOGS_DIR, Staging
from crashlens.collect.steps import StepResult
from crashlens.inputs.discover import COLLECT_RECORD_MARKERS

if TYPE_CHECKING:
    from crashlens.redact import Redactor

BUNDLE_DIR = "crashlens-collect"
"""The folder every member of a `.tar.gz` bundle sits under."""
MANIFEST = "MANIFEST.txt"
REPORT = "collect-report.json"


@dataclass(frozen=True, slots=True)
class Bundle:
    """What `collect` wrote."""

    path: Path
    steps: tuple[StepResult, ...]
    redacted: bool
    redactor: Redactor | None = None
    """Holds the pseudonym -> original mapping when redacted (never written into the bundle)."""


class CollectError(Exception):
    """The bundle itself could not be written (bad --out): the only fatal failure."""


def is_archive_path(path: Path) -> bool:
    """Whether `--out` names a `.tar.gz` bundle (else a folder)."""
    return path.name.lower().endswith((".tar.gz", ".tgz"))


def check_out(out: Path) -> None:
    """Raise CollectError when `out` cannot take a bundle, before any step runs."""
    if is_archive_path(out):
        if out.is_dir():
            raise CollectError(f"{out} is a folder")
        if not out.parent.is_dir():
            raise CollectError(f"folder {out.parent} does not exist")
        if not os.access(out.parent, os.W_OK):
            raise CollectError(f"cannot write in {out.parent}")
        return
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CollectError(f"{out} exists and is not an empty folder")
    if not out.exists() and not out.parent.is_dir():
        raise CollectError(f"folder {out.parent} does not exist")


def make_redactor() -> Redactor:
    """A Redactor that already knows this machine's host name and the user running collect."""
    from crashlens.redact import Redactor

    hosts = [socket.gethostname()]
    users = [os.environ.get(v, "") for v in ("USER", "LOGNAME", "SUDO_USER")]
    with contextlib.suppress(KeyError, OSError):
        users.append(getpass.getuser())
    return Redactor(
        known_hosts=[h for h in hosts if h],
        known_users=sorted({u for u in users if u}),
    )


def write_bundle(
    out: Path,
    staging: Staging,
    steps: Sequence[StepResult],
    meta: dict[str, object],
    redactor: Redactor | None,
) -> Bundle:
    """Write the staged files, the report and the manifest to `out` (redacted when a
    `redactor` is given), packed when `out` names an archive."""
    if redactor is not None:
        _learn(staging, steps, redactor)
        for value in meta.values():
            if isinstance(value, str):
                redactor.learn(value)
    names = _final_names(staging, redactor)
    shown = _shown_steps(steps, names, redactor)
    if redactor is not None:
        meta = {k: redactor.text(v) if isinstance(v, str) else v for k, v in meta.items()}
    archive = is_archive_path(out)
    with tempfile.TemporaryDirectory(prefix="crashlens-bundle-") as tmp:
        final = Path(tmp) if archive else out
        final.mkdir(parents=True, exist_ok=True)
        os.chmod(final, 0o700)
        for name in staging.files:
            _write_redacted(staging.path(name), final / names[name], redactor)
        (final / REPORT).write_text(_report_json(meta, shown), encoding="utf-8")
        (final / MANIFEST).write_text(_manifest(meta, shown), encoding="utf-8")
        if archive:
            _pack(final, out)
    return Bundle(path=out, steps=tuple(shown), redacted=redactor is not None, redactor=redactor)


# --- redaction ---------------------------------------------------------------------------------


def _learn(staging: Staging, steps: Sequence[StepResult], redactor: Redactor) -> None:
    """The first pass: every staged file, every bundle name and every step's record, so that
    hosts, users and accounts named anywhere are known everywhere before anything is written."""
    for name in staging.files:
        redactor.learn(name)
        with staging.path(name).open("rb") as stream:
            for text in text_chunks(stream):
                redactor.learn(text)
    for step in steps:
        for value in (step.what, step.note, *(a.source for a in step.attempts)):
            redactor.learn(value)
        for attempt in step.attempts:
            redactor.learn(attempt.detail)


def _write_redacted(source: Path, target: Path, redactor: Redactor | None) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if redactor is None:
        shutil.copyfile(source, target)
        return
    with source.open("rb") as stream, target.open("wb") as out:
        for text in text_chunks(stream):
            out.write(redactor.text(text).encode("utf-8", errors="surrogateescape"))


def _final_names(staging: Staging, redactor: Redactor | None) -> dict[str, str]:
    """Bundle names: a copied log's name can hold a host or user name, so it is redacted too."""
    names: dict[str, str] = {}
    for name in staging.files:
        shown = name
        if redactor is not None:
            shown = redactor.name(name).replace(" ", "_")
        while shown in names.values():
            shown = "_" + shown if "/" not in shown else shown.replace("/", "/_", 1)
        names[name] = shown
    return names


def _shown_steps(
    steps: Sequence[StepResult], names: dict[str, str], redactor: Redactor | None
) -> list[StepResult]:
    """The steps as the bundle records them: paths, messages and notes redacted."""

    def text(value: str) -> str:
        return redactor.text(value) if redactor is not None and value else value

    def name(value: str) -> str:
        return redactor.name(value) if redactor is not None and value else value

    shown = []
    for step in steps:
        attempts = [
            dataclasses.replace(a, source=name(a.source), detail=text(a.detail))
            for a in step.attempts
        ]
        shown.append(
            dataclasses.replace(
                step,
                name=text(step.name),
                what=text(step.what),
                outputs=[names.get(o, o) for o in step.outputs],
                note=text(step.note),
                attempts=attempts,
            )
        )
    return shown


# --- the record of the collection ---------------------------------------------------------------


def _report_json(meta: dict[str, object], steps: Sequence[StepResult]) -> str:
    document: dict[str, object] = {"crashlens_collect": 1, **meta}
    document["steps"] = [dataclasses.asdict(s) for s in steps]
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    # `analyze` recognises (and skips) the record by this opening: the two must not drift.
    assert text.encode().startswith(COLLECT_RECORD_MARKERS[1])
    return text


def _manifest(meta: dict[str, object], steps: Sequence[StepResult]) -> str:
    lines = [
        "# crashlens collect manifest: what was gathered and why a step gave nothing.",
        "# `crashlens analyze` skips this file and collect-report.json (not evidence).",
        "",
    ]
    lines.extend(f"{key}: {value}" for key, value in meta.items())
    lines.append("")
    for step in steps:
        outputs = ", ".join(step.outputs) if step.outputs else "-"
        lines.append(f"{step.status:8} {step.name:14} {outputs}")
        reason = step.reason()
        if reason:
            lines.append(f"{'':23} {reason}")
    text = "\n".join(lines) + "\n"
    assert text.encode().startswith(COLLECT_RECORD_MARKERS[0])
    return text


# --- packing -----------------------------------------------------------------------------------


def _pack(folder: Path, out: Path) -> None:
    """A gzip tar of `folder`, members under BUNDLE_DIR/, without owner names or ids."""
    descriptor = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as archive:
        now = int(time.time())
        for path in sorted(folder.rglob("*"), key=_member_order):
            if not path.is_file():
                continue
            info = tarfile.TarInfo(f"{BUNDLE_DIR}/{path.relative_to(folder).as_posix()}")
            info.size = path.stat().st_size
            info.mode, info.mtime, info.uid, info.gid, info.uname, info.gname = (
                0o644,
                now,
                0,
                0,
                "",
                "",
            )
            with path.open("rb") as stream:
                archive.addfile(info, stream)


def _member_order(path: Path) -> tuple[int, str]:
    """The manifest and report first, so a reader of the archive sees them before the rest."""
    first = {MANIFEST: 0, REPORT: 1}.get(path.name, 2)
    return (first if path.parent.name != LOGS_DIR else 3, path.as_posix())
