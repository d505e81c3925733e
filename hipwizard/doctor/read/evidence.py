"""Evidence fusion: every source's view of each fact, so agreement is shown and disagreement is a finding.

``fuse(env, views, results, matrix)`` -> ``[Fact]``: gfx arch, product, GPU count, VRAM per GPU, partition
mode, ROCm version, amdgpu driver, torch build and library versions, each with the tools (and PCI ids, and
pasted listings) that state it. Values are compared in a normalised form (``Evidence.key``): gfx base name,
product token (MI300X, MI300X VF, RX 7900 XTX, H100), whole GiB, ROCm major.minor. ``findings(env, matrix)``
turns the facts into lines for the "Sources agree" check.
"""

from __future__ import annotations

import re

from hipwizard.doctor.judge.matrix import CompatMatrix
from hipwizard.doctor.models import EnvReport, Evidence, Fact, ToolView, TorchInfo
from hipwizard.doctor.read.packages import parse_llamafactory_env, parse_pip
from hipwizard.doctor.read.python import (
    parse_collect_env,
    parse_ds_report,
    parse_pyprobe,
)
from hipwizard.doctor.read.versions import hip_version, major_minor, parse_version_line
from hipwizard.gpu.parsers.pci_ids import lookup
from hipwizard.runner import RunResult

_PRODUCT = re.compile(r"\b(MI\d{3}[A-Z]?(?:\s*VF)?|RX\s*\d{4}\s*(?:XTX|XT|GRE)?|W\d{4}|[HAB]\d{3}|A800|L40S?)\b", re.IGNORECASE)
LIBRARIES = ("deepspeed", "transformers", "flash_attn", "bitsandbytes", "llamafactory", "peft", "accelerate")
_KERNEL_RELEASE = re.compile(r"^\d+\.\d+\.\d+-\d+-\w+")  # in-kernel amdgpu: a kernel release, not a module version


def product_key(name: str) -> str:
    m = _PRODUCT.search(name or "")
    return re.sub(r"\s+", " ", m.group(1).upper()) if m else (name or "").strip().lower()


def _add(facts: dict[str, Fact], key: str, title: str, source: str, value: str, norm: str | None = None) -> None:
    if not value:
        return
    fact = facts.setdefault(key, Fact(key, title))
    if any(e.source == source for e in fact.evidence):
        return
    fact.evidence.append(Evidence(source, value, norm if norm is not None else value))


def _joined(values) -> str:
    return "+".join(sorted({v for v in values if v}))


def fuse(env: EnvReport, views: dict[str, ToolView], results: dict[str, RunResult], matrix: CompatMatrix) -> list[Fact]:
    """Each fact with every source that states it (order: the tools, PCI ids, then the Python side)."""
    facts: dict[str, Fact] = {}
    partitioned = any(g.is_partition for g in env.amd_gpus)
    for name, view in views.items():
        amd = [g for g in view.gpus if g.vendor == "amd"]
        gpus = amd or [g for g in view.gpus if g.vendor == "nvidia"]
        if not gpus:
            continue
        gfx = _joined(g.gfx for g in amd)
        _add(facts, "gfx", "gfx arch", name, gfx)
        names = _joined(g.name for g in gpus)
        _add(facts, "product", "product", name, names, _joined(product_key(g.name) for g in gpus if g.name))
        if not (name == "lspci" and partitioned):
            label = name + (" (physical devices)" if name == "lspci" else "")
            _add(facts, "gpu_count", "GPU count", label, str(len(gpus)))
        vram = max((g.vram_bytes or 0 for g in gpus), default=0)
        if vram:
            _add(facts, "vram", "VRAM per GPU", name, f"{vram / 2**30:.0f} GiB")
        modes = _joined("/".join(x for x in (g.memory_partition, g.compute_partition) if x) for g in amd)
        _add(facts, "partition", "partition mode", name, modes)
        ids = {g.device_id for g in amd if g.device_id}
        for dev in sorted(ids):
            known = lookup(dev)
            if known:
                _add(facts, "gfx", "gfx arch", f"PCI id {dev}", known.gfx)
                _add(facts, "product", "product", f"PCI id {dev}", known.product, product_key(known.product))
    _rocm_facts(facts, views, results)
    _driver_facts(facts, views, results)
    for torch in _torch_views(env, results):
        _torch_facts(facts, torch)
    ds = results.get("ds_report")
    if ds is not None and ds.output.strip():
        ops = parse_ds_report(ds.output).value
        _add(facts, "lib:deepspeed", "deepspeed version", "ds_report", ops.deepspeed)
        if ops.torch_hip:
            _add(facts, "torch_hip", "torch HIP", "ds_report", ops.torch_hip, _mm(ops.torch_hip))
    order = ["gfx", "product", "gpu_count", "vram", "partition", "rocm", "driver", "torch", "torch_hip",
             *(f"lib:{x}" for x in LIBRARIES)]
    return [facts[k] for k in order if k in facts]


def _mm(version: str) -> str:
    mm = major_minor(version)
    return f"{mm[0]}.{mm[1]}" if mm else version


def _rocm_facts(facts: dict[str, Fact], views: dict[str, ToolView], results: dict[str, RunResult]) -> None:
    res = results.get("rocm version file")
    if res is not None and res.ok:
        value = parse_version_line(res.stdout, "version").value
        _add(facts, "rocm", "ROCm version", "/opt/rocm/.info/version", value, _mm(value))
    for name, view in views.items():
        if view.versions.get("rocm"):
            _add(facts, "rocm", "ROCm version", name, view.versions["rocm"], _mm(view.versions["rocm"]))
    hip = results.get("hipconfig")
    if hip is not None and hip.ok:
        value = hip_version(hip.stdout, "hipconfig").value
        _add(facts, "rocm", "ROCm version", "hipconfig (HIP)", value, _mm(value))


def _driver_facts(facts: dict[str, Fact], views: dict[str, ToolView], results: dict[str, RunResult]) -> None:
    for name, label in (("amdgpu version", "/sys/module/amdgpu/version"), ("amdgpu modinfo", "modinfo amdgpu")):
        res = results.get(name)
        if res is not None and res.ok:
            _add(facts, "driver", "amdgpu driver", label, parse_version_line(res.stdout, name).value)
    for name, view in views.items():
        value = view.versions.get("amdgpu") or view.versions.get("kfd") or ""
        if not value:
            value = next((g.driver_version for g in view.gpus if g.vendor == "amd" and g.driver_version), "")
        if value and not _KERNEL_RELEASE.match(value):
            _add(facts, "driver", "amdgpu driver", name, value)


def _torch_views(env: EnvReport, results: dict[str, RunResult]) -> list[TorchInfo]:
    """Every source of torch facts on its own: the probe, collect_env, llamafactory-cli env, pip list."""
    out: list[TorchInfo] = []
    py = results.get("python")
    if py is not None and py.ok:
        out.append(parse_pyprobe(py.stdout).value)
    for name, reader in (("collect_env", parse_collect_env), ("llamafactory env", parse_llamafactory_env),
                         ("pip list", parse_pip)):
        res = results.get(name)
        if res is not None and res.ok:
            out.append(reader(res.stdout).value)
    return [t for t in out if t.torch or t.packages]


def _torch_facts(facts: dict[str, Fact], t: TorchInfo) -> None:
    source = t.source or "python probe"
    _add(facts, "torch", "torch build", source, t.torch)
    if t.hip:
        _add(facts, "torch_hip", "torch HIP", source, t.hip, _mm(t.hip))
    for dev in t.devices[:1]:
        base = str(dev.get("gcnArchName") or "").split(":")[0]
        if base.startswith("gfx"):
            _add(facts, "gfx", "gfx arch", source + " (GPU 0)", base)
        if dev.get("name"):
            _add(facts, "product", "product", source + " (GPU 0)", str(dev["name"]), product_key(str(dev["name"])))
    if t.source == "llamafactory-cli env" and t.devices:
        _add(facts, "gpu_count", "GPU count", source, str(t.device_count))
    if t.packages_reported:
        for lib in LIBRARIES:
            if t.packages.get(lib):
                _add(facts, f"lib:{lib}", f"{lib} version", source, t.packages[lib])


def findings(env: EnvReport, matrix: CompatMatrix) -> tuple[list[str], list[str]]:
    """(disagreements and untested pairs: each a warning line, notes that are not problems)."""
    problems = [f.describe() for f in env.facts if not f.agree]
    notes: list[str] = []
    t = env.torch
    host = major_minor(env.rocm_version) if env.rocm_version else None
    built = major_minor(t.hip) if t.hip else None
    if host and built and host != built:
        problems.append(f"torch {t.torch or ''} is built for ROCm {built[0]}.{built[1]} on a ROCm "
                        f"{env.rocm_version} host ({env.rocm_version_source})".replace("  ", " "))
    count = next((f for f in env.facts if f.key == "gpu_count"), None)
    tools = max((int(e.value) for e in count.evidence if e.value.isdigit()), default=0) if count else 0
    if t.source == "collect_env" and t.devices and tools > 1:
        notes.append(f"collect_env names GPU 0 only; the tools list {tools} GPUs (torch's own count was not recorded)")
    driver = env.amdgpu_driver
    shipped = matrix.driver_rocm_line(driver) if driver and not _KERNEL_RELEASE.match(driver) else ""
    if shipped and host and shipped != f"{host[0]}.{host[1]}":
        problems.append(f"amdgpu {driver} ships with ROCm {shipped}, this host has ROCm {env.rocm_version}: "
                        "not a driver/ROCm pair known to be tested together")
    elif driver and host and not shipped:
        notes.append(f"amdgpu {driver} with ROCm {env.rocm_version}: no pairing data for this driver line")
    return problems, notes
