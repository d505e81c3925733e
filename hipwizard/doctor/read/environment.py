"""Probe results -> one EnvReport: parse each output, then merge what the tools said.

Which tool wins: GPUs come from rocminfo (it lists the logical GPUs the runtime will use, with gfx and
VRAM), else amd-smi, else rocm-smi; the others fill in what it lacks (partition mode, names). The ROCm
version comes from ``/opt/rocm/.info/version``, else amd-smi, else hipconfig. Every choice is recorded.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from hipwizard.doctor.judge.matrix import CompatMatrix
from hipwizard.doctor.models import (
    EnvReport,
    GpuInfo,
    Parsed,
    ProbeRecord,
    ToolView,
    TorchInfo,
)
from hipwizard.doctor.probe.replay import NOT_RECORDED, portable_argv
from hipwizard.doctor.read.evidence import fuse
from hipwizard.doctor.read.packages import parse_llamafactory_env, parse_pip
from hipwizard.doctor.read.python import (
    parse_collect_env,
    parse_ds_report,
    parse_pyprobe,
)
from hipwizard.doctor.read.versions import hip_version, parse_version_line
from hipwizard.gpu.parsers.amd_smi import parse_amdsmi, parse_amdsmi_monitor
from hipwizard.gpu.parsers.lspci import parse_lspci
from hipwizard.gpu.parsers.nvidia_smi import (
    parse_nvidia_smi_csv,
    parse_nvidia_smi_table,
)
from hipwizard.gpu.parsers.pci_ids import lookup
from hipwizard.gpu.parsers.rocm_smi import parse_rocm_smi_json, parse_rocm_smi_text
from hipwizard.gpu.parsers.rocminfo import parse_rocminfo
from hipwizard.runner import RunResult

_AMD_TOOLS = ("rocminfo", "amd-smi", "amd-smi version", "amd-smi list", "amd-smi static", "rocm-smi", "rocm-smi concise")


def _view(name: str, res: RunResult) -> Parsed[ToolView] | None:
    """Parse one AMD/NVIDIA tool's output; None when the tool did not run at all."""
    if res.status in ("missing", "error"):
        return None
    if res.status == "timeout" and not res.output.strip():
        return None
    if name == "rocminfo":
        return parse_rocminfo(res.output)
    if name == "amd-smi monitor":
        return parse_amdsmi_monitor(res.output)
    if name.startswith("amd-smi"):
        return parse_amdsmi(res.stdout, res.stderr, what=name)
    if name == "rocm-smi":
        return parse_rocm_smi_json(res.stdout, res.stderr)
    if name == "rocm-smi concise":
        return parse_rocm_smi_text(res.output)
    if name == "nvidia-smi":
        return parse_nvidia_smi_csv(res.stdout if res.ok else res.output)
    if name == "nvidia-smi table":
        return parse_nvidia_smi_table(res.output)
    if name == "lspci":
        return parse_lspci(res.stdout)
    return None


def build_env(
    results: dict[str, RunResult],
    matrix: CompatMatrix,
    replay_problems: dict[str, list[str]] | None = None,
) -> EnvReport:
    """Merge the parsed probe outputs into an EnvReport (pure: no programs run here), then fuse every
    source's view of each fact (``evidence.fuse``). Without a Python probe answer, torch facts come from a
    recorded ``collect_env``, ``llamafactory-cli env`` or ``pip list`` (``EVIDENCE_PROBES``)."""
    env = EnvReport()
    views: dict[str, ToolView] = {}
    problems: dict[str, list[str]] = {}
    for name, res in results.items():
        parsed = _view(name, res)
        if parsed is not None:
            views[name] = parsed.value
            problems[name] = list(parsed.problems)

    _merge_gpus(env, views, matrix)
    _merge_driver(env, views, results, problems)
    _merge_versions(env, views, results, problems)
    env.rocm_tools_present = any(results[n].status not in ("missing",) for n in _AMD_TOOLS if n in results)
    env.hipcc_present = results.get("hipconfig", RunResult((), "missing")).status not in ("missing", "error")
    env.torch = _torch(results.get("python"), problems)
    pasted = _pasted_torch(results, problems)
    if pasted is not None and (not env.torch.torch or NOT_RECORDED in env.torch.torch_error):
        env.torch = pasted
    elif pasted is not None and not env.torch.packages_reported and pasted.packages_reported:
        env.torch.packages, env.torch.packages_from = pasted.packages, pasted.packages_from
    ds = results.get("ds_report")
    if ds is not None and ds.status in ("ok", "failed") and ds.output.strip():
        parsed_ds = parse_ds_report(ds.output)
        problems["ds_report"] = parsed_ds.problems
        env.deepspeed_ops = parsed_ds.value if parsed_ds.value.ops else None
    for name, res in results.items():
        extra = list((replay_problems or {}).get(name, []))
        shown = replace(res, argv=tuple(portable_argv(res.argv)))  # no machine paths in reports
        env.probes.append(ProbeRecord(name, list(shown.argv), res.status, shown.explain(), extra + problems.get(name, [])))
    if not env.gpus:
        _gpus_from_torch(env, matrix)
    env.facts = fuse(env, views, results, matrix)
    return env


def _gpus_from_torch(env: EnvReport, matrix: CompatMatrix) -> None:
    """No GPU tool recorded, but a pasted collect_env / llamafactory-cli env names GPU 0 (and maybe a count)."""
    t = env.torch
    if not t.devices or not (t.hip or t.cuda):
        return
    dev = t.devices[0]
    name, arch = str(dev.get("name") or ""), str(dev.get("gcnArchName") or "")
    vendor: Literal["amd", "nvidia"] = "amd" if t.hip else "nvidia"
    base = arch.split(":")[0] if arch.startswith("gfx") else (matrix.gfx_for_product(name) if vendor == "amd" else "")
    count = t.device_count if t.source == "llamafactory-cli env" and t.device_count else 1
    label = f"{t.source} (GPU 0 only)" if count == 1 else t.source
    env.gpus = [GpuInfo(index=i, vendor=vendor, name=name, gfx=base, gfx_full=arch or base, source=label)
                for i in range(count)]
    env.gpu_source = label if vendor == "amd" else ""


def _pasted_torch(results: dict[str, RunResult], problems: dict[str, list[str]]) -> TorchInfo | None:
    """Torch facts from recorded collect_env / llamafactory-cli env, library versions from pip list."""
    readers = (("collect_env", parse_collect_env), ("llamafactory env", parse_llamafactory_env), ("pip list", parse_pip))
    found: list[TorchInfo] = []
    for name, reader in readers:
        res = results.get(name)
        if res is None or not res.ok:
            continue
        parsed = reader(res.stdout)
        problems[name] = parsed.problems
        if parsed.value.torch or parsed.value.packages:
            found.append(parsed.value)
    if not found:
        return None
    info = next((t for t in found if t.torch and t.source == "collect_env"), None) or found[0]
    for other in found:
        if other is info:
            continue
        if other.packages_reported and (not info.packages_reported or other.packages_from == "pip list"):
            merged = dict(info.packages)
            merged.update({k: v for k, v in other.packages.items() if v or k not in merged})
            info.packages, info.packages_from = merged, other.packages_from
        if not info.devices and other.devices:
            info.devices, info.device_count = other.devices, other.device_count
    return info


def _merge_gpus(env: EnvReport, views: dict[str, ToolView], matrix: CompatMatrix) -> None:
    order = ("rocminfo", "amd-smi static", "amd-smi list", "amd-smi", "rocm-smi", "rocm-smi concise", "amd-smi monitor",
             "lspci")
    listed = {n: [g for g in views[n].gpus if g.vendor == "amd"] for n in order if n in views}
    primary = next((n for n in order if listed.get(n) and _named(listed[n])), "")
    primary = primary or next((n for n in order if listed.get(n)), "")
    amd: list[GpuInfo] = [GpuInfo(**vars(g)) for g in listed[primary]] if primary else []
    for name in order:
        if name == primary or name not in listed or len(listed[name]) != len(amd):
            continue
        for mine, other in zip(amd, listed[name], strict=True):  # same count: same logical GPUs, same order
            for attr in ("name", "gfx", "gfx_full", "vram_bytes", "compute_partition", "memory_partition", "bdf",
                         "driver_version", "device_id"):
                if not getattr(mine, attr) and getattr(other, attr):
                    setattr(mine, attr, getattr(other, attr))
    for gpu in amd:
        known = lookup(gpu.device_id) if gpu.device_id else None
        if known and not gpu.name:
            gpu.name = known.product
            gpu.source += f" (name from PCI id {gpu.device_id})"
        if known and not gpu.gfx:
            gpu.gfx = known.gfx
            gpu.source += f" (gfx from PCI id {gpu.device_id})"
        if not gpu.gfx and gpu.name:
            gpu.gfx = matrix.gfx_for_product(gpu.name)
            if gpu.gfx:
                gpu.source += f" (gfx from product name {gpu.name!r})"
    env.gpus = amd
    env.gpu_source = primary
    nv = next((n for n in ("nvidia-smi", "nvidia-smi table") if n in views and views[n].gpus), "")
    if nv:
        env.gpus += views[nv].gpus
        env.nvidia_driver = views[nv].versions.get("nvidia", "")
    elif "lspci" in views:
        env.gpus += [g for g in views["lspci"].gpus if g.vendor == "nvidia"]


def _named(gpus: list[GpuInfo]) -> bool:
    return all(g.gfx or g.name or lookup(g.device_id) for g in gpus)


def _merge_driver(env: EnvReport, views: dict[str, ToolView], results: dict[str, RunResult], problems) -> None:
    states = [(n, v.driver_loaded, v.driver_note) for n, v in views.items() if not n.startswith("nvidia-smi")]
    if any(s is True for _, s, _ in states):
        env.amd_driver_loaded = True
    else:
        down = next(((n, note) for n, s, note in states if s is False), None)
        if down:
            env.amd_driver_loaded, env.amd_driver_note = False, f"{down[0]}: {down[1]}"
    for name in ("amdgpu version", "amdgpu modinfo"):
        res = results.get(name)
        if res is not None and res.ok:
            parsed = parse_version_line(res.stdout, name)
            problems[name] = parsed.problems
            if parsed.value:
                env.amdgpu_driver = parsed.value
                if env.amd_driver_loaded is None and name == "amdgpu version":
                    env.amd_driver_loaded = True  # /sys/module/amdgpu exists only while the module is loaded
                return
    for view in views.values():
        if view.versions.get("amdgpu") or view.versions.get("kfd"):  # "ROCk module version X" is amdgpu's
            env.amdgpu_driver = view.versions.get("amdgpu") or view.versions["kfd"]
            return
    env.amdgpu_driver = next((g.driver_version for g in env.amd_gpus if g.driver_version), "")


def _merge_versions(env: EnvReport, views: dict[str, ToolView], results: dict[str, RunResult], problems) -> None:
    res = results.get("rocm version file")
    if res is not None and res.ok:
        parsed = parse_version_line(res.stdout, "/opt/rocm/.info/version")
        problems["rocm version file"] = parsed.problems
        if parsed.value:
            env.rocm_version, env.rocm_version_source = parsed.value, "/opt/rocm/.info/version"
    hip = results.get("hipconfig")
    if hip is not None and hip.ok:
        parsed = hip_version(hip.stdout, "hipconfig --version")
        problems["hipconfig"] = parsed.problems
        env.hip_version = parsed.value
    if not env.rocm_version:
        for name, view in views.items():
            if view.versions.get("rocm"):
                env.rocm_version, env.rocm_version_source = view.versions["rocm"], name
                break
    if not env.rocm_version and env.hip_version:
        # HIP's version carries the ROCm line it shipped with (6.2.41133 -> ROCm 6.2)
        env.rocm_version, env.rocm_version_source = ".".join(env.hip_version.split(".")[:2]), "hipconfig (HIP version)"


def _torch(res: RunResult | None, problems: dict[str, list[str]]) -> TorchInfo:
    if res is None:
        return TorchInfo(torch_error="the Python probe did not run")
    if not res.ok:
        shown = replace(res, argv=tuple(portable_argv(res.argv)))
        info = TorchInfo(torch_error=f"the Python probe did not answer: {shown.explain()}")
        if res.stdout.strip().startswith("{"):  # a probe that printed its JSON and then crashed on exit
            parsed = parse_pyprobe(res.stdout)
            if not parsed.problems:
                return parsed.value
        return info
    parsed = parse_pyprobe(res.stdout)
    problems["python"] = parsed.problems
    if parsed.problems and not parsed.value.torch and not parsed.value.packages:
        parsed.value.torch_error = "; ".join(parsed.problems)
    return parsed.value
