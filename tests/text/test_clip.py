"""Report text cut to a length."""

from __future__ import annotations

from crashlens.text.clip import shortened


def test_text_within_the_limit_is_kept_whole() -> None:
    assert shortened("abc", 3) == "abc"


def test_a_cut_keeps_the_limit_and_ends_in_an_ellipsis() -> None:
    cut = shortened("abcdef", 4)
    assert cut == "abc…" and len(cut) == 4
