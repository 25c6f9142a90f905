"""The shell's crash word printed where a progress redraw left the cursor is a death sign.

A progress bar redraws its line with `\\r` and no newline, so when the process dies the shell
prints `Killed` (or its translation) glued to the bar's last character: after tqdm's `]`, but
also after a number and its unit (mmcv's `ETA:  2621s`, Keras' `- loss: 2.1371`). The failure
detector and `host-oom-shell-killed` read the same places; prose ending in the word does not.
A redraw that ends with its `\\r` leaves the cursor at column 0 instead: the word is printed over
the redraw's start, and a terminal copied into a report shows the rest of the redraw after it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.decide.failure import assess
from crashlens.match.rules import shipped_rules
from crashlens.model import Ending
from crashlens.parsers.launcher.shell_words import shell_signal
from crashlens.pipeline import analyze_inputs

GLUED = [
    # Keras 2 (keras-team/keras#3476), its blank-padded redraw, Keras 3's bar
    "165376/296960 [===============>..............] - ETA: 365s - loss: 2.1371Killed",
    "  8/400 [..............................] - ETA: 993s - loss: 0.6940 - acc: 0.4544 Killed",
    "195/195 ━━━━━━━━━━━━━━━━━━━━ 11s 55ms/step - accuracy: 0.0732 - loss: 2.8415e-04Killed",
    # mmcv's ProgressBar, in the C and the zh_CN locale
    "[>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>> ] 4951/5000, 7.9 task/s, elapsed: "
    "627s, ETA:     6sKilled",
    "[>>>>>>>>                               ] 811/4000, 2.2 task/s, elapsed: 369s, ETA:  "
    "1450s已杀死",
]

OVER_REDRAW = [
    # the word printed over the start of a redraw that ended with `\r`, the rest of the redraw
    # after it on a terminal copied into a report
    "Killed96160",
    "Killed3/10 loss 0.4125 acc 0.8810",
    "Killed██▌     | 305/500 [03:02<01:57,  1.66it/s]",
    "已杀死12/40 [00:31<00:52]",
]

PROSE = [
    "ETA: 12s, 3 workers Killed",
    "step 40 at 10%: the data worker was Killed",
    "ETA 3s: NotKilled",
    "100%|██████| 3/3 [00:01<00:00]进程已杀死",
]


@pytest.mark.parametrize("line", GLUED)
def test_the_word_glued_to_a_progress_redraw_is_a_sigkill(line: str) -> None:
    assert shell_signal(line) == "SIGKILL"
    assert shell_signal(f"{line[:20]}\r{line}") == "SIGKILL"


@pytest.mark.parametrize("line", GLUED)
def test_the_rule_reads_the_same_places(line: str) -> None:
    rule = next(r for r in shipped_rules() if r.id == "host-oom-shell-killed")
    assert rule.match_line(line) is not None


@pytest.mark.parametrize("line", OVER_REDRAW)
def test_the_word_over_a_redraws_start_is_a_sigkill_for_both(line: str) -> None:
    rule = next(r for r in shipped_rules() if r.id == "host-oom-shell-killed")
    assert shell_signal(line) == "SIGKILL"
    assert rule.match_line(line) is not None


@pytest.mark.parametrize(
    "line", ["Killed process 4711 (python) total-vm:5551872kB", "Killedby the watchdog"]
)
def test_the_word_starting_a_kernel_line_or_glued_to_prose_is_not_over_a_redraw(
    line: str,
) -> None:
    assert shell_signal(line) is None


@pytest.mark.parametrize("line", PROSE)
def test_prose_ending_in_the_word_is_no_death(line: str) -> None:
    rule = next(r for r in shipped_rules() if r.id == "host-oom-shell-killed")
    assert shell_signal(line) is None
    assert rule.match_line(line) is None


def test_a_log_that_ends_in_a_glued_kill_died(tmp_path: Path) -> None:
    (tmp_path / "fit.log").write_text(
        "Epoch 1/1\n" + GLUED[0] + "\n",
        encoding="utf-8",
    )
    assessment = assess(analyze_inputs([str(tmp_path)]))
    assert assessment.ending is Ending.DIED
    assert assessment.sign is not None and assessment.sign.text.endswith("Killed")


@pytest.mark.parametrize(
    ("line", "signal"),
    [
        ("Killed: 9", "SIGKILL"),
        (
            "./train.sh: line 4: 81234 Killed: 9               python3 train.py --device mps",
            "SIGKILL",
        ),
        ("Segmentation fault: 11", "SIGSEGV"),
        ("Bus error: 10 (core dumped)", "SIGBUS"),
        ("Epoch 3:  52%|█████▏    | 260/500 [02:11<02:01,  1.98it/s]Killed: 9", "SIGKILL"),
        ("status Killed: 99 times", None),
    ],
)
def test_macos_strsignal_adds_the_bsd_number(line: str, signal: str | None) -> None:
    # macOS's strsignal() reads `Killed: 9`, `Segmentation fault: 11` (BSD numbering): the
    # word names the signal, the number is not Linux's and is not read
    assert shell_signal(line) == signal
    rule = next(r for r in shipped_rules() if r.id == "host-oom-shell-killed")
    assert (rule.match_line(line) is not None) is (signal == "SIGKILL")
