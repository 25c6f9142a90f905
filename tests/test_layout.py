"""The layout is the pipeline: guards on the shape of `src/crashlens/` (docs/design.md).

Each top-level unit (a package, or a module loose at the top) sits on a floor; a unit may
import only units on lower floors or its own. Read from the ground up, the floors are the
pipeline, so an import running back up (a parser reaching for the rule loader, batch
re-wiring the stages) fails here instead of in a review.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "crashlens"

FLOORS: dict[str, int] = {
    "crashlens": 0,  # __init__: the version, nothing else
    "errors": 1,
    "library": 1,
    "model": 1,
    "text": 1,
    "parsers": 2,
    "redact": 2,
    "render": 2,
    "inputs": 3,
    "collect": 4,
    "match": 4,
    "decide": 5,
    "pipeline": 6,
    "batch": 7,
    "lab": 7,
    "cli": 8,
    "__main__": 9,
}
MAX_LINES = 800
MAX_LOOSE_MODULES = 8


def _unit_of(dotted: str) -> str:
    """The top-level unit a dotted crashlens name belongs to (`crashlens` for the package)."""
    parts = dotted.split(".")
    if len(parts) == 1:
        return "crashlens"
    name = parts[1]
    if (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file():
        return name
    return "crashlens"  # `from crashlens import __version__`


def _imports() -> list[tuple[str, str, Path]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = _unit_of(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
                if node.module == "crashlens":
                    names = [f"crashlens.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            found.extend(
                (here, _unit_of(name), path)
                for name in names
                if name == "crashlens" or name.startswith("crashlens.")
            )
    return found


def test_every_unit_has_a_floor() -> None:
    units = {p.stem for p in PACKAGE.glob("*.py")} | {
        p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()
    }
    units = {"crashlens" if u == "__init__" else u for u in units}
    assert units <= set(FLOORS), sorted(units - set(FLOORS))


def test_no_import_runs_back_up() -> None:
    upward = sorted(
        f"{path.relative_to(PACKAGE)}: {here} (floor {FLOORS[here]}) imports {there} "
        f"(floor {FLOORS[there]})"
        for here, there, path in _imports()
        if here != there and FLOORS[there] > FLOORS[here]
    )
    assert not upward, "\n".join(upward)


def test_no_cycle_between_units_of_one_floor() -> None:
    edges = {(here, there) for here, there, _ in _imports() if here != there}
    cycles = sorted(f"{a} <-> {b}" for a, b in edges if (b, a) in edges and a < b)
    assert not cycles, cycles


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: p.name)
def test_no_source_file_is_over_the_limit(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{path.relative_to(PACKAGE)} has {lines} lines: split it"


def test_few_modules_are_loose_at_the_top() -> None:
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= MAX_LOOSE_MODULES, loose
