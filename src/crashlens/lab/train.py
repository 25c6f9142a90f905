"""`crashlens train corpus/`: the shipped classifier, and the digest that tells when it is stale.

Analyzes every case once, fits the model on all of them with its temperature chosen on
held-out folds (`prepare.fit_calibrated`), and stamps it with the digests of the corpus and of
the rule library, so a test fails when either changed since. Deterministic: same corpus, same
model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from crashlens.decide.classifier import Model
from crashlens.lab.corpus import Case, corpus_digest
from crashlens.lab.fit import fit
from crashlens.lab.prepare import fit_calibrated, prepare
from crashlens.library import default_pattern_dir
from crashlens.match.rules import shipped_rules


def rules_digest(directory: Path | None = None) -> str:
    """A hash of the rule library (features depend on it as much as on the corpus)."""
    root = directory or default_pattern_dir()
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.toml")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def train_on_corpus(root: Path, cases: Sequence[Case]) -> Model:
    """Analyze every case and fit the shipped model, temperature included."""
    rules = shipped_rules()
    prepared = [prepare(case, rules) for case in cases]
    model = fit_calibrated(prepared, fit)
    return Model(
        classes=model.classes,
        weights=model.weights,
        intercept=model.intercept,
        temperature=model.temperature,
        corpus_digest=corpus_digest(root),
        rules_digest=rules_digest(),
        version=f"corpus-{corpus_digest(root)}",
    )
