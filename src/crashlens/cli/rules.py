"""`crashlens rules ...`: list, show and test rules, write a new one, import NPD's.

`--rules DIR` (and `CRASHLENS_RULES`) add site rules to what `list`, `show` and `coverage` see,
as they do for `analyze` and `scan` (`match/site.py`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from crashlens.cli.exits import ExitCode, fatal

if TYPE_CHECKING:
    from crashlens.match.rules import Rule

rules_app = typer.Typer(no_args_is_help=True, help="List, explain, test and write rules.")

RulesOption = Annotated[
    list[str] | None,
    typer.Option(
        "--rules",
        help="A folder of site rules to add to the shipped ones (repeatable; also "
        "CRASHLENS_RULES, folders separated by ':').",
    ),
]


def library_or_exit(extra: list[str] | None) -> tuple[Rule, ...]:
    """The shipped rules plus the site folders; an invalid site rule exits BAD_PATTERNS."""
    from crashlens.errors import PatternError
    from crashlens.match.site import library

    try:
        return library(extra or ())
    except PatternError as error:
        fatal(f"invalid pattern library: {error}", ExitCode.BAD_PATTERNS)


@rules_app.command("list")
def rules_list(site: RulesOption = None) -> None:
    """List every rule: id, category, role, weight and title."""
    for rule in library_or_exit(site):
        typer.echo(
            f"{rule.id:48} {rule.category.value:12} {rule.role.value:8} "
            f"{rule.weight:.2f}  {rule.title}"
        )


@rules_app.command("coverage")
def rules_coverage(site: RulesOption = None) -> None:
    """Per catalog table, how many entries a rule of the library recognises (the finish
    signs' table: how many the failure detector reads as a finish)."""
    from crashlens.match.catalogs import coverage

    for row in coverage(library_or_exit(site)):
        shown = ", ".join(row.missing[:8]) + (", ..." if len(row.missing) > 8 else "")
        missing = f"  missing: {shown}" if row.missing else ""
        typer.echo(f"{row.table:18} {row.covered:4}/{row.entries:<4}{missing}")


@rules_app.command("show")
def rules_show(
    rule_id: Annotated[str, typer.Argument(help="A rule id.")], site: RulesOption = None
) -> None:
    """Show one rule: patterns, remediation and source file."""
    for rule in library_or_exit(site):
        if rule.id == rule_id:
            typer.echo(f"{rule.id} ({rule.category.value}, {rule.role.value}, {rule.weight})")
            typer.echo(rule.title)
            for pattern in rule.patterns:
                typer.echo(f"  pattern: {pattern}")
            for condition in rule.facts:
                typer.echo(f"  fact: {condition.key} {condition.op} {condition.value}")
            for step in rule.remediation:
                typer.echo(f"  step: {step.text}")
            typer.echo(f"  file: {rule.source}")
            return
    fatal(f"no rule {rule_id!r}", ExitCode.USAGE)


@rules_app.command("test")
def rules_test(
    folders: Annotated[list[Path], typer.Argument(help="Folders of site rules to test.")],
) -> None:
    """Run the examples and pattern checks of site rules: one line per rule, exit 1 on a failure.

    Exit status: 0 every rule passed; 1 a rule failed; 3 a rule file is invalid (the message
    names the file and field); 2 no rule file in the folders.
    """
    from crashlens.errors import PatternError
    from crashlens.match.site import check_rule, load_site_rules

    try:
        rules = load_site_rules(folders)
    except PatternError as error:
        fatal(f"invalid rule: {error}", ExitCode.BAD_PATTERNS)
    if not rules:
        fatal(f"no rule files (*.toml) in {', '.join(map(str, folders))}", ExitCode.USAGE)
    failed = 0
    for rule in rules:
        result = check_rule(rule)
        typer.echo(f"{'PASS' if result.passed else 'FAIL'}  {rule.id}  ({rule.source})")
        for problem in result.problems:
            typer.echo(f"      {problem}")
        failed += not result.passed
    typer.echo(f"{len(rules) - failed} passed, {failed} failed")
    if failed:
        raise typer.Exit(ExitCode.NOTHING_TO_ANALYZE)


@rules_app.command("new")
def rules_new(
    rule_id: Annotated[str, typer.Argument(help="The new rule's id (kebab-case).")],
    category: Annotated[str, typer.Option("--category", help="Its category (taxonomy id).")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="The folder to write <id>.toml into.")
    ] = Path("."),
) -> None:
    """Write a commented rule skeleton to fill in; `crashlens rules test` then checks it."""
    import re

    from crashlens.match.site import skeleton
    from crashlens.model import Category

    if not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", rule_id):
        fatal(f"id {rule_id!r} must be kebab-case (words of a-z0-9 joined by -)", ExitCode.USAGE)
    if category not in {c.value for c in Category}:
        known = ", ".join(c.value for c in Category)
        fatal(f"--category {category!r}: unknown (known: {known})", ExitCode.USAGE)
    target = out / f"{rule_id}.toml"
    if target.exists():
        fatal(f"{target} exists: not overwritten", ExitCode.USAGE)
    try:
        out.mkdir(parents=True, exist_ok=True)
        target.write_text(skeleton(rule_id, category), encoding="utf-8")
    except OSError as error:
        fatal(f"cannot write {target}: {error.strerror or error}", ExitCode.USAGE)
    typer.echo(f"wrote {target}: fill in the EDIT lines and the examples, then run")
    typer.echo(f"  crashlens rules test {out}")


@rules_app.command("import-npd")
def rules_import_npd(
    config: Annotated[Path, typer.Argument(help="An NPD log-monitor config (JSON).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The folder to write rules into.")],
    category: Annotated[
        list[str] | None,
        typer.Option(
            "--category",
            help="REASON=CATEGORY for a reason the built-in table does not know (repeatable).",
        ),
    ] = None,
) -> None:
    """Convert a node-problem-detector log-monitor config into crashlens site rules."""
    from crashlens.match.npd import convert_config, write_conversion
    from crashlens.model import Category

    categories: dict[str, str] = {}
    known = {c.value for c in Category}
    for pair in category or []:
        reason, sep, name = pair.partition("=")
        if not sep or not reason or name not in known:
            fatal(f"--category {pair!r}: want REASON=CATEGORY, a category of {sorted(known)}",
                  ExitCode.USAGE)  # fmt: skip
        categories[reason] = name
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        fatal(f"cannot read {config} as JSON: {error}", ExitCode.USAGE)
    conversion = convert_config(data, categories, source=config.name)
    try:
        written = write_conversion(conversion, out)
    except OSError as error:
        fatal(f"cannot write to {out}: {error.strerror or error}", ExitCode.USAGE)
    for path in written:
        typer.echo(f"wrote {path}")
    for rule in conversion.todo:
        typer.echo(f"todo  {rule.reason}: {rule.filename}: fill in its examples, then rename it")
    for skipped in conversion.skipped:
        typer.echo(f"skip  {skipped.reason}: {skipped.why}")
    typer.echo(
        f"{len(conversion.rules)} rules converted, {len(conversion.todo)} need examples, "
        f"{len(conversion.skipped)} not convertible; check them with: crashlens rules test {out}"
    )
