"""Parser for ``amd-smi``: ``static``/``list``/``metric``/``process`` as JSON (a list of GPUs, or
``{"gpu_data": [...]}`` in newer versions) or as indented text, the ``version`` line, the no-argument banner
and ROCm 7's default table view.

JSON and text are both turned into one nested dict with lower-case keys, so a single extractor reads them;
keys are looked up by name wherever they sit, so new sections in unseen versions do not break it. Each GPU
gives a ``GpuInfo`` (name, gfx, VRAM size, partitions: the doctor) and a ``GpuSample`` (``mem_usage``,
``usage.gfx_activity``, ``process_list``: telemetry).
"""

from __future__ import annotations

import re
from typing import Any

from hipwizard.gpu.parsers.models import GpuInfo, Parsed, ToolView
from hipwizard.gpu.parsers.pci_ids import normalize_id
from hipwizard.gpu.parsers.text import driver_down_note, find_gfx, json_document, number, size_to_bytes, strip_ansi
from hipwizard.gpu.sample import GpuProcess, GpuSample

_NA = {"", "n/a", "na", "none", "unknown"}
_LIB_MISSING = re.compile(r"KeyError: 'libamd_smi\.so'|Unable to find libamd_smi\.so|libamd_smi\.so: cannot open")
_VERSION_FIELDS = {
    "rocm": re.compile(r"ROCm version:\s*([^|\s]+)", re.IGNORECASE),
    "amdgpu": re.compile(r"amdgpu version:\s*([^|\s]+)", re.IGNORECASE),
    "tool": re.compile(r"(?:AMDSMI Tool:|AMD-SMI|Version:)\s*([0-9][^|\s]*)", re.IGNORECASE),
}


def parse_versions(text: str) -> dict[str, str]:
    """ROCm / amdgpu / amd-smi versions from a version line, banner or table header ("N/A" dropped)."""
    text = strip_ansi(text or "")
    out: dict[str, str] = {}
    for key, rx in _VERSION_FIELDS.items():
        m = rx.search(text)
        if m and m.group(1).strip().lower() not in _NA:
            value = m.group(1).strip()
            # amdgpu "version" of in-kernel drivers is a whole uname string: keep the kernel release only
            if key == "amdgpu" and value.lower().startswith("linuxversion"):
                value = value[len("linuxversion"):].split("(")[0]
            out[key] = value
    return out


def _common(view: ToolView, text: str) -> list[str]:
    problems: list[str] = []
    note = driver_down_note(text)
    if note:
        view.driver_loaded, view.driver_note = False, note
    if _LIB_MISSING.search(text):
        problems.append("amd-smi cannot load libamd_smi.so: ROCm's amd-smi-lib is not installed on this machine")
    view.versions.update(parse_versions(text))
    return problems


def parse_amdsmi(stdout: str, stderr: str = "", what: str = "amd-smi") -> Parsed[ToolView]:
    """Any of ``amd-smi static|list|metric|process [--json]``, ``amd-smi version``, plain ``amd-smi`` -> ToolView."""
    stdout, stderr = strip_ansi(stdout or ""), strip_ansi(stderr or "")
    view = ToolView(what)
    problems = _common(view, stdout + "\n" + stderr)
    body = stdout.strip()
    if not body:
        if not problems and view.driver_loaded is None and not view.versions:
            problems.append(f"{what}: empty output")
        return Parsed(view, problems)
    if body.lstrip().startswith(("[", "{")) or "\n[" in body or "\n{" in body:
        tree, err = _json_tree(body)
        if err:
            problems.append(f"{what}: {err}")
        gpus = _gpu_dicts_from_json(tree)
    elif "+---" in body and "|" in body:
        _default_view(view, body)
        gpus = []
    else:
        gpus = [(i, d) for i, d in _text_tree_gpus(body)]
    for index, data in gpus:
        gpu = _gpu_from_tree(index, data, what)
        view.gpus.append(gpu)
        view.samples.append(_sample_from_tree(gpu, data))
    if view.gpus:
        view.driver_loaded = True
    elif not problems and not view.versions and view.driver_loaded is None:
        problems.append(f"{what}: found no GPU entries")
    return Parsed(view, problems)


def _json_tree(text: str) -> tuple[Any, str]:
    tree, error = json_document(text)
    return tree, f"output is not complete JSON ({error})" if error else ""


def _lower_keys(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k).strip().lower().replace(" ", "_"): _lower_keys(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_lower_keys(v) for v in obj]
    return obj


def _gpu_dicts_from_json(tree: Any) -> list[tuple[int, dict]]:
    tree = _lower_keys(tree)
    if isinstance(tree, dict):
        if isinstance(tree.get("gpu_data"), list):
            tree = tree["gpu_data"]
        elif "gpu" in tree:
            tree = [tree]
        else:  # {"gpu_0": {...}} or {"GPU: 0": {...}}
            tree = [dict(v, gpu=_int(k)) for k, v in tree.items() if isinstance(v, dict) and re.search(r"\d", k)]
    if not isinstance(tree, list):
        return []
    out = []
    for pos, item in enumerate(tree):
        if isinstance(item, dict) and "cpu" not in item:
            out.append((_int(item.get("gpu"), pos), item))
    return out


def _int(value: Any, default: int = 0) -> int:
    m = re.search(r"\d+", str(value)) if value is not None else None
    return int(m.group(0)) if m else default


def _find(tree: Any, *keys: str) -> Any:
    """The first value under any of ``keys``, searching the nested dict depth-first."""
    if isinstance(tree, dict):
        for key in keys:
            if key in tree and not isinstance(tree[key], (dict, list)) and str(tree[key]).strip().lower() not in _NA:
                return tree[key]
            if key in tree and isinstance(tree[key], dict) and {"value", "unit"} <= set(tree[key]):
                return tree[key]
            current = node.get("current") if isinstance(node := tree.get(key), dict) else None
            if current is not None and not isinstance(current, (dict, list)) and str(current).strip().lower() not in _NA:
                return current  # `amd-smi partition`: MEMORY_PARTITION: {CAPS: ..., CURRENT: NPS1}
        for value in tree.values():
            found = _find(value, *keys)
            if found is not None:
                return found
    elif isinstance(tree, list):
        for value in tree:
            found = _find(value, *keys)
            if found is not None:
                return found
    return None


def _gpu_from_tree(index: int, data: dict, what: str) -> GpuInfo:
    name = _find({k: v for k, v in data.items() if k != "process_list"}, "market_name", "product_name") or ""
    gfx_src = _find(data, "target_graphics_version", "gfx_version", "target_gfx_version") or ""
    base, full = find_gfx(str(gfx_src))
    vram = data.get("vram", {}) if isinstance(data.get("vram"), dict) else {}
    size = vram.get("size") if vram else None
    driver = data.get("driver", {}) if isinstance(data.get("driver"), dict) else {}
    return GpuInfo(
        index=index, vendor="amd", name=str(name), gfx=base, gfx_full=full or base,
        vram_bytes=size_to_bytes(size, default_unit="MB") if size not in (None, "N/A") else None,
        compute_partition=str(_find(data, "compute_partition", "current_compute_partition") or "").upper(),
        memory_partition=str(_find(data, "memory_partition", "current_memory_partition") or "").upper(),
        bdf=str(_find(data, "bdf") or ""), uuid=str(_find(data, "uuid") or ""),
        driver_version=str(driver.get("version", "") or ""), source=what,
        device_id=normalize_id(str(_find(data, "device_id") or "")),
    )


def _sample_from_tree(gpu: GpuInfo, data: dict) -> GpuSample:
    """``mem_usage`` (MB) and ``usage.gfx_activity`` of ``amd-smi metric``, ``process_list`` of ``amd-smi process``."""
    usage = found if isinstance(found := data.get("usage"), dict) else {}
    mem = found_mem if isinstance(found_mem := data.get("mem_usage"), dict) else {}
    total = size_to_bytes(mem.get("total_vram"), default_unit="MB")
    return GpuSample(
        index=gpu.index, name=gpu.name, vram_used=size_to_bytes(mem.get("used_vram"), default_unit="MB"),
        vram_total=total if total is not None else gpu.vram_bytes, util_pct=number(usage.get("gfx_activity")),
        processes=_processes(data.get("process_list")),
    )


def _processes(entries: Any) -> tuple[GpuProcess, ...]:
    """``process_list`` entries -> processes, with VRAM where reported (``memory_usage.vram_mem``, ``mem_usage``)."""
    procs = []
    for entry in entries if isinstance(entries, list) else []:
        info = entry.get("process_info", entry) if isinstance(entry, dict) else None
        if not isinstance(info, dict) or (pid := number(info.get("pid"))) is None:
            continue
        mem = info.get("memory_usage")
        vram = size_to_bytes(mem.get("vram_mem")) if isinstance(mem, dict) else size_to_bytes(info.get("mem_usage"))
        procs.append(GpuProcess(int(pid), str(info.get("name") or ""), vram))
    return tuple(procs)


_TREE_LINE = re.compile(r"^(\s*)([^:]+?):\s*(.*?)\s*$")


def _text_tree_gpus(text: str) -> list[tuple[int, dict]]:
    """Indented ``KEY: value`` text -> [(gpu index, nested dict)] for every top-level ``GPU: N`` block."""
    roots: list[tuple[str, str, dict]] = []  # (top key, its value, children)
    stack: list[tuple[int, dict]] = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        m = _TREE_LINE.match(raw.replace("\t", "    "))
        if not m:
            continue
        indent, key, value = len(m.group(1)), m.group(2).strip().lower().replace(" ", "_"), m.group(3)
        if indent == 0 or not stack:
            node: dict = {}
            roots.append((key, value, node))
            stack = [(indent, node)]
            continue
        while len(stack) > 1 and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if value == "":
            child: dict = {}
            parent.setdefault(key, child)
            stack.append((indent, parent[key] if isinstance(parent[key], dict) else child))
        else:
            parent.setdefault(key, value)
    return [(_int(v), node) for k, v, node in roots if k == "gpu"]


_VIEW_NAME = re.compile(r"^\|\s*([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f])\s+(.+?)\s*\|", re.IGNORECASE)
_VIEW_IDS = re.compile(r"^\|\s*(\d+)\s+\S+\s+\S+\s+([A-Z]PX)?/?(NPS\d)?\s*\|(.*)\|", re.IGNORECASE)
_VIEW_MEM = re.compile(r"(\d+)\s*/\s*(\d+)\s*MB")


def _default_view(view: ToolView, text: str) -> None:
    """ROCm 7's ``amd-smi`` table: a BDF + name row, then a GPU / partition / GFX-Uti / memory row."""
    pending: tuple[str, str] | None = None
    for line in text.splitlines():
        m = _VIEW_NAME.match(line.strip())
        if m:
            pending = (m.group(1), m.group(2))
            continue
        ids = _VIEW_IDS.match(line.strip())
        if ids and pending:
            mem = _VIEW_MEM.search(ids.group(4))
            gpu = GpuInfo(
                index=int(ids.group(1)), vendor="amd", name=pending[1], bdf=pending[0],
                compute_partition=(ids.group(2) or "").upper(), memory_partition=(ids.group(3) or "").upper(),
                vram_bytes=int(mem.group(2)) * 2**20 if mem else None, source="amd-smi",
            )
            view.gpus.append(gpu)
            view.samples.append(GpuSample(
                index=gpu.index, name=gpu.name, vram_used=int(mem.group(1)) * 2**20 if mem else None,
                vram_total=gpu.vram_bytes, util_pct=number(ids.group(4)),
            ))
            pending = None


_MONITOR_HEAD = re.compile(r"^\s*GPU\s+(?:XCP\s+)?POWER\b", re.IGNORECASE)


def parse_amdsmi_monitor(text: str) -> Parsed[ToolView]:
    """``amd-smi monitor`` (a header row, then one row per GPU): how many GPUs, their VRAM use where shown."""
    view = ToolView("amd-smi monitor")
    header: list[str] = []
    for line in strip_ansi(text or "").splitlines():
        if _MONITOR_HEAD.match(line):
            header = line.split()
            continue
        cells = line.split()
        if header and cells and cells[0].isdigit():
            row = dict(zip(header, cells, strict=False))
            gpu = GpuInfo(index=int(cells[0]), vendor="amd", source="amd-smi monitor")
            view.gpus.append(gpu)
            view.samples.append(GpuSample(index=gpu.index, util_pct=number(row.get("GFX_UTIL"))))
    if view.gpus:
        view.driver_loaded = True
    return Parsed(view, [] if view.gpus else ["amd-smi monitor: no header row or GPU rows"])
