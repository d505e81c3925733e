"""Probe results -> one EnvReport: parse each output, then merge what the tools said.

Which tool wins: GPUs come from rocminfo (it lists the logical GPUs the runtime will use, with gfx and
VRAM), else amd-smi, else rocm-smi; the others fill in what it lacks (partition mode, names). The ROCm
version comes from ``/opt/rocm/.info/version``, else amd-smi, else hipconfig. Every choice is recorded.
"""

from __future__ import annotations

from dataclasses import replace

from hipwizard.doctor.matrix import CompatMatrix
from hipwizard.doctor.models import EnvReport, GpuInfo, Parsed, ProbeRecord, TorchInfo, ToolView
from hipwizard.doctor.parse_python import parse_ds_report, parse_pyprobe
from hipwizard.doctor.rawtext import parse_version_line
from hipwizard.doctor.replay import portable_argv
from hipwizard.gpu.parsers.amd_smi import parse_amdsmi
from hipwizard.gpu.parsers.nvidia_smi import parse_nvidia_smi_csv
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
    if name.startswith("amd-smi"):
        return parse_amdsmi(res.stdout, res.stderr, what=name)
    if name == "rocm-smi":
        return parse_rocm_smi_json(res.stdout, res.stderr)
    if name == "rocm-smi concise":
        return parse_rocm_smi_text(res.output)
    if name == "nvidia-smi":
        return parse_nvidia_smi_csv(res.stdout if res.ok else res.output)
    return None


def build_env(
    results: dict[str, RunResult],
    matrix: CompatMatrix,
    replay_problems: dict[str, list[str]] | None = None,
    torch_override: TorchInfo | None = None,
) -> EnvReport:
    """Merge the parsed probe outputs into an EnvReport (pure: no programs run here).

    ``torch_override`` replaces the Python probe's answer (a pasted ``collect_env`` in a replay directory).
    """
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
    env.torch = torch_override or _torch(results.get("python"), problems)
    ds = results.get("ds_report")
    if ds is not None and ds.status in ("ok", "failed") and ds.output.strip():
        parsed_ds = parse_ds_report(ds.output)
        problems["ds_report"] = parsed_ds.problems
        env.deepspeed_ops = parsed_ds.value if parsed_ds.value.ops else None
    for name, res in results.items():
        extra = list((replay_problems or {}).get(name, []))
        shown = replace(res, argv=tuple(portable_argv(res.argv)))  # no machine paths in reports
        env.probes.append(ProbeRecord(name, list(shown.argv), res.status, shown.explain(), extra + problems.get(name, [])))
    return env


def _merge_gpus(env: EnvReport, views: dict[str, ToolView], matrix: CompatMatrix) -> None:
    order = ("rocminfo", "amd-smi static", "amd-smi list", "amd-smi", "rocm-smi", "rocm-smi concise")
    primary = next((n for n in order if n in views and views[n].gpus and _named(views[n].gpus)), "")
    primary = primary or next((n for n in order if n in views and views[n].gpus), "")
    amd: list[GpuInfo] = [GpuInfo(**vars(g)) for g in views[primary].gpus] if primary else []
    for name in order:
        if name == primary or name not in views or len(views[name].gpus) != len(amd):
            continue
        for mine, other in zip(amd, views[name].gpus):  # same count: same logical GPUs, same order
            for attr in ("name", "gfx", "gfx_full", "vram_bytes", "compute_partition", "memory_partition", "bdf", "driver_version"):
                if not getattr(mine, attr) and getattr(other, attr):
                    setattr(mine, attr, getattr(other, attr))
    for gpu in amd:
        if not gpu.gfx and gpu.name:
            gpu.gfx = matrix.gfx_for_product(gpu.name)
            if gpu.gfx:
                gpu.source += f" (gfx from product name {gpu.name!r})"
    env.gpus = amd
    env.gpu_source = primary
    if "nvidia-smi" in views:
        env.gpus += views["nvidia-smi"].gpus
        env.nvidia_driver = views["nvidia-smi"].versions.get("nvidia", "")


def _named(gpus: list[GpuInfo]) -> bool:
    return all(g.gfx or g.name for g in gpus)


def _merge_driver(env: EnvReport, views: dict[str, ToolView], results: dict[str, RunResult], problems) -> None:
    states = [(n, v.driver_loaded, v.driver_note) for n, v in views.items() if n != "nvidia-smi"]
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
        parsed = parse_version_line(hip.stdout, "hipconfig --version")
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
