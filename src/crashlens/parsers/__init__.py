"""The parser registry: one parser per input kind, in a fixed order (ties break on it)."""

from __future__ import annotations

from crashlens.model import InputKind
from crashlens.parsers.base import DocumentParser, LogParser, Parser
from crashlens.parsers.df import DfParser
from crashlens.parsers.dmesg import KernelLogParser
from crashlens.parsers.docker import DockerComposeParser, DockerInspectParser
from crashlens.parsers.ipcs import IpcsParser
from crashlens.parsers.launcher import LauncherParser
from crashlens.parsers.nvidia_smi import NvidiaSmiParser
from crashlens.parsers.plaintext import PlainTextParser
from crashlens.parsers.torchelastic import TorchElasticErrorParser
from crashlens.parsers.ulimit import UlimitParser

PARSERS: tuple[Parser, ...] = (
    TorchElasticErrorParser(),
    DockerInspectParser(),
    DockerComposeParser(),
    NvidiaSmiParser(),
    DfParser(),
    IpcsParser(),
    UlimitParser(),
    KernelLogParser(),
    LauncherParser(),
    PlainTextParser(),
)
"""Every parser, most specific first. Kept explicit: a handful of kinds reads better as a list."""


def register_all() -> tuple[Parser, ...]:
    """Return the parsers in registry order (imports the concrete parser modules)."""
    return PARSERS


def get_parser(kind: InputKind) -> Parser:
    """The parser for one kind."""
    for parser in PARSERS:
        if parser.kind == kind:
            return parser
    raise KeyError(kind)


__all__ = ["PARSERS", "DocumentParser", "LogParser", "Parser", "get_parser", "register_all"]
