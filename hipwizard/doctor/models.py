"""What the doctor knows: parse results, GPUs, the Python stack, the environment and the checks.

Plain dataclasses (no third-party imports) so that importing them costs nothing on the path to the first frame.
``GpuInfo``, ``ToolView`` and ``Parsed`` are the GPU tool parsers' (``hipwizard.gpu.parsers.models``). Every
model turns into JSON-ready dicts with ``to_dict`` and back with ``from_dict`` (the saved report in the
workspace, ``hipwizard doctor --json``).
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

# Re-exported: an EnvReport holds the GpuInfo of the shared GPU tool parsers.
from hipwizard.gpu.parsers.models import GpuInfo, Parsed, ToolView

__all__ = ["Check", "CheckCounts", "CheckStatus", "DeepSpeedOps", "DoctorReport", "EnvReport", "Evidence", "Fact", "GpuInfo", "Parsed",
           "ProbeRecord", "STATUS_SYMBOL", "STATUS_WORD", "TorchInfo", "ToolView"]

# "unknown": a replayed check whose inputs were not recorded (never a verdict on the machine).
CheckStatus = Literal["ok", "warn", "fail", "n/a", "unknown"]

# State is never colour-only: every status has a symbol and a word.
STATUS_SYMBOL: dict[str, str] = {"ok": "✔", "warn": "⚠", "fail": "✖", "n/a": "–", "unknown": "?"}
STATUS_WORD: dict[str, str] = {"ok": "ok", "warn": "warn", "fail": "fail", "n/a": "n/a", "unknown": "unknown"}


@dataclass
class TorchInfo:
    """The Python side as the subprocess probe (or a pasted collect_env) saw it."""

    python: str = ""
    torch: str = ""
    hip: str = ""  # torch.version.hip
    cuda: str = ""  # torch.version.cuda
    device_count: int = 0
    devices: list[dict[str, Any]] = field(default_factory=list)  # name, gcnArchName, capability, total_memory
    torch_error: str = ""  # why torch could not be imported or queried
    packages: dict[str, str] = field(default_factory=dict)  # distribution -> version ("" = not installed)
    llamafactory_requires: list[str] = field(default_factory=list)
    source: str = ""
    packages_from: str = ""  # the listing that gave ``packages`` ("pip list", ...); "" = this probe itself

    @property
    def packages_reported(self) -> bool:
        """True when library versions are known (the probe or a pasted pip list report them; collect_env does not)."""
        return bool(self.packages) and (bool(self.packages_from) or self.source != "collect_env")


@dataclass
class DeepSpeedOps:
    """The op table of ``ds_report``: op -> (installed, compatible)."""

    ops: dict[str, tuple[bool, bool]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    torch_hip: str = ""
    torch_cuda: str = ""
    deepspeed: str = ""


@dataclass
class Evidence:
    """One source's value for a fact: ``source`` (a tool, a pasted listing, "PCI id 0x74a1"), ``value`` as shown,
    ``key`` the normalised form compared with other sources."""

    source: str
    value: str
    key: str


@dataclass
class Fact:
    """One fact (gfx arch, product, GPU count, VRAM, ROCm, driver, torch build, a library's version) with every
    source that states it."""

    key: str
    title: str
    evidence: list[Evidence] = field(default_factory=list)
    note: str = ""

    @property
    def agree(self) -> bool:
        return len({e.key for e in self.evidence}) <= 1

    @property
    def value(self) -> str:
        return self.evidence[0].value if self.evidence else ""

    def describe(self) -> str:
        """'gfx942 (rocminfo, rocm-smi agree)' or 'rocminfo: 8; lspci: 4' when they differ."""
        if not self.evidence:
            return f"{self.title}: not reported"
        if self.agree:
            names = ", ".join(e.source for e in self.evidence)
            return f"{self.title} {self.value} ({names}{' agree' if len(self.evidence) > 1 else ''})"
        return f"{self.title}: " + "; ".join(f"{e.source} says {e.value}" for e in self.evidence)


@dataclass
class ProbeRecord:
    """One probe run: what ran and how it went (the parsed value lives in the EnvReport)."""

    name: str
    argv: list[str]
    status: str
    explanation: str
    problems: list[str] = field(default_factory=list)


@dataclass
class EnvReport:
    """Everything the probes found, merged: the input of the checks."""

    gpus: list[GpuInfo] = field(default_factory=list)
    gpu_source: str = ""  # the tool whose GPU list was used
    rocm_version: str = ""
    rocm_version_source: str = ""
    hip_version: str = ""  # hipconfig --version
    amdgpu_driver: str = ""  # kernel driver version, "" if unknown
    amd_driver_loaded: bool | None = None  # None: nothing said either way
    amd_driver_note: str = ""  # the tool's own words when it is not loaded
    rocm_tools_present: bool = False
    hipcc_present: bool = False
    nvidia_driver: str = ""
    torch: TorchInfo = field(default_factory=TorchInfo)
    deepspeed_ops: DeepSpeedOps | None = None
    probes: list[ProbeRecord] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)  # every source's view of each fact (evidence.fuse)

    @property
    def amd_gpus(self) -> list[GpuInfo]:
        return [g for g in self.gpus if g.vendor == "amd"]

    @property
    def nvidia_gpus(self) -> list[GpuInfo]:
        return [g for g in self.gpus if g.vendor == "nvidia"]

    def probe(self, name: str) -> ProbeRecord | None:
        return next((p for p in self.probes if p.name == name), None)


@dataclass
class Check:
    """One line of the checklist: status, what was found, why it matters, how to fix it."""

    id: str
    title: str
    status: CheckStatus
    found: str
    why: str
    fix: str = ""

    @property
    def symbol(self) -> str:
        return STATUS_SYMBOL[self.status]

    @property
    def label(self) -> str:
        """Symbol and word: the status readable without colour."""
        return f"{STATUS_SYMBOL[self.status]} {STATUS_WORD[self.status]}"


@dataclass(frozen=True)
class CheckCounts:
    """How many checks ended in each status (``DoctorReport.counts``); ``to_dict`` is the JSON's ``counts``."""

    ok: int = 0
    warn: int = 0
    fail: int = 0
    not_applicable: int = 0  # "n/a"
    unknown: int = 0

    @classmethod
    def of(cls, checks: list[Check]) -> CheckCounts:
        n = {status: sum(1 for c in checks if c.status == status) for status in STATUS_WORD}
        return cls(n["ok"], n["warn"], n["fail"], n["n/a"], n["unknown"])

    def to_dict(self) -> dict[str, int]:
        return {"ok": self.ok, "warn": self.warn, "fail": self.fail, "n/a": self.not_applicable,
                "unknown": self.unknown}


@dataclass
class DoctorReport:
    """The doctor's answer: the environment, the checks, and where the outputs came from."""

    env: EnvReport
    checks: list[Check]
    origin: str = "live"  # "live" or "replay of DIR"
    hipwizard_version: str = ""
    notes: list[str] = field(default_factory=list)  # what the user must know about the inputs (a paste cut short)

    @property
    def counts(self) -> CheckCounts:
        return CheckCounts.of(self.checks)

    @property
    def failed(self) -> bool:
        return any(c.status == "fail" for c in self.checks)

    def summary(self) -> str:
        """One line, e.g. '7 ok, 2 warn, 1 fail, 3 n/a' (', 2 unknown' when a replay lacked inputs)."""
        c = self.counts
        text = f"{c.ok} ok, {c.warn} warn, {c.fail} fail, {c.not_applicable} n/a"
        return text + (f", {c.unknown} unknown" if c.unknown else "")

    def to_dict(self) -> dict[str, Any]:
        env = asdict(self.env)
        env["gpus"] = [dict(asdict(g), is_partition=g.is_partition) for g in self.env.gpus]
        return {
            "hipwizard": self.hipwizard_version,
            "origin": self.origin,
            "notes": list(self.notes),
            "summary": self.summary(),
            "counts": self.counts.to_dict(),
            "checks": [asdict(c) for c in self.checks],
            "env": env,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DoctorReport":
        """Rebuild a saved report; unknown keys (from newer versions) are ignored."""
        env_d = dict(data.get("env") or {})
        env = EnvReport(**_known(EnvReport, env_d, skip={"gpus", "torch", "deepspeed_ops", "probes", "facts"}))
        env.facts = [Fact(**dict(_known(Fact, f, skip={"evidence"}),
                                 evidence=[Evidence(**_known(Evidence, e)) for e in f.get("evidence") or []]))
                     for f in env_d.get("facts") or [] if isinstance(f, dict)]
        env.gpus = [GpuInfo(**_known(GpuInfo, g)) for g in env_d.get("gpus") or []]
        env.torch = TorchInfo(**_known(TorchInfo, env_d.get("torch") or {}))
        if env_d.get("deepspeed_ops"):
            ds = env_d["deepspeed_ops"]
            env.deepspeed_ops = DeepSpeedOps(**_known(DeepSpeedOps, ds))
            env.deepspeed_ops.ops = {k: (bool(v[0]), bool(v[1])) for k, v in (ds.get("ops") or {}).items()}
        env.probes = [ProbeRecord(**_known(ProbeRecord, p)) for p in env_d.get("probes") or []]
        checks = [Check(**_known(Check, c)) for c in data.get("checks") or []]
        notes = [str(n) for n in data.get("notes") or [] if isinstance(n, str)]
        return cls(env, checks, data.get("origin", "live"), data.get("hipwizard", ""), notes)


def _known(cls, data: dict[str, Any], skip: AbstractSet[str] = frozenset()) -> dict[str, Any]:
    names = {f.name for f in fields(cls)} - set(skip)
    return {k: v for k, v in data.items() if k in names}
