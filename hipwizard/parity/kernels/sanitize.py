"""A shared-memory race detector: the port's driver (and the original's) under NVIDIA's ``compute-sanitizer``.

A missing barrier in a shared-memory reduction rarely changes an output on the GPU at hand (warps of a block run
close to lockstep, and a stale value may even be harmless), so the sweep's value detectors pass it. The
sanitizer's ``racecheck`` tool reports the hazard itself: a write and a read of the same shared word by different
warps with no barrier between them, whatever values they held. One small case per kernel is enough (the check
does not depend on the values), run under both drivers: a hazard in the port only is the port's failure
(detector ``race``); a hazard in the original too is reported, not blamed on the port. ``synccheck`` (a barrier
inside divergent code) is judged the same way when asked for.

Only kernels that use shared memory are worth it (racecheck watches shared memory only). Where the tool is
missing or refuses the device (it does under some sandboxes), the result says so and no verdict changes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from hipwizard.parity.kernels.verdict import CaseVerdict

EXIT_HAZARD = 97  # --error-exitcode: the tool found errors (a value no driver exits with)
TOOLS = ("racecheck", "synccheck")
_SHARED = re.compile(r"\b__shared__\b")
_SUMMARY = re.compile(r"(?:ERROR|RACECHECK|SYNCCHECK) SUMMARY:[^\n]*?(\d+) errors?", re.I)
_REFUSED = ("Device not supported", "Unable to find injection library", "Target application terminated before")


@dataclass
class SanitizerRun:
    """One driver under one tool: ``clean``, ``hazards`` (``errors`` > 0, ``first`` the tool's first report) or
    ``unavailable`` (``first`` says why)."""

    tool: str
    status: str
    errors: int = 0
    first: str = ""


def uses_shared_memory(kernel_body: str, shared_bytes: str) -> bool:
    """Does the kernel touch shared memory (a ``__shared__`` array in its body, or dynamic shared memory at the
    launch)? Only then can racecheck say anything."""
    return bool(_SHARED.search(kernel_body)) or shared_bytes.strip() not in ("", "0")


def sanitizer_path(explicit: str = "") -> str:
    """The compute-sanitizer to use ('' when there is none on this machine)."""
    if explicit:
        return explicit if Path(explicit).is_file() else ""
    return shutil.which("compute-sanitizer") or ""


def parse(tool: str, returncode: int, output: str) -> SanitizerRun:
    """Read one sanitizer run (exit status and its output; the driver's own ``ok``/``fail`` lines are among it)."""
    lines = [ln.removeprefix("=========").strip() for ln in output.splitlines()]
    reports = [ln for ln in lines if ln.startswith(("Error:", "ERROR:", "Race reported", "Barrier error"))
               or "hazard" in ln.lower() and "detected" in ln.lower()]
    m = _SUMMARY.search(output)
    errors = int(m.group(1)) if m else len(reports) if returncode == EXIT_HAZARD else 0
    if returncode == EXIT_HAZARD or errors:
        return SanitizerRun(tool, "hazards", max(errors, 1), (reports[0] if reports else "")[:300])
    refused = next((r for r in _REFUSED if r in output), "")
    ran = re.search(r"^ok \d+", output, re.M) is not None
    if refused or not ran:
        why = refused or next((ln for ln in reversed(lines) if ln), f"exit status {returncode}")
        return SanitizerRun(tool, "unavailable", 0, f"{tool} did not run the driver: {why}"[:300])
    return SanitizerRun(tool, "clean")


def run_tool(sanitizer: str, tool: str, binary: Path, k: int, manifest: Path, env: dict | None = None,
             timeout_s: int = 300) -> SanitizerRun:
    """``binary run k manifest`` under ``sanitizer --tool tool``."""
    argv = [sanitizer, "--tool", tool, "--error-exitcode", str(EXIT_HAZARD), "--print-limit", "4",
            str(binary), "run", str(k), str(manifest)]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=env, check=False)
    except subprocess.TimeoutExpired:
        return SanitizerRun(tool, "unavailable", 0, f"{tool} took more than {timeout_s} s")
    except OSError as exc:
        return SanitizerRun(tool, "unavailable", 0, f"{tool} could not start: {exc}")
    return parse(tool, proc.returncode, proc.stdout + proc.stderr)


def judge_sanitizer(original: SanitizerRun, port: SanitizerRun) -> CaseVerdict | None:
    """The verdict the tool adds: ``fail`` (detector ``race`` / ``barrier``) when the port has hazards and the
    original has none; ``original broken`` when both do (not the port's doing); None when the port is clean or
    the tool could not run either driver."""
    if port.status == "unavailable" or original.status == "unavailable":
        return None
    if port.status != "hazards":
        return None
    detector = "race" if port.tool == "racecheck" else "barrier"
    if original.status == "hazards":
        return CaseVerdict("original broken", detector, detail=f"{port.tool}: the original has {original.errors} "
                           f"hazard(s) too ({original.first})")
    return CaseVerdict("fail", detector, detail=f"{port.tool}: {port.errors} hazard(s) in the port, none in the "
                       f"original: {port.first}")


@dataclass
class SanitizerCheck:
    """One tool over one case's original and port drivers, and what it adds to the kernel's verdict."""

    tool: str
    original: SanitizerRun
    port: SanitizerRun
    verdict: CaseVerdict | None

    def summary(self) -> str:
        if self.original.status == "unavailable" or self.port.status == "unavailable":
            why = self.port.first if self.port.status == "unavailable" else self.original.first
            return f"{self.tool}: not run ({why})"
        return f"{self.tool}: original {self.original.status}, port {self.port.status}"


def check_case(sanitizer: str, tools: tuple[str, ...], binaries: dict[str, Path], k: int, line: str, work: Path,
               env: dict | None = None) -> list[SanitizerCheck]:
    """Each of ``tools`` over the original's and the port's drivers on one manifest ``line`` (one run)."""
    parts = line.split()
    out = []
    for tool in tools:
        runs = {}
        for variant in ("original", "port"):
            man = work / f"sanitize.{tool}.{variant}.txt"
            man.write_text(" ".join([parts[0], f"{parts[1]}.{tool}.{variant}", "1", *parts[3:]]) + "\n", encoding="utf-8")
            runs[variant] = run_tool(sanitizer, tool, binaries[variant], k, man, env)
        out.append(SanitizerCheck(tool, runs["original"], runs["port"],
                                  judge_sanitizer(runs["original"], runs["port"])))
    return out
