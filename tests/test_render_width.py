"""The terminal report at 80 columns, and snippets shown for what they are.

Every corpus case is rendered at width 80 as `COLUMNS=80 crashlens analyze corpus/<case>/logs`
would: no line may be wider than 80 cells, no token of a cited line or a command may be split
across two lines (only an ellipsis or a ` \\` continuation may end a line inside one), every
word of every command is shown whole, and a cited line keeps the part its rule matched. The
layout helpers (`render.fit`) are tested on their own, and a broken shell command is checked
with bash itself: it must mean exactly what the one-line command means.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from collections.abc import Iterator
from itertools import takewhile

import pytest
from rich.cells import cell_len
from rich.console import Console

from crashlens.decide.remedy import without_repeated_checks
from crashlens.errors import PatternError
from crashlens.match.focus import evidence_focus
from crashlens.match.rules import SNIPPET_LANGS, parse_rule, shipped_rules
from crashlens.model import (
    Action,
    Category,
    Cause,
    Evidence,
    InputKind,
    InputState,
    InputStatus,
    Report,
    Role,
    Verdict,
)
from crashlens.pipeline import AnalyzeOptions, analyze
from crashlens.render.fit import (
    CONTINUATION,
    ELLIPSIS,
    printable,
    shell_lines,
    shell_words,
    shorten,
    shorten_path,
    snippet_lines,
    wrap,
)
from crashlens.render.html import render_html
from crashlens.render.markdown import render_markdown
from crashlens.render.terminal import render_terminal

from conftest import ROOT

WIDTH = 80
COMMAND_INDENT = 8
"""The widest prefix a command's line has in the terminal report (its `$` prompt or the
indentation of a continuation)."""
CASES = sorted(path.parent.name for path in (ROOT / "corpus").glob("*/logs"))
FOCUS = evidence_focus(shipped_rules())


def _terminal(report: Report, width: int = WIDTH) -> str:
    stream = io.StringIO()
    console = Console(file=stream, width=width, force_terminal=False, color_system=None)
    render_terminal(report, console, FOCUS)
    return stream.getvalue()


def _cited(report: Report) -> Iterator[Evidence]:
    for cause in report.causes:
        yield from cause.evidence
    if report.first_failure is not None:
        yield report.first_failure


def _actions(report: Report) -> Iterator[Action]:
    for cause in report.causes:
        yield from cause.remediation
        yield from cause.next_checks
    yield from report.next_checks


def _rendered() -> dict[str, tuple[Report, str]]:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)  # paths as a user at the repository root types them
        reports = {
            case: analyze([f"corpus/{case}/logs"], AnalyzeOptions(use_model=False))
            for case in CASES
        }
    return {case: (report, _terminal(report)) for case, report in reports.items()}


def test_the_corpus_is_there() -> None:
    assert len(CASES) >= 100


def _no_line_is_wider_than_the_terminal(rendered: dict[str, tuple[Report, str]]) -> None:
    wide = [
        f"{case}: {cell_len(line)} cells: {line}"
        for case, (_, text) in rendered.items()
        for line in text.splitlines()
        if cell_len(line) > WIDTH
    ]
    assert not wide, "\n".join(wide[:10])


def _split_tokens(report: Report, text: str) -> list[str]:
    """Tokens of cited lines and commands that run from the end of one output line onto the
    next (what a terminal's or rich's own wrapping does); an ellipsis or a continuation may
    end a line inside a command or a shortened line."""
    tokens = {
        token
        for item in _cited(report)
        for token in (*printable(item.text).split(), f"{item.path}:{item.line}")
    }
    tokens |= {token for action in _actions(report) for token in (action.command or "").split()}
    # A word wider than any line (a long path in a command) can only be folded: breaking it
    # with a continuation would change the command once pasted with the indentation.
    tokens = {token for token in tokens if cell_len(token) <= WIDTH - COMMAND_INDENT}
    lines = text.splitlines()
    split = []
    for upper, lower in zip(lines, lines[1:], strict=False):
        if not upper.split() or not lower.split():
            continue
        end, start = upper.split()[-1], lower.split()[0]
        if end.endswith((ELLIPSIS, "\\")) or start.startswith(ELLIPSIS):
            continue
        joined = end + start  # short joins ("time" / "out" of prose) are left out: rich
        # splits only a token longer than the line, and `render.fit` has its own tests
        if len(joined) >= 10 and any(joined in token for token in tokens if len(token) > len(end)):
            split.append(f"{end!r} / {start!r}")
    return split


def _no_token_is_split_across_lines(rendered: dict[str, tuple[Report, str]]) -> None:
    found = [
        f"{case}: {pair}"
        for case, (report, text) in rendered.items()
        for pair in _split_tokens(report, text)
    ]
    assert not found, "\n".join(found[:10])


def _every_word_of_every_command_is_shown_whole(
    rendered: dict[str, tuple[Report, str]],
) -> None:
    missing = []
    for case, (report, text) in rendered.items():
        shown = set(text.split())
        folded = "".join(text.split())  # a word wider than a line is folded, whole in order
        for action in _actions(report):
            lost = [
                word
                for word in (action.command or "").split()
                if word not in shown
                and not (cell_len(word) > WIDTH - COMMAND_INDENT and word in folded)
            ]
            if lost:
                missing.append(f"{case}: {action.command!r} loses {lost}")
    assert not missing, "\n".join(missing[:10])


def _a_cited_line_keeps_its_citation_and_what_matched(
    rendered: dict[str, tuple[Report, str]],
) -> None:
    lost = []
    for case, (report, text) in rendered.items():
        flat = " ".join(text.split())
        for item in _cited(report):
            citation = f"{item.path}:{item.line}" if item.line is not None else item.path
            if len(citation) < WIDTH - 2 and citation not in text:
                lost.append(f"{case}: citation {citation}")
            span = FOCUS(item)
            if span is None:
                continue
            matched = " ".join(printable(item.text[span[0] : span[1]]).split())
            if len(matched) < WIDTH - 10 and matched not in flat:
                lost.append(f"{case}: {matched!r} of {item.text[:60]!r}")
    assert not lost, "\n".join(lost[:10])


def _a_snippet_is_never_shown_behind_a_prompt(
    rendered: dict[str, tuple[Report, str]],
) -> None:
    seen = 0
    for case, (report, text) in rendered.items():
        for action in _actions(report):
            if action.lang == "shell" or not action.command:
                continue
            seen += 1
            first = action.command.splitlines()[0]
            assert f"$ {first}" not in text, case
            for row in snippet_lines(action.command, WIDTH - 6):
                assert re.search(rf"(?m)^ +{re.escape(row)}$", text), (case, row)
    assert seen, "no corpus case shows a snippet: the test lost its subject"


# The layout helpers on their own.

LOG = (
    "[2025-06-10 14:03:53,002] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python3', "
    "'-u', 'src/train.py', '--local_rank=2', '--deepspeed', "
    "'examples/deepspeed/ds_z3_config.json'] exits with return code = -7"
)


@pytest.mark.parametrize("width", [30, 50, 76])
@pytest.mark.parametrize(
    "matched", ["exits with return code = -7", "[ERROR]", "'--local_rank=2', '--deepspeed'"]
)
def test_shorten_keeps_the_match_and_marks_each_cut(width: int, matched: str) -> None:
    start = LOG.index(matched)
    shown = shorten(LOG, width, (start, start + len(matched)))
    assert cell_len(shown) <= width
    assert matched in shown if len(matched) < width - 2 else matched.startswith(shown.strip("…"))
    assert shown.startswith(ELLIPSIS) == (not LOG.startswith(shown.rstrip(ELLIPSIS)))
    assert shown.endswith(ELLIPSIS) == (not LOG.endswith(shown.lstrip(ELLIPSIS)))


def test_shorten_leaves_a_line_that_fits_alone_and_keeps_the_start_without_a_focus() -> None:
    assert shorten("Caught signal 7 (Bus error)", 40) == "Caught signal 7 (Bus error)"
    shown = shorten(LOG, 40)
    assert shown.startswith("[2025-06-10") and shown.endswith(ELLIPSIS)


def test_shorten_counts_cells_not_characters() -> None:
    line = "错误：" * 30 + "CUDA out of memory" + "。" * 30
    start = line.index("CUDA")
    shown = shorten(line, 40, (start, start + len("CUDA out of memory")))
    assert cell_len(shown) <= 40 and "CUDA out of memory" in shown


def test_a_match_longer_than_the_line_keeps_its_start() -> None:
    shown = shorten(LOG, 20, (0, len(LOG)))
    assert shown == "[2025-06-10 14:03:5" + ELLIPSIS


def test_a_path_too_long_for_the_line_keeps_its_start_and_file_name() -> None:
    citation = "corpus/driver-c-dorado-h100-802-fabricmanager-version-not-driver/logs/nvidia.txt:12"
    shown = shorten_path(citation, 50)
    assert cell_len(shown) <= 50
    assert shown.startswith("corpus/driver-") and shown.endswith(ELLIPSIS + "/nvidia.txt:12")
    assert shorten_path("train.log:3", 50) == "train.log:3"


def test_prose_wraps_at_spaces() -> None:
    lines = wrap("A DataLoader worker was killed by a Bus error: /dev/shm is too small.", 20)
    assert all(cell_len(line) <= 20 for line in lines)
    assert (
        " ".join(lines) == "A DataLoader worker was killed by a Bus error: /dev/shm is too small."
    )


def test_shell_words_keep_quotes_substitutions_and_comments_whole() -> None:
    command = (
        "docker inspect --format '{{.A}} {{.B}}' \"$(hostname -s) x\" ${HOME} a\\ b"
        "    # then: docker compose up"
    )
    assert shell_words(command) == [
        "docker",
        "inspect",
        "--format",
        "'{{.A}} {{.B}}'",
        '"$(hostname -s) x"',
        "${HOME}",
        "a\\ b",
        "# then: docker compose up",
    ]
    assert shell_words("echo 'unclosed quote here") == ["echo", "'unclosed quote here"]


def _library_commands() -> list[str]:
    commands = {
        step.command
        for rule in shipped_rules()
        for step in (*rule.remediation, *rule.next_checks)
        if step.command and step.lang == "shell"
    }
    return sorted(commands)


def test_every_library_snippet_fits_the_terminal() -> None:
    # A snippet (Python, YAML, a config file) is shown as written: only a trailing comment may
    # move to a line of its own, so a longer line would wrap mid-token at 80 columns. Checked on
    # every rule, not only on the rules some corpus case happens to render.
    too_wide = [
        (rule.id, line)
        for rule in shipped_rules()
        for step in (*rule.remediation, *rule.next_checks)
        if step.command and step.lang != "shell"
        for line in snippet_lines(step.command, WIDTH - 6)
        if cell_len(line) > WIDTH - 6
    ]
    assert not too_wide, too_wide


def test_every_shell_command_breaks_only_between_its_words() -> None:
    for command in _library_commands():
        for width in (40, 60, 80):
            lines = shell_lines(command, width - 6, width - 8)
            assert lines, command
            for line, below in zip(lines, lines[1:], strict=False):
                if not line.startswith("# ") and not below.startswith("# "):
                    assert line.endswith(CONTINUATION), (command, line)
            body = [line.removesuffix(CONTINUATION) for line in lines if not line.startswith("# ")]
            words = [w for line in body for w in shell_words(line) if not w.startswith("#")]
            assert words == [w for w in shell_words(command) if not w.startswith("#")], command
            for number, line in enumerate(lines):
                room = width - 6 if number == 0 else width - 8
                alone = len(shell_words(line.removesuffix(CONTINUATION))) == 1
                assert cell_len(line) <= room or alone, (command, line)


def _normalized(script: str) -> str:
    """What bash reads a script as: its commands re-printed, comments and line breaks gone."""
    script = re.sub(r"<[^<>]*>", "PLACEHOLDER", script)  # `<container>` is for a person
    script = re.sub(r"\{[a-z_]+\}", "PLACEHOLDER", script)
    done = subprocess.run(
        ["bash", "-c", f"f() {{\n{script}\n}}\ndeclare -f f"],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    return done.stdout if done.returncode == 0 else f"error: {done.stderr}"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_broken_command_means_what_the_one_line_command_means() -> None:
    checked = 0
    for command in _library_commands():
        lines = shell_lines(command, 34, 32)
        if len(lines) == 1:
            continue
        original = _normalized(command)
        if original.startswith("error:"):
            continue  # not a whole command on its own (`torchrun ... ...`)
        assert _normalized("\n".join(lines)) == original, command
        checked += 1
    assert checked >= 50


# Snippets: the loader's `lang`, and how each renderer shows one.


def _rule_with(step: dict[str, object]) -> dict[str, object]:
    return {
        "id": "df-disk-full",
        "category": "filesystem",
        "role": "symptom",
        "weight": 0.6,
        "title": "A disk is full",
        "match": {"any": ["No space left"]},
        "remediation": {"steps": [step]},
    }


def test_the_loader_reads_a_steps_lang_and_refuses_a_wrong_one() -> None:
    yaml = {"text": "Set shm_size.", "command": "services:\n  t:\n    shm_size: 1g", "lang": "yaml"}
    rule = parse_rule(_rule_with(yaml), "df-disk-full.toml")
    assert rule.remediation[0].lang == "yaml"
    assert (
        parse_rule(_rule_with({"text": "x", "command": "df -h"}), "df-disk-full.toml")
        .remediation[0]
        .lang
        == "shell"
    )
    with pytest.raises(PatternError, match="lang"):
        parse_rule(_rule_with({**yaml, "lang": "yml"}), "df-disk-full.toml")
    with pytest.raises(PatternError, match="lang"):
        parse_rule(_rule_with({"text": "x", "lang": "yaml"}), "df-disk-full.toml")
    assert "shell" in SNIPPET_LANGS


def test_a_command_of_several_lines_in_the_library_is_marked_as_a_snippet() -> None:
    shell_blocks = [
        (rule.id, step.command)
        for rule in shipped_rules()
        for step in (*rule.remediation, *rule.next_checks)
        if step.command and "\n" in step.command and step.lang == "shell"
    ]
    assert not shell_blocks


def _snippet_report() -> Report:
    yaml = "services:\n  trainer:\n    shm_size: '16gb'"
    cause = Cause(
        category=Category.SHM,
        confidence=0.9,
        summary="/dev/shm is too small.",
        evidence=(Evidence("train.log", 3, "Bus error", "shm-bus-error-crash", Role.SYMPTOM),),
        remediation=(
            Action("docker compose: set shm_size.", yaml, "yaml"),
            Action("Or run with a bigger one.", "docker run --shm-size=16g <image> ..."),
        ),
        next_checks=(),
    )
    return Report(verdict=Verdict.SHM, causes=(cause,), inputs=())


def test_each_renderer_shows_a_yaml_snippet_as_a_yaml_block() -> None:
    report = _snippet_report()
    terminal = _terminal(report)
    assert "$ services:" not in terminal and "$ docker run --shm-size=16g" in terminal
    assert "YAML:" in terminal and "\n        trainer:\n" in terminal
    markdown = render_markdown(report)
    assert "   ```yaml\n   services:\n     trainer:\n       shm_size: '16gb'\n   ```" in markdown
    page = render_html(report)
    assert 'class="cmd snippet" data-lang="yaml"' in page
    assert 'class="language-yaml"' in page


def test_a_yaml_fence_is_longer_than_any_backtick_run_inside() -> None:
    report = _snippet_report()
    cause = report.causes[0]
    odd = Action("A snippet with a fence inside.", "key: |\n  ```\n  text\n  ```", "yaml")
    changed = Report(
        verdict=report.verdict,
        causes=(Cause(cause.category, 0.9, "x", (), (odd,), ()),),
        inputs=(),
    )
    assert "   ````yaml\n   key: |\n     ```\n     text\n     ```\n   ````" in render_markdown(
        changed
    )


def test_the_examples_report_at_80_columns_reads_as_written() -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        report = analyze(["examples/llamafactory-shm-bus-error"], AnalyzeOptions(use_model=False))
    text = _terminal(report)
    assert "$ services:" not in text and "$ volumes:" not in text
    assert "exits with return code = -7" in text  # kept: it is what the rule matched
    assert all(cell_len(line) <= WIDTH for line in text.splitlines())


# A check is shown once: where the report first shows it.


def _cause_with(checks: tuple[Action, ...], category: Category = Category.HOST_OOM) -> Cause:
    return Cause(category, 0.5, "x", (), (), checks)


def test_a_check_is_kept_where_the_report_first_shows_it() -> None:
    oom = Action("Confirm the OOM killer fired.", "dmesg -T | grep -i 'killed process'")
    again = Action("Confirm the kernel killed it.", "sudo dmesg -T  | grep -i 'killed process'")
    free = Action("See how much memory the node has.", "free -g")
    collect = Action("Collect the kernel log.", "sudo dmesg -T | tail -n 500 > dmesg.txt")
    first = _cause_with((oom, free, again))
    second = _cause_with((Action("see how much memory  the node has.", "free -h"), collect))
    causes, checks = without_repeated_checks((first, second), (again, collect, free))
    assert causes[0].next_checks == (oom, free)  # a leading sudo is the same command
    assert causes[1].next_checks == (collect,)  # the same words are the same check
    assert checks == ()


def test_a_check_its_cause_already_gives_as_a_fix_step_is_not_asked_again() -> None:
    dump = "export TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1"
    fix = Action("Dump the collectives each rank was in.", dump)
    check = Action("Dump each rank's last collectives when the watchdog fires.", dump)
    debug = Action("Rerun with NCCL logging.", "NCCL_DEBUG=INFO <your launch command>")
    cause = Cause(Category.NETWORK, 0.5, "x", (), (fix,), (check, debug))
    causes, _ = without_repeated_checks((cause,), ())
    assert causes[0].remediation == (fix,)
    assert causes[0].next_checks == (debug,)


def test_a_check_already_run_by_an_earlier_step_is_not_asked_again() -> None:
    one = Action(
        "See what holds memory on GPU 3.", "nvidia-smi -i 3 --query-compute-apps=pid --format=csv"
    )
    every = Action(
        "See every process holding GPU memory.", "nvidia-smi --query-compute-apps=pid --format=csv"
    )
    kill = Action(
        "Stop the process holding the GPU.",
        "nvidia-smi --query-compute-apps=pid --format=csv && kill <pid>",
    )
    free = Action("See the node's memory.", "free -g")
    both = Action(
        "See the node's memory and its biggest processes.", "free -g && ps aux --sort=-rss | head"
    )
    fixed = Cause(Category.GPU_OOM, 0.9, "x", (), (kill,), (every, both, free))
    causes, _ = without_repeated_checks((fixed,), ())
    # the fix lists the holders before it kills one; free -g ran inside the step before it
    assert causes[0].next_checks == (both,)
    causes, _ = without_repeated_checks((_cause_with((one, every)),), ())
    # one GPU's holders and every GPU's are one check
    assert causes[0].next_checks == (one,)
    causes, _ = without_repeated_checks((_cause_with((free, both)),), ())
    # a compound check after its first part still runs more: kept
    assert causes[0].next_checks == (free, both)


def test_a_kernel_log_search_inside_a_wider_one_is_not_asked_again() -> None:
    narrow = Action("Look for the OOM killer.", "dmesg -T | grep -iE 'out of memory|oom-kill'")
    wide = Action(
        "Confirm the kernel killed it.",
        "sudo dmesg -T | grep -iE 'Out of memory|oom-kill|killed process'",
    )
    other = Action("Look for link errors.", "dmesg -T | grep -iE 'link down|mlx5'")
    plain = Action("Look for Xids.", "dmesg -T | grep -i 'NVRM: Xid'")
    basic = Action("A basic pattern.", "dmesg -T | grep -i 'oom-kill|x'")  # `|` is literal here
    causes, _ = without_repeated_checks((_cause_with((narrow, other, wide, plain, basic)),), ())
    # the narrow search goes, wherever the wider one stands; other words stay
    assert causes[0].next_checks == (other, wide, plain, basic)
    later = _cause_with((narrow, Action("Xids again.", "sudo dmesg -T | grep -i 'nvrm: xid'")))
    causes, _ = without_repeated_checks((_cause_with((wide, plain)), later), ())
    assert causes[1].next_checks == ()


def _no_corpus_report_repeats_a_check(rendered: dict[str, tuple[Report, str]]) -> None:
    repeated = []
    for case, (report, _) in rendered.items():
        shown = [a for c in report.causes for a in c.next_checks] + list(report.next_checks)
        commands = [a.command for a in shown if a.command]
        # in reading order, a check never repeats a fix step shown above it
        above: set[str] = set()
        for cause in report.causes:
            above.update(a.command for a in cause.remediation if a.command)
            if any(a.command in above for a in cause.next_checks):
                repeated.append(case)
        texts = [a.text for a in shown]
        if len(set(commands)) < len(commands) or len(set(texts)) < len(texts):
            repeated.append(case)
    assert not repeated, repeated[:10]


def test_a_skipped_input_says_why_within_the_width() -> None:
    reason = "binary data (an ELF executable or core dump), not a log"
    inputs = (
        InputStatus("/scratch/jobs/run-8812/core.bin", None, InputState.SKIPPED, reason),
        InputStatus(
            "/scratch/jobs/run-8812/docker_inspect.json",
            InputKind.DOCKER_INSPECT,
            InputState.ANALYZED,
        ),
    )
    for width in (60, 80, 120):
        text = _terminal(Report(verdict=Verdict.NONE, causes=(), inputs=inputs), width)
        assert all(cell_len(line) <= width for line in text.splitlines())
        assert reason in " ".join(text.split())
        shown = "/scratch/jobs/run-8812/docker_inspect.json" in text
        assert shown or (width < 80 and "…/docker_inspect.json" in text)
        assert not any(line.endswith(" ") for line in text.splitlines())


def _unwrapped_words(lines: list[str], start: int, label: str, prose: str) -> list[str]:
    """The words of `prose` not shown whole (or as their shortened path) in the block that
    starts at `lines[start]` with `label` (that line and the lines indented under its text)."""
    block = [lines[start]]
    block.extend(takewhile(lambda line: line.startswith(" " * len(label)), lines[start + 1 :]))
    shown = set(" ".join(block).split())
    width = WIDTH - len(label)
    return [
        word
        for word in printable(prose).split()
        if word not in shown and shorten_path(word, width) not in shown
    ]


def _the_ending_is_wrapped_between_words(rendered: dict[str, tuple[Report, str]]) -> None:
    """The ending's reason and each line judged harmless are prose: wrapped at spaces, a path
    in them shortened whole (as the prose of notes is), never cut mid-word by the console."""
    broken = []
    for case, (report, text) in rendered.items():
        assessed = report.assessment
        if assessed is None:
            continue
        lines = text.splitlines()
        blocks = [("Ending: ", f"{assessed.ending.value} — {assessed.reason}")]
        blocks.extend(("Judged harmless: ", item) for item in assessed.harmless)
        seen: dict[str, int] = {}
        for label, prose in blocks:
            starts = [at for at, line in enumerate(lines) if line.startswith(label)]
            start = starts[seen.get(label, 0)]
            seen[label] = seen.get(label, 0) + 1
            lost = _unwrapped_words(lines, start, label, prose)
            broken.extend(f"{case}: {word!r}" for word in lost)
    assert not broken, "\n".join(broken[:10])


CORPUS_CHECKS = (
    _no_line_is_wider_than_the_terminal,
    _the_ending_is_wrapped_between_words,
    _no_token_is_split_across_lines,
    _every_word_of_every_command_is_shown_whole,
    _a_cited_line_keeps_its_citation_and_what_matched,
    _a_snippet_is_never_shown_behind_a_prompt,
    _no_corpus_report_repeats_a_check,
)


# One test runs every check on the corpus's reports: rendering ~1,500 reports is the cost, and
# a module fixture shared by several tests was built once on each test worker. Without
# coverage's tracer (the code is measured by the rest of the suite); every check runs, and
# the failure names each one that failed.
@pytest.mark.no_cover
def test_every_corpus_report_reads_right_at_80_columns() -> None:
    rendered = _rendered()
    failed = []
    for check in CORPUS_CHECKS:
        try:
            check(rendered)
        except AssertionError as error:
            failed.append(f"{check.__name__}: {error}")
    assert not failed, "\n\n".join(failed)
