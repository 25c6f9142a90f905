"""Which launcher wrote a log: one record per tool, most specific first.

llamafactory-cli runs accelerate or torchrun, deepspeed runs its own launcher, torchrun may run
under slurm or mpirun, and every one of them runs Python: the first tool of `TOOLS` seen is
the one reported (`launcher.tool`), the others are listed in its `seen` attribute.
"""

from __future__ import annotations

from dataclasses import dataclass

from crashlens.text.literals import Gate


@dataclass(frozen=True, slots=True)
class Tool:
    """A launcher and how its lines name it."""

    name: str
    """The `launcher.tool` value."""
    says: Gate
    """Precise regexes of a line naming the tool, with the literals that gate them."""
    anchor: str = ""
    """The line-safe twin the scan looks for (no `\\b`, no `^`), when `says` is not one."""

    @property
    def scan_pattern(self) -> str:
        """What the scan looks for: `anchor`, or the precise pattern when that is line-safe."""
        return self.anchor or self.says.patterns[0].pattern


TOOLS: tuple[Tool, ...] = (
    Tool("llamafactory", Gate(r"llamafactory|llama_factory|LlamaFactory")),
    Tool(
        "accelerate",
        Gate(r"accelerate launch|accelerate/commands/|bin/accelerate\b"),
        anchor=r"accelerate launch|accelerate/commands/|bin/accelerate",
    ),
    # `.py` inside each branch: the gate's literals are then the file names, not `.py:`,
    # which glog prefixes and Python warnings print on most lines.
    Tool(
        "deepspeed",
        Gate(r"deepspeed\.launcher|\[(?:launch\.py|runner\.py|multinode_runner\.py):[0-9]+:"),
    ),
    Tool(
        "torchrun",
        Gate(r"torchrun|torch\.distributed\.(?:run|launch|elastic)|ChildFailedError"),
    ),
    Tool(
        "mpirun",
        Gate(r"\bmpirun\b|\bmpiexec\b|\bprterun\b"),
        anchor=r"mpirun|mpiexec|prterun",
    ),
    # The scan stops at `slurmstepd: ` / `srun: ` lines; on any line it stops at (`srun
    # torchrun ...` stops for torchrun), `srun` as a word names slurm. Written
    # `^slurmstepd: |\bsrun\b`, the same lines as `^(?:slurmstepd|srun): |\bsrun\b`: `re`
    # factors the `s` out of that one, which leaves its gate only `run`.
    Tool("slurm", Gate(r"^slurmstepd: |\bsrun\b"), anchor=r"slurmstepd: |srun: "),
    # Ray's own words: its exceptions' module and names, the raylet's line prefix, its
    # package's frames. A job that Ray runs (Ray Train, RLlib, vLLM's executor) reports a dead
    # worker or actor in these, and Ray's logs on that node hold the rest.
    Tool(
        "ray",
        Gate(
            r"ray\.exceptions\.|\(raylet(?:, ip=[^)\n]{1,64})?\)|ray/_private/|_raylet\.pyx"
            r"|Ray(?:Task|Actor)Error|ActorDiedError"
        ),
    ),
    Tool("python", Gate(r"Traceback \(most recent call last\)")),
)

TOOL_ANCHOR = "|".join(tool.scan_pattern for tool in TOOLS)
"""One anchor for every tool's lines (the handler then asks each tool's precise pattern)."""
TOOL_NAMES = tuple(tool.name for tool in TOOLS)
"""Every `launcher.tool` value, most specific first."""

HF_SPACES = "hf-spaces"
"""A Hugging Face Space (`platform_lines.py`)."""
COLAB = "colab"
"""A Google Colab notebook's runtime (`platform_lines.py`)."""
KAGGLE = "kaggle"
"""A Kaggle notebook's session (`platform_lines.py`)."""
PLATFORM_NAMES = (HF_SPACES, COLAB, KAGGLE)
"""Every `platform.name` value: where a job was hosted, when the platform's own lines say so."""
