"""Score a new batch of labelled cases as crashlens ships, before any rule or model change.

The corpus's cross-validated figure measures how well the rules and the classifier know the
corpus; a batch the rules have never seen measures generalization. Run it on a batch folder
(the corpus layout: `<case-id>/case.toml` + `logs/`) *before* touching any rule, and append
the printed line to `corpus/FIRST_SIGHT.md`.

    python bench/first_sight.py corpus/ --batch 2026-12-01-a   # cases whose case.toml names it
    python bench/first_sight.py /path/to/batch-folder          # every case in a folder

Each case is analyzed exactly as `crashlens analyze <case>/logs` decides (shipped rules and
shipped classifier); the keyword-grep baseline of `crashlens eval` is scored beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

from crashlens.lab.corpus import Case, load_cases
from crashlens.lab.evaluate import grep_prediction
from crashlens.lab.prepare import case_text
from crashlens.pipeline import analyze


def _batch_of(case: Case) -> str | None:
    data = tomllib.loads((case.logs.parent / "case.toml").read_text(encoding="utf-8"))
    batch = data.get("batch")
    return str(batch) if batch is not None else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="a corpus-layout folder of cases")
    parser.add_argument("--batch", help="only cases whose case.toml has this `batch` value")
    parser.add_argument("--json", action="store_true", help="one JSON object per case too")
    args = parser.parse_args()

    cases = load_cases(args.root)
    if args.batch:
        cases = [case for case in cases if _batch_of(case) == args.batch]
    if not cases:
        print("no cases", file=sys.stderr)
        return 2
    right = hard = hard_right = dead_none = grep_right = failed = 0
    misses: list[str] = []
    for case in cases:
        report = analyze([str(case.logs)])
        verdict = str(report.verdict)
        ok = case.accepts(verdict)
        grep_ok = case.accepts(grep_prediction(case_text(case.logs)).verdict)
        right += ok
        grep_right += grep_ok
        if case.difficulty == "hard":
            hard += 1
            hard_right += ok
        if case.label != "none":
            failed += 1
            dead_none += verdict == "none"
        if not ok:
            misses.append(f"  {case.case_id}: label {case.label}, said {verdict}")
        if args.json:
            row = {"case": case.case_id, "label": case.label, "verdict": verdict, "ok": ok}
            print(json.dumps(row))
    n = len(cases)
    print(f"cases {n}: top-1 {right}/{n} = {right / n:.1%}", end="")
    print(f"; hard {hard_right}/{hard} = {hard_right / max(hard, 1):.1%}", end="")
    print(f"; dead runs called none {dead_none}/{failed}", end="")
    print(f"; keyword-grep top-1 {grep_right}/{n} = {grep_right / n:.1%}")
    print("\n".join(misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
