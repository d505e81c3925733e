"""Checks of the Python stack: torch build and devices, DeepSpeed, FlashAttention, bitsandbytes,
LLaMA-Factory's pins, and whether every probe's output could be read."""

from __future__ import annotations

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from hipwizard.doctor.judge.context import PYTHON_SOURCES, ROCM_SOURCES, CheckContext
from hipwizard.doctor.models import Check, CheckStatus
from hipwizard.doctor.probe.replay import NOT_RECORDED
from hipwizard.doctor.read.versions import major_minor, torch_rocm_tag

UNKNOWN = "unknown: library versions were not reported (no Python probe output)"
PINNED = ("transformers", "peft", "trl", "datasets", "accelerate", "torch")


def check_torch_build(ctx: CheckContext) -> Check:
    t = ctx.env.torch
    why = "Training on MI300X needs a PyTorch built for HIP (ROCm); a CUDA or CPU build cannot use the GPU."
    title = "PyTorch build"
    if (t.torch_error or not t.torch) and ctx.unrecorded(*PYTHON_SOURCES):
        return Check("torch", title, "unknown", ctx.not_recorded("no Python probe, collect_env, pip list or "
                     "llamafactory-cli env output was recorded"), why, "paste `python -m torch.utils.collect_env`")
    if t.torch_error or not t.torch:
        status: CheckStatus = "fail" if ctx.kind == "amd" and NOT_RECORDED not in t.torch_error else "warn"
        return Check("torch", title, status, t.torch_error or "torch is not installed", why, ctx.torch_fix())
    if t.hip:
        if ctx.kind == "nvidia":
            return Check("torch", title, "warn", f"torch {t.torch} is a ROCm build on an NVIDIA machine", why,
                         "pip install torch (the CUDA build) on this machine")
        return Check("torch", title, "ok", f"torch {t.torch}, built for HIP {t.hip}", why)
    build = f"CUDA {t.cuda} build" if t.cuda else "CPU-only build"
    if ctx.kind == "nvidia":
        status = "ok" if t.cuda else "warn"
        return Check("torch", title, status, f"torch {t.torch} ({build}): right for this NVIDIA machine (source side)", why,
                     "" if t.cuda else "pip install torch (CUDA build)")
    if ctx.kind == "amd":
        return Check("torch", title, "fail", f"torch {t.torch} is a {build}: it cannot use the AMD GPUs", why, ctx.torch_fix())
    return Check("torch", title, "warn",
                 f"torch {t.torch} ({build}): fine for the CPU demo; the MI300X host needs the ROCm build", why, ctx.torch_fix())


def check_torch_rocm_match(ctx: CheckContext) -> Check:
    t = ctx.env.torch
    why = ("The ROCm wheel bundles its own HIP runtime, but the kernel driver, hipcc-built extensions (DeepSpeed "
           "ops, flash-attn) and system libraries follow the installed ROCm: matching lines avoid surprises.")
    title = "torch ROCm vs installed ROCm"
    if not t.hip:
        reason = "torch is not a ROCm build" if t.torch else "torch not available"
        return Check("torch_rocm", title, "n/a", f"skipped: {reason}", why)
    built = major_minor(t.hip)
    if not ctx.env.rocm_version and ctx.unrecorded(*ROCM_SOURCES):
        return Check("torch_rocm", title, "unknown", ctx.not_recorded(f"torch built for HIP {t.hip}; the installed ROCm"),
                     why, "record or paste `cat /opt/rocm/.info/version`")
    if not ctx.env.rocm_version:
        return Check("torch_rocm", title, "warn", f"torch built for HIP {t.hip}; installed ROCm unknown", why,
                     "install ROCm matching the wheel, or check /opt/rocm/.info/version")
    system = major_minor(ctx.env.rocm_version)
    tag = torch_rocm_tag(t.torch)
    found = f"torch HIP {t.hip} ({t.torch}); installed ROCm {ctx.env.rocm_version}"
    if built and system and built == system:
        return Check("torch_rocm", title, "ok", found, why)
    line = f"{system[0]}.{system[1]}" if system else ""
    wheels = ctx.matrix.torch_for_rocm(line)
    fix = (f"pip install torch --index-url {ctx.matrix.wheel_index(line)} (torch {wheels} has rocm{line} wheels)"
           if wheels else f"build torch against ROCm {line}, or install the ROCm release the wheel was built for")
    if tag and built and tag != built:
        found += f"; its version tag says rocm{tag[0]}.{tag[1]}"
    return Check("torch_rocm", title, "warn", found + ": different ROCm lines", why, fix)


def check_torch_devices(ctx: CheckContext) -> Check:
    t = ctx.env.torch
    why = "The GPUs the tools list must be visible to torch, with the expected arch."
    title = "GPUs visible to torch"
    if ctx.kind == "none":
        return Check("torch_devices", title, ctx.no_gpu_status(), ctx.skip_no_gpu(), why)
    if t.torch_error or not t.torch:
        return Check("torch_devices", title, "n/a", "skipped: torch is not available (see PyTorch build)", why)
    gpus = ctx.env.amd_gpus if ctx.kind == "amd" else ctx.env.nvidia_gpus
    if ctx.kind == "amd" and not t.hip:
        return Check("torch_devices", title, "n/a", "skipped: torch is not a ROCm build (see PyTorch build)", why)
    fix = ("add your user to the render and video groups (sudo usermod -aG render,video $USER, then log in again); "
           "check HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES")
    if t.device_count == 0:
        return Check("torch_devices", title, "fail", f"torch sees 0 GPUs; the tools list {len(gpus)}", why, fix)
    archs = sorted({str(d.get("gcnArchName") or d.get("capability") or "?").split(":")[0] for d in t.devices})
    found = f"torch sees {t.device_count} GPU(s) ({', '.join(archs) or 'arch not reported'}); the tools list {len(gpus)}"
    if t.source == "collect_env":
        found += " (collect_env shows GPU 0 only)"
    elif t.device_count < len(gpus):
        return Check("torch_devices", title, "warn", found, why, fix)
    tool_archs = set(ctx.gfx_targets)
    if ctx.kind == "amd" and tool_archs and archs and not set(archs) <= tool_archs:
        return Check("torch_devices", title, "warn", found + f"; the tools say {', '.join(sorted(tool_archs))}", why,
                     "check HSA_OVERRIDE_GFX_VERSION is not set to a different target")
    return Check("torch_devices", title, "ok", found, why)


def check_deepspeed(ctx: CheckContext) -> Check:
    pkgs = ctx.env.torch.packages
    why = "DeepSpeed gives ZeRO-2/3 and CPU offload; on ROCm its ops are JIT-built with hipcc."
    title = "DeepSpeed"
    version = pkgs.get("deepspeed", "")
    fix_install = "pip install deepspeed (ZeRO stages are disabled in Train until then)"
    if not ctx.env.torch.packages_reported and ctx.env.deepspeed_ops is not None and ctx.env.deepspeed_ops.deepspeed:
        version = ctx.env.deepspeed_ops.deepspeed  # ds_report names its own version
    elif not ctx.env.torch.packages_reported:
        return _unreported(ctx, "deepspeed", title, why)
    if not version:
        return Check("deepspeed", title, "warn", "not installed", why, fix_install)
    ops = ctx.env.deepspeed_ops
    if ops is None:
        probe = ctx.env.probe("ds_report")
        reason = probe.explanation if probe else "ds_report did not run"
        return Check("deepspeed", title, "warn", f"deepspeed {version}; op report unavailable ({reason})", why,
                     "run `ds_report` by hand to see op compatibility")
    needed = [str(o) for o in ctx.matrix.lib("deepspeed").get("needs_ops", ["fused_adam", "cpu_adam"])]
    bad = [o for o in needed if o in ops.ops and not ops.ops[o][1]]
    unknown = [o for o in needed if o not in ops.ops]
    found = f"deepspeed {version}; ops " + ", ".join(f"{o} {'compatible' if ops.ops.get(o, (0, 0))[1] else 'NOT compatible'}"
                                                     for o in needed if o in ops.ops)
    if "async_io" in ops.ops and not ops.ops["async_io"][1]:
        found += "; async_io not compatible (only needed for NVMe offload)"
    if bad:
        return Check("deepspeed", title, "fail", found, why,
                     "install hipcc and ninja so DeepSpeed can JIT-build the ops (see `ds_report` warnings)")
    if unknown:
        return Check("deepspeed", title, "warn", found + f"; not in the op report: {', '.join(unknown)}", why,
                     "run `ds_report` by hand")
    fix = str(ctx.matrix.lib("deepspeed").get("async_io_fix", "")) if "async_io" in found else ""
    return Check("deepspeed", title, "ok", found, why, fix)


def check_flash_attn(ctx: CheckContext) -> Check:
    version = ctx.env.torch.packages.get("flash_attn", "")
    lib = ctx.matrix.lib("flash_attn")
    why = "FlashAttention-2 saves memory and time on long sequences; without it LLaMA-Factory uses SDPA."
    title = "FlashAttention"
    if ctx.kind == "none":
        return Check("flash_attn", title, ctx.no_gpu_status(), ctx.skip_no_gpu() + f"; on MI300X: {lib.get('ck', 'CK backend')}", why)
    if ctx.kind == "nvidia":
        if version:
            return Check("flash_attn", title, "ok", f"flash-attn {version} (CUDA)", why)
        return Check("flash_attn", title, "warn", "not installed: SDPA will be used", why, "pip install flash-attn --no-build-isolation")
    backends = {facts.flash_attn if (facts := ctx.matrix.gfx_facts(g)) else "unknown" for g in ctx.gfx_targets}
    if "none" in backends:
        status: CheckStatus = "fail" if version else "warn"
        return Check("flash_attn", title, status, f"no FlashAttention backend for {', '.join(ctx.gfx_targets)}", why,
                     "use attn: sdpa (or eager) in the LLaMA-Factory config")
    backend = lib.get("ck") if backends == {"ck"} else lib.get("triton", "")
    if not ctx.env.torch.packages_reported:
        return _unreported(ctx, "flash_attn", title, why, f". Possible here: {backend}")
    if not version:
        return Check("flash_attn", title, "warn", f"not installed (SDPA with ROCm's AOTriton flash path will be used). Possible: {backend}",
                     why, str(lib.get("install", "")) + f" — {lib.get('doc', '')}")
    return Check("flash_attn", title, "ok", f"flash-attn {version}; {backend}", why)


def check_bitsandbytes(ctx: CheckContext) -> Check:
    version = ctx.env.torch.packages.get("bitsandbytes", "")
    lib = ctx.matrix.lib("bitsandbytes")
    why = "bitsandbytes is needed only for QLoRA (quantization_bit); its ROCm support arrived in stages."
    title = "bitsandbytes"
    if not ctx.env.torch.packages_reported:
        return Check("bitsandbytes", title, "n/a", UNKNOWN + "; only needed for QLoRA", why)
    if not version:
        return Check("bitsandbytes", title, "n/a", "not installed: only needed for QLoRA", why)
    if ctx.kind != "amd":
        return Check("bitsandbytes", title, "ok", f"bitsandbytes {version}", why)
    mm = major_minor(version) or (0, 0)
    doc = str(lib.get("doc", ""))
    if mm >= (major_minor(str(lib.get("official", "0.50"))) or (0, 50)):
        return Check("bitsandbytes", title, "ok", f"bitsandbytes {version}: official ROCm support", why)
    if mm >= (major_minor(str(lib.get("alpha", "0.45"))) or (0, 45)):
        stage = "experimental" if mm >= (major_minor(str(lib.get("experimental", "0.48"))) or (0, 48)) else "alpha (multi-backend)"
        return Check("bitsandbytes", title, "warn", f"bitsandbytes {version}: ROCm support is {stage}", why,
                     f"pip install -U 'bitsandbytes>={lib.get('official', '0.50')}' — {doc}")
    return Check("bitsandbytes", title, "fail", f"bitsandbytes {version} has no ROCm support", why,
                 f"pip install -U 'bitsandbytes>={lib.get('official', '0.50')}' — {doc}")


def check_llamafactory(ctx: CheckContext) -> Check:
    t = ctx.env.torch
    why = "LLaMA-Factory pins transformers/peft/trl/datasets/accelerate; outside those pins it fails at start-up."
    title = "LLaMA-Factory and its pins"
    version = t.packages.get("llamafactory", "")
    if not t.packages_reported:
        return _unreported(ctx, "llamafactory", title, why)
    if not version and ctx.replay and t.packages_from:
        return Check("llamafactory", title, "warn", f"llamafactory is not in the pasted {t.packages_from}", why,
                     "pip install 'hipwizard[train]' if it is missing on the machine")
    if not version:
        return Check("llamafactory", title, "fail", "llamafactory is not installed", why, "pip install 'hipwizard[train]'")
    if not t.llamafactory_requires:
        return Check("llamafactory", title, "warn", f"llamafactory {version}; its pins were not reported", why,
                     "pip check")
    good: list[str] = []
    bad: list[str] = []
    for text in t.llamafactory_requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.name.lower().replace("_", "-") not in PINNED:
            continue
        have = t.packages.get(req.name, "") or t.packages.get(req.name.replace("-", "_"), "")
        if not have:
            bad.append(f"{req.name} missing (needs {req.specifier})")
            continue
        try:
            ok = req.specifier.contains(Version(have.split("+")[0]), prereleases=True)
        except InvalidVersion:
            ok = False
        (good if ok else bad).append(f"{req.name} {have}" + ("" if ok else f" (needs {req.specifier})"))
    if bad:
        return Check("llamafactory", title, "fail", f"llamafactory {version}; outside its pins: {'; '.join(bad)}", why,
                     "pip install 'llamafactory==" + version + "' --upgrade-strategy eager (or pip install the pinned versions)")
    return Check("llamafactory", title, "ok", f"llamafactory {version}; {', '.join(good)} within its pins", why)


def _unreported(ctx: CheckContext, cid: str, title: str, why: str, extra: str = "") -> Check:
    """Library versions unknown: 'unknown (not recorded)' in a replay, a warning live (the probe failed)."""
    if ctx.replay:
        return Check(cid, title, "unknown", ctx.not_recorded("library versions (paste `pip list` or record the "
                     "Python probe)") + extra, why, "hipwizard doctor --record DIR on the machine, or paste `pip list`")
    return Check(cid, title, "warn", UNKNOWN + extra, why, "run `hipwizard doctor` on the machine itself")


def check_probes(ctx: CheckContext) -> Check:
    why = "Every conclusion above rests on these outputs; unreadable or hanging tools make checks blind."
    title = "Probe outputs"
    timeouts = [p for p in ctx.env.probes if p.status == "timeout"]
    unread = [p for p in ctx.env.probes if p.problems]
    errors = [p for p in ctx.env.probes if p.status == "error" and NOT_RECORDED not in p.explanation]
    unrecorded = [p.name for p in ctx.env.probes if p.status == "error" and NOT_RECORDED in p.explanation]
    ran = [p for p in ctx.env.probes if p.status in ("ok", "failed", "timeout")]
    parts = [f"{len(ran)} of {len(ctx.env.probes)} probes ran"]
    if unrecorded:
        parts.append(f"{NOT_RECORDED}: {', '.join(unrecorded)}")
    if timeouts:
        parts.append("hung: " + "; ".join(p.explanation for p in timeouts))
    if errors:
        parts.append("could not run: " + "; ".join(p.explanation for p in errors))
    if unread:
        parts.append("not fully read: " + "; ".join(f"{p.name}: {p.problems[0]}" for p in unread))
    status: CheckStatus = "warn" if timeouts or unread or errors else "ok"
    fix = "" if status == "ok" else "run the named tools by hand; attach `hipwizard doctor --record DIR` to a support ticket"
    return Check("probes", title, status, ". ".join(parts), why, fix)
