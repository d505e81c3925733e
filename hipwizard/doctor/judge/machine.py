"""Checks of the machine: GPU present, amdgpu driver, ROCm version, gfx support, partitions, bf16, HIP tools."""

from __future__ import annotations

from hipwizard.doctor.judge.context import GPU_TOOLS, ROCM_SOURCES, CheckContext
from hipwizard.doctor.models import Check, CheckStatus
from hipwizard.doctor.read.versions import major_minor
from hipwizard.units import fmt_bytes

MI300X_HOST_HINT = ("run `hipwizard doctor` on the MI300X host (or an AMD Developer Cloud MI300X droplet); "
                    "meanwhile Port, Parity and Train run here on CPU with the embedded demo")


def check_gpu(ctx: CheckContext) -> Check:
    why = "An MI300X fine-tune needs an AMD Instinct GPU that the ROCm runtime can see."
    env = ctx.env
    if ctx.kind == "amd":
        groups: dict[tuple[str, str, str], int] = {}
        for g in env.amd_gpus:
            key = (g.name or "AMD GPU", g.gfx or "gfx?", fmt_bytes(g.vram_bytes, "unknown"))
            groups[key] = groups.get(key, 0) + 1
        found = "; ".join(f"{n} × {name} ({gfx}, {mem} each)" for (name, gfx, mem), n in groups.items())
        found += f" — listed by {env.gpu_source}"
        unknown = [g for g in ctx.gfx_targets if ctx.matrix.gfx_facts(g) is None]
        if not ctx.gfx_targets:
            return Check("gpu", "GPU", "warn", found + "; no gfx target could be read", why,
                         "check `rocminfo` by hand: the agent's Name should be a gfx target such as gfx942")
        if unknown:
            return Check("gpu", "GPU", "warn", found + f"; {', '.join(unknown)} is not in hipwizard's compatibility matrix",
                         why, "checks of this arch are best-effort; see https://rocm.docs.amd.com/en/latest/compatibility/compatibility-matrix.html")
        return Check("gpu", "GPU", "ok", found, why)
    if ctx.kind == "nvidia":
        names = "; ".join(f"{g.name} ({fmt_bytes(g.vram_bytes, 'unknown')}, sm {g.compute_capability or '?'})"
                          for g in env.nvidia_gpus)
        return Check("gpu", "GPU", "warn",
                     f"NVIDIA only: {names}. This is the source side of a migration: AMD-specific checks are n/a",
                     why, "record reference captures here (Parity step), then " + MI300X_HOST_HINT)
    if ctx.unrecorded(*GPU_TOOLS):
        return Check("gpu", "GPU", "unknown", ctx.not_recorded("no GPU tool's output (rocminfo, amd-smi, rocm-smi, "
                     "nvidia-smi, lspci, collect_env) was recorded"), why, "paste or record one of them")
    if cut := ctx.cut_short():
        return Check("gpu", "GPU", "unknown", f"unknown: no GPU listed, but the output looks cut short ({cut})",
                     why, "paste the whole output (rocminfo lists every agent; collect_env's 'GPU models and configuration')")
    return Check("gpu", "GPU", "fail", f"no GPU found ({ctx.no_gpu_reason()})", why, MI300X_HOST_HINT)


def check_driver(ctx: CheckContext) -> Check:
    why = "The amdgpu kernel driver (with KFD) must be loaded for ROCm to reach the GPU."
    env = ctx.env
    fix = ("sudo modprobe amdgpu (install it with `amdgpu-install --usecase=dkms`); check `dmesg | grep amdgpu`; "
           "in containers pass --device=/dev/kfd --device=/dev/dri")
    if ctx.kind == "nvidia":
        return Check("driver", "amdgpu driver", "n/a", ctx.skip_nvidia(), why)
    if ctx.kind == "none" and env.amd_driver_loaded and env.amdgpu_driver:  # read though no GPU was listed
        return Check("driver", "amdgpu driver", "ok", f"amdgpu {env.amdgpu_driver} loaded (no GPU listed)", why)
    if ctx.kind == "none":
        return Check("driver", "amdgpu driver", ctx.no_gpu_status(),
                     ctx.skip_no_gpu() + ". On the MI300X host rocminfo must say 'ROCk module ... is loaded'", why, fix)
    version = f"amdgpu {env.amdgpu_driver}" if env.amdgpu_driver else "amdgpu (version not reported)"
    if ctx.replay and env.amd_driver_loaded is None and not env.amdgpu_driver:
        return Check("driver", "amdgpu driver", "unknown",
                     ctx.not_recorded(f"no driver output was recorded (the GPUs come from {env.gpu_source or 'the Python side'})"),
                     why, "record or paste rocminfo and cat /sys/module/amdgpu/version")
    if env.amd_driver_loaded is False:
        return Check("driver", "amdgpu driver", "fail", f"not usable: {env.amd_driver_note}", why, fix)
    return Check("driver", "amdgpu driver", "ok", f"{version} loaded", why)


def check_rocm(ctx: CheckContext) -> Check:
    env = ctx.env
    minimum, needs = ctx.arch_needs()
    why = f"{needs}; the ROCm line decides which torch wheels match."
    fix = ("install ROCm " + minimum + " or newer: https://rocm.docs.amd.com/projects/install-on-linux/en/latest/ "
           "(amdgpu-install --usecase=rocm)")
    severity: CheckStatus = "fail" if ctx.kind == "amd" else "warn"
    if not env.rocm_version:
        if ctx.kind == "nvidia":
            return Check("rocm", "ROCm", "n/a", ctx.skip_nvidia() + "; no ROCm installed", why)
        if ctx.unrecorded(*ROCM_SOURCES):
            built = f"; torch was built with HIP {env.torch.hip}" if env.torch.hip else ""
            return Check("rocm", "ROCm", "unknown", ctx.not_recorded(
                "no ROCm version source (/opt/rocm/.info/version, amd-smi, hipconfig) was recorded" + built), why,
                "record or paste `cat /opt/rocm/.info/version` or `amd-smi version`")
        found = "no ROCm version found" + ("" if env.rocm_tools_present else " (no ROCm tools installed)")
        return Check("rocm", "ROCm", severity, found, why, fix)
    mm = major_minor(env.rocm_version) or (0, 0)
    found = f"ROCm {env.rocm_version} (from {env.rocm_version_source})"
    if mm < (major_minor(minimum) or (6, 0)):
        return Check("rocm", "ROCm", severity, found + f": older than {minimum} ({needs})", why, fix)
    line, exact = ctx.matrix.rocm_line(env.rocm_version)
    note = ctx.matrix.rocm_note(env.rocm_version)
    if not exact:
        return Check("rocm", "ROCm", "warn", found + f": newer than the matrix knows; assumed like {line}", why,
                     "update hipwizard for its latest compatibility matrix")
    return Check("rocm", "ROCm", "ok", found + (f" — note: {note}" if note else ""), why)


def check_arch(ctx: CheckContext) -> Check:
    why = "Kernels (PyTorch, hipBLASLt, CK) are only built for the gfx targets a ROCm release supports."
    title = "GPU arch supported by ROCm"
    if ctx.kind != "amd":
        return Check("arch", title, "n/a" if ctx.kind == "nvidia" else ctx.no_gpu_status(),
                     ctx.skip_nvidia() if ctx.kind == "nvidia" else ctx.skip_no_gpu(), why)
    if not ctx.gfx_targets:
        return Check("arch", title, "warn", "no gfx target was read from the tools", why, "run `rocminfo | grep gfx`")
    if not ctx.env.rocm_version:
        if ctx.unrecorded(*ROCM_SOURCES):
            return Check("arch", title, "unknown", ctx.not_recorded(f"{', '.join(ctx.gfx_targets)}; the ROCm version")
                         + f". {ctx.arch_needs()[1]}", why, "record or paste `cat /opt/rocm/.info/version`")
        return Check("arch", title, "warn", f"{', '.join(ctx.gfx_targets)}; ROCm version unknown", why,
                     "install ROCm (see the ROCm check)")
    target = str(ctx.matrix.target.get("gfx", "gfx942"))
    lines: list[str] = []
    worst: CheckStatus = "ok"
    for gfx in ctx.gfx_targets:
        facts = ctx.matrix.gfx_facts(gfx)
        supported = ctx.matrix.rocm_supports(ctx.env.rocm_version, gfx)
        if facts is None:
            lines.append(f"{gfx}: unknown gfx name (not in the matrix)")
            worst = _worse(worst, "warn")
        elif supported is False:
            lines.append(f"{gfx} ({facts.family}) is not supported by ROCm {ctx.env.rocm_version}: {facts.needs()}")
            worst = _worse(worst, "fail")
        else:
            lines.append(f"{gfx} ({facts.family}: {', '.join(facts.products[:3])}) supported by ROCm {ctx.env.rocm_version}")
            if gfx != target:
                lines[-1] += f"; not the migration target {target} (MI300X): plans made for MI300X need adjusting"
                worst = _worse(worst, "warn")
    fix = "" if worst == "ok" else (f"install ROCm {ctx.arch_needs()[0]} or newer ({ctx.arch_needs()[1]}), "
                                    "or another release that lists this gfx target")
    return Check("arch", title, worst, "; ".join(lines), why, fix)


def check_partitions(ctx: CheckContext) -> Check:
    why = ("An MI300X in CPX/QPX/DPX mode shows as several logical GPUs that each report the FULL memory; "
           "with NPS1 they share it, so adding them up overstates memory.")
    title = "Partitions and memory"
    if ctx.kind != "amd":
        return Check("partitions", title, "n/a" if ctx.kind == "nvidia" else ctx.no_gpu_status(),
                     ctx.skip_nvidia() if ctx.kind == "nvidia" else ctx.skip_no_gpu(), why)
    gpus = ctx.env.amd_gpus
    parts = [g for g in gpus if g.is_partition]
    per = fmt_bytes(max((g.vram_bytes or 0 for g in gpus), default=0) or None, "unknown")
    if not parts:
        modes = sorted({f"{g.compute_partition}/{g.memory_partition}".strip("/") for g in gpus
                        if g.compute_partition or g.memory_partition})
        mode = f" ({', '.join(modes)})" if modes else " (partition mode not reported)"
        return Check("partitions", title, "ok", f"{len(gpus)} logical GPU(s), {per} each{mode}", why)
    mode = parts[0].compute_partition
    ways = {"DPX": 2, "TPX": 3, "QPX": 4, "CPX": 8}.get(mode, 1)
    share = ""
    if parts[0].vram_bytes and parts[0].memory_partition in ("NPS1", ""):
        share = f"; with {parts[0].memory_partition or 'NPS1'} plan about {fmt_bytes(parts[0].vram_bytes // ways)} per rank"
    return Check("partitions", title, "warn",
                 f"{len(parts)} logical GPUs in {mode} mode, each reporting {per} — never add these up{share}",
                 why, "for one big fine-tune use SPX: `sudo amd-smi set --compute-partition SPX` (no jobs running)")


def check_bf16(ctx: CheckContext) -> Check:
    why = ("bf16 training needs hardware bf16. On ROCm torch.cuda.is_bf16_supported() always says True, "
           "so it is decided from the gfx target.")
    if ctx.kind == "none":
        return Check("bf16", "bf16", ctx.no_gpu_status(), ctx.skip_no_gpu() + "; MI300X (gfx942) has native bf16", why)
    if ctx.kind == "nvidia":
        caps = [g.compute_capability for g in ctx.env.nvidia_gpus]
        if ctx.replay and not any(caps):
            return Check("bf16", "bf16", "unknown", ctx.not_recorded("the compute capability (this output does not "
                         "show it; nvidia-smi --query-gpu=name,compute_cap --format=csv does)"), why)
        ok = all(c and (major_minor(c) or (0, 0)) >= (8, 0) for c in caps)
        return Check("bf16", "bf16", "ok" if ok else "warn",
                     f"compute capability {', '.join(c or '?' for c in caps)} ({'bf16 native' if ok else 'bf16 needs sm 8.0+'})",
                     why, "" if ok else "train with fp16: true, bf16: false")
    verdicts: list[str] = []
    worst: CheckStatus = "ok"
    for gfx in ctx.gfx_targets or ["gfx?"]:
        facts = ctx.matrix.gfx_facts(gfx)
        kind = facts.bf16 if facts else "unknown"
        bf16_status: dict[str, CheckStatus] = {"native": "ok", "slow": "warn", "none": "fail"}
        status = bf16_status.get(kind, "warn")
        worst = _worse(worst, status)
        verdicts.append(f"{gfx}: {facts.precision() if facts else 'bf16 unknown'}")
    fix = "" if worst == "ok" else "set bf16: false and fp16: true in the LLaMA-Factory config"
    return Check("bf16", "bf16", worst, "; ".join(verdicts) + " (decided from the arch)", why, fix)


def check_toolchain(ctx: CheckContext) -> Check:
    env = ctx.env
    why = "hipcc builds DeepSpeed's JIT ops, flash-attention and your ported kernels (Port step's compile check)."
    fix = "install ROCm's HIP SDK (amdgpu-install --usecase=hiplibsdk) or Debian's `hipcc` package"
    if ctx.unrecorded("hipconfig"):
        return Check("toolchain", "HIP toolchain", "unknown", ctx.not_recorded("hipconfig --version"), why, fix)
    if not env.hipcc_present:
        if ctx.kind == "nvidia":
            return Check("toolchain", "HIP toolchain", "n/a", ctx.skip_nvidia() + "; hipcc not installed", why, fix)
        return Check("toolchain", "HIP toolchain", "warn", "hipconfig/hipcc not found", why, fix)
    if not env.hip_version:
        return Check("toolchain", "HIP toolchain", "warn", "hipconfig is present but printed no version", why, fix)
    gfx = (ctx.gfx_targets or [str(ctx.matrix.target.get("gfx", "gfx942"))])[0]
    supported = ctx.matrix.rocm_supports(env.hip_version, gfx)
    if not supported:
        return Check("toolchain", "HIP toolchain", "warn",
                     f"HIP {env.hip_version}: too old to build for {gfx} ({ctx.arch_needs()[1]})", why, fix)
    return Check("toolchain", "HIP toolchain", "ok", f"HIP {env.hip_version} (hipconfig)", why)


_RANK = {"n/a": 0, "unknown": 0, "ok": 1, "warn": 2, "fail": 3}


def _worse(a: CheckStatus, b: CheckStatus) -> CheckStatus:
    return a if _RANK[a] >= _RANK[b] else b
