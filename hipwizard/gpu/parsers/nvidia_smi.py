"""Parser for ``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]`` and its ``--query-compute-apps``.

Columns are found by name: from the header row, or from the query itself for ``noheader`` output. The doctor
asks for identity columns (name, compute capability, driver); telemetry asks for ``TELEMETRY_QUERY`` and
joins the processes of ``APPS_QUERY`` on the GPU uuid. Sizes without units are MiB.
"""

from __future__ import annotations

import csv
import io
import re

from hipwizard.gpu.parsers.models import GpuInfo, Parsed, ToolView
from hipwizard.gpu.parsers.text import number, size_to_bytes, strip_ansi
from hipwizard.gpu.sample import GpuProcess, GpuSample

TELEMETRY_QUERY = "index,uuid,name,memory.used,memory.total,utilization.gpu"
APPS_QUERY = "gpu_uuid,pid,process_name,used_memory"


def parse_nvidia_smi_csv(text: str, columns: str = "", apps_text: str = "") -> Parsed[ToolView]:
    """``nvidia-smi --query-gpu`` CSV -> GPUs and samples.

    ``columns`` is the query (comma-separated) when the output has no header row; ``apps_text`` is
    ``--query-compute-apps=APPS_QUERY --format=csv,noheader,nounits`` output, joined on the GPU uuid.
    """
    view = ToolView("nvidia-smi")
    text = strip_ansi(text or "").strip()
    if not text:
        return Parsed(view, ["nvidia-smi: empty output"])
    if "NVIDIA-SMI has failed" in text or "couldn't communicate with the NVIDIA driver" in text:
        view.driver_loaded, view.driver_note = False, text.splitlines()[0].strip()
        return Parsed(view, [])
    rows = list(csv.reader(io.StringIO(text), skipinitialspace=True))
    if columns:
        header = [c.strip().lower() for c in columns.split(",")]
    else:
        header, rows = ([h.strip().lower() for h in rows[0]] if rows else []), rows[1:]
    if "name" not in [h.split(" [")[0] for h in header]:
        return Parsed(view, [f"nvidia-smi: no CSV header with a name column (got {text.splitlines()[0][:60]!r})"])
    cols = {h.split(" [")[0]: i for i, h in enumerate(header)}
    procs = _apps(apps_text)
    problems: list[str] = []
    for row in rows:
        if len(row) != len(header):
            problems.append(f"nvidia-smi: row with {len(row)} fields, header has {len(header)}")
            continue
        def get(key: str, row: list[str] = row) -> str:
            return row[cols[key]].strip() if key in cols else ""

        if "index" in cols and not get("index").isdigit():  # a stray line that happens to have the commas
            problems.append(f"nvidia-smi: row without a GPU index: {','.join(row)[:60]!r}")
            continue
        gpu = GpuInfo(
            index=int(get("index")) if "index" in cols else len(view.gpus),
            vendor="nvidia", name=get("name"),
            vram_bytes=size_to_bytes(get("memory.total"), default_unit="MiB"),
            compute_capability=get("compute_cap"), bdf=get("pci.bus_id"), uuid=get("uuid"),
            driver_version=get("driver_version"), source="nvidia-smi",
        )
        view.gpus.append(gpu)
        view.samples.append(GpuSample(
            index=gpu.index, name=gpu.name, vram_used=size_to_bytes(get("memory.used"), default_unit="MiB"),
            vram_total=gpu.vram_bytes, util_pct=number(get("utilization.gpu")),
            processes=tuple(procs.get(gpu.uuid, ())) if gpu.uuid else (),
        ))
    if view.gpus:
        view.driver_loaded = True
        view.versions["nvidia"] = view.gpus[0].driver_version
    return Parsed(view, problems)


def _apps(text: str) -> dict[str, list[GpuProcess]]:
    """``APPS_QUERY`` rows (noheader, MiB) -> processes per GPU uuid."""
    procs: dict[str, list[GpuProcess]] = {}
    for line in (text or "").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4 and parts[1].isdigit():
            procs.setdefault(parts[0], []).append(
                GpuProcess(int(parts[1]), parts[2], size_to_bytes(parts[3], default_unit="MiB")))
    return procs


_TABLE_HEAD = re.compile(r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s*(\S+)(?:\s+CUDA Version:\s*(\S+))?")
_TABLE_GPU = re.compile(r"^\|\s*(\d+)\s+(.+?)\s+(?:On|Off)\s*\|\s*([0-9A-Fa-f:.]+)\s")
_TABLE_MEM = re.compile(r"(\d+)MiB\s*/\s*(\d+)MiB")


def parse_nvidia_smi_table(text: str) -> Parsed[ToolView]:
    """Plain ``nvidia-smi`` (the boxed table): GPUs (index, name, bus id, total memory), driver and CUDA."""
    view = ToolView("nvidia-smi")
    text = strip_ansi(text or "")
    if "NVIDIA-SMI has failed" in text or "couldn't communicate with the NVIDIA driver" in text:
        view.driver_loaded, view.driver_note = False, text.strip().splitlines()[0].strip()
        return Parsed(view, [])
    head = _TABLE_HEAD.search(text)
    if head:
        view.versions["nvidia"] = head.group(2)
        if head.group(3):
            view.versions["cuda"] = head.group(3)
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _TABLE_GPU.match(line.strip())
        if not m:
            continue
        mem = _TABLE_MEM.search(lines[i + 1]) if i + 1 < len(lines) else None
        view.gpus.append(GpuInfo(
            index=int(m.group(1)), vendor="nvidia", name=m.group(2).strip(), bdf=m.group(3),
            vram_bytes=int(mem.group(2)) * 2**20 if mem else None,
            driver_version=view.versions.get("nvidia", ""), source="nvidia-smi",
        ))
    if view.gpus:
        view.driver_loaded = True
    return Parsed(view, [] if view.gpus else ["nvidia-smi: no GPU rows in the table"])
