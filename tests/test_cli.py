"""The command line: formats, --output, --kind, exit codes and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from crashlens.cli import app
from crashlens.cli.exits import ExitCode

RUNNER = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "llamafactory-shm-bus-error"
CONTRACT_CAUSE_KEYS = {
    "category",
    "confidence",
    "summary",
    "evidence",
    "remediation",
    "next_checks",
}


def test_json_report_follows_the_contract() -> None:
    result = RUNNER.invoke(app, ["analyze", str(EXAMPLE), "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["schema_version"] == 1
    assert report["verdict"] == "shm"
    cause = report["causes"][0]
    assert set(cause) >= CONTRACT_CAUSE_KEYS
    assert 0.0 <= cause["confidence"] <= 1.0
    for item in cause["evidence"]:
        assert set(item) >= {"path", "line", "text", "rule", "role"}
        assert item["role"] in ("root", "symptom", "context")
    for item in cause["remediation"] + cause["next_checks"]:
        assert set(item) == {"text", "command", "lang"}  # lang: beyond the promise
        assert item["lang"] in (("shell", "yaml", "python", "conf") if item["command"] else (None,))
    for item in report["inputs"]:
        assert set(item) >= {"path", "kind", "status", "reason"}
        assert item["status"] in ("analyzed", "skipped")
        assert item["path"].startswith(str(EXAMPLE))


def test_markdown_and_output_file(tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    result = RUNNER.invoke(app, ["analyze", str(EXAMPLE), "-f", "markdown", "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert text.startswith("## crashlens report")
    assert "**Verdict:** `shm`" in text
    assert "--shm-size" in text


def test_terminal_report_names_the_verdict() -> None:
    result = RUNNER.invoke(app, ["analyze", str(EXAMPLE)])
    assert result.exit_code == 0
    assert "Verdict: shm" in result.stdout


def test_missing_path_is_a_usage_error() -> None:
    result = RUNNER.invoke(app, ["analyze", "/no/such/path"])
    assert result.exit_code == 2
    assert "no such file or directory" in result.stderr


def test_nothing_analyzable_exits_1(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    result = RUNNER.invoke(app, ["analyze", str(empty), "--format", "json"])
    assert result.exit_code == 1
    assert "nothing could be analyzed" in result.stderr
    assert json.loads(result.stdout)["inputs"][0]["reason"] == "empty file"


def test_bad_kind_is_a_usage_error() -> None:
    result = RUNNER.invoke(app, ["analyze", str(EXAMPLE), "--kind", "nonsense"])
    assert result.exit_code == 2
    assert "unknown kind" in result.stderr


def test_kind_override_applies(tmp_path: Path) -> None:
    log = tmp_path / "x.txt"
    log.write_text("hello\n")
    result = RUNNER.invoke(app, ["analyze", str(log), "-f", "json", "--kind", f"{log}=dmesg"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["inputs"][0]["kind"] == "dmesg"


def test_healthy_log_is_none(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("step 1 loss 2.3\nstep 2 loss 2.1\nTraining completed.\n")
    result = RUNNER.invoke(app, ["analyze", str(log), "-f", "json"])
    assert json.loads(result.stdout)["verdict"] == "none"


def test_help_and_version() -> None:
    assert RUNNER.invoke(app, ["--help"]).exit_code == 0
    result = RUNNER.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.startswith("crashlens ")


def test_help_does_not_import_heavy_modules() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from crashlens.cli import app; "
        "names = ('polars', 'sklearn', 'hyperscan', 'rich.console', 'fsspec'); "
        "heavy = [m for m in names if m in sys.modules]; "
        "print(heavy)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_running_a_command_does_not_import_pydantic() -> None:
    """typer 0.29 parses options through pydantic (+70-90 ms a run): pyproject keeps it <0.29."""
    import subprocess
    import sys

    code = (
        "import sys; from crashlens.cli import main; sys.argv = ['crashlens', 'rules', 'list']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('pydantic' in sys.modules, file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stderr.strip().splitlines()[-1] == "False"


def test_exit_codes_keep_their_documented_numbers() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    for code in ExitCode:
        assert f"| {code.value} |" in readme, code
    assert [(c.name, c.value) for c in ExitCode] == [
        ("OK", 0),
        ("NOTHING_TO_ANALYZE", 1),
        ("USAGE", 2),
        ("BAD_PATTERNS", 3),
        ("BELOW_FLOOR", 4),
        ("INTERRUPTED", 130),
    ]


def test_detect_names_each_input_kind_with_every_parser_score(tmp_path: Path) -> None:
    missing = tmp_path / "nope.log"
    result = RUNNER.invoke(app, ["detect", str(EXAMPLE / "df.txt"), str(missing)])
    assert result.exit_code == 0, result.output
    first, second = result.stdout.splitlines()
    assert first.startswith(f"{EXAMPLE / 'df.txt'}: df (")
    assert "df=" in first and "other=" in first
    assert second.startswith(f"{missing}: skipped (")
