"""Endings read from output that looks alarming and is not: JAX's backend probe lines (harmless
by their project's word: `tables/harmless_output.toml`) and Gradio's server-up lines (a server
going on). Lines of public reports other than the case that prompted each, and beside a real
failure, which must still count."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.mechanism_helpers import ending_of as _ending
from tests.mechanism_helpers import log_report as _report

from crashlens.decide.harmless_output import harmless_entry
from crashlens.model import Ending, Verdict

# google-deepmind/alphafold3#656 (no level marker) and #172, google-research/multinerf#12
JAX_PROBES = [
    "xla_bridge.py:841] Unable to initialize backend 'tpu': INTERNAL: Failed to open "
    "libtpu.so: libtpu.so: cannot open shared object file: No such file or directory",
    "I1204 13:13:42.884638 139807170155648 xla_bridge.py:895] Unable to initialize backend "
    "'rocm': module 'jaxlib.xla_extension' has no attribute 'GpuAllocatorConfig'",
    "I0808 20:59:00.842178 139857030612800 xla_bridge.py:328] Unable to initialize backend "
    "'tpu_driver': NOT_FOUND: Unable to find driver in registry given worker: ",
]


@pytest.mark.parametrize("line", JAX_PROBES)
def test_jaxs_backend_probe_lines_are_known_harmless(tmp_path: Path, line: str) -> None:
    entry = harmless_entry(line)
    assert entry is not None and entry.id == "jax-backend-probe-not-installed"
    report = _report(tmp_path, line + "\n")
    assert _ending(report) is Ending.ONGOING
    assert report.verdict is Verdict.NONE


def test_jaxs_cuda_backend_failing_is_not_in_the_catalog() -> None:
    # a GPU run that cannot use its GPU: JAX falls back to the CPU, a real failure
    assert harmless_entry("Unable to initialize backend 'cuda': FAILED_PRECONDITION") is None


def test_a_probe_line_does_not_hide_a_traceback_after_it(tmp_path: Path) -> None:
    text = (
        JAX_PROBES[1] + "\n"
        "Traceback (most recent call last):\n"
        '  File "run_alphafold.py", line 700, in <module>\n'
        "    main()\n"
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying "
        "to allocate 42949672960 bytes.\n"
    )
    report = _report(tmp_path, text)
    assert report.verdict is not Verdict.NONE


# oobabooga/text-generation-webui's compose output and Gradio's launch() lines
@pytest.mark.parametrize(
    "last",
    [
        "Running on local URL:  http://0.0.0.0:7860",
        "To create a public link, set `share=True` in `launch()`.",
    ],
)
def test_a_gradio_app_serving_is_going_on(tmp_path: Path, last: str) -> None:
    text = "Loading the model...\nRunning on local URL:  http://127.0.0.1:7860\n\n" + last + "\n"
    report = _report(tmp_path, text)
    assert _ending(report) is Ending.ONGOING
    assert report.verdict is Verdict.NONE
