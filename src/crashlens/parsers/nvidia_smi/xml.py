"""`nvidia-smi -q -x`: the same tree as `-q`, as XML (read tolerantly when cut off).

ElementTree keeps no line numbers, so these facts carry none.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator

from crashlens.parsers.nvidia_smi.gpu import (
    FactEmitter,
    Gpu,
    GpuProcess,
    clock_event_reason,
    error_sentinel,
)
from crashlens.text.ids import normalize_pci
from crashlens.text.tolerant_xml import parse_xml
from crashlens.text.values import int_with_unit, yes_no

_XML_FIELDS = {
    "fan_speed": "fan.speed",
    "performance_state": "pstate",
    "fb_memory_usage.used": "memory.used",
    "fb_memory_usage.total": "memory.total",
    "temperature.gpu_temp": "temperature.gpu",
    "power_readings.power_draw": "power.draw",
    "gpu_power_readings.power_draw": "power.draw",
    "gpu_power_readings.instant_power_draw": "power.draw",
    "gpu_power_readings.average_power_draw": "power.draw.average",
    "utilization.gpu_util": "utilization.gpu",
    "product_name": "name",
}
"""XML element paths -> the `--query-gpu` field name used in `gpu.err_field`."""


def _xml_text(element: ET.Element | None, path: str) -> str | None:
    """Stripped text at a sub-path, or None when absent or empty."""
    if element is None:
        return None
    found = element.find(path)
    if found is None or found.text is None:
        return None
    return found.text.strip() or None


def _xml_ecc(gpu: Gpu, ecc: ET.Element | None) -> None:
    """Sum ECC counters per scope (new `*uncorrectable*` / `*correctable*` tags, old
    `double_bit/total` / `single_bit/total`), and read the ECC flags (590+)."""
    if ecc is None:
        return
    for scope in ("volatile", "aggregate"):
        block = ecc.find(scope)
        if block is None:
            continue
        for counts, old_tag, wanted in (
            (gpu.ecc, "double_bit/total", _is_uncorrectable),
            (gpu.ecc_corrected, "single_bit/total", _is_correctable),
        ):
            values = [int_with_unit(child.text) for child in block if wanted(child.tag)]
            values.append(int_with_unit(_xml_text(block, old_tag)))
            found = [v for v in values if v is not None]
            if found:
                counts[scope] = (sum(found), None, None)
    for element in ecc.iter():
        suffix = _XML_ECC_FLAGS.get(element.tag)
        if suffix is not None and (flag := yes_no(element.text)) is not None:
            gpu.flags[suffix] = (flag, None, None)


def _is_uncorrectable(tag: str) -> bool:
    return "uncorrectable" in tag


def _is_correctable(tag: str) -> bool:
    return "correctable" in tag and "uncorrectable" not in tag


_XML_ECC_FLAGS = {
    "sram_threshold_exceeded": "sram_threshold_exceeded",
    "channel_repair_pending": "channel_repair_pending",
    "tpc_repair_pending": "tpc_repair_pending",
    "unrepairable_memory": "unrepairable_memory",
}
"""ECC flags (`Yes`/`No`) by XML tag under `ecc_errors` -> fact key suffix."""


def _xml_known(element: ET.Element, path: str) -> str | None:
    """A field's text, or None when absent or not applicable (`N/A`, deprecated)."""
    text = _xml_text(element, path)
    if text is None or text == "N/A" or text.startswith("Requested functionality"):
        return None
    return text


def _xml_health(gpu: Gpu, element: ET.Element) -> None:
    """Reset status, recovery action, fabric state and the active clock event reasons."""
    drain = yes_no(_xml_text(element, "gpu_reset_status/drain_and_reset_recommended"))
    if drain is not None:
        gpu.flags["drain_and_reset_recommended"] = (drain, None, None)
    for suffix, path in (
        ("recovery_action", "gpu_recovery_action"),
        ("fabric_state", "fabric/state"),
        ("fabric_status", "fabric/status"),
    ):
        value = _xml_known(element, path)
        if value is not None:
            gpu.flags[suffix] = (value, None, None)
    # `clocks_event_reasons` since driver 535, `clocks_throttle_reasons` before it.
    for section in ("clocks_event_reasons", "clocks_throttle_reasons"):
        found = element.find(section)
        for child in found if found is not None else ():
            tag = child.tag.removeprefix("clocks_event_reason_")
            tag = tag.removeprefix("clocks_throttle_reason_")
            reason = clock_event_reason(tag)
            if reason is not None and (child.text or "").strip() == "Active":
                gpu.clock_events.append((reason, None, None))


def _xml_flags(gpu: Gpu, element: ET.Element) -> None:
    """Retired pages, remapped rows (a subtree or `N/A`) and reset status."""
    retired = element.find("retired_pages")
    if retired is not None:
        pending = [yes_no(child.text) for child in retired if child.tag.startswith("pending")]
        known = [p for p in pending if p is not None]
        if known:
            gpu.flags["retired_pages_pending"] = (any(known), None, None)
        for suffix, path in (
            ("retired_pages_dbe", "double_bit_retirement/retired_count"),
            ("retired_pages_sbe", "multiple_single_bit_retirement/retired_count"),
        ):
            count = int_with_unit(_xml_text(retired, path))
            if count is not None:
                gpu.flags[suffix] = (count, None, None)
    remapped = element.find("remapped_rows")
    for child in remapped if remapped is not None else []:
        if "pending" in child.tag and (flag := yes_no(child.text)) is not None:
            gpu.flags["remapped_rows_pending"] = (flag, None, None)
        elif "failure" in child.tag and (flag := yes_no(child.text)) is not None:
            gpu.flags["remapping_failure"] = (flag, None, None)
        elif child.tag.endswith("_unc") and (count := int_with_unit(child.text)) is not None:
            gpu.flags["remapped_rows_uncorrectable"] = (count, None, None)
        elif child.tag.endswith("_corr") and (count := int_with_unit(child.text)) is not None:
            gpu.flags["remapped_rows_correctable"] = (count, None, None)
    reset = yes_no(_xml_text(element, "gpu_reset_status/reset_required"))
    if reset is not None:
        gpu.flags["reset_required"] = (reset, None, None)


_XML_ERRS_DEPTH = 12
"""How deep under a `<gpu>` element error sentinels are looked for: nvidia-smi nests at most
four levels; anything deeper is not its output and is left unread (with a warning)."""


def _xml_errs(gpu: Gpu, element: ET.Element) -> bool:
    """Every leaf under the GPU whose text is an error sentinel, in document order.

    An explicit stack of child iterators instead of recursion, so that hostile nesting costs
    no Python frames; returns whether elements deeper than `_XML_ERRS_DEPTH` were skipped."""
    skipped = False
    stack: list[tuple[Iterator[ET.Element], str]] = [(iter(element), "")]
    while stack:
        children, prefix = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            continue
        path = f"{prefix}{child.tag}"
        if len(child):
            if len(stack) < _XML_ERRS_DEPTH:
                stack.append((iter(child), path + "."))
            else:
                skipped = True
            continue
        sentinel = error_sentinel(child.text)
        if sentinel:
            gpu.errs.append((_XML_FIELDS.get(path, path), path, sentinel, None, None))
    return skipped


def _xml_gpu(element: ET.Element, index: int, out: FactEmitter) -> Gpu:
    """One `<gpu id=...>` element."""
    bus = _xml_text(element, "pci/pci_bus_id") or element.get("id") or ""
    gpu = Gpu(
        index=index,
        pci=normalize_pci(bus),
        uuid=_xml_text(element, "uuid"),
        serial=_xml_text(element, "serial"),
    )
    name = _xml_text(element, "product_name")
    if name:
        gpu.name = (name, None, None)
    used = int_with_unit(_xml_text(element, "fb_memory_usage/used"))
    if used is not None:
        gpu.mem_used = (used, None, None)
    gpu.mem_total = int_with_unit(_xml_text(element, "fb_memory_usage/total"))
    mig = _xml_text(element, "mig_mode/current_mig")
    if mig in ("Enabled", "Disabled"):
        gpu.mig_mode = (mig, None, None)
    _xml_ecc(gpu, element.find("ecc_errors"))
    _xml_flags(gpu, element)
    _xml_health(gpu, element)
    if _xml_errs(gpu, element):
        out.warnings.append(
            f"GPU {index}: elements nested deeper than {_XML_ERRS_DEPTH} levels left unread"
        )
    for info in element.findall("processes/process_info"):
        used_text = _xml_text(info, "used_memory")
        proc_used = int_with_unit(used_text)
        gpu.processes.append(
            GpuProcess(
                name=_xml_text(info, "process_name") or "",
                pid=int_with_unit(_xml_text(info, "pid")),
                used_mib=proc_used,
                used_text=None if proc_used is not None else used_text,
                ptype=_xml_text(info, "type"),
                gi=_xml_text(info, "gpu_instance_id"),
                ci=_xml_text(info, "compute_instance_id"),
            )
        )
    return gpu


def parse_query_xml(text: str, out: FactEmitter) -> None:
    """`nvidia-smi -q -x`, with ElementTree; truncated XML goes to the tolerant reader."""
    start = text.find("<")
    body = text[start:] if start >= 0 else ""
    root, error = parse_xml(body)
    if error is not None:
        out.warnings.append(f"truncated or malformed XML ({error}): read with the tolerant reader")
    if root is None:
        return
    if root.tag != "nvidia_smi_log":
        found = root.find(".//nvidia_smi_log")
        root = found if found is not None else root
    driver = _xml_text(root, "driver_version")
    if driver:
        out.add("nvidia_smi.driver_version", driver)
    cuda = _xml_text(root, "cuda_version")
    if cuda:
        out.add("nvidia_smi.cuda_version", cuda)
    gpus = root.findall("gpu")
    attached = int_with_unit(_xml_text(root, "attached_gpus"))
    if attached is not None:
        out.add("nvidia_smi.gpu_count", attached, source="attached")
    elif gpus:
        out.add("nvidia_smi.gpu_count", len(gpus), source="blocks")
    for index, element in enumerate(gpus):
        out.gpu(_xml_gpu(element, index, out))
