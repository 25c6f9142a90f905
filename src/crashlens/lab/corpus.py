"""The labelled corpus: one folder per case, `case.toml` + `logs/` (see corpus/README.md)."""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass
from pathlib import Path

from crashlens.model import Category, Verdict

LABELS: tuple[Verdict, ...] = (*(Verdict.of(c) for c in Category), Verdict.NONE)
"""Every label a case may carry: the eight categories and `none` (a run that did not fail)."""


@dataclass(frozen=True, slots=True)
class Case:
    """One labelled case."""

    case_id: str
    label: str
    also_ok: tuple[str, ...]
    source: str
    difficulty: str
    inputs: tuple[str, ...]
    logs: Path

    def accepts(self, verdict: str) -> bool:
        """Whether `verdict` is a right answer for this case."""
        return verdict == self.label or verdict in self.also_ok


def load_cases(root: Path) -> list[Case]:
    """Every case under `root`, sorted by id."""
    cases = []
    for meta_path in sorted(root.glob("*/case.toml")):
        meta = tomllib.loads(meta_path.read_text(encoding="utf-8"))
        cases.append(
            Case(
                case_id=meta_path.parent.name,
                label=str(meta["label"]),
                also_ok=tuple(meta.get("also_ok", ())),
                source=str(meta.get("source", "")),
                difficulty=str(meta.get("difficulty", "easy")),
                inputs=tuple(meta.get("inputs", ())),
                logs=meta_path.parent / "logs",
            )
        )
    return cases


def corpus_digest(root: Path) -> str:
    """A hash of every file of every case: the version of the corpus a model was trained on."""
    digest = hashlib.sha256()
    files = (p for p in root.glob("*/**/*") if p.is_file())
    for path in sorted(files):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]
