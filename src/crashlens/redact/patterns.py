"""The shapes the redactor looks for: secrets, personal values, host names, pseudonyms.

Compiled patterns, small constants and two address checks; what each match becomes is decided
in `crashlens.redact.replacements`. The fragments several patterns share (`_HOST_TOKEN`,
`_UUID`, ...) are written once here.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Final

from crashlens.redact.vocabulary import FILE_SUFFIXES, TLDS

# --- pseudonyms -------------------------------------------------------------------------------

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
"""A value the redactor wrote: never redacted again (redaction is idempotent)."""
PSEUDO_START: Final = re.compile(r"(?:" + "|".join(KINDS) + r")-\d+(?![\w-])")
"""A value that starts with a pseudonym (matched at the start, not searched)."""

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_FQDN = rf"{_LABEL}(?:\.{_LABEL})*\.(?:{'|'.join(TLDS)})"
_HOST_TOKEN = (
    r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?(?:-?\[[\d,-]+\](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)?"
)
_UUID = r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
_Q = r"(?:\\{0,3}[\"'])?"
"""An optional quote, escaped or not: JSON written inside a string (`\\"key\\": ...`)."""
_SEP = rf"{_Q}\s*[:=]\s*{_Q}"
"""Between a name and its value: `=`, `:`, quoted or not (`"project_id": "x"`, `X=y`)."""

FILE_SUFFIX: Final = re.compile(r"\.(?:" + "|".join(FILE_SUFFIXES) + r")$", re.IGNORECASE)
"""A name that ends like a file (`train.py`), so it is not a host."""
WORD: Final = re.compile(r"[A-Za-z_]+")
IP_SEPARATOR: Final = re.compile(r"[:.]")

# --- secrets --------------------------------------------------------------------------------

PEM = re.compile(
    r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)"
    r"(?:(.*?)(-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)|([^\n\"']*))",
    re.DOTALL,
)
"""A private key block: the markers stay (a key was there), the body goes."""
TOKENS = re.compile(
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
SLACK_HOOK = re.compile(r"(hooks\.slack\.com/(?:services|workflows|triggers)/)([A-Za-z0-9/_-]+)")
URL_USERINFO = re.compile(
    r"(?P<scheme>(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*+://)(?P<user>[^\s/@:?#\"'<>]*)"
    r"(?::(?P<pw>[^\s/@?#\"'<>]*))?@(?=[\w\[])"
)
URL_QUERY = re.compile(
    r"(?i)([?&;](?:access_token|id_token|refresh_token|token|api_key|apikey|key|sig|signature|"
    r"password|pass|secret|client_secret|code|auth|x-amz-signature|x-amz-credential|"
    r"x-amz-security-token|x-goog-signature|x-goog-credential|se|sv)=)([^&\s\"'#<>]+)"
)
AUTH_HEADER = re.compile(
    r"(?i)(\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?"
    r"(?:(?:bearer|basic|token|digest|apikey|negotiate|aws4-hmac-sha256)\s+)?)"
    r"([^\s\"',;]+(?:,\s*(?:SignedHeaders|Signature)=[^\s\"',;]+)*)"
)
ALWAYS_SECRET = re.compile(r"password|passwd|pwd|passphrase|secret", re.IGNORECASE)
"""A secret name that holds a secret whatever its value looks like (`pwd=abc`)."""
_SECRET_NAME = (
    r"(?:[A-Za-z0-9]+[_.-])*(?:[A-Za-z]{1,12}(?=pass|PASS|Pass|secret|SECRET|Secret))?"
    r"(?:password|passwd|pwd|passphrase|secret|token|api[_-]?key|apikey|"
    r"access[_-]?key(?:[_-]?id)?|secret[_-]?(?:access[_-]?)?key|private[_-]?key(?:[_-]?id)?|"
    r"credentials?|client[_-]?secret|session[_-]?token|auth|auth[_-]?token|accountkey|"
    r"sharedaccesskey|sharedaccesssignature|"
    r"webhook(?:[_-]?url)?|signing[_-]?key|dsn|world_info)"
)
KEY_VALUE = re.compile(
    rf"(?i)(?<![A-Za-z0-9_.-])(?P<name>{_SECRET_NAME})(?P<sep>[\"']?\s*(?:=|:)\s*|\\+\"\s*:\s*)"
    r"(?P<value>\\+\"(?:[^\\\n]|\\+[^\"\\\n])*?\\+\"|\"[^\"\n]*\"|'[^'\n]*'|[^\s,;&\"'<>)\]}]+)"
)
CLI_FLAG = re.compile(
    rf"(?i)(--(?P<name>{_SECRET_NAME})(?:=|\s+))(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']+)"
)
NOT_SECRET_NAMES = re.compile(
    r"(?i)^(?:pad|eos|bos|unk|sep|cls|mask|start|end|image|video|audio|chat|special|"
    r"decoder_start|additional_special|max|num|total|n|use|hub|allow|trust_remote)[_.-]token$"
    r"|^(?:use_auth|.*_file|.*_path|.*_dir)$"
)
WANDB_LOGIN = re.compile(r"(?i)(\bwandb\s+login\s+(?:--\S+\s+)*)([A-Za-z0-9_-]{20,})")
NETRC = re.compile(r"(?i)(\bmachine\s+\S+\s+login\s+)(\S+)(\s+password\s+)(\S+)")
HIGH_ENTROPY = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/]{40,}={0,2}(?![A-Za-z0-9+/=_-])")
PLACEHOLDER = re.compile(
    r"^(?:|\*+|x+|X+|\.\.\.|…|none|null|nil|true|false|redacted|\[redacted\]|<[^>]*>|"
    r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{[^}]*\}\}|%\([^)]*\)s|\{[a-z_]*\}|n/a)$",
    re.IGNORECASE,
)

# --- personal values --------------------------------------------------------------------------

EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}"
    r"(?![A-Za-z0-9-])"
)
AWS_ACCOUNT = re.compile(
    r"(arn:aws[\w-]*:[\w-]+:[\w-]*:)(\d{12})(?=:)"
    r"|(?<!\d)(\d{12})(?=\.dkr\.ecr\.)"
    rf"|(?i:((?<![A-Za-z])(?:aws[_-]?)?account(?:[_ -]?id)?{_SEP}))(\d{{12}})(?!\d)"
)
BUCKET_ACCOUNT = re.compile(
    r"(?i)((?:s3[an]?|gs)://[a-z0-9.-]*?(?<![a-z0-9])|(?<![\w.-])"
    r"(?>[a-z0-9.-]*?(?<![a-z0-9])(?=\d{12}(?![a-z0-9])))(?=[a-z0-9.-]*\.s3[.-]))"
    r"(\d{12})(?![a-z0-9])"
)
"""An AWS account id inside a bucket name (`s3://sagemaker-us-west-2-<account>/`).

In a bucket host name (`<name>.s3.`) the first place that holds the id is taken or none is:
the `.s3.` look-ahead only loses ground further on, so the atomic group keeps the name from
being tried again at every later place (which made a long name cost quadratic time)."""
CLOUD_LABEL = re.compile(
    r"(?i)(?<![\w.-])([a-z0-9][a-z0-9-]{1,62})(?=\.(?:"
    r"(?:blob|file|queue|table|dfs|web|z\d+\.web)\.core\.windows\.net|servicebus\.windows\.net|"
    r"database\.windows\.net|redis\.cache\.windows\.net|vault\.azure\.net|azurecr\.io|"
    r"azurewebsites\.net|(?:openai|cognitiveservices|documents)\.azure\.com|"
    r"(?:postgres|mysql)\.database\.azure\.com|azuredatabricks\.net|cloud\.databricks\.com|"
    r"s3(?:[.-][a-z0-9-]+)?\.amazonaws\.com|storage\.googleapis\.com|appspot\.com|run\.app|"
    r"cloudfunctions\.net|firebaseio\.com|snowflakecomputing\.com)(?![\w-]))"
)
"""The customer's label under a public cloud service name: a storage account, a bucket, a
vault, a registry (`<account>.blob.core.windows.net`): the service is public, the label is not."""
GCP_PROJECT = re.compile(
    r"(\bprojects/)([a-z][a-z0-9-]{4,28}[a-z0-9])(?=[/\s\"'\\]|$)"
    r"|(\bgcr\.io/|-docker\.pkg\.dev/)([a-z][a-z0-9-]{4,28}[a-z0-9])(?=/)"
    rf"|(?i:((?<![A-Za-z])(?:gcp_|google_cloud_|gcloud_)?project(?:[_-]?id)?{_SEP}))"
    r"([a-z][a-z0-9-]{4,28}[a-z0-9])(?![\w-])"
)
AZURE_ID = re.compile(
    r"(?i)((?:\bsubscriptions/|\btenants/|microsoftonline\.com/|--(?:tenant|subscription)[= ]\s*|"
    r"(?<![A-Za-z])(?:subscription|tenant|vm|client|object|principal|app|application)[_-]?id"
    rf"{_SEP}))({_UUID})"
)
CLIENT_ID = re.compile(rf"(?i)((?<![A-Za-z])client[_-]?id{_SEP})(\d{{15,25}})(?!\d)")
"""A GCP service account's numeric client id."""
INSTANCE = re.compile(
    r"(?<![\w-])(i-[0-9a-f]{17}|i-[0-9a-f]{8})(?![\w-])"
    rf"|(?i:((?<![A-Za-z])instance[_-]?id{_SEP}))([\w-]{{8,}})"
)
GPU_UUID = re.compile(rf"\b(?:GPU|MIG)-{_UUID}\b")
SERIAL = re.compile(
    r"(?i)(\b(?:board[_ ]|system[_ ]|chassis[_ ])?serial(?:[_ ]?(?:number|num|no))?"
    r"[\"']?\s*[:=]\s*[\"']?|<serial>\s*)([A-Za-z0-9][A-Za-z0-9-]{4,})"
)
GPU_CSV_LINE = re.compile(r"(?m)^(?=[^\n]*,)(?=[^\n]*(?:GPU-|NVIDIA|Tesla))[^\n]*")
"""A line of `nvidia-smi --query-gpu --format=csv` output, where serials stand bare."""
CSV_NUMBER = re.compile(r"(?:(?<=,)|(?<=^))\s*(\d{10,16})\s*(?=,|$)")
MAC = re.compile(
    r"(?<![0-9A-Fa-f:.-])[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(?:\1[0-9A-Fa-f]{2}){4,18}"
    r"(?![0-9A-Fa-f:-])"
)
IPV6_RUN = re.compile(r"(?<![0-9A-Fa-f:.])[0-9A-Fa-f:.]*:[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*(%[\w.-]+)?")
IB_GUID = re.compile(
    r"(?i)((?<![A-Za-z])(?:node|port|system[ _]image|sys_image|image|switch)?[ _]?guid"
    r"[\"']?\s*+(?:[:=]\s*+)?)"
    r"(0x[0-9a-f]{16}|[0-9a-f]{4}(?::[0-9a-f]{4}){3})(?![0-9a-f:])"
    r"|(?<![0-9A-Fa-f:.])([0-9a-f]{4}(?::[0-9a-f]{4}){3})(?![0-9A-Fa-f:])"
)
"""InfiniBand node, port and system image GUIDs (`Node GUID: 0x...`, `node_guid: b859:9f03:...`)."""
"""A run of hex digits, colons and dots holding 2+ colons; the address is its longest valid tail
(NCCL writes `ib0:fd00::18`, so the run can start inside an interface name)."""
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
IPV4 = re.compile(rf"(?<![\w.])((?:{_OCTET}\.){{3}}{_OCTET})(?![\w]|\.\d)")
VERSION_BEFORE = re.compile(
    r"(?i)(?:(?:version|ver|v|release|driver|build|firmware|fw|bios|cudnn|cublas\w*|cusparse|"
    r"cusolver|cufft|curand|tensorrt|trt|nccl|cuda|nvjitlink|nvrtc|torch|triton|onnx\w*|openmpi|"
    r"ucx|ofed|mlnx\w*|libnvinfer\w*|libcudnn\w*)\s*+(?:[:=]\s*+)?|==|>=|<=|~=|!=|[-_])$"
)
"""What stands before a four-part version (`cuDNN 8.9.2.26`, `cu12-12.1.3.1`), not an address."""
KEEP_IPS = frozenset({"0.0.0.0", "127.0.0.1", "255.255.255.255", "::", "::1"})
"""Addresses that name no machine: kept as they are."""


def is_ip(value: str) -> bool:
    """Whether `value` is an IPv4 or IPv6 address (an IPv6 zone `%ib0` allowed)."""
    return _address(value.split("%", 1)[0]) is not None


def ip_key(value: str) -> str:
    """The address written one way (`fd00:0::18` and `fd00::18` get one pseudonym)."""
    key = _address(value.split("%", 1)[0])
    if key is None:
        raise ValueError(f"not an address: {value[:64]!r}")
    return key


_ADDRESSES: dict[str, str | None] = {}
"""`_address` answers: a log names the same few addresses on thousands of lines, and parsing
one with `ipaddress` costs more than the regex that found it."""
_ADDRESS_LENGTH = 64
"""Longer text is no address (45 characters at most): answered without being remembered."""
_MAX_ADDRESSES = 65536
_ADDRESS_CHARACTERS = frozenset("0123456789abcdefABCDEF.:")
"""All an address without its zone is written with (`ipaddress` takes decimal octets and
hexadecimal groups): a text with any other character, a host name most often, is none, and
is answered without `ipaddress` raising its error (the dearest part of learning a new host)."""


def _address(text: str) -> str | None:
    """`text` as `ipaddress` writes it, or None when it is no address."""
    if not _ADDRESS_CHARACTERS.issuperset(text):
        return None
    if text in _ADDRESSES:
        return _ADDRESSES[text]
    try:
        # what `ipaddress.ip_address` gives, without its failed IPv4 attempt (an exception)
        # on every IPv6 text: no IPv4 address holds a colon, and every IPv6 one does
        parsed = ipaddress.IPv6Address(text) if ":" in text else ipaddress.IPv4Address(text)
        found: str | None = str(parsed)
    except ValueError:
        found = None
    if len(text) <= _ADDRESS_LENGTH:
        if len(_ADDRESSES) >= _MAX_ADDRESSES:
            _ADDRESSES.clear()
        _ADDRESSES[text] = found
    return found


HOME = re.compile(
    r"((?:/home|/homes|/Users|/users|/people|/usr/home|/export/home|/u|/scratch|/mnt/home)/|[A-Za-z]:(?:\\\\|\\)Users"
    r"(?:\\\\|\\)|(?<![\w:~])(~))([A-Za-z_][A-Za-z0-9._-]{0,31})"
    r"(?(2)(?=[/\\\s\"']|$)|(?=[/\\\s\"':,)\]]|$))"
)
"""A user's home folder: the name after a home root, or after `~` (a shell's `~alice/`). The `~`
form stands where a path does (not after a word or `::`) and ends as a path segment does, so a
C++ destructor (`[~FindDbRecord]`, `Foo::~Foo`) is not a user."""
USER_CONTEXT = re.compile(
    r"(\b(?:USER|LOGNAME|USERNAME|SUDO_USER|SLURM_JOB_USER|PBS_O_LOGNAME|HF_USER|"
    r"JUPYTERHUB_USER|GIT_AUTHOR_NAME|GIT_COMMITTER_NAME|WANDB_ENTITY|WANDB_USERNAME)"
    r"[\"']?\s*[=:]\s*[\"']?|--wandb[_-]entity[= ]|--entity[= ]"
    # not a path's last segment (`mkdir /home/user: permission denied` names no user)
    r"|(?<![/\\])(?i:\buser(?:[_ ]?name)?[\"']?\s*[=:]\s*[\"']?)"
    r"|\bUserId=|\buid=\d+\(|\bgid=\d+\(|\bfor user |\bowned by (?:user )?)"
    r"([A-Za-z_][A-Za-z0-9._-]{0,31})(?![\w.:-])"
)
CURL_USER = re.compile(r"((?:\s-u\s*|--user[= ]|--username[= ])[\"']?)([^\s:\"']+):([^\s\"']+)")
LS_OWNER = re.compile(
    r"(?m)^([-dlcbps][rwxsStT-]{9}[.+@]?\s+\d+\s+)([A-Za-z_][\w.-]*)(\s+)([A-Za-z_][\w.-]*)(?=\s+\d)"
)
USER_AT_HOST = re.compile(
    r"(?<![\w.@/-])([a-z_][a-z0-9_.-]{0,31})@([A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])(?![\w.@-])"
)

# --- host names -------------------------------------------------------------------------------

NCCL_AFTER = re.compile(r":\d+:\d+ \[\d+\]")
"""What follows an NCCL host name (`:pid:tid [rank]`): NCCL_HOST's look-ahead."""
NCCL_HOST = re.compile(rf"(?m)(^|[\s\]>|])({_HOST_TOKEN})(?={NCCL_AFTER.pattern})")
SYSLOG_HOST = re.compile(
    r"(?m)^((?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:?\d\d)?)"
    rf" )({_HOST_TOKEN})(?= (?:kernel|systemd|[\w./-]+(?:\[\d+\])?):)"
)
PREFIX_HOST = re.compile(r"(?m)^([ \t]*+)([a-z][a-z0-9-]*+)(?=: )")
KV_HOST = re.compile(
    r"(?i)((?<![A-Za-z0-9])(?:host[ _-]?name|hostname|host|node[ _-]?name|nodename|"
    r"master[_ -]?addr(?:ess)?|slurmd_nodename|nodelist|batchhost|alloc_node|submit_host|"
    r"launch_node_ipaddr|srun_comm_host|topology_addr|rdzv[_-]?endpoint|k8s_node|node_ip|pod_ip|"
    r"host_ip|pbs_o_host|control_?machine|slurmctld_?host)[\"']?"
    r"\s*[=:]\s*[\"']?|--(?:master[_-]addr|rdzv[_-]endpoint|host|hostname|node)[= ])"
    rf"({_HOST_TOKEN})"
)
PROSE_HOST = re.compile(
    r"(?i)(\b(?:on|from|to|at|of) (?:host|node|machine|server) |\bconnect to host "
    r"|\bresolve host(?:name)?:? |\bunknown host:? |\bconnect to \(|\bconnect to \[|"
    r"\bconnecting to |\bconnection to |\bhostfile\s+|virtualMachines/|\bpdsh@)"
    rf"({_HOST_TOKEN})"
)
DB_CLI_HOST = re.compile(
    r"(\b(?:mysql\w*|mariadb\S*|psql|pg_dump|pg_restore|pg_isready|redis-cli|mongo\w*|"
    r"clickhouse-client|memcstat)\b[^\n|;&]*?\s-h\s*)([A-Za-z0-9][A-Za-z0-9._-]*)"
)
"""The server a database client connects to (`mysql -h db-2`, `redis-cli -h cache-5`)."""
SCHED_ACCOUNT = re.compile(
    r"(?i)((?<![A-Za-z0-9])(?:slurm_job_account|slurm_account|sbatch_account|salloc_account|"
    r"pbs_account|lsb_project_name)\s*[=:]\s*[\"']?|#sbatch\s+(?:--account[= ]|-A\s*))"
    r"([A-Za-z0-9][\w.-]*)"
)
"""The scheduler account a job is billed to (a team or a grant)."""
WANDB_ENTITY = re.compile(
    r"(?i)(logged in as:?\s+)([\w.-]+)(?:(\s+\()([\w.-]+)(?=\)))?"
    r"|((?<![\w.])(?:api\.)?wandb\.ai/(?:links/)?)"
    r"(?!(?:site|authorize|settings|home|login|signup|api|links|fully-connected|wandb)/)([\w.-]+)(?=/)"
)
"""W&B users and entities (teams): `logged in as: USER (ENTITY)`, `wandb.ai/ENTITY/...`."""
DB_CLIENT = re.compile(
    r"\b(?:(mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb(?:-dump)?)|"
    r"(redis-cli|sshpass)|(sqlcmd))\b"
)
"""A database client that takes a password on its command line; the group that matched is
its family (1: `-pSECRET`, 2: `-a SECRET`/`-p SECRET`, 3: `-P SECRET`)."""
DB_CLI_PASSWORD = re.compile(DB_CLIENT.pattern + r"[^\n]*+")
"""A line from its first database client on: `replacements._db_cli` finds the passwords
(`mysql -pSECRET`, `redis-cli -a SECRET`). One regex that scanned from every client name to
the end of its command for a flag with a value cost quadratic time on `mysql  -p ` repeated."""
DB_CLI_FLAG: Final = (
    re.compile(r"\s-p"),
    re.compile(r"\s-[ap]"),
    re.compile(r"\s-P"),
)
"""The password flag of each family (`DB_CLIENT`'s groups), at a space."""
DB_CLI_VALUE: Final = (
    re.compile(r"([^\s'\"]+|'[^'\n]*'|\"[^\"\n]*\")"),
    re.compile(r"\s*+([^\s'\"-][^\s'\"]*|'[^'\n]*'|\"[^\"\n]*\")"),
    re.compile(r"\s*+([^\s'\"]+|'[^'\n]*'|\"[^\"\n]*\")"),
)
"""The password after each family's flag (mysql's right after `-p`, with no space)."""
DB_CLI_COMMAND_END = re.compile(r"[\n|;&]")
"""Where a command ends: a client's flag is looked for before it (its value may run on, quoted)."""
CONN_STRING = re.compile(
    r"(?i)((?<![\w-])(?P<name>user id|userid|uid|username|user|server|data source|address|"
    r"addr|network address|accountname)\s*=\s*)(?P<value>[^;\"'\s]+)(?=\s*;)"
)
"""Fields of a connection string (`Server=...;User ID=...;AccountName=...;`)."""
HOST_PORT = re.compile(r"(?<![\w.:/@-])\[?([A-Za-z][A-Za-z0-9-]*+)\]?(?=:[1-9]\d{1,4}\b)")
HOSTFILE = re.compile(r"(?m)^(\s*)([A-Za-z0-9][\w.-]*)(?=\s+slots\s*=)")
AWS_HOST = re.compile(r"(?<![\w-])ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}(?:\.[\w.-]+)?(?![\w-])")
FQDN_RE = re.compile(rf"(?i)(?<![\w.@-])(?:(?<=://)|(?<!/)){_FQDN}(?![\w-]|\.\w)")
CONSTANT_NAME = re.compile(r"\A[A-Z][A-Z0-9]*+(?:_[A-Z0-9]++)++\Z")
"""An upper-case name joined by underscores (`CUDA_ERROR_OUT_OF_MEMORY`, `NCCL_SOCKET_IFNAME`):
an error code, an enum or a variable where a host was expected (`bytes on host:
CUDA_ERROR_OUT_OF_MEMORY`); DNS names hold no underscore."""
NOT_HOST = re.compile(
    # `default<N>`: torchrun's role (`default`) and local rank, as its `--tee` prefix writes them
    # (`[default0]:<line>`)
    r"(?i)^(?:rank|local_rank|node_rank|worker|default|cuda|device|gpu|step|epoch|iter|c10d|utf-8|"
    r"x86-64|x86_64|sha\d++|md5|http|https|tcp|udp|file|line|pid|tid|port|nccl|mlx5|eth|ib|"
    r"sm_?\d++|compute|error|warning|info|debug|o2ib|tcp|rdma|verbs)\d*$"
)
