"""GPU telemetry sources, tried once in order; the first that answers is kept for later samples.

AMD: the amdsmi python library, then ``amd-smi`` JSON, then ``rocm-smi`` JSON, then sysfs.
NVIDIA: NVML (nvidia-ml-py), then ``nvidia-smi`` CSV. Then "none". Command-line tools go through the
runner seam, so tests replay recorded real outputs. The libraries are imported inside their source
function only (amdsmi raises KeyError, not ImportError, when ROCm is absent: every failure is caught).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from hipwizard.gpu.parsers.amd_smi import parse_amdsmi
from hipwizard.gpu.parsers.nvidia_smi import APPS_QUERY, TELEMETRY_QUERY, parse_nvidia_smi_csv
from hipwizard.gpu.parsers.rocm_smi import parse_rocm_smi_json, parse_rocm_smi_text
from hipwizard.gpu.sample import GpuProcess, GpuReading, GpuSample
from hipwizard.runner import Runner, SubprocessRunner
from hipwizard.units import MIB

SOURCE_ORDER = ("amdsmi", "amd-smi", "rocm-smi", "sysfs", "nvml", "nvidia-smi")
AMD_VENDOR = "0x1002"


class SourceUnavailable(Exception):
    """A source cannot answer on this machine; the message says why, in one line."""


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:160] if lines else "no output"


def read_amdsmi_lib() -> list[GpuSample]:
    """Samples through the amdsmi python bindings (ROCm's libamd_smi.so)."""
    try:
        import amdsmi  # noqa: PLC0415 - heavy and optional: import only here
    except Exception as exc:  # KeyError('libamd_smi.so') without ROCm, ImportError when not installed
        raise SourceUnavailable(f"amdsmi library not usable ({type(exc).__name__}: {exc})") from None
    try:
        amdsmi.amdsmi_init()
        handles = amdsmi.amdsmi_get_processor_handles()
    except Exception as exc:
        raise SourceUnavailable(f"amdsmi_init failed: {exc}") from None
    out = []
    for i, h in enumerate(handles):
        vram = _try(lambda h=h: amdsmi.amdsmi_get_gpu_vram_usage(h)) or {}
        act = _try(lambda h=h: amdsmi.amdsmi_get_gpu_activity(h)) or {}
        asic = _try(lambda h=h: amdsmi.amdsmi_get_gpu_asic_info(h)) or {}
        procs = []
        for p in _try(lambda h=h: amdsmi.amdsmi_get_gpu_process_list(h)) or []:
            if not isinstance(p, dict) or "pid" not in p:
                continue
            mem = p.get("memory_usage") or {}
            vram_b = mem.get("vram_mem") if isinstance(mem, dict) else None
            procs.append(GpuProcess(int(p["pid"]), str(p.get("name") or ""), vram_b if isinstance(vram_b, int) else None))
        used, total = vram.get("vram_used"), vram.get("vram_total")  # MB in the amdsmi API
        util = act.get("gfx_activity")
        out.append(GpuSample(
            index=i, name=str(asic.get("market_name") or ""),
            vram_used=int(used) * MIB if isinstance(used, (int, float)) else None,
            vram_total=int(total) * MIB if isinstance(total, (int, float)) else None,
            util_pct=float(util) if isinstance(util, (int, float)) else None,
            processes=tuple(procs),
        ))
    return out


def _try(fn: Callable):
    try:
        return fn()
    except Exception:
        return None


def read_amd_smi_cli(runner: Runner) -> list[GpuSample]:
    res = runner.run(["amd-smi", "metric", "--usage", "--mem-usage", "--json"], timeout=10)
    if not res.ok:
        raise SourceUnavailable(res.explain())
    samples = parse_amdsmi(res.stdout, what="amd-smi metric").value.samples
    if not samples:
        raise SourceUnavailable(f"amd-smi reported no GPU: {_first_line(res.output)}")
    procs = runner.run(["amd-smi", "process", "--json"], timeout=10)
    listed = parse_amdsmi(procs.stdout, what="amd-smi process").value.samples if procs.ok else []
    per_gpu = {s.index: s.processes for s in listed}
    return [_with_procs(s, per_gpu.get(s.index, ())) for s in samples]


def _with_procs(s: GpuSample, procs: tuple[GpuProcess, ...]) -> GpuSample:
    return GpuSample(s.index, s.name, s.vram_used, s.vram_total, s.util_pct, procs)


def read_rocm_smi(runner: Runner) -> list[GpuSample]:
    res = runner.run(["rocm-smi", "--showproductname", "--showuse", "--showmeminfo", "vram", "--json"], timeout=10)
    if not res.ok:
        raise SourceUnavailable(res.explain())
    # Without a GPU, rocm-smi exits 0 with empty stdout and the reason on stderr.
    samples = parse_rocm_smi_json(res.stdout).value.samples or parse_rocm_smi_text(res.stdout).value.samples
    if not samples:
        raise SourceUnavailable(f"rocm-smi reported no GPU: {_first_line(res.output)}")
    return samples


def read_sysfs(drm_root: Path = Path("/sys/class/drm")) -> list[GpuSample]:
    """amdgpu's sysfs files: mem_info_vram_used/total (bytes) and gpu_busy_percent."""
    out: list[GpuSample] = []
    cards = sorted(drm_root.glob("card*/device"), key=lambda p: p.parent.name)
    for dev in cards:
        if not _is_card(dev.parent.name) or _read(dev / "vendor") != AMD_VENDOR:
            continue
        used, total = _read_int(dev / "mem_info_vram_used"), _read_int(dev / "mem_info_vram_total")
        if total is None:
            continue
        out.append(GpuSample(
            index=len(out), name=_read(dev / "product_name") or "",
            vram_used=used, vram_total=total, util_pct=_read_int(dev / "gpu_busy_percent"),
        ))
    if not out:
        raise SourceUnavailable(f"no amdgpu device with VRAM counters under {drm_root}")
    return out


def _is_card(name: str) -> bool:
    """card0 is a device; card0-DP-1 is one of its connectors."""
    return name[4:].isdigit()


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _read_int(path: Path) -> int | None:
    text = _read(path)
    return int(text) if text and text.isdigit() else None


def read_nvml() -> list[GpuSample]:
    try:
        import pynvml  # noqa: PLC0415
        pynvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound without a driver
        raise SourceUnavailable(f"NVML not usable ({type(exc).__name__}: {exc})") from None
    out = []
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        mem = pynvml.nvmlDeviceGetMemoryInfo(h)
        util = _try(lambda h=h: pynvml.nvmlDeviceGetUtilizationRates(h).gpu)
        procs = tuple(
            GpuProcess(p.pid, "", p.usedGpuMemory if isinstance(p.usedGpuMemory, int) else None)
            for p in (_try(lambda h=h: pynvml.nvmlDeviceGetComputeRunningProcesses(h)) or [])
        )
        name = pynvml.nvmlDeviceGetName(h)
        out.append(GpuSample(i, name.decode() if isinstance(name, bytes) else str(name),
                             int(mem.used), int(mem.total), float(util) if util is not None else None, procs))
    return out


def read_nvidia_smi(runner: Runner) -> list[GpuSample]:
    res = runner.run(["nvidia-smi", f"--query-gpu={TELEMETRY_QUERY}", "--format=csv,noheader,nounits"], timeout=10)
    if not res.ok:
        raise SourceUnavailable(res.explain())
    apps = runner.run(["nvidia-smi", f"--query-compute-apps={APPS_QUERY}", "--format=csv,noheader,nounits"],
                      timeout=10)
    samples = parse_nvidia_smi_csv(res.stdout, TELEMETRY_QUERY, apps.stdout if apps.ok else "").value.samples
    if not samples:
        raise SourceUnavailable(f"nvidia-smi reported no GPU: {_first_line(res.output)}")
    return samples


class GpuTelemetry:
    """Samples GPUs through the first source that answers, remembered after the first call.

    ``sample()`` never raises: a source that stops answering yields a reading with no samples and a
    note. Only the sources in ``order`` are tried (tests pass a subset).
    """

    def __init__(self, runner: Runner | None = None, *, drm_root: Path = Path("/sys/class/drm"),
                 order: tuple[str, ...] = SOURCE_ORDER):
        self.runner = runner or SubprocessRunner()
        self.drm_root = drm_root
        self.order = order
        self.source: str | None = None
        self.notes: tuple[str, ...] = ()

    def _read(self, name: str) -> list[GpuSample]:
        readers: dict[str, Callable[[], list[GpuSample]]] = {
            "amdsmi": read_amdsmi_lib,
            "amd-smi": lambda: read_amd_smi_cli(self.runner),
            "rocm-smi": lambda: read_rocm_smi(self.runner),
            "sysfs": lambda: read_sysfs(self.drm_root),
            "nvml": read_nvml,
            "nvidia-smi": lambda: read_nvidia_smi(self.runner),
        }
        return readers[name]()

    def sample(self) -> GpuReading:
        if self.source == "none":
            return GpuReading("none", (), self.notes)
        if self.source is not None:
            try:
                return GpuReading(self.source, tuple(self._read(self.source)), self.notes)
            except Exception as exc:
                return GpuReading(self.source, (), self.notes + (f"{self.source} stopped answering: {exc}",))
        notes = []
        for name in self.order:
            try:
                samples = self._read(name)
            except SourceUnavailable as exc:
                notes.append(f"{name}: {exc}")
                continue
            except Exception as exc:  # a library misbehaving must not take the caller down
                notes.append(f"{name}: {type(exc).__name__}: {exc}")
                continue
            self.source, self.notes = name, tuple(notes)
            return GpuReading(name, tuple(samples), self.notes)
        self.source, self.notes = "none", tuple(notes)
        return GpuReading("none", (), self.notes)


def detect_platform(dev: Path = Path("/dev")) -> str:
    """"rocm", "cuda" or "cpu" from the device nodes (no heavy import): /dev/kfd is ROCm's."""
    if (dev / "kfd").exists():
        return "rocm"
    if (dev / "nvidiactl").exists() or os.path.exists("/proc/driver/nvidia/version"):
        return "cuda"
    return "cpu"
