"""`Redactor`: the pseudonym mapping, the hosts and users it has learned, and `text()`."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import partial

from crashlens.redact.patterns import FILE_SUFFIX, KINDS, NOT_HOST, PSEUDONYM_RE, ip_key, is_ip
from crashlens.redact.replacements import REPLACEMENTS
from crashlens.redact.vocabulary import COMMON_WORDS, SYSTEM_USERS, is_public


class Redactor:
    """Replace personal and secret values with pseudonyms that stay stable for its lifetime.

    One Redactor per report: the same host, address or token always gets the same pseudonym,
    and a host or user learned in one string is replaced wherever it appears in another.
    """

    def __init__(self, known_hosts: Iterable[str] = (), known_users: Iterable[str] = ()) -> None:
        self._maps: dict[str, dict[str, str]] = {kind: {} for kind in KINDS}
        self._counts: dict[str, int] = dict.fromkeys(KINDS, 0)
        self._originals: dict[str, str] = {}
        self._global: dict[str, tuple[str, str]] = {}
        """Learned host names (lower case) -> (as seen, pseudonym): replaced as whole tokens."""
        self._global_re: re.Pattern[str] | None = None
        self._loose: dict[str, tuple[str, str]] = {}
        """Learned users and accounts: replaced even inside a `-`/`.` joined name."""
        self._loose_re: re.Pattern[str] | None = None
        for host in known_hosts:
            self.learn_host(host)
        for user in known_users:
            self.learn_user(user)

    # --- the mapping ---------------------------------------------------------------------

    def pseudonym(self, kind: str, value: str, key: str | None = None) -> str:
        """The pseudonym of `value` (assigned on first sight, numbered per kind)."""
        if PSEUDONYM_RE.fullmatch(value):
            return value
        table = self._maps[kind]
        norm = key if key is not None else value
        found = table.get(norm)
        if found is None:
            self._counts[kind] += 1
            found = f"{kind}-{self._counts[kind]}"
            table[norm] = found
            self._originals[found] = value
        return found

    def mapping(self) -> dict[str, str]:
        """Pseudonym -> original value, grouped by kind in a stable order."""
        ordered: dict[str, str] = {}
        for kind in KINDS:
            for pseudonym in self._maps[kind].values():
                ordered.setdefault(pseudonym, self._originals[pseudonym])
        return ordered

    # --- learning ----------------------------------------------------------------------------

    def learn_host(self, name: str) -> str | None:
        """Register a host name: it is replaced wherever it appears as a token."""
        name = name.strip().strip("[]\"'").rstrip(".")
        if not name or PSEUDONYM_RE.fullmatch(name) or is_public(name):
            return None
        if is_ip(name):
            return self.pseudonym("ip", name, ip_key(name))
        lower = name.lower()
        if lower in COMMON_WORDS or lower in SYSTEM_USERS or NOT_HOST.match(lower):
            return None
        if name.isdigit() or FILE_SUFFIX.search(name):
            return None
        short = lower.split(".", 1)[0]
        if "." in lower and self._maps["host"].get(short) and short not in COMMON_WORDS:
            pseudonym = self._maps["host"][short]
            self._maps["host"].setdefault(lower, pseudonym)
        else:
            pseudonym = self.pseudonym("host", name, lower)
        if "." in lower and _looks_like_machine(short) and short not in self._maps["host"]:
            self._maps["host"][short] = pseudonym
            self._add_global(short, pseudonym)
        if len(lower) >= 3:
            self._add_global(lower, pseudonym)
        return pseudonym

    def learn_user(self, name: str) -> str | None:
        """Register a user name: replaced wherever it appears as a token (3+ characters)."""
        if not name or name.lower() in SYSTEM_USERS or PSEUDONYM_RE.fullmatch(name):
            return None
        if name.isdigit():
            return None
        pseudonym = self.pseudonym("user", name)
        if len(name) >= 3 and name.lower() not in COMMON_WORDS:
            self._add_loose(name, pseudonym)
        return pseudonym

    def learn_account(self, value: str) -> str:
        """Register a cloud account or project id: replaced wherever it appears (6+ chars)."""
        pseudonym = self.pseudonym("account", value)
        if len(value) >= 6:
            self._add_loose(value, pseudonym)
        return pseudonym

    def _add_global(self, token: str, pseudonym: str) -> None:
        key = token.lower()
        if key not in self._global:
            self._global[key] = (token, pseudonym)
            self._global_re = None

    def _add_loose(self, token: str, pseudonym: str) -> None:
        key = token.lower()
        if key not in self._loose:
            self._loose[key] = (token, pseudonym)
            self._loose_re = None

    # --- redaction ---------------------------------------------------------------------------

    def text(self, text: str) -> str:
        """`text` with every personal or secret value replaced by its pseudonym."""
        if not text:
            return text
        for row in REPLACEMENTS:
            text = row.pattern.sub(partial(row.replace, self), text)
        return self._known(text)

    def _known(self, text: str) -> str:
        """Last: every host, user and account learned so far, wherever it stands."""
        if self._global:
            if self._global_re is None:
                self._global_re = _alternation(self._global, r"[\w-]")
            table = self._global
            text = self._global_re.sub(lambda m: table[m.group(0).lower()][1], text)
        if self._loose:
            if self._loose_re is None:
                self._loose_re = _alternation(self._loose, r"[A-Za-z0-9_]")
            loose = self._loose
            text = self._loose_re.sub(lambda m: loose[m.group(0).lower()][1], text)
        return text


def _alternation(table: dict[str, tuple[str, str]], word: str) -> re.Pattern[str]:
    """One regex for every learned token, longest first, not inside a longer `word` run."""
    tokens = sorted(table, key=len, reverse=True)
    alternation = "|".join(re.escape(token) for token in tokens)
    return re.compile(rf"(?<!{word})(?:{alternation})(?!{word})", re.IGNORECASE)


def _looks_like_machine(label: str) -> bool:
    return len(label) >= 3 and any(c.isdigit() or c == "-" for c in label)
