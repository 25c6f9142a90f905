"""Tests for the nvidia-smi parser over every shared sample, plus bad and truncated input."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.model import Fact, FactValue
from crashlens.parsers.base import DocumentResult
from crashlens.parsers.nvidia_smi import NvidiaSmiParser
from crashlens.text.ids import normalize_pci

from conftest import SAMPLES, sample_text

PARSER = NvidiaSmiParser()
FOLDER = "nvidia_smi"
ALL_SAMPLES = sorted(p.name for p in (SAMPLES / FOLDER).iterdir() if p.is_file())


def parse(name: str) -> DocumentResult:
    """Parse one shared sample."""
    return PARSER.parse(sample_text(f"{FOLDER}/{name}"), f"{FOLDER}/{name}")


def facts(result: DocumentResult, key: str, **attrs: FactValue) -> list[Fact]:
    """The facts with this key whose attrs include every given (name, value)."""
    return [
        f
        for f in result.facts
        if f.key == key and all(f.attr(name) == value for name, value in attrs.items())
    ]


def one(result: DocumentResult, key: str, **attrs: FactValue) -> Fact:
    """Exactly one matching fact."""
    found = facts(result, key, **attrs)
    assert len(found) == 1, (key, attrs, found)
    return found[0]


# --- every sample ------------------------------------------------------------------------------


def test_samples_present() -> None:
    assert len(ALL_SAMPLES) >= 30


@pytest.mark.parametrize("name", ALL_SAMPLES)
def test_every_sample_sniffs_and_parses(name: str) -> None:
    text = sample_text(f"{FOLDER}/{name}")
    assert NvidiaSmiParser.sniff(text[:65536]) >= 0.5
    result = PARSER.parse(text, name)
    assert result.facts, name
    assert all(isinstance(f.value, str | int | float | bool) for f in result.facts)


@pytest.mark.parametrize("name", [n for n in ALL_SAMPLES if n.startswith(("table_", "q_", "qx_"))])
def test_banner_formats_sniff_certain(name: str) -> None:
    assert NvidiaSmiParser.sniff(sample_text(f"{FOLDER}/{name}")[:65536]) == 1.0


@pytest.mark.parametrize("name", [n for n in ALL_SAMPLES if n.startswith("table_")])
def test_table_facts_carry_their_line(name: str) -> None:
    text = sample_text(f"{FOLDER}/{name}")
    lines = text.split("\n")
    for f in parse(name).facts:
        assert f.lineno is not None, f
        assert lines[f.lineno - 1].rstrip("\r") == f.text, f


# expected: driver version, cuda version (None = absent), gpu count
VERSIONS: dict[str, tuple[str, str | None, int]] = {
    "table_384.66_pre_mig_no_cuda_version_old_process_header_REPRO.txt": ("384.66", None, 1),
    "table_470.82.01_p100_legacy_layout_no_processes.txt": ("470.82.01", "11.4", 1),
    "table_470_legacy_2xv100_err_power_REPRO.txt": ("470.82.01", "11.4", 2),
    "table_525.125.06_err_fan_no_trailing_newline.txt": ("525.125.06", "12.0", 1),
    "table_525_legacy_8xa100_training_processes_REPRO.txt": ("525.105.17", "12.0", 8),
    "table_535.161.07_rtx3090_87col_empty_process_list.txt": ("535.161.07", "12.2", 1),
    "table_550.90.07_8xh100_no_processes.txt": ("550.90.07", "12.4", 8),
    "table_570.133.20_8xh200_no_processes.txt": ("570.133.20", "12.8", 8),
    "table_580_8xb200_hang_mem_truncated_REPRO.txt": ("580.95.05", "13.0", 8),
    "table_590.48.01_h100_load_processes.txt": ("590.48.01", "13.1", 1),
    "table_590.48.01_h100_mig_load_processes.txt": ("590.48.01", "13.1", 1),
    "table_590.48.01_h200_mig_idle.txt": ("590.48.01", "13.1", 1),
    "table_595.71.05_rtx2080s_load_processes.txt": ("595.71.05", "13.2", 1),
    "table_610.62_windows_wddm_kmd_header.txt": ("610.62", "13.3", 1),
    "table_610_err_fan_na_power_REPRO.txt": ("610.43.02", "13.2", 2),
    "q_460.32.03_8xa100.txt": ("460.32.03", "11.2", 8),
    "q_535.154.05_8xh100.txt": ("535.154.05", "12.2", 8),
    "q_535.183.01_h100_truncated_bad_indent.txt": ("535.183.01", "12.2", 8),
    "q_590.48.01_h100_mig.txt": ("590.48.01", "13.1", 1),
    "q_610.57.04_rtx2080s.txt": ("610.57.04", "13.3", 1),
    "qx_a100-sxm4-v12.xml": ("535.54.03", "12.2", 4),
    "qx_quadro-p400.xml": ("418.43", "10.1", 1),
    "qx_rtx-3080-v13.xml": ("595.58.03", "13.2", 1),
    "qx_tesla-t4.xml": ("515.105.01", "11.7", 1),
}


@pytest.mark.parametrize("name", sorted(VERSIONS))
def test_versions_and_gpu_count(name: str) -> None:
    driver, cuda, count = VERSIONS[name]
    result = parse(name)
    assert one(result, "nvidia_smi.driver_version").value == driver
    cudas = facts(result, "nvidia_smi.cuda_version")
    assert [f.value for f in cudas] == ([cuda] if cuda else [])
    assert one(result, "nvidia_smi.gpu_count").value == count
    assert not facts(result, "nvidia_smi.error")


def test_every_sample_has_expectations() -> None:
    covered = (
        set(VERSIONS)
        | set(ERRORS)
        | {
            "csv_query_compute_apps_590.48.01_h100_mig.csv",
            "csv_query_gpu_all_fields_590.48.01_h100.csv",
            "csv_query_gpu_ecc_remap_gpu_requires_reset_REPRO.csv",
            "csv_query_gpu_noheader_nounits_REPRO.csv",
            "csv_query_gpu_retired_remapped_azhpc.csv",
            "list_L_590.48.01_h100_mig.txt",
            "topo_m_590.48.01_single_gpu_ansi.txt",
            "topo_m_8gpu_nv18_10nic.txt",
        }
    )
    assert set(ALL_SAMPLES) <= covered, set(ALL_SAMPLES) - covered


# --- default table -----------------------------------------------------------------------------


def test_table_memory_and_identity_8xa100() -> None:
    result = parse("table_525_legacy_8xa100_training_processes_REPRO.txt")
    used = one(result, "gpu.memory_used_mib", index=2)
    assert used.value == 68925
    assert used.attr("total_mib") == 81920
    assert used.attr("pci") == "0000:51:00.0"
    assert used.lineno == 18
    percent = one(result, "gpu.memory_used_percent", index=2)
    assert percent.value == pytest.approx(84.14, abs=0.01)
    assert one(result, "gpu.name", index=5).attr("pci") == "0000:BD:00.0"
    assert one(result, "gpu.ecc_uncorrected", index=7).value == 0
    proc = one(result, "gpu.process", pid=125897)
    assert proc.value == "...envs/train/bin/python"
    assert proc.attr("index") == 5
    assert proc.attr("used_mib") == 62831
    assert proc.lineno == 52


def test_table_err_power_on_one_gpu() -> None:
    result = parse("table_470_legacy_2xv100_err_power_REPRO.txt")
    err = one(result, "gpu.err_field")
    assert err.value == "power.draw"
    assert err.attr("index") == 1
    assert err.attr("label") == "Pwr:Usage"
    assert err.attr("pci") == "8ED0:00:00.0"
    assert err.lineno == 14
    assert "ERR! / 250W" in err.text
    assert one(result, "gpu.name", index=0).attr("pci") == "4A5B:00:00.0"


@pytest.mark.parametrize(
    "name",
    ["table_525.125.06_err_fan_no_trailing_newline.txt", "table_610_err_fan_na_power_REPRO.txt"],
)
def test_table_err_fan(name: str) -> None:
    result = parse(name)
    err = one(result, "gpu.err_field")
    assert (err.value, err.attr("index"), err.attr("sentinel")) == ("fan.speed", 0, "ERR!")
    assert err.text.startswith("|ERR!")


def test_table_no_trailing_newline_memory() -> None:
    result = parse("table_525.125.06_err_fan_no_trailing_newline.txt")
    used = one(result, "gpu.memory_used_mib", index=0)
    assert (used.value, used.attr("total_mib")) == (2021, 23028)
    assert result.warnings == ()


def test_table_384_old_process_header() -> None:
    result = parse("table_384.66_pre_mig_no_cuda_version_old_process_header_REPRO.txt")
    assert one(result, "gpu.name").value == "TITAN Xp"
    assert one(result, "gpu.memory_used_mib").value == 2789
    xorg = one(result, "gpu.process", pid=1568)
    assert (xorg.value, xorg.attr("type"), xorg.attr("used_mib")) == (
        "/usr/lib/xorg/Xorg",
        "G",
        1850,
    )
    assert one(result, "gpu.process", pid=3691).value == "python"
    assert not facts(result, "gpu.ecc_uncorrected")  # the ECC cell says N/A


def test_table_truncated_process_memory() -> None:
    result = parse("table_580_8xb200_hang_mem_truncated_REPRO.txt")
    proc = one(result, "gpu.process", pid=2709700)
    assert proc.attr("used_mib") is None
    assert proc.attr("used_text") == "10052..."
    assert one(result, "gpu.process", pid=2709701).attr("used_mib") == 98218
    assert one(result, "gpu.memory_used_mib", index=0).value == 100536
    assert len(facts(result, "gpu.process")) == 8


def test_table_windows_wddm() -> None:
    result = parse("table_610.62_windows_wddm_kmd_header.txt")
    assert one(result, "nvidia_smi.driver_version").attr("label") == "KMD"
    assert one(result, "gpu.name").value == "NVIDIA GeForce RTX 2080 ..."
    procs = facts(result, "gpu.process")
    assert len(procs) == 21
    overlay = facts(result, "gpu.process", pid=15964)[0]
    assert overlay.value == "...IA App\\CEF\\NVIDIA Overlay.exe"
    assert overlay.attr("type") == "C+G"
    assert overlay.attr("used_mib") is None


def test_table_mig_slices_and_processes() -> None:
    result = parse("table_590.48.01_h100_mig_load_processes.txt")
    assert one(result, "gpu.mig_mode").value == "Enabled"
    slice0 = one(result, "gpu.mig_memory_used_mib", mig_dev="0")
    assert (slice0.value, slice0.attr("total_mib"), slice0.attr("gi")) == (11091, 40448, "2")
    burn = one(result, "gpu.process", pid=21198)
    assert (burn.value, burn.attr("gi"), burn.attr("used_mib")) == ("./gpu_burn", "2", 7484)


def test_table_no_processes_found() -> None:
    result = parse("table_550.90.07_8xh100_no_processes.txt")
    assert not facts(result, "gpu.process")
    assert one(result, "gpu.name", index=1).attr("pci") == "0000:3B:00.0"
    assert one(result, "gpu.memory_used_mib", index=7).attr("total_mib") == 81559


def test_table_crlf_and_ansi() -> None:
    text = sample_text(f"{FOLDER}/table_470_legacy_2xv100_err_power_REPRO.txt")
    text = "\x1b[1m" + text.replace("\n", "\r\n")
    result = PARSER.parse(text, "crlf")
    assert one(result, "nvidia_smi.driver_version").value == "470.82.01"
    assert one(result, "gpu.err_field").value == "power.draw"
    assert len(facts(result, "gpu.process")) == 2


def test_half_a_table() -> None:
    text = sample_text(f"{FOLDER}/table_525_legacy_8xa100_training_processes_REPRO.txt")
    half = "\n".join(text.split("\n")[:13])  # stops after GPU 1's first row
    result = PARSER.parse(half, "half")
    assert one(result, "nvidia_smi.gpu_count").value == 2
    assert one(result, "gpu.memory_used_mib", index=0).value == 65759
    assert not facts(result, "gpu.memory_used_mib", index=1)
    assert any("truncated" in w for w in result.warnings)
    assert NvidiaSmiParser.sniff(half) == 1.0


# --- nvidia-smi -q -----------------------------------------------------------------------------


def test_query_460_identity_and_memory() -> None:
    result = parse("q_460.32.03_8xa100.txt")
    name = one(result, "gpu.name", index=0)
    assert name.value == "A100-SXM4-40GB"
    assert name.attr("pci") == "0001:00:00.0"
    assert name.attr("serial") == "1323120035212"
    assert name.attr("uuid") == "GPU-b01e9f90-c60c-4ad1-2052-154833662357"
    used = one(result, "gpu.memory_used_mib", index=0)
    assert (used.value, used.attr("total_mib"), used.lineno) == (0, 40536, 78)
    assert len(facts(result, "gpu.ecc_uncorrected", scope="aggregate")) == 8
    pending = one(result, "gpu.remapped_rows_pending", index=3)
    assert pending.value is False
    assert "Pending" in pending.text
    assert one(result, "gpu.remapping_failure", index=3).value is False
    assert not facts(result, "gpu.retired_pages_pending")  # N/A on A100


def test_query_535_processes() -> None:
    result = parse("q_535.154.05_8xh100.txt")
    proc = one(result, "gpu.process", pid=1102861)
    assert proc.value == "/opt/lepton/venv/bin/python3.10"
    assert (proc.attr("index"), proc.attr("used_mib")) == (7, 6482)
    assert proc.attr("pci") == "0000:E1:00.0"
    assert one(result, "gpu.memory_used_mib", index=0).value == 20328
    assert one(result, "gpu.reset_required", index=0).value is False


def test_query_truncated_bad_indent() -> None:
    result = parse("q_535.183.01_h100_truncated_bad_indent.txt")
    assert one(result, "gpu.name").attr("pci") == "0000:53:00.0"
    assert any("1 of 8" in w for w in result.warnings)
    assert not facts(result, "gpu.memory_used_mib")  # cut off before FB Memory Usage


def test_query_590_mig_ecc_sums_and_processes() -> None:
    result = parse("q_590.48.01_h100_mig.txt")
    # MIG Device blocks have their own `Shared FB Memory Usage`; only the GPU's is reported.
    assert one(result, "gpu.memory_used_mib").value == 11125
    assert one(result, "gpu.ecc_uncorrected", scope="volatile").value == 0
    assert one(result, "gpu.mig_mode").value == "Enabled"
    assert [f.attr("pid") for f in facts(result, "gpu.process")] == [21180, 21181, 21198]
    assert not facts(result, "gpu.remapped_rows_pending")  # `Remapped Rows : N/A`


def test_query_610_strips_deprecation_note() -> None:
    result = parse("q_610.57.04_rtx2080s.txt")
    assert one(result, "gpu.process", pid=28512).attr("used_mib") == 370
    assert one(result, "gpu.memory_used_mib").value == 815


QUERY_WITH_ERRORS = """
==============NVSMI LOG==============

Driver Version                            : 470.57.02
CUDA Version                              : 11.4

Attached GPUs                             : 2
GPU 00000000:3B:00.0
    Product Name                          : Tesla V100-SXM2-32GB
    Fan Speed                             : ERR!
    FB Memory Usage
        Total                             : 32510 MiB
        Used                              : 32400 MiB
        Free                              : 110 MiB
    ECC Errors
        Volatile
            Single Bit
                Device Memory             : 0
                Total                     : 0
            Double Bit
                Device Memory             : 3
                Register File             : 0
                Total                     : 3
        Aggregate
            Single Bit
                Total                     : 10
            Double Bit
                Total                     : 7
    Retired Pages
        Single Bit ECC                    : 0
        Double Bit ECC                    : 2
        Pending Page Blacklist            : Yes
    Remapped Rows
        Correctable Error                 : 0
        Uncorrectable Error               : 1
        Pending                           : Yes
        Remapping Failure Occurred        : Yes
GPU 00000000:86:00.0
    Product Name                          : Tesla V100-SXM2-32GB
"""


def test_query_ecc_retired_and_remapped() -> None:
    result = PARSER.parse(QUERY_WITH_ERRORS, "q")
    volatile = one(result, "gpu.ecc_uncorrected", index=0, scope="volatile")
    assert volatile.value == 3
    assert "Total" in volatile.text
    assert one(result, "gpu.ecc_uncorrected", index=0, scope="aggregate").value == 7
    assert one(result, "gpu.retired_pages_pending", index=0).value is True
    assert one(result, "gpu.retired_pages_dbe", index=0).value == 2
    assert one(result, "gpu.remapped_rows_pending", index=0).value is True
    assert one(result, "gpu.remapping_failure", index=0).value is True
    assert one(result, "gpu.remapped_rows_uncorrectable").value == 1
    err = one(result, "gpu.err_field")
    assert (err.value, err.attr("index"), err.attr("pci")) == ("fan.speed", 0, "0000:3B:00.0")
    assert one(result, "gpu.memory_used_percent").value == pytest.approx(99.66, abs=0.01)
    assert one(result, "gpu.name", index=1).attr("pci") == "0000:86:00.0"


def test_query_tail_without_banner() -> None:
    tail = QUERY_WITH_ERRORS[QUERY_WITH_ERRORS.index("GPU 00000000:3B:00.0") :]
    assert NvidiaSmiParser.sniff(tail) >= 0.5
    result = PARSER.parse(tail, "tail")
    assert one(result, "gpu.remapped_rows_pending", index=0).value is True
    assert one(result, "nvidia_smi.gpu_count").value == 2


# --- nvidia-smi -q -x --------------------------------------------------------------------------


def test_xml_t4_processes_and_retired_pages() -> None:
    result = parse("qx_tesla-t4.xml")
    name = one(result, "gpu.name")
    assert (name.value, name.attr("pci")) == ("Tesla T4", "0000:00:1E.0")
    assert one(result, "gpu.memory_used_mib").value == 1032
    assert one(result, "gpu.retired_pages_pending").value is False
    python = one(result, "gpu.process", pid=5762)
    assert (python.value, python.attr("used_mib"), python.attr("type")) == ("python", 1005, "C")
    assert result.warnings == ()


def test_xml_a100_mig_uses_gpu_memory() -> None:
    result = parse("qx_a100-sxm4-v12.xml")
    used = one(result, "gpu.memory_used_mib")
    assert (used.value, used.attr("total_mib")) == (50, 81920)
    assert one(result, "gpu.name").attr("serial") == "1650522003820"


def test_xml_truncated_uses_tolerant_reader() -> None:
    text = sample_text(f"{FOLDER}/qx_tesla-t4.xml")
    cut = text[: text.index("<pid>5762</pid>") + 10]
    result = PARSER.parse(cut, "cut.xml")
    assert any("tolerant" in w for w in result.warnings)
    assert one(result, "nvidia_smi.driver_version").value == "515.105.01"
    assert one(result, "gpu.memory_used_mib").value == 1032
    assert one(result, "gpu.process", pid=675).value == "/usr/lib/xorg/Xorg"


XML_REMAP = """<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
  <driver_version>535.104.05</driver_version>
  <attached_gpus>1</attached_gpus>
  <gpu id="00000000:3B:00.0">
    <product_name>NVIDIA A100-SXM4-80GB</product_name>
    <fan_speed>ERR!</fan_speed>
    <ecc_errors><volatile><sram_uncorrectable>1</sram_uncorrectable>
      <dram_uncorrectable>4</dram_uncorrectable></volatile></ecc_errors>
    <remapped_rows>
      <remapped_row_corr>0</remapped_row_corr>
      <remapped_row_unc>2</remapped_row_unc>
      <remapped_row_pending>Yes</remapped_row_pending>
      <remapped_row_failure>No</remapped_row_failure>
    </remapped_rows>
  </gpu>
</nvidia_smi_log>
"""


def test_xml_remapped_rows_subtree() -> None:
    result = PARSER.parse(XML_REMAP, "x.xml")
    assert one(result, "gpu.remapped_rows_pending").value is True
    assert one(result, "gpu.remapping_failure").value is False
    assert one(result, "gpu.remapped_rows_uncorrectable").value == 2
    assert one(result, "gpu.ecc_uncorrected", scope="volatile").value == 5
    err = one(result, "gpu.err_field")
    assert (err.value, err.attr("label"), err.attr("pci")) == (
        "fan.speed",
        "fan_speed",
        "0000:3B:00.0",
    )


# --- CSV ---------------------------------------------------------------------------------------


def test_csv_remap_pending_and_requires_reset() -> None:
    result = parse("csv_query_gpu_ecc_remap_gpu_requires_reset_REPRO.csv")
    assert one(result, "nvidia_smi.gpu_count").value == 4
    pending = one(result, "gpu.remapped_rows_pending", index=2)
    assert pending.value is True
    assert pending.attr("pci") == "0000:48:00.0"
    assert pending.lineno == 4
    assert one(result, "gpu.remapped_rows_pending", index=0).value is False
    assert one(result, "gpu.ecc_uncorrected", index=2).value == 2
    assert one(result, "gpu.memory_used_mib", index=1).value == 78101
    assert one(result, "gpu.reset_required", index=3).value is True
    power = one(result, "gpu.err_field", index=3, sentinel="Unknown Error")
    assert power.value == "power.draw"
    assert len(facts(result, "gpu.err_field", index=3, sentinel="GPU requires reset")) == 7
    assert not facts(result, "gpu.memory_used_mib", index=3)


def test_csv_all_fields() -> None:
    result = parse("csv_query_gpu_all_fields_590.48.01_h100.csv")
    assert one(result, "nvidia_smi.driver_version").value == "590.48.01"
    used = one(result, "gpu.memory_used_mib")
    assert (used.value, used.attr("total_mib"), used.attr("pci")) == (19818, 81559, "0000:00:09.0")
    assert one(result, "gpu.remapping_failure").value is False


def test_csv_noheader_nounits() -> None:
    result = parse("csv_query_gpu_noheader_nounits_REPRO.csv")
    errs = facts(result, "gpu.err_field", index=3)
    assert [f.value for f in errs] == ["column2", "column4"]
    assert one(result, "nvidia_smi.gpu_count").value == 4
    assert result.warnings


def test_csv_azhpc_domains() -> None:
    result = parse("csv_query_gpu_retired_remapped_azhpc.csv")
    assert one(result, "nvidia_smi.gpu_count").value == 4
    dbe = one(result, "gpu.retired_pages_dbe", index=2)
    assert (dbe.value, dbe.attr("pci")) == (0, "000A:00:00.0")
    assert not facts(result, "gpu.remapping_failure")  # [N/A]


def test_csv_compute_apps() -> None:
    result = parse("csv_query_compute_apps_590.48.01_h100_mig.csv")
    procs = facts(result, "gpu.process")
    assert [(f.attr("pid"), f.value, f.attr("used_mib")) for f in procs] == [
        (21180, "/root/tools/memhog", 2296),
        (21181, "/root/tools/memhog", 1272),
        (21198, "./gpu_burn", 7484),
    ]
    assert procs[0].attr("pci") == "0000:00:09.0"


# --- -L, topo, failures ------------------------------------------------------------------------


def test_list_with_mig() -> None:
    result = parse("list_L_590.48.01_h100_mig.txt")
    assert one(result, "nvidia_smi.gpu_count").value == 1
    assert one(result, "gpu.name").value == "NVIDIA H100 80GB HBM3"
    assert [f.value for f in facts(result, "gpu.mig_device")] == [
        "3g.40gb",
        "2g.20gb",
        "1g.10gb",
        "1g.10gb",
    ]


def test_topo_8gpu() -> None:
    result = parse("topo_m_8gpu_nv18_10nic.txt")
    assert one(result, "nvidia_smi.gpu_count").value == 8
    assert one(result, "nvidia_smi.nic_count").value == 10
    assert one(result, "nvidia_smi.topo_worst_gpu_link").value == "NV18"


def test_topo_sys_link_is_worst() -> None:
    text = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tSYS\t0-7\nGPU1\tSYS\t X \t8-15\n"
    result = PARSER.parse(text, "topo")
    worst = one(result, "nvidia_smi.topo_worst_gpu_link")
    assert (worst.value, worst.attr("gpus")) == ("SYS", "GPU0-GPU1")


ERRORS = {
    "error_couldnt_communicate_with_driver_REPRO.txt": "no_driver",
    "error_no_devices_found_REPRO.txt": "no_devices",
    "error_nvml_driver_library_mismatch_REPRO.txt": "driver_library_mismatch",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error_files(name: str) -> None:
    result = parse(name)
    error = one(result, "nvidia_smi.error")
    assert error.value == ERRORS[name]
    assert error.lineno == 1
    assert NvidiaSmiParser.sniff(sample_text(f"{FOLDER}/{name}")) == 1.0


def test_mismatch_keeps_nvml_version() -> None:
    result = parse("error_nvml_driver_library_mismatch_REPRO.txt")
    assert one(result, "nvidia_smi.error").attr("nvml_version") == "550.127"


def test_device_handle_lost() -> None:
    text = "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n"
    result = PARSER.parse(text, "lost")
    assert one(result, "nvidia_smi.error").value == "other"
    assert one(result, "gpu.lost").attr("pci") == "0000:3B:00.0"


# --- sniffing and bad input --------------------------------------------------------------------


def test_launcher_log_mentioning_nvidia_smi_scores_low() -> None:
    log = "\n".join(
        [
            "+ nvidia-smi",
            "[rank0]: starting training, see nvidia-smi for GPU usage",
        ]
        + [f"[rank0]: step {i} loss 1.0" for i in range(200)]
        + ["NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."]
    )
    assert NvidiaSmiParser.sniff(log) < 0.5


def test_launcher_log_starting_with_a_table_scores_below_half() -> None:
    table = sample_text(f"{FOLDER}/table_590.48.01_h100_load_processes.txt")
    log = table + "\n".join(f"[rank0]:[W] step {i} loss 0.5" for i in range(300))
    assert NvidiaSmiParser.sniff(log) < 0.5


def test_other_sample_folders_score_low() -> None:
    for path in sorted(Path(SAMPLES).glob("*/*")):
        if path.parent.name == FOLDER or not path.is_file():
            continue
        head = path.read_bytes()[:65536].decode("utf-8", errors="replace")
        assert NvidiaSmiParser.sniff(head) < 0.5, path.name


@pytest.mark.parametrize(
    "text",
    ["", "\n\n", "\x00\xff\xfe garbage \x1b[31m", "|||||\n+--+\n| GPU  Name |\n|  0  X |", "<nv"],
)
def test_bad_input_does_not_raise(text: str) -> None:
    assert 0.0 <= NvidiaSmiParser.sniff(text) <= 1.0
    result = PARSER.parse(text, "bad")
    assert not facts(result, "gpu.name")


def test_binary_garbage() -> None:
    blob = bytes(range(256)).decode("latin-1") * 40
    assert NvidiaSmiParser.sniff(blob) < 0.5
    assert PARSER.parse(blob, "blob").facts == ()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("00000000:3B:00.0", "0000:3B:00.0"),
        ("0000:3b:00.0", "0000:3B:00.0"),
        ("00008ED0:00:00.0", "8ED0:00:00.0"),
        ("3b:00", "0000:3B:00.0"),
        ("PCI:0000:3b:00", "0000:3B:00.0"),
        ("nothing", None),
    ],
)
def test_normalize_pci(raw: str, expected: str | None) -> None:
    assert normalize_pci(raw) == expected


def test_query_error_sentinel_deep_in_a_section_nothing_reads_keeps_its_full_path() -> None:
    """Lines of such sections are set aside unparsed; a sentinel brings them back in order."""
    text = """==============NVSMI LOG==============

Driver Version                            : 535.154.05
Attached GPUs                             : 1
GPU 00000000:18:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    Clocks
        Graphics                          : 1980 MHz
        Memory                            : 2619 MHz
    Power Readings
        Power Draw                        : 120.5 W
        Limits
            Current Power Limit           : 700.00 W
            Instant Power Draw            : [Unknown Error]
    Temperature
        GPU Current Temp                  : ERR!
"""
    errors = [f for f in NvidiaSmiParser().parse(text, "q.txt").facts if f.key == "gpu.err_field"]
    assert [(f.value, f.lineno, f.attr("label")) for f in errors] == [
        (
            "power readings.limits.instant power draw",
            14,
            "power readings / limits / instant power draw",
        ),
        ("temperature.gpu", 16, "temperature / gpu current temp"),
    ]


def test_process_share_of_its_gpu() -> None:
    """A process's memory as a share of its GPU (what an explanation of an OOM asks)."""
    table = parse("table_384.66_pre_mig_no_cuda_version_old_process_header_REPRO.txt")
    assert one(table, "gpu.process", pid=1568).attr("share_percent") == 15.2
    query = parse("q_535.154.05_8xh100.txt")
    assert one(query, "gpu.process", pid=1100070).attr("share_percent") == 98.5
    xml = parse("qx_tesla-t4.xml")
    assert one(xml, "gpu.process", pid=5762).attr("share_percent") == 6.5
    truncated = parse("table_580_8xb200_hang_mem_truncated_REPRO.txt")
    assert one(truncated, "gpu.process", pid=2709700).attr("share_percent") is None
    csv = parse("csv_query_compute_apps_590.48.01_h100_mig.csv")  # no GPU total in this query
    assert all(f.attr("share_percent") is None for f in facts(csv, "gpu.process"))
