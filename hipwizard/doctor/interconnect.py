"""The multi-GPU preflight: is this node's interconnect fit for a multi-GPU run? (the doctor's service)

``preflight(files, live=..., env=...)`` reads each given file (rccl-tests, TransferBench, ``amd-smi topology`` or
``rocm-smi --showtopo`` output, recorded or pasted; each file is recognised by its content), and with ``live``
asks this machine: ``amd-smi topology`` (else ``rocm-smi --showtopo``), TransferBench p2p when installed,
``/proc/cmdline``, ``/proc/sys/kernel/numa_balancing`` and ``lspci -vvv``'s ACS lines. The judge
(``judge.interconnect``) turns them into checklist rows against AMD's published numbers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hipwizard.doctor.judge.interconnect import preflight_checks
from hipwizard.doctor.models import Check
from hipwizard.doctor.read.interconnect import (
    RcclRun,
    Topology,
    TransferBenchRun,
    read_rccl_tests,
    read_topology,
    read_transferbench,
)
from hipwizard.errors import UserError
from hipwizard.runner import Runner, SubprocessRunner

MAX_INPUT_BYTES = 16 * 2**20
LIVE_TIMEOUT_S = 60.0


@dataclass
class PreflightResult:
    checks: list[Check]
    read: list[str] = field(default_factory=list)  # "FILE: rccl-tests (8 ranks)" — what each input was taken as
    notes: list[str] = field(default_factory=list)  # what could not be read or run

    @property
    def failed(self) -> bool:
        return any(c.status == "fail" for c in self.checks)


@dataclass
class _Inputs:
    rccl: list[RcclRun] = field(default_factory=list)
    transferbench: list[TransferBenchRun] = field(default_factory=list)
    topology: list[Topology] = field(default_factory=list)


def _take(text: str, label: str, inputs: _Inputs, result: PreflightResult) -> bool:
    kinds = []
    if (r := read_rccl_tests(text)) is not None:
        inputs.rccl.append(r)
        kinds.append(f"rccl-tests ({r.ranks or '?'} ranks)")
    if (t := read_transferbench(text)) is not None:
        inputs.transferbench.append(t)
        kinds.append("TransferBench")
    if (g := read_topology(text)) is not None:
        inputs.topology.append(g)
        kinds.append(f"{g.tool} topology ({len(g.devices)} GPUs)")
    if kinds:
        result.read.append(f"{label}: {', '.join(kinds)}")
    return bool(kinds)


def _read_file(path: Path) -> str:
    try:
        if not path.is_file():
            raise UserError(f"{path} is not a file")
        if path.stat().st_size > MAX_INPUT_BYTES:
            raise UserError(f"{path} is larger than {MAX_INPUT_BYTES >> 20} MiB: not a tool's output")
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None


def _read_optional(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def preflight(files: Sequence[str | Path] = (), *, live: bool = False, env: Mapping[str, str] | None = None,
              runner: Runner | None = None, platform: str | None = None) -> PreflightResult:
    """The interconnect checks from ``files`` and, with ``live``, from this machine. ``UserError`` for a file that
    cannot be read, or when nothing in them is a known tool's output and nothing is
    live. ``env`` None: this process's environment (its NCCL/RCCL variables are judged)."""
    result, inputs = PreflightResult([]), _Inputs()
    for f in files:
        path = Path(f).expanduser()
        if not _take(_read_file(path), str(path), inputs, result):
            result.notes.append(f"{path}: not rccl-tests, TransferBench, amd-smi topology or rocm-smi --showtopo output")
    cmdline = numa = None
    acs: list[str] | None = None
    if live:
        runner = runner or SubprocessRunner()
        topo_cmd = ["amd-smi", "topology"] if runner.which("amd-smi") else ["rocm-smi", "--showtopo"]
        for argv in (topo_cmd, ["TransferBench", "p2p"]):
            if runner.which(argv[0]) is None:
                result.notes.append(f"{argv[0]} is not installed: not measured live")
                continue
            run = runner.run(argv, timeout=LIVE_TIMEOUT_S)
            if run.ok:
                _take(run.stdout, " ".join(argv), inputs, result)
            else:
                result.notes.append(run.explain())
        cmdline = _read_optional("/proc/cmdline")
        numa = _read_optional("/proc/sys/kernel/numa_balancing")
        if runner.which("lspci"):
            run = runner.run(["lspci", "-vvv"], timeout=LIVE_TIMEOUT_S)
            acs = [ln for ln in run.stdout.splitlines() if "ACSCtl:" in ln] if run.ok else None
    if not (inputs.rccl or inputs.transferbench or inputs.topology or live):
        raise UserError("nothing to judge: give rccl-tests, TransferBench or topology outputs, or run it live on the "
                        "node")
    result.checks = preflight_checks(rccl=inputs.rccl, transferbench=inputs.transferbench, topology=inputs.topology,
                                     env=dict(os.environ) if env is None else env, cmdline=cmdline,
                                     numa_balancing=numa, acs_lines=acs, platform=platform)
    return result
