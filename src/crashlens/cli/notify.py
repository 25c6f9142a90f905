"""`--notify URL`: POST a JSON document (a report, a scan's summary) to a web hook.

Standard library only. The post is best effort: a refused connection, a timeout or an HTTP
error is one line on stderr, and the command's exit status stays what the analysis made it
(a webhook that is down must not turn a report into a failed job step). The caller passes
what it has rendered, so a redacted report is posted redacted.
"""

from __future__ import annotations

import typer

from crashlens.cli.exits import ExitCode, fatal

NOTIFY_TIMEOUT_S = 10.0
"""Seconds the POST may take in all before it is given up."""


def check_notify_url(url: str | None) -> None:
    """Refuse (exit USAGE) a --notify value that is not an http(s) URL, before any work."""
    if url is not None and not url.lower().startswith(("http://", "https://")):
        fatal(f"--notify {url!r}: must be an http:// or https:// URL", ExitCode.USAGE)


def post_json(url: str, body: str, timeout: float = NOTIFY_TIMEOUT_S) -> bool:
    """POST `body` (JSON text) to `url`; False after printing why on stderr when it failed."""
    import urllib.error
    import urllib.request

    from crashlens import __version__

    request = urllib.request.Request(
        url,
        data=body.encode("utf-8"),
        method="POST",
        headers={
            "Content-Type": "application/json; charset=utf-8",
            "User-Agent": f"crashlens/{__version__}",
        },
    )
    shown = _without_secrets(url)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            response.read(1024)
    except urllib.error.HTTPError as error:
        typer.echo(f"crashlens: --notify {shown}: HTTP {error.code} {error.reason}", err=True)
        return False
    except (urllib.error.URLError, OSError, ValueError) as error:
        why = getattr(error, "reason", None) or error
        typer.echo(f"crashlens: --notify {shown}: not delivered ({why})", err=True)
        return False
    return True


def _without_secrets(url: str) -> str:
    """The URL's scheme and host only: a webhook's path and query often hold its token."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "the URL"
    return f"{parts.scheme}://{host}{port}/..."
