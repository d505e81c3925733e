"""The probes: which programs the doctor runs, each through the runner seam, all at once.

A probe only runs a program and keeps its RunResult; turning text into models is the parsers' job.
Files (``/opt/rocm/.info/version``, ``/sys/module/amdgpu/version``) are read with ``cat`` through the same
seam, so a recording holds them too and ``--replay`` sees exactly what the user's machine said.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass
from typing import Callable

from hipwizard.runner import Runner, RunResult

DEFAULT_TIMEOUT_S = 30.0
# The Python probe imports torch, transformers and deepspeed in a fresh interpreter: give it longer.
SLOW_PROBE_FACTOR = 3.0


@dataclass(frozen=True)
class Probe:
    """A named command. ``slow`` probes get ``SLOW_PROBE_FACTOR`` times the timeout."""

    name: str
    argv: tuple[str, ...]
    slow: bool = False


def _venv_tool(name: str) -> str:
    """A console script of this interpreter's environment (e.g. ``ds_report`` in an unactivated venv)."""
    candidate = os.path.join(os.path.dirname(sys.executable), name)
    return candidate if os.access(candidate, os.X_OK) else name


def default_probes() -> tuple[Probe, ...]:
    """Every probe of a doctor run, in report order."""
    return (
        Probe("rocminfo", ("rocminfo",)),
        Probe("amd-smi", ("amd-smi",)),  # ROCm 7: the summary table; older: the banner with versions
        Probe("amd-smi version", ("amd-smi", "version")),
        Probe("amd-smi list", ("amd-smi", "list", "--json")),
        Probe("amd-smi static", ("amd-smi", "static", "--json")),
        Probe("rocm-smi", ("rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json")),
        Probe("rocm-smi concise", ("rocm-smi",)),  # the only rocm-smi view with the partition column
        Probe("hipconfig", ("hipconfig", "--version")),
        Probe("rocm version file", ("cat", "/opt/rocm/.info/version")),
        Probe("amdgpu version", ("cat", "/sys/module/amdgpu/version")),
        Probe("amdgpu modinfo", ("modinfo", "-F", "version", "amdgpu")),
        Probe(
            "nvidia-smi",
            ("nvidia-smi", "--query-gpu=index,name,memory.total,driver_version,compute_cap,pci.bus_id,uuid",
             "--format=csv,nounits"),
        ),
        Probe("python", (sys.executable, "-m", "hipwizard.doctor.pyprobe"), slow=True),
        Probe("ds_report", (_venv_tool("ds_report"),), slow=True),
    )


# Outputs users paste that no live probe runs (a live run has better sources for each): they are read from a
# recording only, through the same runner seam (``report.diagnose`` asks a replaying runner for them).
EVIDENCE_PROBES: tuple[Probe, ...] = (
    Probe("collect_env", ("collect_env",)),
    Probe("llamafactory env", ("llamafactory-cli", "env")),
    Probe("pip list", ("pip", "list")),
    Probe("lspci", ("lspci", "-nn")),
    Probe("nvidia-smi table", ("nvidia-smi",)),
    Probe("amd-smi monitor", ("amd-smi", "monitor")),
)


def probe_by_name(name: str) -> Probe | None:
    """A probe of ``default_probes`` or ``EVIDENCE_PROBES`` by its name."""
    return next((p for p in (*default_probes(), *EVIDENCE_PROBES) if p.name == name), None)


# When a JSON form is refused (older amd-smi), the plain-text form answers instead.
TEXT_FALLBACKS: dict[str, tuple[str, ...]] = {
    "amd-smi list": ("amd-smi", "list"),
    "amd-smi static": ("amd-smi", "static"),
}


def run_probes(
    runner: Runner,
    timeout: float = DEFAULT_TIMEOUT_S,
    probes: tuple[Probe, ...] | None = None,
    on_done: Callable[[str, RunResult], None] | None = None,
) -> dict[str, RunResult]:
    """Run every probe concurrently (each waits on its own program) and return name -> RunResult.

    ``on_done(name, result)`` is called from worker threads as each probe finishes (for progress).
    Never raises for a tool's behaviour: missing, hanging and failing tools are RunResult statuses.
    """
    probes = probes or default_probes()

    def one(probe: Probe) -> tuple[str, RunResult]:
        limit = timeout * (SLOW_PROBE_FACTOR if probe.slow else 1.0)
        try:
            res = runner.run(probe.argv, timeout=limit)
            fallback = TEXT_FALLBACKS.get(probe.name)
            if fallback and res.status == "failed" and _refused_json(res):
                res = runner.run(fallback, timeout=limit)
        except Exception as exc:  # a broken runner must not take the whole report down
            res = RunResult(probe.argv, "error", note=f"{type(exc).__name__}: {exc}")
        if on_done is not None:
            on_done(probe.name, res)
        return probe.name, res

    # Daemon threads, not a pool: a UI that quits mid-probe must not wait for a slow tool at exit.
    results: dict[str, RunResult] = {}

    def store(probe: Probe) -> None:
        name, res = one(probe)
        results[name] = res

    threads = [threading.Thread(target=store, args=(p,), daemon=True, name=f"probe {p.name}") for p in probes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {p.name: results[p.name] for p in probes}


def _refused_json(res: RunResult) -> bool:
    text = res.output.lower()
    return "unrecognized arguments" in text or "invalid choice" in text or "no json" in text
