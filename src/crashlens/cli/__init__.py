"""The command line: parses flags, calls the library, renders, exits. No analysis here.

Exit codes are `exits.ExitCode` for every command; every non-zero exit prints a one-line
reason on stderr (`exits.fatal`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, assert_never

import typer

from crashlens import __version__
from crashlens.cli.exits import ExitCode, fatal
from crashlens.cli.notify import check_notify_url, post_json
from crashlens.cli.rules import RulesOption, library_or_exit, rules_app
from crashlens.model import InputKind, InputState, Report
from crashlens.render import Format

if TYPE_CHECKING:
    from crashlens.match.rules import Rule

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Why did this distributed training run die? Root cause, evidence and fix from its logs.",
)
app.add_typer(rules_app, name="rules")

BACKENDS = ("auto", "hyperscan", "python")
"""Scan engines `--backend` accepts (hidden: auto picks hyperscan when it is installed)."""


def _check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        fatal(f"--backend must be auto, hyperscan or python, not {backend!r}", ExitCode.USAGE)


def _parse_kinds(values: list[str]) -> tuple[tuple[str, InputKind], ...]:
    parsed = []
    for value in values:
        path, _, name = value.rpartition("=")
        try:
            kind = InputKind(name)
        except ValueError:
            known = ", ".join(k.value for k in InputKind)
            fatal(f"--kind {value!r}: unknown kind {name!r} (known: {known})", ExitCode.USAGE)
        parsed.append((path or "*", kind))
    return tuple(parsed)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"crashlens {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show version.")
    ] = False,
) -> None:
    """crashlens."""


@app.command()
def analyze(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Log files, folders, archives (.tar.gz, .zip), compressed logs; - for stdin."
        ),
    ],
    output_format: Annotated[
        Format, typer.Option("--format", "-f", help="Report format.")
    ] = Format.TERMINAL,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the report to this file.")
    ] = None,
    kind: Annotated[
        list[str] | None,
        typer.Option(
            "--kind",
            help="Force an input's kind: KIND for every input, or PATH=KIND for one.",
        ),
    ] = None,
    backend: Annotated[
        str, typer.Option(help="Scan engine: auto, hyperscan or python.", hidden=True)
    ] = "auto",
    rules_only: Annotated[
        bool,
        typer.Option(
            "--rules-only", help="Decide from the rules alone, without the shipped classifier."
        ),
    ] = False,
    redact: Annotated[
        bool | None,
        typer.Option(
            "--redact/--no-redact",
            help="Replace host names, addresses, user names, ids and secrets with stable "
            "pseudonyms (default: on for markdown and html, off otherwise).",
        ),
    ] = None,
    redact_map: Annotated[
        Path | None,
        typer.Option(
            "--redact-map",
            help="Write the pseudonym -> original mapping to this file (for you only).",
        ),
    ] = None,
    site_rules: RulesOption = None,
    notify: Annotated[
        str | None,
        typer.Option(
            "--notify",
            help="POST the JSON report (redacted when redaction is on) to this http(s) URL; "
            "a failure is reported on stderr and does not change the exit status.",
        ),
    ] = None,
) -> None:
    """Analyze the files a failed run left behind and report the root cause."""
    from crashlens.errors import PatternError
    from crashlens.pipeline import AnalyzeOptions
    from crashlens.pipeline import analyze as run_analysis

    _check_backend(backend)
    check_notify_url(notify)
    missing = [p for p in paths if p != "-" and not Path(p).exists()]
    if missing and len(missing) == len(paths):
        fatal(f"no such file or directory: {', '.join(missing)}", ExitCode.USAGE)
    if redact is None:
        redact = output_format in (Format.MARKDOWN, Format.HTML) or redact_map is not None
    if redact_map is not None and not redact:
        fatal("--redact-map needs redaction; drop --no-redact", ExitCode.USAGE)
    options = AnalyzeOptions(
        forced_kinds=_parse_kinds(kind or []), backend=backend, use_model=not rules_only
    )
    library = library_or_exit(site_rules)
    try:
        report = run_analysis(paths, options, rules=library)
    except PatternError as error:
        fatal(f"invalid pattern library: {error}", ExitCode.BAD_PATTERNS)
    report = _prepare(report, paths, output_format, redact, redact_map)
    _emit(report, output_format, output, redacted=redact, rules=library)
    if notify is not None:
        from crashlens.render.json import render_json

        post_json(notify, render_json(report))
    if report.inputs and all(i.status is InputState.SKIPPED for i in report.inputs):
        reasons = "; ".join(f"{i.path}: {i.reason}" for i in report.inputs[:3])
        fatal(f"nothing could be analyzed ({reasons})", ExitCode.NOTHING_TO_ANALYZE)


def _prepare(
    report: Report, paths: list[str], output_format: Format, redact: bool, redact_map: Path | None
) -> Report:
    """Add context lines (HTML shows them), then redact: both before any rendering."""
    if output_format is Format.HTML:
        from crashlens.inputs.context import add_context

        report = add_context(report, paths)
    if not redact:
        return report
    from crashlens.collect.files import input_texts
    from crashlens.redact import Redactor, redact_report, write_mapping

    redactor = Redactor()
    report = redact_report(report, redactor, learn_from=input_texts(paths))
    if redact_map is not None:
        try:
            write_mapping(redactor, redact_map)
        except OSError as error:
            fatal(f"cannot write {redact_map}: {error.strerror or error}", ExitCode.USAGE)
    return report


def _emit(
    report: Report,
    output_format: Format,
    output: Path | None,
    redacted: bool,
    rules: tuple[Rule, ...] | None = None,
) -> None:
    # Each renderer is imported only when chosen: start-up time is part of the interface.
    match output_format:
        case Format.TERMINAL:
            _emit_terminal(report, output, rules)
            return
        case Format.JSON:
            from crashlens.render.json import render_json

            text = render_json(report)
        case Format.MARKDOWN:
            from crashlens.render.markdown import render_markdown

            text = render_markdown(report)
        case Format.HTML:
            from crashlens.render.html import render_html

            text = render_html(report, redacted=redacted)
        case _:
            assert_never(output_format)
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as error:
        fatal(f"cannot write {output}: {error.strerror or error}", ExitCode.USAGE)


def _emit_terminal(report: Report, output: Path | None, rules: tuple[Rule, ...] | None) -> None:
    from rich.console import Console

    from crashlens.match.focus import evidence_focus
    from crashlens.match.rules import shipped_rules
    from crashlens.render.terminal import render_terminal

    focus = evidence_focus(rules or shipped_rules())  # what a shortened evidence line keeps
    if output is None:
        render_terminal(report, Console(), focus)
        return
    with output.open("w", encoding="utf-8") as stream:
        render_terminal(report, Console(file=stream, width=120, force_terminal=False), focus)


@app.command()
def detect(
    paths: Annotated[list[str], typer.Argument(help="Inputs to identify.")],
) -> None:
    """Show how each input's kind is detected: every parser's score."""
    from crashlens.inputs.detect import explain_inputs
    from crashlens.render.inert import visible  # a found file's name is shown, not obeyed

    for item in explain_inputs(paths):
        path = visible(item.path)
        if item.detection is None:
            typer.echo(f"{path}: skipped ({visible(str(item.skipped))})")
            continue
        shown = ", ".join(f"{kind.value}={score:.2f}" for kind, score in item.ranking[:4])
        reason = visible(item.detection.reason)
        typer.echo(f"{path}: {item.detection.kind.value} ({reason}; {shown})")


@app.command("eval")
def eval_corpus(
    corpus: Annotated[Path, typer.Argument(help="The labelled corpus folder.")],
    output_format: Annotated[str, typer.Option("--format", "-f", help="text or json.")] = "text",
    check_floor: Annotated[
        Path | None,
        typer.Option(help="Fail (exit 4) when top-1 falls below the floor in this TOML file."),
    ] = None,
) -> None:
    """Measure accuracy on the labelled corpus: rules, rules + classifier, two baselines."""
    import tomllib

    from crashlens.lab.corpus import load_cases
    from crashlens.lab.evaluate import corpus_counts, evaluate
    from crashlens.lab.report import render_eval_json, render_eval_text

    cases = load_cases(corpus)
    if not cases:
        fatal(f"no cases (*/case.toml) under {corpus}", ExitCode.USAGE)
    results = evaluate(cases)
    counts = corpus_counts(cases)
    render = render_eval_json if output_format == "json" else render_eval_text
    sys.stdout.write(render(results, counts))
    if check_floor is not None:
        floor = tomllib.loads(check_floor.read_text(encoding="utf-8"))
        shipped = next(m for m in results if m.method == floor.get("method", "rules"))
        if shipped.top1 < float(floor["top1"]):
            message = f"top-1 {shipped.top1:.3f} is below the floor {floor['top1']}"
            fatal(message, ExitCode.BELOW_FLOOR)


@app.command()
def train(
    corpus: Annotated[Path, typer.Argument(help="The labelled corpus folder.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Where to write the model JSON.")
    ] = None,
) -> None:
    """Fit the classifier on the corpus and write it into the package (deterministic)."""
    from crashlens.decide.classifier import shipped_model_path
    from crashlens.lab.corpus import load_cases
    from crashlens.lab.train import train_on_corpus

    cases = load_cases(corpus)
    if not cases:
        fatal(f"no cases (*/case.toml) under {corpus}", ExitCode.USAGE)
    model = train_on_corpus(corpus, cases)
    target = output or shipped_model_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(model.to_json(), encoding="utf-8")
    fitted = model.calibration
    typer.echo(
        f"wrote {target} ({len(model.weights)} features, temperature {fitted.temperature}, "
        f"thin evidence {fitted.thin_temperature}, verdict threshold {fitted.threshold})"
    )


@app.command()
def scan(
    root: Annotated[
        Path,
        typer.Argument(
            help="The archive: a folder of jobs (or one job), or a URL such as "
            "s3://bucket/prefix (pip install 'crashlens[s3]'; credentials and endpoint from "
            "the environment: AWS_PROFILE, AWS_ENDPOINT_URL, ...)."
        ),
    ],
    out: Annotated[
        Path,
        typer.Option("--out", "-o", help="Folder (or URL) for jobs.parquet, summary and cache."),
    ] = Path("crashlens-scan"),
    workers: Annotated[
        int, typer.Option("--workers", "-j", min=0, help="Processes (0: one per core).")
    ] = 0,
    job_glob: Annotated[
        str | None,
        typer.Option(
            "--job-glob",
            help="Which paths under ROOT are jobs, e.g. '*/*' or '**/job-*' (default: every "
            "folder that directly holds log files, and every .tar.gz/.zip).",
        ),
    ] = None,
    table_format: Annotated[
        list[str] | None,
        typer.Option("--format", "-f", help="Job table format(s): parquet, jsonl, csv."),
    ] = None,
    summary_format: Annotated[
        str, typer.Option("--summary", help="Summary on stdout: terminal, json or markdown.")
    ] = "terminal",
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Re-analyze every job, even unchanged ones.")
    ] = False,
    min_jobs: Annotated[
        int, typer.Option(min=1, help="Hotspot: a host/GPU with hardware faults in N+ jobs.")
    ] = 2,
    backend: Annotated[
        str, typer.Option(help="Scan engine: auto, hyperscan or python.", hidden=True)
    ] = "auto",
    job_timeout: Annotated[
        float,
        typer.Option(
            "--job-timeout",
            min=0,
            help="Seconds one job may take before it is stopped and reported (0: no limit).",
        ),
    ] = 600.0,
    site_rules: RulesOption = None,
    prom: Annotated[
        Path | None,
        typer.Option(
            "--prom",
            help="Write Prometheus metrics to this file (node_exporter's textfile collector; "
            "written atomically).",
        ),
    ] = None,
    prom_top: Annotated[
        int,
        typer.Option("--prom-top", min=1, help="Fingerprints, hosts and GPUs kept in --prom."),
    ] = 10,
    notify: Annotated[
        str | None,
        typer.Option(
            "--notify",
            help="POST the JSON summary to this http(s) URL; a failure is reported on stderr "
            "and does not change the exit status.",
        ),
    ] = None,
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            help="Scan only shard K of N (K from 1), e.g. 2/8; join the outputs with scan-merge.",
        ),
    ] = None,
    dask: Annotated[
        str | None,
        typer.Option(
            "--dask",
            help="Run on Dask: a scheduler address (tcp://host:8786), a scheduler file, or "
            "'local' for a local cluster of processes (pip install 'crashlens[dask]').",
        ),
    ] = None,
    dask_slurm: Annotated[
        bool,
        typer.Option("--dask-slurm", help="Run on Dask workers started as Slurm jobs (-j jobs)."),
    ] = False,
) -> None:
    """Analyze every job of a log archive: a table of verdicts, top failures, nodes to drain."""
    from crashlens.cli.scan import run_scan_command

    _check_backend(backend)
    check_notify_url(notify)
    run_scan_command(
        root=root,
        out=out,
        workers=workers,
        job_glob=job_glob,
        formats=table_format or ["parquet"],
        summary_format=summary_format,
        use_cache=not no_cache,
        min_jobs=min_jobs,
        backend=backend,
        job_timeout=job_timeout or None,
        site_rules=tuple(site_rules or ()),
        prom=prom,
        prom_top=prom_top,
        notify=notify,
        shard=shard,
        dask=dask,
        dask_slurm=dask_slurm,
    )


@app.command("scan-merge")
def scan_merge(
    outputs: Annotated[list[Path], typer.Argument(help="The --out folders of the shards.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the merged outputs.")],
    table_format: Annotated[
        list[str] | None,
        typer.Option("--format", "-f", help="Job table format(s): parquet, jsonl, csv."),
    ] = None,
    summary_format: Annotated[
        str, typer.Option("--summary", help="Summary on stdout: terminal, json or markdown.")
    ] = "terminal",
) -> None:
    """Merge the outputs of `scan --shard K/N` into one table and one summary."""
    from crashlens.cli.scan import run_merge_command

    run_merge_command(outputs, out, table_format or ["parquet"], summary_format)


@app.command()
def collect(
    logs: Annotated[
        list[str] | None,
        typer.Argument(help="Log files or folders of the failed run to copy into the bundle."),
    ] = None,
    out: Annotated[
        Path,
        typer.Option("--out", "-o", help="A folder, or a .tar.gz file, to write the bundle to."),
    ] = Path("crashlens-collect.tar.gz"),
    redact: Annotated[
        bool,
        typer.Option(
            "--redact/--no-redact",
            help="Replace host names, addresses, user names, ids and secrets with stable "
            "pseudonyms in every file of the bundle.",
        ),
    ] = True,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.1, help="Seconds each command may run.")
    ] = 20.0,
    container: Annotated[
        list[str] | None,
        typer.Option("--container", help="docker/podman inspect this container (repeatable)."),
    ] = None,
    python: Annotated[
        str | None,
        typer.Option(help="The Python the job ran with, for torch/NCCL/deepspeed versions."),
    ] = None,
    max_log_mb: Annotated[
        float | None,
        typer.Option(
            min=0.001,
            help="Keep the last N MiB of each log (default 200).",
        ),
    ] = None,
    redact_map: Annotated[
        Path | None,
        typer.Option("--redact-map", help="Write the pseudonym -> original mapping here."),
    ] = None,
) -> None:
    """Gather the evidence of a failed run on this machine into a folder or .tar.gz."""
    from crashlens.collect import CollectError, CollectOptions, summary_line
    from crashlens.collect import collect as run_collect

    if redact_map is not None and not redact:
        fatal("--redact-map needs redaction; drop --no-redact", ExitCode.USAGE)
    options = CollectOptions(
        logs=tuple(logs or ()),
        timeout=timeout,
        redact=redact,
        containers=tuple(container or ()),
        python=python,
        max_log_bytes=None if max_log_mb is None else int(max_log_mb * 1024 * 1024),
        progress=lambda step: typer.echo(summary_line(step), err=True),
    )
    try:
        bundle = run_collect(out, options)
    except CollectError as error:
        fatal(f"cannot write the bundle: {error}", ExitCode.USAGE)
    if redact_map is not None and bundle.redactor is not None:
        from crashlens.redact import write_mapping

        try:
            write_mapping(bundle.redactor, redact_map)
        except OSError as error:
            fatal(f"cannot write {redact_map}: {error.strerror or error}", ExitCode.USAGE)
    shown = "redacted" if bundle.redacted else "NOT redacted"
    typer.echo(f"wrote {bundle.path} ({shown}); read it with: crashlens analyze {bundle.path}")


def main() -> None:
    """Entry point of the `crashlens` console script."""
    app()
