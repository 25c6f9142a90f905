"""What each secret or personal value becomes: one ordered table of (kind, pattern, replace).

`REPLACEMENTS` is applied top to bottom to every string, each row's pattern substituted over
the output of the row before. The order is part of the behaviour:

* secrets first: a password inside a URL, a header or a `key=value` goes whole, before the
  user, host and address rows take pieces of it;
* e-mail addresses before users, or `user=carol@corp.org` would lose only its user name;
* IPv6 before IPv4, so `::ffff:10.0.0.1` is one address;
* users before hosts, and host shapes from the most specific (NCCL's `host:pid:tid`, syslog)
  to the loosest (any fully qualified name).

A replace function gets the `Redactor` (which assigns pseudonyms and learns hosts and users)
and the match. Most keep the context that found the value (group 1) and replace only the
value (group 2): `_prefixed` builds those.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeAlias

from crashlens.redact import anchors as a
from crashlens.redact import patterns as p
from crashlens.redact.anchors import Anchor
from crashlens.redact.gates import Gate, Run
from crashlens.redact.substitute import Before, Shape, Start
from crashlens.redact.vocabulary import BUILD_ACCOUNTS, CODE_TLDS, TLDS, TOOLS, is_public

if TYPE_CHECKING:
    from crashlens.redact.redactor import Redactor

Replace: TypeAlias = Callable[["Redactor", re.Match[str]], str]
Value: TypeAlias = Callable[["Redactor", str], str]


@dataclass(frozen=True, slots=True)
class Replacement:
    """One row of the table: what `pattern` finds is rewritten by `replace`."""

    kind: str
    """The pseudonym kind the row writes (a `user:password` row writes a user and a secret)."""
    pattern: re.Pattern[str]
    replace: Replace
    gate: Gate
    """A regex over the text folded to lower-case Latin-1 bytes that matches, on the same line,
    wherever `pattern` can (a superset, without lookarounds or back-references so Hyperscan
    takes it), or a `Run` of characters: lines it does not match are never given to `pattern`
    (see `redact.gates`)."""
    shape: Shape = None
    """Where the pattern's matches stand on a line, when that lets a line be searched less
    (`redact.substitute`)."""
    anchor: Anchor | None = None
    """Where the pattern's matches start, from where its gate's matches end: the line is
    searched only there (`redact.anchors`)."""
    sharp_gate: bytes | None = None
    """A tighter gate for Hyperscan (a superset of the matches `replace` changes something
    for), where `gate` is what `re` can search in linear time."""


# --- values --------------------------------------------------------------------------------


def _secret(redactor: Redactor, value: str) -> str:
    return redactor.pseudonym("secret", value)


def _keep_or_secret(redactor: Redactor, value: str) -> str:
    """A secret, unless it is a placeholder (`<token>`, `${HF_TOKEN}`, `***`) or a pseudonym."""
    if p.PLACEHOLDER.match(value) or p.PSEUDO_START.match(value):
        return value
    return _secret(redactor, value)


def _user(redactor: Redactor, user: str) -> str:
    if p.PSEUDO_START.match(user):
        return user
    return redactor.learn_user(user) or user


def _host(redactor: Redactor, name: str) -> str:
    return redactor.shown_host(name)


def _account(redactor: Redactor, value: str) -> str:
    return redactor.learn_account(value)


def _lower_account(redactor: Redactor, value: str) -> str:
    return redactor.learn_account(value.lower())


def _prefixed(value: Value) -> Replace:
    """Keep group 1 (the context that found the value), replace group 2 by `value`."""

    def replace(redactor: Redactor, match: re.Match[str]) -> str:
        return match.group(1) + value(redactor, match.group(2))

    return replace


def _whole(value: Value) -> Replace:
    """Replace the whole match by `value`."""

    def replace(redactor: Redactor, match: re.Match[str]) -> str:
        return value(redactor, match.group(0))

    return replace


# --- secrets --------------------------------------------------------------------------------


def _pem(redactor: Redactor, match: re.Match[str]) -> str:
    body = match.group(2) if match.group(3) else match.group(4)
    if not body or not body.strip(" \\n\r\t"):
        return match.group(0)
    return f"{match.group(1)}{_secret(redactor, body)}{match.group(3) or ''}"


def _url_userinfo(redactor: Redactor, match: re.Match[str]) -> str:
    user, password = match.group("user"), match.group("pw")
    if not user and not password:
        return match.group(0)
    if password is None:
        # a lone userinfo: a token (long, mixed) or a user name
        looks_secret = len(user) >= 16 and any(map(str.isdigit, user))
        shown = _secret(redactor, user) if looks_secret else _user(redactor, user)
        return f"{match.group('scheme')}{shown}@"
    shown_user = _user(redactor, user) if user else ""
    return f"{match.group('scheme')}{shown_user}:{_keep_or_secret(redactor, password)}@"


def _netrc(redactor: Redactor, match: re.Match[str]) -> str:
    login, password = _user(redactor, match.group(2)), _secret(redactor, match.group(4))
    return match.group(1) + login + match.group(3) + password


def _key_value(redactor: Redactor, match: re.Match[str]) -> str:
    name, value = match.group("name"), match.group("value")
    if p.NOT_SECRET_NAMES.match(name):
        return match.group(0)
    quote = ""
    inner = value
    opening = _QUOTE.match(value)
    if opening is not None:
        q = opening.group(0)
        if len(value) >= 2 * len(q) and value.endswith(q):
            quote, inner = q, value[len(q) : -len(q)]
    if p.PLACEHOLDER.match(inner) or p.PSEUDO_START.match(inner):
        return match.group(0)
    always = p.ALWAYS_SECRET.search(name) is not None
    if not always and (len(inner) < 6 or inner.isdigit() and len(inner) < 10):
        return match.group(0)
    if not always and p.WORD.fullmatch(inner) and inner.islower():
        return match.group(0)  # `auth: required`, `token: missing`: words, not values
    return f"{name}{match.group('sep')}{quote}{_secret(redactor, inner)}{quote}"


_QUOTE = re.compile(r"\\*[\"']")


def _db_cli(redactor: Redactor, match: re.Match[str]) -> str:
    """Each password on a database client's command line, from the client's name on.

    What a regex that scans lazily from each client to the end of its command (`;`, `|`,
    `&`) for the first flag with a value finds, found in linear time: that regex tried again
    from every later client after one found nothing, and on a line of `mysql  -p ` it scanned
    the rest of the command from each (tests/test_redact_db_cli.py holds it as the oracle).
    A client of a family that found nothing in a command finds nothing later in it either (it
    has less of the same command to search), so it is skipped."""
    text, end = match.string, match.end()
    pieces: list[str] = []
    done = at = match.start()
    command_end = -1
    failed: dict[int, int] = {}
    """family -> the end of the command in which it found no password"""
    while (client := p.DB_CLIENT.search(text, at, end)) is not None:
        family = client.lastindex or 1
        after = client.end()
        if after > command_end:
            stop = p.DB_CLI_COMMAND_END.search(text, after, end)
            command_end = stop.start() if stop is not None else end
        if failed.get(family) == command_end:
            at = client.start() + 1
            continue
        value = _db_cli_value(text, family - 1, after, command_end, end)
        if value is None:
            failed[family] = command_end
            at = client.start() + 1
            continue
        pieces.append(text[done : value.start(1)])
        pieces.append(_db_cli_password(redactor, value.group(1)))
        done = at = value.end()
    if not pieces:
        return match.group(0)
    pieces.append(text[done:end])
    return "".join(pieces)


def _db_cli_value(
    text: str, family: int, start: int, command_end: int, end: int
) -> re.Match[str] | None:
    """The first flag of `family` from `start` on in its command that a value follows."""
    flag, value = p.DB_CLI_FLAG[family], p.DB_CLI_VALUE[family]
    found = flag.search(text, start, command_end)
    while found is not None:
        after = value.match(text, found.end(), end)
        if after is not None:
            return after
        found = flag.search(text, found.start() + 1, command_end)
    return None


def _db_cli_password(redactor: Redactor, value: str) -> str:
    quote = value[0] if value[0] in "\"'" else ""
    inner = value.strip("\"'")
    if p.PLACEHOLDER.match(inner) or p.PSEUDO_START.match(inner):
        return value
    return f"{quote}{_secret(redactor, inner)}{quote}"


def _conn_string(redactor: Redactor, match: re.Match[str]) -> str:
    name, value = match.group("name").lower(), match.group("value")
    if p.PSEUDO_START.match(value) or p.PLACEHOLDER.match(value):
        return match.group(0)
    if name in ("user id", "userid", "uid", "username", "user"):
        return match.group(1) + _user(redactor, value)
    if name == "accountname":
        return match.group(1) + _account(redactor, value)
    scheme, colon, rest = (
        value.rpartition(":") if value.lower().startswith("tcp:") else ("", "", value)
    )
    host, comma, port = rest.partition(",")
    return f"{match.group(1)}{scheme}{colon}{_host(redactor, host)}{comma}{port}"


def _cli_flag(redactor: Redactor, match: re.Match[str]) -> str:
    name, value = match.group("name"), match.group("value")
    if p.NOT_SECRET_NAMES.match(name) or value.startswith("-"):
        return match.group(0)
    inner = value.strip("\"'")
    if p.PLACEHOLDER.match(inner) or p.PSEUDO_START.match(inner) or inner.isdigit():
        return match.group(0)
    quote = value[0] if value[0] in "\"'" else ""
    return f"{match.group(1)}{quote}{_secret(redactor, inner)}{quote}"


def _entropy(redactor: Redactor, match: re.Match[str]) -> str:
    value = match.group(0)
    body = value.rstrip("=")
    if "/" in body and all(len(part) < 24 for part in body.split("/")):
        return value  # a path, not a base64 blob
    # Counted with `bytes.translate` (the pattern takes ASCII letters, digits, `+` and `/`
    # only): most runs are hex digests or lower-case names and fail on the first count.
    raw = body.encode("ascii")
    n = len(raw)
    if n - len(raw.translate(None, _UPPER)) < 0.15 * n:
        return value
    if n - len(raw.translate(None, _LOWER)) < 0.15 * n:
        return value
    if n - len(raw.translate(None, _DIGITS)) < 0.04 * n:
        return value
    return _secret(redactor, value)


_UPPER = bytes(range(ord("A"), ord("Z") + 1))
_LOWER = bytes(range(ord("a"), ord("z") + 1))
_DIGITS = b"0123456789"


# --- e-mail, cloud, GPUs --------------------------------------------------------------------


def _email(redactor: Redactor, match: re.Match[str]) -> str:
    value = match.group(0)
    local, domain = value.rsplit("@", 1)
    if p.PSEUDO_START.fullmatch(local) or p.PSEUDONYM_RE.search(local):
        return f"{local}@{domain if is_public(domain) else _host(redactor, domain)}"
    if value.lower().startswith(("git@", "noreply@")) and is_public(domain):
        return value
    return redactor.pseudonym("email", value, value.lower())


def _aws_account(redactor: Redactor, match: re.Match[str]) -> str:
    if match.group(2):
        return match.group(1) + _account(redactor, match.group(2))
    if match.group(3):
        return _account(redactor, match.group(3))
    return match.group(4) + _account(redactor, match.group(5))


def _bucket_account(redactor: Redactor, match: re.Match[str]) -> str:
    return match.group(1) + _account(redactor, match.group(2))


def _cloud_label(redactor: Redactor, match: re.Match[str]) -> str:
    label = match.group(1)
    if p.PSEUDO_START.match(label):
        return label
    return _account(redactor, label.lower())


def _gcp_project(redactor: Redactor, match: re.Match[str]) -> str:
    for prefix, value in ((1, 2), (3, 4), (5, 6)):
        if match.group(value):
            if p.PSEUDO_START.match(match.group(value)):
                return match.group(0)
            return match.group(prefix) + _account(redactor, match.group(value))
    return match.group(0)


def _instance(redactor: Redactor, match: re.Match[str]) -> str:
    if match.group(1):
        return redactor.pseudonym("instance", match.group(1))
    value = match.group(3)
    if p.PSEUDO_START.match(value):
        return match.group(0)
    return match.group(2) + redactor.pseudonym("instance", value)


def _blank(value: str) -> bool:
    """An id already blanked out (`0000000000000`, `GPU-00000000-0000-...`, `REDACTED`)."""
    digits = value.lower().removeprefix("gpu-").removeprefix("mig-").replace("-", "")
    return set(digits) <= {"0"} or p.PLACEHOLDER.match(value) is not None


def _csv_serials(redactor: Redactor, match: re.Match[str]) -> str:
    def serial(number: re.Match[str]) -> str:
        if _blank(number.group(1)):
            return number.group(0)
        return number.group(0).replace(
            number.group(1), redactor.pseudonym("serial", number.group(1))
        )

    return p.CSV_NUMBER.sub(serial, match.group(0))


def _gpu_uuid(redactor: Redactor, match: re.Match[str]) -> str:
    if _blank(match.group(0)):
        return match.group(0)
    return redactor.pseudonym("gpu-uuid", match.group(0), match.group(0).lower())


def _serial(redactor: Redactor, match: re.Match[str]) -> str:
    value = match.group(2)
    if p.PSEUDO_START.match(value) or value.lower() in ("not", "none", "unknown") or _blank(value):
        return match.group(0)
    return match.group(1) + redactor.pseudonym("serial", value)


# --- addresses ------------------------------------------------------------------------------


def _ib_guid(redactor: Redactor, match: re.Match[str]) -> str:
    value = match.group(2) or match.group(3)
    key = value.lower().removeprefix("0x").replace(":", "")
    if set(key) <= {"0"} or set(key) <= {"f"}:
        return match.group(0)
    return (match.group(1) or "") + redactor.pseudonym("mac", value, key)


def _mac(redactor: Redactor, match: re.Match[str]) -> str:
    value = match.group(0)
    if set(value.lower()) <= {"0", ":", "-"} or set(value.lower()) <= {"f", ":", "-"}:
        return value
    return redactor.pseudonym("mac", value, value.lower().replace("-", ":"))


def _ipv6(redactor: Redactor, match: re.Match[str]) -> str:
    whole = match.group(0)
    after = match.string[match.end() : match.end() + 1]
    if after and (after.isalnum() or after == "_"):
        return whole  # `c10d::Error`, `caffe2::Tensor`: C++ scopes, not addresses
    zone = match.group(1) or ""
    run = whole[: len(whole) - len(zone)].rstrip(".")
    tail = whole[len(run) :]
    if len(run) > 256:
        return whole  # no address is this long: a hex dump, not worth the search
    if "::" not in run and run.count(":") < 6:
        # an IPv6 address without `::` has 8 groups, or 6 and an IPv4 tail: every
        # candidate below is a tail of the run (a time of day, `a:b:c`: none is one)
        return whole
    before = match.string[match.start() - 1 : match.start()]
    found = _ipv6_address(run, before.isalnum() or before == "_")
    if found is None:
        return whole
    start, candidate, key = found
    return run[:start] + redactor.pseudonym("ip", candidate, key) + tail  # the zone is kept


_IPV6_ADDRESSES: dict[tuple[str, bool], tuple[int, str, str] | None] = {}
"""`_ipv6_address` answers: a log writes the same few addresses (and scopes) on many lines,
and trying each tail of a run costs more than the regex that found it."""
_MAX_IPV6_ADDRESSES = 16384


def _ipv6_address(run: str, inside_word: bool) -> tuple[int, str, str] | None:
    """The address a run of hex digits and colons ends with: (where it starts in the run, the
    address, its key); None when none does or it names no machine (`::1`). A run that starts
    inside a word (`ib0:fe80::1`) is not an address from its start."""
    cache_key = (run, inside_word)
    if cache_key in _IPV6_ADDRESSES:
        return _IPV6_ADDRESSES[cache_key]
    found: tuple[int, str, str] | None = None
    starts = [] if inside_word else [0]
    starts += [
        i + 1
        for i, c in enumerate(run)
        if c == ":" and run[i + 1 : i + 2] != ":" and (i == 0 or run[i - 1] != ":")
    ]
    for start in starts:
        candidate = run[start:]
        groups = [g for g in p.IP_SEPARATOR.split(candidate) if g]
        if len(groups) >= 2 and ":" in candidate and p.is_ip(candidate):
            if candidate not in p.KEEP_IPS:
                found = (start, candidate, p.ip_key(candidate))
            break
    if len(_IPV6_ADDRESSES) >= _MAX_IPV6_ADDRESSES:
        _IPV6_ADDRESSES.clear()
    _IPV6_ADDRESSES[cache_key] = found
    return found


def _ipv4(redactor: Redactor, match: re.Match[str]) -> str:
    value = match.group(1)
    if value in p.KEEP_IPS or value.startswith("127."):
        return value
    if _version_before(match.string[max(0, match.start() - 24) : match.start()]):
        return value
    if match.string[match.end() : match.end() + 1] in ("-", "+", "~"):
        return value  # `8.6.1.6-1+cuda12.0`: a package version
    return redactor.pseudonym("ip", value, value)


_VERSIONS_BEFORE: dict[str, bool] = {}
"""`_version_before` answers: a log writes the same few words before its addresses."""
_MAX_VERSIONS_BEFORE = 65536


def _version_before(before: str) -> bool:
    """Whether `before` (the 24 characters before a four-part number) names a version."""
    found = _VERSIONS_BEFORE.get(before)
    if found is None:
        found = p.VERSION_BEFORE.search(before) is not None
        if len(_VERSIONS_BEFORE) >= _MAX_VERSIONS_BEFORE:
            _VERSIONS_BEFORE.clear()
        _VERSIONS_BEFORE[before] = found
    return found


# --- users ----------------------------------------------------------------------------------


def _curl_user(redactor: Redactor, match: re.Match[str]) -> str:
    user, password = _user(redactor, match.group(2)), _keep_or_secret(redactor, match.group(3))
    return f"{match.group(1)}{user}:{password}"


def _home(redactor: Redactor, match: re.Match[str]) -> str:
    return match.group(1) + _user(redactor, match.group(3))


def _owner(redactor: Redactor, match: re.Match[str]) -> str:
    user, group = match.group(2), match.group(4)
    shown_group = _user(redactor, group) if group == user else group
    return match.group(1) + _user(redactor, user) + match.group(3) + shown_group


def _user_at_host(redactor: Redactor, match: re.Match[str]) -> str:
    if p.PSEUDO_START.match(match.group(1)) or match.group(1).lower() in BUILD_ACCOUNTS:
        return match.group(0)  # a pseudonym, or a vendor's build account and build machine
    host = redactor.learn_host(match.group(2)) or match.group(2)
    return f"{_user(redactor, match.group(1))}@{host}"


# --- hosts ----------------------------------------------------------------------------------


def _has_digit_or_dash(token: str) -> bool:
    rest = token[1:]
    return "-" in rest or any(map(str.isdigit, rest))


def _prefix_host(redactor: Redactor, match: re.Match[str]) -> str:
    # a pdsh or syslog prefix stands on every line of its log: its answer is remembered
    prefix = match.group(0)
    shown = redactor.shown_prefixes.get(prefix)
    if shown is None:
        name = match.group(2)
        if not _has_digit_or_dash(name) or name in TOOLS:
            shown = prefix  # `error: ...`, `nccl-tests: ...`: a word or a tool, not a host
        else:
            shown = match.group(1) + _host(redactor, name)
        redactor.remember_prefix(prefix, shown)
    return shown


def _wandb_entity(redactor: Redactor, match: re.Match[str]) -> str:
    if match.group(2) is not None:
        shown = match.group(1) + _user(redactor, match.group(2))
        if match.group(4) is not None:
            shown += match.group(3) + _user(redactor, match.group(4))
        return shown
    return match.group(5) + _user(redactor, match.group(6))


def _prose_host(redactor: Redactor, match: re.Match[str]) -> str:
    text, end = match.string, match.end()
    if text.startswith("://", end) or text.startswith(":/", end):
        return match.group(0)  # `connecting to https://...`: a URL scheme, not a host
    return match.group(1) + _host(redactor, match.group(2))


def _host_port(redactor: Redactor, match: re.Match[str]) -> str:
    name = match.group(1)
    if not _has_digit_or_dash(name):
        return match.group(0)
    return match.group(0).replace(name, _host(redactor, name))


def _fqdn(redactor: Redactor, match: re.Match[str]) -> str:
    value = match.group(0)
    if is_public(value) or p.FILE_SUFFIX.search(value):
        return value
    labels = value.lower().split(".")
    if labels[-1] in CODE_TLDS and len(labels) == 2 and not _has_digit_or_dash(labels[0]):
        return value  # `threading.local`, `torchvision.io`: Python names
    if match.string[match.end() : match.end() + 1] == "(":
        return value  # a call: `os.path.join(`
    if labels[0] == "www":
        return value  # a public web site
    return _host(redactor, value)


_TLD_GATE = "|".join(TLDS).encode()
_SECRET_NAME_END = (
    rb"(?:pass(?:word|wd|phrase)|pwd|secret|token|"
    rb"(?:api|access|secret|private|account|signing)[_-]?key(?:[_-]?id)?|credentials?|auth|"
    rb"signature|webhook(?:[_-]?url)?|dsn|world_info)"
)
"""How every name of `patterns._SECRET_NAME` ends (its last word): a bare `key` is none
(`key="auoms"` in audit records, `"SandboxKey":` in docker inspect), `api_key` is."""
_IPV6_GATE = (
    rb"::|[0-9a-f]{1,4}:[0-9a-f]{1,4}:[0-9a-f]{1,4}:[0-9a-f]{1,4}:[0-9a-f]{1,4}:[0-9a-f]{1,4}:"
)
_CONN_NAMES = rb"(?:user id|userid|uid|username|user|server|data source|address|addr|accountname)"
"""The names CONN_STRING's gates look for (`address` also stands for `network address`)."""
_BASE64 = b"abcdefghijklmnopqrstuvwxyz0123456789+/"
"""HIGH_ENTROPY's characters as the folded text has them: its gate is a run of 40."""

REPLACEMENTS: Final = (
    Replacement("secret", p.PEM, _pem, rb"-----begin "),
    Replacement("secret", p.URL_USERINFO, _url_userinfo, rb"://[^\s/?#@]*@"),
    Replacement(
        "secret",
        p.URL_QUERY,
        _prefixed(_keep_or_secret),
        rb"[?&;](?:access_token|id_token|refresh_token|token|api_key|apikey|key|sig|signature|"
        rb"password|pass|secret|client_secret|code|auth|x-amz-signature|x-amz-credential|"
        rb"x-amz-security-token|x-goog-signature|x-goog-credential|se|sv)=",
    ),
    Replacement("secret", p.SLACK_HOOK, _prefixed(_secret), rb"hooks\.slack\.com/"),
    Replacement(
        "secret",
        p.TOKENS,
        _whole(_secret),
        rb"hf_|api_org_|sk-|gh[pousr]_|github_pat_|"
        rb"(?:akia|asia|abia|acca|agpa|aida|aipa|anpa|anva|aroa|apka)[a-z0-9]{8}|aiza|ya29\.|"
        rb"1//0|xox[abposre]-|xapp-|eyj[a-z0-9_-]{8}|glpat-|npm_|org-[a-z0-9]{20}",
    ),
    Replacement("secret", p.AUTH_HEADER, _prefixed(_keep_or_secret), rb"authorization"),
    Replacement("secret", p.NETRC, _netrc, rb"machine\s"),
    Replacement("secret", p.WANDB_LOGIN, _prefixed(_secret), rb"wandb\s+login"),
    Replacement("secret", p.DB_CLI_PASSWORD, _db_cli, rb"mysql|mariadb|redis-cli|sshpass|sqlcmd"),
    Replacement(
        "secret",
        p.KEY_VALUE,
        _key_value,
        _SECRET_NAME_END + rb"(?:[\"']?\s*[=:]|\\+\"\s*:)",
        anchor=a.SECRET_NAME,
    ),
    Replacement(
        "secret",
        p.CLI_FLAG,
        _cli_flag,
        _SECRET_NAME_END + rb"(?:=|\s)",
    ),
    # `_entropy` writes only a run with upper- and lower-case letters (15% of each) and,
    # where it holds a `/`, a part of 24 or more between slashes (else it is a path)
    Replacement("secret", p.HIGH_ENTROPY, _entropy, Run(_BASE64, 40, mixed_case=True, part=24)),
    Replacement("email", p.EMAIL, _email, rb"@[a-z0-9-]+\."),
    Replacement(
        "user",
        p.CONN_STRING,
        _conn_string,
        # `re` scanned the rest of the line again from each name with no `;` after it
        # (quadratic on `user=a user=a ...`): it looks 128 characters on (a longer value is
        # proposed as it is) and stays on the name's line; Hyperscan keeps the unbounded gate
        _CONN_NAMES + rb"[^\S\n]*=(?:[^;\n]{0,128};|[^;\n]{129})",
        sharp_gate=_CONN_NAMES + rb"\s*=[^;\n]*;",
    ),
    Replacement(
        "account",
        p.AWS_ACCOUNT,
        _aws_account,
        rb"arn:aws|[0-9]{12}\.dkr\.ecr\.|account(?:[_ -]?id)?\\*[\"']?\s*[:=]",
    ),
    Replacement("account", p.BUCKET_ACCOUNT, _bucket_account, rb"(?:s3[an]?|gs)://|\.s3[.-]"),
    Replacement(
        "account",
        p.CLOUD_LABEL,
        _cloud_label,
        rb"\.(?:windows\.net|azure\.net|azurecr\.io|azurewebsites\.net|azure\.com|"
        rb"databricks\.net|databricks\.com|amazonaws\.com|googleapis\.com|appspot\.com|run\.app|"
        rb"cloudfunctions\.net|firebaseio\.com|snowflakecomputing\.com)",
    ),
    Replacement(
        "account", p.GCP_PROJECT, _gcp_project, rb"projects/|gcr\.io/|-docker\.pkg\.dev/|project"
    ),
    Replacement(
        "account",
        p.AZURE_ID,
        _prefixed(_lower_account),
        rb"subscription|tenant|microsoftonline\.com/|"
        rb"(?:vm|client|object|principal|app|application)[_-]?id",
    ),
    Replacement("account", p.CLIENT_ID, _prefixed(_account), rb"client[_-]?id"),
    Replacement(
        "account",
        p.SCHED_ACCOUNT,
        _prefixed(_account),
        rb"slurm_job_account|slurm_account|sbatch_account|salloc_account|pbs_account|"
        rb"lsb_project_name|#sbatch",
    ),
    Replacement("instance", p.INSTANCE, _instance, rb"i-[0-9a-f]{8}|instance[_-]?id"),
    Replacement(
        "serial", p.GPU_CSV_LINE, _csv_serials, rb"(?:^|,)\s*[0-9]{10,16}\s*(?:,|$)", Start()
    ),
    Replacement("gpu-uuid", p.GPU_UUID, _gpu_uuid, rb"(?:gpu|mig)-[0-9a-f]{8}-"),
    Replacement(
        "serial",
        p.SERIAL,
        _serial,
        rb"serial(?:[_ ]?(?:number|num|no))?[\"']?\s*[:=]|<serial>",
    ),
    Replacement(
        "mac",
        p.IB_GUID,
        _ib_guid,
        rb"guid[\"']?\s*(?:[:=]\s*)?(?:0x[0-9a-f]{16}|[0-9a-f]{4}:)|"
        rb"[0-9a-f]{4}:[0-9a-f]{4}:[0-9a-f]{4}:[0-9a-f]{4}",
    ),
    Replacement(
        "mac",
        p.MAC,
        _mac,
        rb"[0-9a-f]{2}:[0-9a-f]{2}:[0-9a-f]{2}:[0-9a-f]{2}:|"
        rb"[0-9a-f]{2}-[0-9a-f]{2}-[0-9a-f]{2}-[0-9a-f]{2}-",
    ),
    Replacement(
        "ip",
        p.IPV6_RUN,
        _ipv6,
        _IPV6_GATE,
        # `_ipv6` keeps a run that a word character follows (`c10d::Work`, `std::chrono`):
        # Hyperscan also asks for the end of the run of hex digits, colons and dots, and no
        # word character there (`re` would search each run again from each `::` in it)
        sharp_gate=rb"(?:" + _IPV6_GATE + rb")[0-9a-f:.]*(?:[^0-9a-z_:.]|$)",
    ),
    Replacement(
        "ip",
        p.IPV4,
        _ipv4,
        rb"[0-9]\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]",
        anchor=a.IPV4,
    ),
    Replacement(
        "user",
        p.CURL_USER,
        _curl_user,
        rb"\s-u|--user",
        # Hyperscan also asks for the `user:password` after the flag (`python -u` and
        # `sort -u` proposed every line that held them; `re` keeps the short gate)
        sharp_gate=rb"(?:\s-u\s*|--user(?:name)?[= ])[\"']?[^\s:\"']+:[^\s\"']",
    ),
    Replacement(
        "user",
        p.HOME,
        _home,
        rb"/(?:home|homes|users|people|u|scratch)/|[a-z]:\\+users\\|~[a-z_]",
    ),
    Replacement(
        "user",
        p.USER_CONTEXT,
        _prefixed(_user),
        rb"(?:user(?:[_ ]?name|id)?|logname|git_author_name|git_committer_name|entity)"
        rb"[\"']?\s*[=:]|"
        rb"[ug]id=[0-9]+\(|owned by|for user |--(?:wandb[_-])?entity[= ]",
    ),
    Replacement("user", p.LS_OWNER, _owner, rb"^[-dlcbps][rwxst-]{9}", Start()),
    Replacement("user", p.USER_AT_HOST, _user_at_host, rb"[a-z0-9_.-]@[a-z0-9]"),
    Replacement("user", p.WANDB_ENTITY, _wandb_entity, rb"logged in as|wandb\.ai/"),
    Replacement(
        "host",
        p.NCCL_HOST,
        _prefixed(_host),
        rb"[a-z0-9]:[0-9]+:[0-9]+ \[[0-9]+\]",
        Before(p.NCCL_AFTER),
    ),
    Replacement(
        "host",
        p.SYSLOG_HOST,
        _prefixed(_host),
        rb"^(?:[a-z]{3} [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2}|"
        rb"[0-9]{4}-[0-9]{2}-[0-9]{2}t[0-9:.])",
        Start(),
    ),
    Replacement("host", p.PREFIX_HOST, _prefix_host, rb"^[ \t]*[a-z]+[0-9-][a-z0-9-]*: ", Start()),
    Replacement(
        "host",
        p.KV_HOST,
        _prefixed(_host),
        rb"(?:host|host[ _-]?name|node[ _-]?name|master[_ -]?addr(?:ess)?|nodelist|alloc_node|"
        rb"ipaddr|topology_addr|rdzv[_-]?endpoint|k8s_node|node_ip|pod_ip|host_ip|"
        rb"control_?machine)[\"']?\s*[=:]|"
        rb"--(?:master[_-]addr|rdzv[_-]endpoint|host|hostname|node)[= ]",
        anchor=a.KV_HOST,
    ),
    # the flag alone: the client's name before it took `re` (the pure-Python gates) a scan
    # to the line's end from each name
    Replacement("host", p.DB_CLI_HOST, _prefixed(_host), rb"\s-h"),
    Replacement(
        "host",
        p.PROSE_HOST,
        _prose_host,
        rb"(?:on|from|to|at|of) (?:host|node|machine|server) |connect to (?:host |\(|\[)|"
        rb"connecting to |connection to |resolve host|unknown host|hostfile\s|"
        rb"virtualmachines/|pdsh@",
        anchor=a.PROSE_HOST,
    ),
    Replacement("host", p.HOSTFILE, _prefixed(_host), rb"\sslots\s*=", Start()),
    Replacement(
        "host",
        p.HOST_PORT,
        _host_port,
        rb"(?:^|[^a-z0-9_.:/@-])\[?[a-z]+[0-9-][a-z0-9-]*\]?:[1-9][0-9]{1,4}(?:[^a-z0-9_]|$)",
    ),
    Replacement(
        "host", p.AWS_HOST, _whole(_host), rb"ip-[0-9]{1,3}-[0-9]{1,3}-[0-9]{1,3}-[0-9]{1,3}"
    ),
    Replacement(
        "host",
        p.FQDN_RE,
        _fqdn,
        rb"[a-z0-9]\.(?:" + _TLD_GATE + rb")(?:[^a-z0-9_-]|$)",
        anchor=a.FQDN,
    ),
)
"""Every row, in the order applied (see the module docstring for why this order)."""
