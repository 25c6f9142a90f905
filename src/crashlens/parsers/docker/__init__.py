"""`docker inspect` / `podman inspect` JSON and docker-compose YAML: how a container was started.

`inspect` and `compose` each hold one parser and the list of facts it gives; `common` holds
what they share (/dev/shm conventions, cleaning a paste). The general readers they use live in
`crashlens.text`: `tolerant_json`, `mini_yaml` and `sizes`.
"""

from __future__ import annotations

from crashlens.parsers.docker.compose import DockerComposeParser
from crashlens.parsers.docker.inspect import DockerInspectParser

__all__ = ["DockerComposeParser", "DockerInspectParser"]
