"""Characters outside Latin-1 that the secret patterns take for ASCII letters, spaces or digits.

The gates search a Latin-1 folding of the text; the rows' patterns are `str` regexes, and `re`
matches `(?i)secret` in `ſecret` (long s), `(?i)token` in `toKen` (Kelvin sign), `(?i)api`
in `apİ`/`apı` (dotted capital, dotless small i), and `\\s` in every Unicode space. A line
whose only secret is written that way passed no gate and kept its secret in every output.
"""

from __future__ import annotations

import json
import re
import sys
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crashlens.cli import app
from crashlens.collect import CollectOptions, collect
from crashlens.redact import Redactor
from crashlens.redact.gates import FOLD_ERRORS, fold

RUNNER = CliRunner()

SECRETS = {
    "\u017fecret=Zq9vR2mT7xLpA1": "Zq9vR2mT7xLpA1",  # long s
    "api_to\u212aen=Hq4kW8nB2cVx7J": "Hq4kW8nB2cVx7J",  # Kelvin sign
    "ap\u0130_key=Pw3sD6fG9hJ2kL": "Pw3sD6fG9hJ2kL",  # capital I with dot above
    "ap\u0131_key=Mn5bV8cX1zQ4wE": "Mn5bV8cX1zQ4wE",  # dotless i
    "password\u00a0=Rt6yU1iO4pAs9D": "Rt6yU1iO4pAs9D",  # no-break space (Latin-1)
    "pa\u017f\u017fword\u2003=Gh2jK5lZ8xCv3B": "Gh2jK5lZ8xCv3B",  # em space
    "https://\u7528\u6237:Bn7mQ2wE5rTy8U@db.example.com/x": "Bn7mQ2wE5rTy8U",
}
"""Each written with a character the `str` patterns match and Latin-1 lacks (or, NBSP, one
that `\\s` takes only in a `str`) -> the secret it carries."""


def _leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS.values() if secret in text]


@pytest.mark.parametrize("line", list(SECRETS))
def test_a_secret_written_with_a_unicode_fold_is_redacted(line: str) -> None:
    redacted = Redactor().text(f"step 3: {line} (retrying)")
    assert SECRETS[line] not in redacted
    assert "secret-1" in redacted


def test_every_character_re_takes_for_an_ascii_letter_folds_to_it() -> None:
    """The whole of Unicode: what `(?i)[a-z]` matches outside Latin-1 folds to its letter."""
    cased = re.compile("[a-z]", re.IGNORECASE)
    found = {}
    for code in range(0x100, sys.maxunicode + 1):
        char = chr(code)
        if cased.fullmatch(char):
            found[char] = fold(char).decode("latin-1")
            assert re.fullmatch(found[char], char, re.IGNORECASE), hex(code)
    assert {"\u017f", "\u212a", "\u0130", "\u0131"} <= set(found)


def test_folding_keeps_one_byte_per_character() -> None:
    text = "a\u212a\u0130\u7528\u2003\u0663\udc80\u00a0z"
    assert fold(text) == b"aki\xff 3\xff z"


def test_progress_bar_glyphs_fold_as_every_other_character_latin1_lacks() -> None:
    """`fold` replaces a bar's glyphs before encoding (speed): the bytes are the ones the
    codec's handler writes, one a character, beside text the handler still folds."""
    bar = (
        " 45%|\u2588\u2588\u2588\u2588\u258c     | 9/20 "
        "[\u212a\u2003\u2501\u2578\u257a\u2589\udc80]\r"
    )
    folded = fold(bar * 3)
    assert len(folded) == len(bar) * 3
    one_by_one = b"".join(char.encode("latin-1", FOLD_ERRORS) for char in bar)
    assert folded == one_by_one.lower() * 3
    assert folded.count(b"\xff") == 3 * 10  # 9 glyphs and the lone surrogate


def _job(folder: Path) -> list[str]:
    folder.mkdir()
    failing = " ".join(SECRETS)
    log = folder / "train.log"
    log.write_text(
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "train.py", line 3, in <module>\n'
        f"[rank0]: RuntimeError: NCCL error: unhandled system error {failing}\n"
        "Error while creating shared memory segment /dev/shm/nccl-abc (size 9637888)\n"
        f"torch.distributed.elastic.multiprocessing.errors.ChildFailedError: {failing}\n",
        encoding="utf-8",
    )
    return [str(log)]


@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_analyze_redact_leaks_no_unicode_written_secret(tmp_path: Path, fmt: str) -> None:
    paths = _job(tmp_path / "job")
    plain = RUNNER.invoke(app, ["analyze", *paths, "-f", fmt, "--no-redact"])
    assert len(_leaks(plain.stdout)) == len(SECRETS)  # the report does cite those lines
    result = RUNNER.invoke(app, ["analyze", *paths, "-f", fmt, "--redact"])
    assert result.exit_code == 0, result.output
    shown = result.stdout
    if fmt == "json":
        shown = json.dumps(json.loads(shown), ensure_ascii=False)
    assert not _leaks(shown)


def test_collect_leaks_no_unicode_written_secret(tmp_path: Path) -> None:
    out = tmp_path / "bundle.tar.gz"
    collect(out, CollectOptions(logs=tuple(_job(tmp_path / "job")), timeout=2.0, steps=()))
    with tarfile.open(out, "r:gz") as archive:
        texts = []
        for member in archive.getmembers():
            stream = archive.extractfile(member)
            if stream is not None:
                texts.append(stream.read().decode("utf-8", errors="replace"))
    bundle = "\n".join(texts)
    assert "\u017fecret=" in bundle  # the log is in the bundle
    assert not _leaks(bundle)
