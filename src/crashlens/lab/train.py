"""`crashlens train corpus/`: the shipped classifier, and the digest that tells when it is stale.

Analyzes every case once, fits the model on all of them with its calibration (temperatures
and the verdict threshold) chosen on held-out folds (`prepare.fit_calibrated`), and stamps it
with the digests of the corpus and of the rule library, so a test fails when either changed
since. Deterministic: same corpus, same model.
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
from crashlens.match.rules import Rule, load_rules, shipped_rules
from crashlens.parsers.dmesg.xid import load_table as load_xid_table


def rules_digest(directory: Path | None = None) -> str:
    """A hash of what the classifier's features take from the rule library.

    The features are which rules hit, in which category and role with what weight, and the
    rule decision's scores (`decide/features.py`): so what a rule matches (patterns,
    exclusions, fact conditions, inputs, flags) and how its hits weigh (category, role,
    weight, `also`, `knock_on`, `against`, `failure`). Rules may also qualify Xid facts by
    what the Xid table says of the code (`where = { category = '^hardware$' }`), so the
    table's readings count too (category, severity, bucket), not its wording. Wording,
    remediation, references and examples are left out: a fix to them needs no retrain.
    """
    root = directory or default_pattern_dir()
    rules = shipped_rules() if directory is None else load_rules(directory)
    digest = hashlib.sha256()
    xid_table = root / "tables" / "xid.toml"
    if xid_table.is_file():
        for code, info in sorted(load_xid_table(xid_table).items()):
            digest.update(repr((code, info.category, info.severity, info.bucket)).encode())
    for rule in sorted(rules, key=lambda r: r.id):
        parts = (
            rule.id,
            rule.category.value,
            rule.role.value,
            rule.weight,
            sorted(kind.value for kind in rule.inputs),
            rule.patterns,
            rule.excludes,
            rule.facts,
            rule.ignore_case,
            tuple((category.value, weight) for category, weight in rule.also),
            rule.knock_on,
            rule.against,
            rule.failure,
            _explanations(rule),
        )
        digest.update(repr(parts).encode() + b"\n")
    return digest.hexdigest()[:16]


def _explanations(rule: Rule) -> tuple[object, ...]:
    """What the decision takes from a rule's explanations and ruling-outs (not notes, examples)."""
    explains = tuple(
        (sorted(e.symptom_rules), e.symptom_category, e.symptom_line, e.when)
        + (e.path, e.foreign, e.same, e.weight)
        for e in rule.explains
    )
    return explains, tuple((sorted(r.rules), r.when) for r in rule.rules_out)


def train_on_corpus(root: Path, cases: Sequence[Case]) -> Model:
    """Analyze every case and fit the shipped model, calibration included."""
    rules = shipped_rules()
    prepared = [prepare(case, rules) for case in cases]
    model = fit_calibrated(prepared, fit)
    return Model(
        classes=model.classes,
        weights=model.weights,
        intercept=model.intercept,
        calibration=model.calibration,
        corpus_digest=corpus_digest(root),
        rules_digest=rules_digest(),
        version=f"corpus-{corpus_digest(root)}",
    )
