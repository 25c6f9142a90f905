"""Redaction: replace personal and secret values in a report with stable pseudonyms.

`redact_report(report)` is a pure `Report -> Report` transform (renderers stay pure): every
string of the report (evidence text, context lines, paths, summaries, remediation, notes,
input reasons) goes through one `Redactor`, so the same value gets the same pseudonym in every
file of the report and the evidence still reads as a story (`host-1` fails, `host-2` times out
talking to `ip-1:29500`).

What is replaced, and by what:

* host names -> `host-N`: the `host` of every evidence line, NCCL `host:pid:tid`, pdsh and
  syslog prefixes, `hostname=`/`MASTER_ADDR=`/`--master_addr`/torchelastic `host :`, `user@host`,
  `name:port`, `[name]:port`, fully qualified names under private or country suffixes, AWS
  `ip-10-0-0-1` names. A host learned anywhere is replaced everywhere it appears as a token.
* IPv4 and IPv6 addresses -> `ip-N` (loopback and the unspecified address are kept);
  MAC and InfiniBand hardware addresses -> `mac-N`.
* user names and home directories -> `user-N` (`/home/alice` -> `/home/user-1`, `USER=`,
  `uid=1000(alice)`, `ls -l` owners, `alice@host`); system accounts such as root are kept.
* e-mail addresses -> `email-N`.
* cloud account, project and instance ids -> `account-N`, `instance-N` (AWS account ids in
  ARNs and ECR registries, GCP project ids, Azure subscription/tenant/VM ids, `i-0abc...`).
* GPU UUIDs -> `gpu-uuid-N`; board and system serial numbers -> `serial-N`.
* secrets -> `secret-N`: Hugging Face, OpenAI, GitHub, AWS, GCP, W&B and Slack tokens, JWTs,
  private key blocks and their base64 bodies, `password=` / `token=` / `api_key:` values (env,
  JSON, YAML, CLI flags, .netrc), `Authorization:` header values, credentials and signed
  query parameters in URLs.

Kept as they are: category and rule ids, roles, numbers (sizes, exit codes, Xid codes, pids),
PCI bus ids, interface and device names, public domains (github.com, huggingface.co, ...).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import re
from collections.abc import Callable, Iterable
from typing import Final

from crashlens.model import Action, Cause, Evidence, InputStatus, Report

KINDS: Final = (
    "host",
    "ip",
    "mac",
    "user",
    "email",
    "account",
    "instance",
    "gpu-uuid",
    "serial",
    "secret",
)
"""Pseudonym prefixes, in the order the mapping lists them."""

PSEUDONYM_RE: Final = re.compile(r"(?<![\w-])(?:" + "|".join(KINDS) + r")-\d+(?![\w-])")
"""A value this module wrote: never redacted again (redaction is idempotent)."""
_PSEUDO_START = re.compile(r"(?:" + "|".join(KINDS) + r")-\d+(?![\w-])")

SYSTEM_USERS: Final = frozenset(
    {
        "root",
        "nobody",
        "daemon",
        "ubuntu",
        "ec2-user",
        "centos",
        "debian",
        "admin",
        "user",
        "jovyan",
        "www-data",
        "nvidia",
        "runner",
        "shared",
        "public",
        "default",
        "linuxbrew",
        "pdsh",
        "git",
        "arn",
    }
)
"""Default or system accounts: not personal, and common words in logs."""

COMMON_WORDS: Final = frozenset(
    {
        "localhost",
        "trainer",
        "worker",
        "master",
        "server",
        "client",
        "main",
        "node",
        "train",
        "model",
        "data",
        "local",
        "none",
        "null",
        "true",
        "false",
        "error",
        "info",
        "warning",
        "debug",
        "host",
        "agent",
        "launcher",
        "container",
        "docker",
        "kernel",
        "systemd",
    }
)
"""Words never treated as a learned host name (too common to replace everywhere)."""

PUBLIC_DOMAINS: Final = (
    "github.com",
    "githubusercontent.com",
    "github.io",
    "huggingface.co",
    "hf.co",
    "pytorch.org",
    "python.org",
    "pypi.org",
    "nvidia.com",
    "nvcr.io",
    "docker.com",
    "docker.io",
    "amazonaws.com",
    "amazon.com",
    "aws.amazon.com",
    "googleapis.com",
    "google.com",
    "gcr.io",
    "pkg.dev",
    "microsoft.com",
    "azure.com",
    "azurecr.io",
    "windows.net",
    "wandb.ai",
    "openai.com",
    "slack.com",
    "ubuntu.com",
    "debian.org",
    "kernel.org",
    "readthedocs.io",
    "stackoverflow.com",
    "anaconda.org",
    "anaconda.com",
    "conda.io",
    "deepspeed.ai",
    "example.com",
    "example.org",
    "example.net",
    "example.invalid",
    "kubernetes.io",
    "k8s.io",
    "ray.io",
    "mellanox.com",
)
"""Public services: naming them says nothing about the user."""

_TLDS = (
    "com|net|org|io|ai|co|cloud|internal|local|lan|corp|cluster|intra|intranet|localdomain|"
    "edu|gov|mil|us|uk|de|fr|cn|jp|kr|ru|ch|nl|se|eu|ca|au|it|es|pl|be|at|tw|sg|il|fi|no|dk"
)
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_FQDN = rf"{_LABEL}(?:\.{_LABEL})*\.(?:{_TLDS})"
_HOST_TOKEN = r"[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9](?:\[[\d,-]+\])?|[A-Za-z0-9]"
_UUID = r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"

_FILE_SUFFIX = re.compile(
    r"\.(?:py|pyc|cpp|cc|c|h|hpp|cu|cuh|so|log|txt|json|yaml|yml|toml|sh|out|err|csv|md|ini|"
    r"cfg|conf|pt|pth|bin|safetensors|ckpt|npz|npy|pkl|tar|gz|zip|xz|zst)$",
    re.IGNORECASE,
)

# --- secrets --------------------------------------------------------------------------------

_PEM = re.compile(
    r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)"
    r"(?:(.*?)(-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)|([^\n\"']*))",
    re.DOTALL,
)
"""A private key block: the markers stay (a key was there), the body goes."""
_TOKENS = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"hf_[A-Za-z0-9]{8,}"  # Hugging Face
    r"|api_org_[A-Za-z0-9]{8,}"
    r"|sk-(?:proj-|svcacct-|admin-|ant-[a-z0-9]+-)?[A-Za-z0-9_-]{16,}"  # OpenAI, Anthropic
    r"|gh[pousr]_[A-Za-z0-9]{8,}|github_pat_[A-Za-z0-9_]{8,}"  # GitHub
    r"|(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[A-Z0-9]{8,}"  # AWS key ids
    r"|AIza[0-9A-Za-z_-]{20,}"  # GCP API key
    r"|ya29\.[0-9A-Za-z_-]{10,}"  # GCP OAuth access token
    r"|1//0[0-9A-Za-z_-]{20,}"  # GCP OAuth refresh token
    r"|xox[abposre]-[0-9A-Za-z-]{8,}|xapp-\d-[0-9A-Za-z-]{8,}"  # Slack
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # JWT
    r"|glpat-[0-9A-Za-z_-]{8,}"  # GitLab
    r"|npm_[A-Za-z0-9]{20,}"
    r"|org-[A-Za-z0-9]{20,}"  # OpenAI organization id
    r")"
)
_SLACK_HOOK = re.compile(r"(hooks\.slack\.com/(?:services|workflows|triggers)/)([A-Za-z0-9/_-]+)")
_URL_USERINFO = re.compile(
    r"(?P<scheme>(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*+://)(?P<user>[^\s/@:?#\"'<>]*)"
    r"(?::(?P<pw>[^\s/@?#\"'<>]*))?@(?=[\w\[])"
)
_URL_QUERY = re.compile(
    r"(?i)([?&;](?:access_token|id_token|refresh_token|token|api_key|apikey|key|sig|signature|"
    r"password|pass|secret|client_secret|code|auth|x-amz-signature|x-amz-credential|"
    r"x-amz-security-token|x-goog-signature|x-goog-credential|se|sv)=)([^&\s\"'#<>]+)"
)
_AUTH_HEADER = re.compile(
    r"(?i)(\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?"
    r"(?:(?:bearer|basic|token|digest|apikey|negotiate|aws4-hmac-sha256)\s+)?)"
    r"([^\s\"',;]+(?:,\s*(?:SignedHeaders|Signature)=[^\s\"',;]+)*)"
)
_ALWAYS_SECRET = r"password|passwd|pwd|passphrase|secret"
_SECRET_NAME = (
    r"(?:[A-Za-z0-9]+[_.-])*(?:password|passwd|pwd|passphrase|secret|token|api[_-]?key|apikey|"
    r"access[_-]?key(?:[_-]?id)?|secret[_-]?(?:access[_-]?)?key|private[_-]?key(?:[_-]?id)?|"
    r"credentials?|client[_-]?secret|session[_-]?token|auth|auth[_-]?token|"
    r"webhook(?:[_-]?url)?|signing[_-]?key|dsn|world_info)"
)
_KEY_VALUE = re.compile(
    rf"(?i)(?<![A-Za-z0-9_.-])(?P<name>{_SECRET_NAME})(?P<sep>[\"']?\s*(?:=|:)\s*|\\\"\s*:\s*)"
    r"(?P<value>\\\"(?:[^\\]|\\[^\"])*?\\\"|\"[^\"\n]*\"|'[^'\n]*'|[^\s,;&\"'<>)\]}]+)"
)
_CLI_FLAG = re.compile(
    rf"(?i)(--(?P<name>{_SECRET_NAME})(?:=|\s+))(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']+)"
)
_NOT_SECRET_NAMES = re.compile(
    r"(?i)^(?:pad|eos|bos|unk|sep|cls|mask|start|end|image|video|audio|chat|special|"
    r"decoder_start|additional_special|max|num|total|n|use|hub|allow|trust_remote)[_.-]token$"
    r"|^(?:use_auth|.*_file|.*_path|.*_dir)$"
)
_WANDB_LOGIN = re.compile(r"(?i)(\bwandb\s+login\s+(?:--\S+\s+)*)([A-Za-z0-9_-]{20,})")
_NETRC = re.compile(r"(?i)(\bmachine\s+\S+\s+login\s+)(\S+)(\s+password\s+)(\S+)")
_HIGH_ENTROPY = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/]{40,}={0,2}(?![A-Za-z0-9+/=_-])")
_PLACEHOLDER = re.compile(
    r"^(?:|\*+|x+|X+|\.\.\.|…|none|null|nil|true|false|redacted|\[redacted\]|<[^>]*>|"
    r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{[^}]*\}\}|%\([^)]*\)s|\{[a-z_]*\}|n/a)$",
    re.IGNORECASE,
)

# --- personal values --------------------------------------------------------------------------

_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}"
    r"(?![A-Za-z0-9-])"
)
_AWS_ACCOUNT = re.compile(
    r"(arn:aws[\w-]*:[\w-]+:[\w-]*:)(\d{12})(?=:)"
    r"|(?<!\d)(\d{12})(?=\.dkr\.ecr\.)"
    r"|(?i:(\b(?:aws[_-]?)?account(?:[_ -]?id)?[\"']?\s*[:=]\s*[\"']?))(\d{12})(?!\d)"
)
_GCP_PROJECT = re.compile(
    r"(\bprojects/)([a-z][a-z0-9-]{4,28}[a-z0-9])(?=[/\s\"']|$)"
    r"|(\bgcr\.io/|-docker\.pkg\.dev/)([a-z][a-z0-9-]{4,28}[a-z0-9])(?=/)"
    r"|(?i:(\b(?:gcp_|google_cloud_)?project(?:[_-]?id)?[\"']?\s*[:=]\s*[\"']?))"
    r"([a-z][a-z0-9-]{4,28}[a-z0-9])(?![\w-])"
)
_AZURE_ID = re.compile(
    rf"(?i)(\b(?:subscriptions/|(?:subscription|tenant|vm|client|object)[_-]?id[\"']?\s*[:=/]\s*"
    rf"[\"']?))({_UUID})"
)
_INSTANCE = re.compile(
    r"(?<![\w-])(i-[0-9a-f]{17}|i-[0-9a-f]{8})(?![\w-])"
    r"|(?i:(\binstance[_-]?id[\"']?\s*[:=]\s*[\"']?))([\w-]{8,})"
)
_GPU_UUID = re.compile(rf"\b(?:GPU|MIG)-{_UUID}\b")
_SERIAL = re.compile(
    r"(?i)(\b(?:board[_ ]|system[_ ]|chassis[_ ])?serial(?:[_ ]?(?:number|num|no))?"
    r"[\"']?\s*[:=]\s*[\"']?|<serial>\s*)([A-Za-z0-9][A-Za-z0-9-]{4,})"
)
_CSV_NUMBER = re.compile(r"(?:(?<=,)|(?<=^))\s*(\d{10,16})\s*(?=,|$)")
_MAC = re.compile(
    r"(?<![0-9A-Fa-f:.-])[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(?:\1[0-9A-Fa-f]{2}){4,18}"
    r"(?![0-9A-Fa-f:-])"
)
_IPV6_RUN = re.compile(r"(?<![0-9A-Fa-f:.])[0-9A-Fa-f:.]*:[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*(%[\w.-]+)?")
"""A run of hex digits, colons and dots holding 2+ colons; the address is its longest valid tail
(NCCL writes `ib0:fd00::18`, so the run can start inside an interface name)."""
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = re.compile(rf"(?<![\w.])((?:{_OCTET}\.){{3}}{_OCTET})(?![\w]|\.\d)")
_VERSION_BEFORE = re.compile(r"(?i)(?:version|ver|v|release|driver)\s*[:=]?\s*$")
_KEEP_IPS = frozenset({"0.0.0.0", "127.0.0.1", "255.255.255.255", "::", "::1"})

_HOME = re.compile(
    r"((?:/home|/Users|/usr/home|/export/home|/u|/scratch|/mnt/home)/|[A-Za-z]:(?:\\\\|\\)Users"
    r"(?:\\\\|\\)|~)([A-Za-z_][A-Za-z0-9._-]{0,31})(?=[/\\\s\"':,)\]]|$)"
)
_USER_CONTEXT = re.compile(
    r"(\b(?:USER|LOGNAME|USERNAME|SUDO_USER|SLURM_JOB_USER|PBS_O_LOGNAME|HF_USER|"
    r"JUPYTERHUB_USER|GIT_AUTHOR_NAME|GIT_COMMITTER_NAME)[\"']?\s*[=:]\s*[\"']?"
    r"|(?i:\buser(?:[_ ]?name)?[\"']?\s*[=:]\s*[\"']?)"
    r"|\bUserId=|\buid=\d+\(|\bgid=\d+\(|\bfor user |\bowned by (?:user )?)"
    r"([A-Za-z_][A-Za-z0-9._-]{0,31})(?![\w.:-])"
)
_CURL_USER = re.compile(r"((?:\s-u\s*|--user[= ]|--username[= ])[\"']?)([^\s:\"']+):([^\s\"']+)")
_LS_OWNER = re.compile(
    r"(?m)^([-dlcbps][rwxsStT-]{9}[.+@]?\s+\d+\s+)([A-Za-z_][\w.-]*)(\s+)([A-Za-z_][\w.-]*)(?=\s+\d)"
)
_USER_AT_HOST = re.compile(
    r"(?<![\w.@/-])([a-z_][a-z0-9_.-]{0,31})@([A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])(?![\w.@-])"
)

_NCCL_HOST = re.compile(rf"(?m)(^|[\s\]>|])({_HOST_TOKEN})(?=:\d+:\d+ \[\d+\])")
_SYSLOG_HOST = re.compile(
    r"(?m)^((?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:?\d\d)?)"
    rf" )({_HOST_TOKEN})(?= (?:kernel|systemd|[\w./-]+(?:\[\d+\])?):)"
)
_PREFIX_HOST = re.compile(r"(?m)^([ \t]*+)([a-z][a-z0-9-]*+)(?=: )")
_KV_HOST = re.compile(
    r"(?i)(\b(?:host[ _-]?name|hostname|host|node[ _-]?name|nodename|master[_ -]?addr(?:ess)?|"
    r"slurmd_nodename|slurm_nodelist|slurm_job_nodelist|nodelist|batchhost|alloc_node|"
    r"slurm_topology_addr|rdzv[_-]?endpoint|k8s_node|node_ip|pod_ip|host_ip)[\"']?"
    r"\s*[=:]\s*[\"']?|--(?:master[_-]addr|rdzv[_-]endpoint|host|hostname|node)[= ])"
    rf"({_HOST_TOKEN})"
)
_PROSE_HOST = re.compile(
    r"(?i)(\b(?:on|from|to|at|of) (?:host|node|machine|server) |\bconnect to host "
    r"|\bresolve host(?:name)?:? |\bunknown host:? |\bconnect to \(|\bconnect to \[|"
    r"\bconnecting to |\bconnection to |\bhostfile\s+|virtualMachines/|\bpdsh@)"
    rf"({_HOST_TOKEN})"
)
_HOST_PORT = re.compile(r"(?<![\w.:/@-])\[?([A-Za-z][A-Za-z0-9-]*+)\]?(?=:\d{2,5}\b)")
_HOSTFILE = re.compile(r"(?m)^(\s*)([A-Za-z0-9][\w.-]*)(?=\s+slots\s*=)")
_AWS_HOST = re.compile(r"(?<![\w-])ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}(?:\.[\w.-]+)?(?![\w-])")
_FQDN_RE = re.compile(rf"(?i)(?<![\w.@-])(?:(?<=://)|(?<!/)){_FQDN}(?![\w-]|\.\w)")
_NOT_HOST = re.compile(
    r"(?i)^(?:rank|local_rank|node_rank|worker|cuda|device|gpu|step|epoch|iter|c10d|utf-8|"
    r"x86-64|x86_64|sha\d+|md5|http|https|tcp|udp|file|line|pid|tid|port|nccl|mlx5|eth|ib|"
    r"sm_?\d+|compute|error|warning|info|debug|o2ib|tcp|rdma|verbs)\d*$"
)


def _is_public(domain: str) -> bool:
    lower = domain.lower().rstrip(".")
    return any(lower == d or lower.endswith("." + d) for d in PUBLIC_DOMAINS)


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
        self._global_re: re.Pattern[str] | None = None
        self._loose: dict[str, tuple[str, str]] = {}
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

    def learn_host(self, name: str) -> str | None:
        """Register a host name: it is replaced wherever it appears as a token."""
        name = name.strip().strip("[]\"'").rstrip(".")
        if not name or PSEUDONYM_RE.fullmatch(name) or _is_public(name):
            return None
        if _valid_ip(name):
            return self.pseudonym("ip", name, _ip_key(name))
        lower = name.lower()
        if lower in COMMON_WORDS or lower in SYSTEM_USERS or _NOT_HOST.match(lower):
            return None
        if name.isdigit() or _FILE_SUFFIX.search(name):
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

    def _learn_account(self, value: str) -> str:
        pseudonym = self.pseudonym("account", value)
        if len(value) >= 6:
            self._add_loose(value, pseudonym)
        return pseudonym

    # --- redaction ---------------------------------------------------------------------------

    def text(self, text: str) -> str:
        """`text` with every personal or secret value replaced by its pseudonym."""
        if not text:
            return text
        for step in self._steps():
            text = step(text)
        return text

    def _steps(self) -> tuple[Callable[[str], str], ...]:
        return (
            self._secrets,
            self._emails,
            self._cloud,
            self._gpus,
            self._addresses,
            self._users,
            self._hosts,
            self._known,
        )

    def _secret(self, value: str) -> str:
        return self.pseudonym("secret", value)

    def _secrets(self, text: str) -> str:
        text = _PEM.sub(self._pem, text)
        text = _URL_USERINFO.sub(self._url_userinfo, text)
        text = _URL_QUERY.sub(lambda m: m.group(1) + self._keep_or_secret(m.group(2)), text)
        text = _SLACK_HOOK.sub(lambda m: m.group(1) + self._secret(m.group(2)), text)
        text = _TOKENS.sub(lambda m: self._secret(m.group(0)), text)
        text = _AUTH_HEADER.sub(lambda m: m.group(1) + self._keep_or_secret(m.group(2)), text)
        text = _NETRC.sub(
            lambda m: (
                m.group(1) + self._user_value(m.group(2)) + m.group(3) + self._secret(m.group(4))
            ),
            text,
        )
        text = _WANDB_LOGIN.sub(lambda m: m.group(1) + self._secret(m.group(2)), text)
        text = _KEY_VALUE.sub(self._key_value, text)
        text = _CLI_FLAG.sub(self._cli_flag, text)
        return _HIGH_ENTROPY.sub(self._entropy, text)

    def _pem(self, match: re.Match[str]) -> str:
        body = match.group(2) if match.group(3) else match.group(4)
        if not body or not body.strip(" \\n\r\t"):
            return match.group(0)
        return f"{match.group(1)}{self._secret(body)}{match.group(3) or ''}"

    def _keep_or_secret(self, value: str) -> str:
        if _PLACEHOLDER.match(value) or _PSEUDO_START.match(value):
            return value
        return self._secret(value)

    def _url_userinfo(self, match: re.Match[str]) -> str:
        user, password = match.group("user"), match.group("pw")
        if not user and not password:
            return match.group(0)
        if password is None:
            # a lone userinfo: a token (long, mixed) or a user name
            looks_secret = len(user) >= 16 and any(c.isdigit() for c in user)
            shown = self._secret(user) if looks_secret else self._user_value(user)
            return f"{match.group('scheme')}{shown}@"
        shown_user = self._user_value(user) if user else ""
        return f"{match.group('scheme')}{shown_user}:{self._keep_or_secret(password)}@"

    def _user_value(self, user: str) -> str:
        if _PSEUDO_START.match(user):
            return user
        return self.learn_user(user) or user

    def _key_value(self, match: re.Match[str]) -> str:
        name, value = match.group("name"), match.group("value")
        if _NOT_SECRET_NAMES.match(name):
            return match.group(0)
        quote = ""
        inner = value
        for q in ('\\"', '"', "'"):
            if len(value) >= 2 * len(q) and value.startswith(q) and value.endswith(q):
                quote, inner = q, value[len(q) : -len(q)]
                break
        if _PLACEHOLDER.match(inner) or _PSEUDO_START.match(inner):
            return match.group(0)
        always = re.search(_ALWAYS_SECRET, name, re.IGNORECASE) is not None
        if not always and (len(inner) < 6 or inner.isdigit() and len(inner) < 10):
            return match.group(0)
        if not always and re.fullmatch(r"[A-Za-z_]+", inner) and inner.islower():
            return match.group(0)  # `auth: required`, `token: missing`: words, not values
        return f"{name}{match.group('sep')}{quote}{self._secret(inner)}{quote}"

    def _cli_flag(self, match: re.Match[str]) -> str:
        name, value = match.group("name"), match.group("value")
        if _NOT_SECRET_NAMES.match(name) or value.startswith("-"):
            return match.group(0)
        inner = value.strip("\"'")
        if _PLACEHOLDER.match(inner) or _PSEUDO_START.match(inner) or inner.isdigit():
            return match.group(0)
        quote = value[0] if value[0] in "\"'" else ""
        return f"{match.group(1)}{quote}{self._secret(inner)}{quote}"

    def _entropy(self, match: re.Match[str]) -> str:
        value = match.group(0)
        body = value.rstrip("=")
        if "/" in body and all(
            len(part) < 24 for part in body.split("/")
        ):  # a path, not a base64 blob
            return value
        upper = sum(c.isupper() for c in body)
        lower = sum(c.islower() for c in body)
        digits = sum(c.isdigit() for c in body)
        n = len(body)
        if upper >= 0.15 * n and lower >= 0.15 * n and digits >= 0.04 * n:
            return self._secret(value)
        return value

    def _emails(self, text: str) -> str:
        def replace(match: re.Match[str]) -> str:
            value = match.group(0)
            local, domain = value.rsplit("@", 1)
            if _PSEUDO_START.fullmatch(local) or PSEUDONYM_RE.search(local):
                return f"{local}@{domain if _is_public(domain) else self._host(domain)}"
            if value.lower().startswith(("git@", "noreply@")) and _is_public(domain):
                return value
            return self.pseudonym("email", value, value.lower())

        return _EMAIL.sub(replace, text)

    def _cloud(self, text: str) -> str:
        def aws(match: re.Match[str]) -> str:
            if match.group(2):
                return match.group(1) + self._learn_account(match.group(2))
            if match.group(3):
                return self._learn_account(match.group(3))
            return match.group(4) + self._learn_account(match.group(5))

        def gcp(match: re.Match[str]) -> str:
            for prefix, value in ((1, 2), (3, 4), (5, 6)):
                if match.group(value):
                    if _PSEUDO_START.match(match.group(value)):
                        return match.group(0)
                    return match.group(prefix) + self._learn_account(match.group(value))
            return match.group(0)

        def instance(match: re.Match[str]) -> str:
            if match.group(1):
                return self.pseudonym("instance", match.group(1))
            value = match.group(3)
            if _PSEUDO_START.match(value):
                return match.group(0)
            return match.group(2) + self.pseudonym("instance", value)

        text = _AWS_ACCOUNT.sub(aws, text)
        text = _GCP_PROJECT.sub(gcp, text)
        text = _AZURE_ID.sub(lambda m: m.group(1) + self._learn_account(m.group(2).lower()), text)
        return _INSTANCE.sub(instance, text)

    def _gpus(self, text: str) -> str:
        if "," in text and ("GPU-" in text or "NVIDIA" in text or "Tesla" in text):
            text = "\n".join(self._csv_serials(line) for line in text.split("\n"))
        text = _GPU_UUID.sub(
            lambda m: self.pseudonym("gpu-uuid", m.group(0), m.group(0).lower()), text
        )

        def serial(match: re.Match[str]) -> str:
            value = match.group(2)
            if _PSEUDO_START.match(value) or value.lower() in ("not", "none", "unknown"):
                return match.group(0)
            return match.group(1) + self.pseudonym("serial", value)

        return _SERIAL.sub(serial, text)

    def _csv_serials(self, line: str) -> str:
        if "," not in line or not ("GPU-" in line or "NVIDIA" in line or "Tesla" in line):
            return line
        return _CSV_NUMBER.sub(
            lambda m: m.group(0).replace(m.group(1), self.pseudonym("serial", m.group(1))), line
        )

    def _addresses(self, text: str) -> str:
        def mac(match: re.Match[str]) -> str:
            value = match.group(0)
            if set(value.lower()) <= {"0", ":", "-"} or set(value.lower()) <= {"f", ":", "-"}:
                return value
            return self.pseudonym("mac", value, value.lower().replace("-", ":"))

        def ipv6(match: re.Match[str]) -> str:
            whole = match.group(0)
            after = text[match.end() : match.end() + 1]
            if after and (after.isalnum() or after == "_"):
                return whole  # `c10d::Error`, `caffe2::Tensor`: C++ scopes, not addresses
            zone = match.group(1) or ""
            run = whole[: len(whole) - len(zone)].rstrip(".")
            tail = whole[len(run) :]
            if len(run) > 256:
                return whole  # no address is this long: a hex dump, not worth the search
            starts = [0] + [
                i + 1
                for i, c in enumerate(run)
                if c == ":" and run[i + 1 : i + 2] != ":" and (i == 0 or run[i - 1] != ":")
            ]
            for start in starts:
                candidate = run[start:]
                groups = [g for g in re.split(r"[:.]", candidate) if g]
                if len(groups) >= 2 and ":" in candidate and _valid_ip(candidate):
                    if candidate in _KEEP_IPS:
                        return whole
                    pseudonym = self.pseudonym("ip", candidate, _ip_key(candidate))
                    keep_zone = tail if not zone else tail.replace(zone, "", 1)
                    return run[:start] + pseudonym + keep_zone
            return whole

        def ipv4(match: re.Match[str]) -> str:
            value = match.group(1)
            if value in _KEEP_IPS or value.startswith("127."):
                return value
            if _VERSION_BEFORE.search(text[max(0, match.start() - 12) : match.start()]):
                return value
            return self.pseudonym("ip", value, value)

        text = _MAC.sub(mac, text)
        text = _IPV6_RUN.sub(ipv6, text)
        return _IPV4.sub(ipv4, text)

    def _users(self, text: str) -> str:
        def home(match: re.Match[str]) -> str:
            user = match.group(2)
            if match.group(1) == "~" and not user:
                return match.group(0)
            return match.group(1) + self._user_value(user)

        def context(match: re.Match[str]) -> str:
            return match.group(1) + self._user_value(match.group(2))

        def owner(match: re.Match[str]) -> str:
            user, group = match.group(2), match.group(4)
            shown_group = self._user_value(group) if group == user else group
            return match.group(1) + self._user_value(user) + match.group(3) + shown_group

        def user_at_host(match: re.Match[str]) -> str:
            if _PSEUDO_START.match(match.group(1)):
                return match.group(0)
            host = self.learn_host(match.group(2)) or match.group(2)
            return f"{self._user_value(match.group(1))}@{host}"

        text = _CURL_USER.sub(
            lambda m: (
                f"{m.group(1)}{self._user_value(m.group(2))}:{self._keep_or_secret(m.group(3))}"
            ),
            text,
        )
        text = _HOME.sub(home, text)
        text = _USER_CONTEXT.sub(context, text)
        text = _LS_OWNER.sub(owner, text)
        return _USER_AT_HOST.sub(user_at_host, text)

    def _host(self, name: str) -> str:
        if _PSEUDO_START.match(name):
            return name
        return self.learn_host(name) or name

    def _hosts(self, text: str) -> str:
        text = _NCCL_HOST.sub(lambda m: m.group(1) + self._host(m.group(2)), text)
        text = _SYSLOG_HOST.sub(lambda m: m.group(1) + self._host(m.group(2)), text)
        text = _PREFIX_HOST.sub(
            lambda m: (
                m.group(1) + self._host(m.group(2))
                if _has_digit_or_dash(m.group(2))
                else m.group(0)
            ),
            text,
        )
        text = _KV_HOST.sub(lambda m: m.group(1) + self._host(m.group(2)), text)
        text = _PROSE_HOST.sub(
            lambda m: (
                m.group(0)
                if text.startswith("://", m.end()) or text.startswith(":/", m.end())
                else m.group(1) + self._host(m.group(2))
            ),
            text,
        )
        text = _HOSTFILE.sub(lambda m: m.group(1) + self._host(m.group(2)), text)
        text = _HOST_PORT.sub(
            lambda m: (
                m.group(0).replace(m.group(1), self._host(m.group(1)))
                if _has_digit_or_dash(m.group(1))
                else m.group(0)
            ),
            text,
        )
        text = _AWS_HOST.sub(lambda m: self._host(m.group(0)), text)

        def fqdn(match: re.Match[str]) -> str:
            value = match.group(0)
            if _is_public(value) or _FILE_SUFFIX.search(value):
                return value
            return self._host(value)

        return _FQDN_RE.sub(fqdn, text)

    def _known(self, text: str) -> str:
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


def _valid_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _ip_key(value: str) -> str:
    return str(ipaddress.ip_address(value.split("%", 1)[0]))


def _has_digit_or_dash(token: str) -> bool:
    return any(c.isdigit() or c == "-" for c in token[1:])


def _looks_like_machine(label: str) -> bool:
    return len(label) >= 3 and any(c.isdigit() or c == "-" for c in label)


# --- the report transform ---------------------------------------------------------------------


def _evidence_hosts(report: Report) -> list[str]:
    hosts: list[str] = []
    items = [e for c in report.causes for e in c.evidence]
    if report.first_failure is not None:
        items.insert(0, report.first_failure)
    for item in items:
        if item.host and item.host not in hosts:
            hosts.append(item.host)
    return hosts


def _map_report(report: Report, fn: Callable[[str], str]) -> Report:
    def opt(value: str | None) -> str | None:
        return fn(value) if value is not None else None

    def evidence(item: Evidence) -> Evidence:
        context = getattr(item, "context", None)
        changes: dict[str, object] = {
            "path": fn(item.path),
            "text": fn(item.text),
            "note": opt(item.note),
            "host": opt(item.host),
        }
        if context:
            changes["context"] = tuple((n, fn(line)) for n, line in context)
        return dataclasses.replace(item, **changes)  # type: ignore[arg-type]

    def action(item: Action) -> Action:
        return Action(text=fn(item.text), command=opt(item.command))

    def cause(item: Cause) -> Cause:
        return dataclasses.replace(
            item,
            summary=fn(item.summary),
            evidence=tuple(evidence(e) for e in item.evidence),
            remediation=tuple(action(a) for a in item.remediation),
            next_checks=tuple(action(a) for a in item.next_checks),
            demoted_because=opt(item.demoted_because),
        )

    def status(item: InputStatus) -> InputStatus:
        return dataclasses.replace(item, path=fn(item.path), reason=opt(item.reason))

    first = report.first_failure
    return dataclasses.replace(
        report,
        causes=tuple(cause(c) for c in report.causes),
        inputs=tuple(status(i) for i in report.inputs),
        next_checks=tuple(action(a) for a in report.next_checks),
        first_failure=evidence(first) if first is not None else None,
        notes=tuple(fn(n) for n in report.notes),
    )


def redact_report(report: Report, redactor: Redactor | None = None) -> Report:
    """The report with every string redacted; `redactor` keeps the mapping for the caller.

    Two passes: the first only learns (hosts and users named in one string are then known in
    all), the second writes. Pseudonyms are numbered in order of first appearance.
    """
    redactor = redactor if redactor is not None else Redactor()
    for host in _evidence_hosts(report):
        redactor.learn_host(host)
    _map_report(report, redactor.text)
    return _map_report(report, redactor.text)


def mapping_json(redactor: Redactor) -> str:
    """The mapping as JSON text, pseudonym -> original, for the user's eyes only."""
    return json.dumps(redactor.mapping(), indent=2, ensure_ascii=False) + "\n"


def write_mapping(redactor: Redactor, path: str | os.PathLike[str]) -> None:
    """Write the mapping to `path`, readable by its owner only (it holds the originals)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
        stream.write(mapping_json(redactor))
