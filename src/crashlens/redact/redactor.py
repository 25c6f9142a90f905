"""`Redactor`: the pseudonym mapping, the hosts and users it has learned, and `text()`.

Two passes make redaction independent of order: `learn()` over every input first (hosts,
users and accounts named anywhere become known), then `text()` over each, which writes every
value the rows find and every learned name wherever it stands. `text()` alone learns as it
goes, for callers that have one string.

Speed: the rows run only on the lines their gate proposes (`redact.gates`), each searching a
line only as far as a match can stand (`redact.substitute`) or only where its gate's matches
end says one starts (`redact.anchors`), and the learned names are found with one literal
search over the folded text (Hyperscan's literal matcher), so a line with nothing personal
costs a share of one multi-pattern pass. What the rows made of a text is remembered (by the
text itself while a budget lasts, with its folded bytes, then by its SHA-256) and of a gated
line (by the line): the second pass over the same text, and a line a log repeats, cost a
lookup (bench/redact_bench.py).

What is left is Python work per gated line and per gate match, a few microseconds each,
spread over stages none of which holds much of it: the gates' match callbacks and the
marking of their lines, the loop over the gated lines, the rows' searches and replace
functions (no row costs much more than a twentieth of a launcher log's time), the gates found
again on a line an earlier row changed, and the learned names' matcher, compiled once the
learning is done (about 15 microseconds a name). A log whose every line names a host (a
launcher's NCCL and pdsh prefixes) pays all of them on every line: `bench/redact_bench.py
--phases` shows the share of each. On the bench's launcher log (one core, Hyperscan), a MB
cost about 51 ms: 9 the gates (a callback for each of ~7,800 gate matches, and their lines
marked), 28 the rows' ~5,800 calls (a third change nothing: a gate sees the line as it was
before the rows ahead of its own wrote their pseudonyms), with the ~1,100 new values they
learn, 7 the loop over the ~4,100 gated lines and the anchored gates found again on changed
lines, 3 folding and the memo, 7.5 the writing pass (3.4 of it compiling the learned names).
With the rows costing nothing the rest runs at ~58 MB/s, with the gates too at ~220 MB/s:
50 MB/s on such logs needs the per-line and per-match work out of Python.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable
from functools import partial
from operator import itemgetter

from crashlens.redact.anchors import Anchored, anchored
from crashlens.redact.gates import Edit, Gates, apply_edits, fold, rows_of
from crashlens.redact.learned import LearnedNames
from crashlens.redact.patterns import (
    CONSTANT_NAME,
    FILE_SUFFIX,
    KEEP_IPS,
    KINDS,
    NOT_HOST,
    PREFIX_HOST,
    PSEUDO_START,
    PSEUDONYM_RE,
    ip_key,
    is_ip,
)
from crashlens.redact.replacements import REPLACEMENTS
from crashlens.redact.substitute import Start, Substitute, substitute
from crashlens.redact.vocabulary import COMMON_WORDS, SYSTEM_USERS, is_public

_PEM = REPLACEMENTS[0]
"""Private key blocks span lines: this row runs over the whole text, before the line rows."""
_LINE_ROWS = REPLACEMENTS[1:]
_SUBS = tuple(substitute(row.pattern, row.shape) for row in _LINE_ROWS)
_ANCHORED = tuple(
    anchored(row.pattern, row.anchor) if row.anchor is not None else None for row in _LINE_ROWS
)
_AT_START = frozenset(
    index
    for index, row in enumerate(_LINE_ROWS)
    if isinstance(row.shape, Start) and row.anchor is None
)
"""Rows whose pattern matches only at a line's start (`substitute.Start`): one `match` a line."""
_MATCH_AT = {index: _LINE_ROWS[index].pattern.match for index in _AT_START}
_PREFIX_ROW = next(index for index, row in enumerate(_LINE_ROWS) if row.pattern is PREFIX_HOST)
"""The row of pdsh's and syslog's host prefixes (`node-01: ...`), whose answers
`Redactor.shown_prefixes` keeps by the prefix's text."""
_PREFIX_MASK = 1 << _PREFIX_ROW
"""A gated line's mask (`Gates.lines`: bit `1 << row`) when that row alone may touch it."""
_PREFIX_REACH = 256
"""How far past a line's start its remembered host prefix is looked for (DNS names are at
most 253 characters; indentation and longer tokens take the row's own path)."""
_GATES: dict[str, Gates] = {}
Remembered = tuple[tuple[Edit, ...], bytes | None]
"""The rows' edits of a text, and the text folded where the memo keeps that."""
RowSubs = tuple[tuple[int, Substitute, Callable[[re.Match[str]], str], Anchored | None], ...]
"""The rows a line's gates proposed, in table order: each one's index, substitute, replace
and, where its gate's match ends tell where its matches start, its anchored substitute."""
_HOSTLIST = re.compile(r"^(.*?)\[([\d,-]+)\](.*)$")
_MAX_EXPANDED = 256
_MEMO_BUDGET = 64 * 1024 * 1024
"""Roughly the bytes the memo of texts may hold; past it, texts are not remembered (a huge
bundle's first logs are, and those are redacted first)."""
_LINES_BUDGET = 32 * 1024 * 1024
"""The same for the memo of lines (kept apart: lines fill a budget much faster)."""
_MAX_LEARNED = 253
"""The longest host, user or account name searched for in every text: the longest name DNS
allows (RFC 1035; user, cloud account and bucket names are far shorter). A longer token a row
takes for a name still gets its pseudonym where the row finds it."""
_MAX_SHOWN_HOSTS = 65536
"""Host names `shown_host` remembers; past this, forgotten and found again."""
_MAX_MASKS = 4096
"""Masks of rows remembered with their row indices; past this, forgotten and found again."""
_MEMO_ENTRY = 64
"""What one memo entry or edit costs besides its characters (the tuple, the int objects)."""
_DIGEST_FROM = 1024
"""Texts this long are kept whole as their key only while `_KEPT_BUDGET` lasts, and are
remembered by a SHA-256 digest after that."""
_KEPT_BUDGET = 40 * 1024 * 1024
"""What the memo may spend, besides `_MEMO_BUDGET`, on long texts kept whole: as their own key
(found again by a dict lookup, which costs a third of a digest) and with their folded bytes
(the writing pass then folds only the lines the rows changed, not the whole text again)."""
_HOST_EDGE = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789-")
"""Characters that continue a host name: a learned host is replaced only between others."""
_NAME_EDGE = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789")
"""In file names and for users and accounts, `-`, `_` and `.` separate words too."""


def gates(backend: str = "auto") -> Gates:
    """The compiled gates of the line rows (one per backend, built on first use)."""
    found = _GATES.get(backend)
    if found is None:
        anchored_rows = [index for index, row in enumerate(_LINE_ROWS) if row.anchor is not None]
        found = Gates(
            [row.gate for row in _LINE_ROWS],
            backend=backend,
            record=anchored_rows,
            sharper=[row.sharp_gate for row in _LINE_ROWS],
        )
        _GATES[backend] = found
    return found


class Redactor:
    """Replace personal and secret values with pseudonyms that stay stable for its lifetime.

    One Redactor per report or bundle: the same host, address or token always gets the same
    pseudonym, and a host or user learned in one string is replaced wherever it appears in
    another.
    """

    def __init__(
        self,
        known_hosts: Iterable[str] = (),
        known_users: Iterable[str] = (),
        *,
        backend: str = "auto",
    ) -> None:
        self._maps: dict[str, dict[str, str]] = {kind: {} for kind in KINDS}
        self._counts: dict[str, int] = dict.fromkeys(KINDS, 0)
        self._originals: dict[str, str] = {}
        self._learned: dict[bytes, tuple[str, bool]] = {}
        """Learned names, folded -> (pseudonym, loose): a host without a digit (not loose) is
        replaced as a whole `-`-joined token; a numbered host (`trn-h100-031`), a user or an
        account (loose) even inside `a-b`/`a_b` names (`env-trn-h100-031.txt`)."""
        self._backend = backend
        self._names = LearnedNames(hyperscan=backend != "python")
        """Where the learned names stand in a text (matchers built in levels, as texts need
        them: a run of small texts that each teach a name costs no compile of all names each)."""
        self._hosts_seen: dict[str, str | None] = {}
        """learn_host's answers: a host is seen on every line of a pdsh log."""
        self._shown_hosts: dict[str, str] = {}
        self.shown_prefixes: dict[str, str] = {}
        """What a line's host prefix (`node-01: `) is written as, by the prefix (pdsh puts
        one on every line); filled through `remember_prefix`."""
        self._gates = gates(backend)
        self._memo: dict[str | bytes, Remembered] = {}
        """What the rows made of a text (its edits, and its folded bytes while they are
        kept), by the text itself or its digest: `collect` and `analyze --redact` give every
        text to `learn()` and then to `text()`, and the second time costs a lookup. Exact:
        once a value has its pseudonym, the rows give a text the same output every time
        (learning a value again changes nothing)."""
        self._kept_left = _KEPT_BUDGET
        self._digested = False
        """Whether some text was remembered by its digest (a lookup then tries that too)."""
        self._lines: dict[tuple[int, str], str] = {}
        """What the rows made of a line, by the rows its gates proposed and the line: a log
        repeats lines (the same warning on every rank), and each costs a lookup after the
        first. Exact for the same reason as the memo."""
        self._memo_left = _MEMO_BUDGET
        self._lines_left = _LINES_BUDGET
        self._row_subs: dict[int, RowSubs] = {}
        """The rows of each mask seen, ready to run (few masks recur)."""
        self._line_subs = tuple(partial(row.replace, self) for row in _LINE_ROWS)
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
        if name in self._hosts_seen:
            return self._hosts_seen[name]
        found = self._learn_host(name)
        self._hosts_seen[name] = found
        return found

    def remember_prefix(self, prefix: str, shown: str) -> None:
        """Keep what `prefix` is written as (exact as `shown_host` is: a host, once learned,
        keeps its pseudonym), forgetting all past `_MAX_SHOWN_HOSTS` prefixes."""
        if len(self.shown_prefixes) >= _MAX_SHOWN_HOSTS:
            self.shown_prefixes.clear()
        self.shown_prefixes[prefix] = shown

    def shown_host(self, name: str) -> str:
        """What a host name found by a row is written as: its pseudonym, or the name where it
        is none (a pseudonym already, a public name, a word); remembered, as a log names the
        same hosts on every line."""
        shown = self._shown_hosts.get(name)
        if shown is None:
            kept = PSEUDO_START.match(name) is not None
            shown = name if kept else self.learn_host(name) or name
            if len(self._shown_hosts) >= _MAX_SHOWN_HOSTS:
                self._shown_hosts.clear()
            self._shown_hosts[name] = shown
        return shown

    def _learn_host(self, name: str) -> str | None:
        name = name.strip().strip("[]\"'").rstrip(".")
        if not name or PSEUDONYM_RE.fullmatch(name) or is_public(name):
            return None
        if is_ip(name):
            if name in KEEP_IPS or name.startswith("127."):
                return None
            return self.pseudonym("ip", name, ip_key(name))
        lower = name.lower()
        if lower in COMMON_WORDS or lower in SYSTEM_USERS or NOT_HOST.match(lower):
            return None
        if CONSTANT_NAME.fullmatch(name):
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
            self._add(short, pseudonym, loose=_numbered(short))
        if len(lower) >= 3:
            self._add(lower, pseudonym, loose=_numbered(lower))
        for member in _expand_hostlist(name):
            self.learn_host(member)
        return pseudonym

    def learn_user(self, name: str) -> str | None:
        """Register a user name: replaced wherever it appears as a token (3+ characters)."""
        if not name or name.lower() in SYSTEM_USERS or PSEUDONYM_RE.fullmatch(name):
            return None
        if name.isdigit():
            return None
        pseudonym = self.pseudonym("user", name)
        if len(name) >= 3 and name.lower() not in COMMON_WORDS:
            self._add(name, pseudonym, loose=True)
        return pseudonym

    def learn_account(self, value: str) -> str:
        """Register a cloud account or project id: replaced wherever it appears (6+ chars)."""
        pseudonym = self.pseudonym("account", value)
        if len(value) >= 6:
            self._add(value, pseudonym, loose=True)
        return pseudonym

    def _add(self, token: str, pseudonym: str, *, loose: bool) -> None:
        if token.isdigit() and len(token) < 8:
            return  # a short number is never replaced wherever it stands (an id, a port)
        if len(token) > _MAX_LEARNED:
            # no host, user or account id is this long; the rows still replace it where
            # they find it, but as a learned name searched in every text it would make the
            # search quadratic on a long run of its characters (a 100 KB name: 15 s a text)
            return
        key = fold(token)
        if key not in self._learned:
            self._learned[key] = (pseudonym, loose)
            self._names.add(key)

    def learn(self, text: str) -> None:
        """Learn the hosts, users, accounts and values `text` names, writing nothing."""
        if text:
            self._remembered(text)

    # --- redaction ---------------------------------------------------------------------------

    def text(self, text: str) -> str:
        """`text` with every personal or secret value replaced by its pseudonym."""
        if not text:
            return text
        return self._known(*self._rows(text), names=False)

    def name(self, path: str) -> str:
        """A file name or path: as `text()`, and a learned host is also replaced where it is
        joined to other words by `-` (`env-<host>.txt`)."""
        if not path:
            return path
        return self._known(*self._rows(path), names=True)

    def _rows(self, text: str) -> tuple[str, bytes | None]:
        """`text` through every row, and what that folds to where the memo kept `text`'s
        folded bytes (fold is character by character: the changed lines are folded alone)."""
        edits, folded = self._remembered(text)
        if folded is None or not edits:
            return apply_edits(text, edits), folded
        return apply_edits(text, edits), _folded_edits(folded, edits)

    def _remembered(self, text: str) -> Remembered:
        """What the rows make of `text`: from the memo when this text went through them
        before, else found now (and remembered while the budgets last)."""
        memo = self._memo
        key: str | bytes = text
        found = memo.get(text)
        if found is None and self._digested and len(text) >= _DIGEST_FROM:
            key = _digest(text)
            found = memo.get(key)
        if found is not None:
            return found
        edits, folded = self._edits(text)
        # counted without a Python step per edit (a launcher log's text has thousands)
        cost = _MEMO_ENTRY * (1 + len(edits)) + sum(map(len, map(itemgetter(2), edits)))
        if len(text) < _DIGEST_FROM:
            cost += len(text)
            kept: bytes | None = None
        elif self._kept_left >= 2 * len(text):
            kept = folded
        else:
            kept = None
            if isinstance(key, str):
                key = _digest(text)
        if self._memo_left >= cost:
            memo[key] = (edits, kept)
            self._memo_left -= cost
            if kept is not None:
                self._kept_left -= 2 * len(text)
            elif isinstance(key, bytes):
                self._digested = True
        return edits, kept

    def _edits(self, text: str) -> Remembered:
        """The rows' edits of `text`, and `text` folded."""
        folded = fold(text)
        ends: dict[int, list[int]] = {}
        if b"-----begin " in folded:
            unkeyed = _PEM.pattern.sub(partial(_PEM.replace, self), text)
            if unkeyed != text:
                lines = self._gates.lines(fold(unkeyed), unkeyed, ends)
                found = self._line_edits(unkeyed, lines, ends)
                return ((0, len(text), apply_edits(unkeyed, found)),), folded
        edits = tuple(self._line_edits(text, self._gates.lines(folded, text, ends), ends))
        return edits, folded

    def _line_edits(
        self, text: str, lines: dict[int, int], ends: dict[int, list[int]]
    ) -> list[Edit]:
        """Each gated line through the rows its gates proposed, in table order: the lines
        that changed, as edits. One loop (this runs for every gated line of every log).

        A row with an anchor runs only where its gate's match ends (`ends`, offsets in
        `text`) say its matches start, while the line is as the gates saw it (ASCII, and
        unchanged by the rows before)."""
        edits: list[Edit] = []
        find, size = text.find, len(text)
        done, row_subs = self._lines, self._row_subs
        if len(row_subs) > _MAX_MASKS:
            row_subs.clear()
        left = self._lines_left
        anchors = bool(ends)
        gates_of = self._gates.ends
        prefixes = self.shown_prefixes
        for start, mask in sorted(lines.items()):
            if mask == _PREFIX_MASK:
                # a pdsh/syslog host prefix alone (most gated lines of such logs), seen
                # before: the text up to the line's first `: ` is exactly what the row would
                # match (a prefix holds no colon), and the row's answer for it is
                # remembered, so no match, no call and no search for the line's end (a
                # prefix with no newline in it ends on this line). The search stops within a
                # prefix's reach: a line whose gate saw `: ` in a folded `:\xa0` has none, and
                # an unbounded search would run on to the next line's (quadratic over a text
                # of such lines); a longer prefix takes the path below.
                colon = find(": ", start, start + _PREFIX_REACH)
                if colon > start:
                    prefix = text[start:colon]
                    shown = prefixes.get(prefix)
                    if shown is not None and "\n" not in prefix:
                        if shown != prefix:
                            edits.append((start, colon, shown))
                        continue
            end = find("\n", start)
            if end < 0:
                end = size
            line = text[start:end]
            subs = row_subs.get(mask)
            if subs is None:
                subs = self._subs_of(mask)
            if len(subs) == 1 and subs[0][0] in _AT_START:
                # one row that matches at the line's start (a pdsh or syslog prefix alone:
                # most gated lines of such logs): one match, cheaper than the memo of lines.
                # The edit covers the match alone: its pseudonym is one string shared by
                # every line of that host, where the whole line rebuilt cost a copy of the
                # line here, its folding again in the writing pass and its size in the memo.
                index, _, replace, _ = subs[0]
                found = _MATCH_AT[index](line)
                if found is not None:
                    shown = replace(found)
                    if shown != found.group():
                        edits.append((start, start + found.end(), shown))
                continue
            key = (mask, line)
            redacted = done.get(key)
            if redacted is not None:
                if redacted != line:
                    edits.append((start, end, redacted))
                continue
            if len(subs) == 1 and subs[0][3] is None:
                # one row, not anchored
                _, sub, replace, _ = subs[0]
                redacted = sub(replace, line)
            else:
                redacted = line
                plain = anchors and line.isascii()
                again: dict[int, list[int]] | None = None
                again_of = line
                for row, sub, replace, anchored_sub in subs:
                    if anchored_sub is None or not plain:
                        redacted = sub(replace, redacted)
                    elif redacted is line:
                        row_ends = ends[row]
                        # the ends of gate matches whose last character is on this line
                        # (or is the newline after it)
                        low = bisect_right(row_ends, start)
                        high = bisect_right(row_ends, end + 1, low)
                        at = [found_end - start for found_end in row_ends[low:high]]
                        redacted = anchored_sub(replace, line, at)
                    else:
                        # a row before changed the line: its gates are found again (once
                        # for each new text of the line)
                        if again is None or again_of is not redacted:
                            again, again_of = gates_of(fold(redacted)), redacted
                        redacted = anchored_sub(replace, redacted, again.get(row, ()))
                    if redacted is not line and redacted == line:
                        redacted = line
            if redacted is not line and redacted == line:
                redacted = line
            cost = _MEMO_ENTRY + len(line) + (len(redacted) if redacted is not line else 0)
            if left >= cost:
                done[key] = redacted
                left -= cost
            if redacted is not line:
                edits.append((start, end, redacted))
        self._lines_left = left
        return edits

    def _subs_of(self, mask: int) -> RowSubs:
        """The rows of `mask`, in table order, as (substitute, replace) pairs (remembered)."""
        subs = tuple(
            (index, _SUBS[index], self._line_subs[index], _ANCHORED[index])
            for index in rows_of(mask, {})
        )
        self._row_subs[mask] = subs
        return subs

    def _known(self, text: str, folded: bytes | None, *, names: bool) -> str:
        """Last: every host, user and account learned so far, wherever it stands (`folded`:
        `text` folded, where known)."""
        if not self._learned:
            return text
        if folded is None:
            folded = fold(text)
        learned = self._learned
        pieces: list[str] = []
        position = 0
        size = len(folded)
        for start, end, token in self._names.spans(folded):
            if start < position:
                continue
            pseudonym, loose = learned[token]
            edge = _NAME_EDGE if loose or names else _HOST_EDGE
            if start > 0 and folded[start - 1] in edge:
                continue
            if end < size and folded[end] in edge:
                continue
            pieces.append(text[position:start])
            pieces.append(pseudonym)
            position = end
        if not pieces:
            return text
        pieces.append(text[position:])
        return "".join(pieces)


def _digest(text: str) -> bytes:
    """A long text's key once texts are no longer kept whole (never equal to a `str`)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def _folded_edits(folded: bytes, edits: tuple[Edit, ...]) -> bytes:
    """`folded` (a text folded) with each edit's replacement folded in its place: the text
    with the edits made, folded."""
    # folded together (fold is character by character, and only a newline folds to one):
    # one call, not one per edit, unless a replacement holds a newline (a private key's)
    replacements = fold("\n".join(replacement for _, _, replacement in edits)).split(b"\n")
    if len(replacements) != len(edits):
        replacements = [fold(replacement) for _, _, replacement in edits]
    pieces: list[bytes] = []
    position = 0
    for (start, end, _), replacement in zip(edits, replacements, strict=True):
        pieces.append(folded[position:start])
        pieces.append(replacement)
        position = end
    pieces.append(folded[position:])
    return b"".join(pieces)


def _expand_hostlist(name: str) -> list[str]:
    """`node-[01-03,07]` -> node-01, node-02, node-03, node-07 (Slurm's hostlist form)."""
    match = _HOSTLIST.match(name) if "[" in name else None
    if match is None:
        return []
    head, ranges, tail = match.groups()
    names: list[str] = []
    for part in ranges.split(","):
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            continue
        last = int(high) if high else int(low)
        for number in range(int(low), min(last, int(low) + _MAX_EXPANDED) + 1):
            names.append(f"{head}{number:0{len(low)}d}{tail}")
            if len(names) >= _MAX_EXPANDED:
                return names
    return names


def _numbered(name: str) -> bool:
    return any(map(str.isdigit, name))


def _looks_like_machine(label: str) -> bool:
    if len(label) < 3 or not any(map(str.isalpha, label)):
        return False
    return "-" in label or any(map(str.isdigit, label))
