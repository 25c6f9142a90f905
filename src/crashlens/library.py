"""Where the shipped data lives: the rule library (`patterns/`) and its tables.

Parsers read tables (the Xid catalog) and the matcher reads rules; both ask here, so a parser
never imports the rule loader just to find a folder.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def default_pattern_dir() -> Path:
    """The shipped rule library: `crashlens/patterns` in the wheel, `patterns/` in a checkout."""
    packaged = Path(str(resources.files("crashlens") / "patterns"))
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "patterns"


def tables_dir() -> Path:
    """The catalogs the rules and parsers share (`patterns/tables/`)."""
    return default_pattern_dir() / "tables"
