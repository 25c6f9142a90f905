"""The shell's crash words in other locales are death signs, and agree with the rule library.

The failure detector (a parser, floor 2) reads glibc's translated strsignal texts from the
`signals` catalog's `shell` lists (`parsers/tables.py`), where the rules' texts live too;
`host-oom-shell-killed` copies the Killed words into its patterns. These tests fail when one
side learns a word the other does not know.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from crashlens.decide.failure import assess
from crashlens.library import default_pattern_dir, tables_dir
from crashlens.model import Ending
from crashlens.parsers.launcher.shell_words import LINE_WORD, shell_signal
from crashlens.parsers.launcher.signals import LOCALE_SIGNAL_WORDS, SIGNALS
from crashlens.pipeline import analyze_inputs

_ENGLISH = re.compile(r"^[A-Za-z/ ]+(?: \(core dumped\))?$")


def _table_entries() -> list[dict[str, object]]:
    with (Path(tables_dir()) / "signals.toml").open("rb") as handle:
        entries: list[dict[str, object]] = tomllib.load(handle)["entry"]
    return entries


def _shell_killed_patterns() -> str:
    path = Path(tables_dir()).parent / "host_oom" / "host-oom-shell-killed.toml"
    with path.open("rb") as handle:
        patterns: list[str] = tomllib.load(handle)["match"]["any"]
    return "\n".join(patterns)


@pytest.mark.parametrize("word", sorted(LOCALE_SIGNAL_WORDS))
def test_each_detector_word_is_in_the_rule_library_under_its_signal(word: str) -> None:
    signum = LOCALE_SIGNAL_WORDS[word]
    in_table = any(
        entry.get("code") == signum and any(str(t).startswith(word) for t in entry["texts"])  # type: ignore[attr-defined]
        for entry in _table_entries()
    )
    # (as a regex: `Terminado (killed)` is written with its parentheses escaped)
    escaped = word.replace("(", r"\(").replace(")", r"\)")
    in_rule = signum == 9 and escaped in _shell_killed_patterns()
    assert in_table or in_rule, f"{word}: not in signals.toml under code {signum}"


def test_each_translated_text_of_the_catalog_is_a_detector_word() -> None:
    for entry in _table_entries():
        code = entry.get("code")
        if not isinstance(code, int) or code not in SIGNALS:
            continue
        for text in entry["texts"]:  # type: ignore[attr-defined]
            words = [w for w in LOCALE_SIGNAL_WORDS if str(text).startswith(w)]
            if words:
                assert LOCALE_SIGNAL_WORDS[words[0]] == code, (text, code)
            else:
                assert text.isascii(), f"{text}: a translated text the detector does not read"


@pytest.mark.parametrize(
    ("line", "signal"),
    [
        ("段错误 (核心已转储)", "SIGSEGV"),
        ("总线错误(吐核)", "SIGBUS"),
        ("Speicherzugriffsfehler (Speicherabzug geschrieben)", "SIGSEGV"),
        ("Erreur du bus (core dumped)", "SIGBUS"),
        ("セグメンテーション違反です (コアダンプ)", "SIGSEGV"),
        ("Processus arrêté", "SIGKILL"),
        # es and ru: glibc's strsignal texts and bash's own words for `core dumped`
        ("Violación de segmento (`core' generado)", "SIGSEGV"),
        ("[1]+  Terminado (killed)      python train.py", "SIGKILL"),
        ("Ошибка сегментирования (стек памяти сброшен на диск)", "SIGSEGV"),
        ("Ошибка шины (стек памяти сброшен на диск)", "SIGBUS"),
        ("Аварийный останов (стек памяти сброшен на диск)", "SIGABRT"),
        ("Epoch 2:  41%|####1     | 205/500 [01:02<01:30,  3.27it/s]已杀死", "SIGKILL"),
        (
            "launch.sh: 行 14: 30518 已杀死               torchrun --nproc_per_node 8 pretrain.py",
            "SIGKILL",
        ),
        (
            "./go.sh: Zeile 3:   771 Abgebrochen (Speicherabzug geschrieben) python eval.py",
            "SIGABRT",
        ),
        # bash translates `line` but may leave the signal's word to an untranslated strsignal
        (
            "./webui.sh: riga 24:  8612 Killed                  python launch.py --web",
            "SIGKILL",
        ),
        ("train.sh: línea 12:  4410 Killed                  python train.py", "SIGKILL"),
        ("./run.sh: строка 7: 19022 Killed                  torchrun train.py", "SIGKILL"),
        # the English form of the same script report
        (
            "/var/spool/slurmd/job4417/slurm_script: line 9: 5120 Killed      python fit.py",
            "SIGKILL",
        ),
    ],
)
def test_translated_shell_words_name_the_signal(line: str, signal: str) -> None:
    assert shell_signal(line) == signal


@pytest.mark.parametrize(
    "line",
    [
        "Der Export wurde Abgebrochen, neuer Versuch",
        "Speicherzugriffsfehler bei Adresse 0x0 behoben",
        "deadline 12: 4 Killed workers",
    ],
)
def test_the_word_inside_prose_is_no_death(line: str) -> None:
    assert shell_signal(line) is None


def test_a_log_ending_in_a_translated_crash_word_died(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "[2026-03-02 10:14:07] step 1200 loss 2.113\n"
        "[2026-03-02 10:14:09] step 1210 loss 2.108\n"
        "段错误 (核心已转储)\n",
        encoding="utf-8",
    )
    assessment = assess(analyze_inputs([str(tmp_path)]))
    assert assessment.ending is Ending.DIED
    assert assessment.sign is not None and "段错误" in assessment.sign.text


def test_the_detector_reads_its_words_from_the_catalog() -> None:
    shell = {
        str(word): entry["code"]
        for entry in _table_entries()
        for word in entry.get("shell", [])  # type: ignore[attr-defined]
    }
    assert LOCALE_SIGNAL_WORDS.items() <= shell.items()
    assert {"Killed", "Bus error", "Segmentation fault"} <= shell.keys()
    assert all(SIGNALS[number] for number in set(shell.values()))


def test_the_rule_library_reads_the_same_translations_of_line() -> None:
    # host-oom-shell-killed matches bash's script report with an English `Killed`; its list of
    # `line` words must stay the detector's, or a locale would die for one and not the other
    rule = (default_pattern_dir() / "host_oom" / "host-oom-shell-killed.toml").read_text("utf-8")
    patterns = tomllib.loads(rule)["match"]["any"]
    assert any(p.startswith(f"(?:{LINE_WORD}) [0-9]+:") for p in patterns)


def test_a_translated_shell_broken_pipe_is_no_network_failure_either() -> None:
    # network-connection-reset-or-broken-pipe leaves bash's `line N: PID Broken pipe` out (a
    # pipeline's reader had exited); its `line` words must be the detector's list too
    rule = default_pattern_dir() / "network" / "network-connection-reset-or-broken-pipe.toml"
    excluded = tomllib.loads(rule.read_text("utf-8"))["match"]["none"]
    assert any(p.startswith(f"(?:{LINE_WORD}) [0-9]+:") for p in excluded)
