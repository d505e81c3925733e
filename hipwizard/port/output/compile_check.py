"""Compile-check written HIP files with hipcc: does each translation unit build for the target GPU?

``check_files(out_dir, files)`` compiles each file with ``hipcc -c`` (not ``-fsyntax-only``: only code
generation rejects inline PTX) for ``--offload-arch`` (default gfx942; an older hipcc that rejects it falls
back to gfx940, the same CDNA3 ISA, then gfx90a - and says so). Files run in parallel, through the runner
seam. Each result tells "missing ROCm library header" (hipCUB, rocThrust, hip_bf16.h on old HIP, ...)
apart from "your code does not compile", with every error mapped to file and line.
"""

from __future__ import annotations

import os
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from hipwizard.port.build.ahead import cuda_header_note, library_for
from hipwizard.port.build.flags import language_first
from hipwizard.progress import Progress, ProgressFn
from hipwizard.runner import Runner, RunResult, SubprocessRunner, path_operand

CheckStatus = Literal["ok", "failed", "missing-header", "not available", "skipped", "error", "not built"]
DEFAULT_ARCH = "gfx942"
FALLBACK_ARCHS = ("gfx940", "gfx90a")  # gfx940: same CDNA3 ISA and wave64 as gfx942
UNITS = (".cu", ".cpp", ".cc", ".cxx", ".c", ".hip")
HIP_ENV = {"HIP_PLATFORM": "amd"}  # with an nvcc on PATH, hipconfig would otherwise pick nvidia
INSTALL_HINT = "install ROCm's hipcc (or Debian's `apt install hipcc`) to compile-check"
# Headers that come from ROCm libraries (or from a newer HIP), not from the user's project.
ROCM_HEADERS = re.compile(
    r"^(?:hipcub|rocprim|thrust|rocthrust|hipblas|hipblaslt|rocblas|hiprand|rocrand|hipfft|rocfft|hipsparse|"
    r"rocsparse|hipsolver|rocsolver|miopen|hipdnn|rccl|roctracer|roctx|rocwmma|ck|composable_kernel|hip|"
    r"hipsparselt|rocprofiler)\b",
    re.I,
)
_DIAG = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|fatal error|warning): (?P<msg>.*)$")
_NOT_FOUND = re.compile(r"'(?P<header>[^']+)' file not found")
_BAD_ARCH = re.compile(r"invalid target ID|Unsupported CUDA gpu architecture|unknown target CPU|unsupported.*offload-arch", re.I)

STAGE = "compile-checking"  # the stage name progress is reported under


@dataclass(frozen=True)
class CompileDiagnostic:
    file: str  # relative to the checked folder when inside it
    line: int
    col: int
    severity: Literal["error", "fatal", "warning"]
    message: str
    missing_header: str = ""  # set for "'X' file not found" where X is a ROCm library header


@dataclass
class FileCheck:
    """One file's compile check."""

    path: str
    status: CheckStatus
    errors: list[CompileDiagnostic] = field(default_factory=list)
    note: str = ""
    arch: str = ""
    duration_s: float = 0.0
    flags_from: str = ""  # where its include/macro/standard flags came from ("" = the default -I . -I include)
    ahead: list = field(default_factory=list)  # missing-header: the flagged lines the compiler never reached

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def missing_headers(self) -> list[str]:
        return sorted({e.missing_header for e in self.errors if e.missing_header})


@dataclass(frozen=True)
class Toolchain:
    hipcc: str | None
    arch: str
    note: str = ""


def parse_diagnostics(output: str, out_dir: Path | None = None) -> list[CompileDiagnostic]:
    """clang's ``file:line:col: error: message`` lines -> diagnostics (errors and fatal errors only)."""
    diags = []
    seen = set()
    for line in output.splitlines():
        m = _DIAG.match(line.strip())
        if not m or m.group("sev") == "warning":
            continue
        file = m.group("file")
        if out_dir is not None and os.path.isabs(file):
            try:
                file = Path(file).resolve().relative_to(out_dir.resolve()).as_posix()
            except ValueError:
                pass
        file = file[2:] if file.startswith("./") else file
        msg = m.group("msg")
        nf = _NOT_FOUND.search(msg)
        header = nf.group("header") if nf and ROCM_HEADERS.match(nf.group("header")) else ""
        key = (file, m.group("line"), msg)
        if key in seen:
            continue  # the same error is printed once per offload target (host + device)
        seen.add(key)
        sev: Literal["error", "fatal"] = "fatal" if m.group("sev") == "fatal error" else "error"
        diags.append(CompileDiagnostic(file, int(m.group("line")), int(m.group("col")), sev, msg, header))
    return diags


def classify(result: RunResult, diags: list[CompileDiagnostic]) -> CheckStatus:
    if result.ok:
        return "ok"
    if result.status in ("timeout", "error", "missing"):
        return "error"
    if diags and all(d.missing_header for d in diags):
        return "missing-header"
    return "failed"


def find_toolchain(runner: Runner, arch: str | None = None) -> Toolchain:
    """hipcc's path and an ``--offload-arch`` it accepts (probing with an empty file)."""
    hipcc = runner.which("hipcc")
    want = arch or DEFAULT_ARCH
    if hipcc is None:
        return Toolchain(None, want, f"hipcc not found: {INSTALL_HINT}")
    with tempfile.TemporaryDirectory(prefix="hipwizard-probe-") as tmp:
        probe = Path(tmp) / "probe.hip"
        probe.write_text("")
        for candidate in (want, *[a for a in FALLBACK_ARCHS if a != want]):
            res = runner.run([hipcc, f"--offload-arch={candidate}", "-c", path_operand(probe),
                              "-o", path_operand(Path(tmp) / "p.o")],
                             timeout=120, env=HIP_ENV, cwd=tmp)
            if res.ok:
                note = "" if candidate == want else (
                    f"this hipcc does not support {want}; checked for {candidate} instead"
                    + (" (same CDNA3 ISA, wave64)" if candidate == "gfx940" else ""))
                return Toolchain(hipcc, candidate, note)
            if not _BAD_ARCH.search(res.output):
                return Toolchain(hipcc, want, f"hipcc cannot compile an empty file: {res.explain()}")
    return Toolchain(hipcc, want, f"hipcc supports none of {want}, {', '.join(FALLBACK_ARCHS)}")


def missing_note(headers: list[str]) -> str:
    """What stops a unit at missing ROCm headers, with the package that installs each library (library table)."""
    libs = [h for h in headers if not h.startswith("hip/")]
    newer = [h for h in headers if h.startswith("hip/")]
    parts = []
    for h in libs:
        name, install = library_for(h)
        parts.append(f"{h} not installed" + (f" ({name}: install {install})" if name else " (a ROCm library)"))
    if newer:
        parts.append(f"not in this HIP version (needs a newer ROCm): {', '.join(newer)}")
    return "; ".join(parts) + "; the compiler stopped there, so the rest of the unit is unchecked"


def failure_note(diags: list[CompileDiagnostic]) -> str:
    """For a unit that fails on a CUDA header the translation left: what replaces it ("" otherwise)."""
    said = [cuda_header_note(m.group("header")) for d in diags for m in [_NOT_FOUND.search(d.message)] if m]
    return "; ".join(dict.fromkeys(x for x in said if x))


def check_files(out_dir: str | os.PathLike[str], files: list[str], *, arch: str | None = None,
                runner: Runner | None = None, jobs: int | None = None, progress: ProgressFn | None = None,
                flags: dict[str, list[str]] | None = None, flags_from: dict[str, str] | None = None,
                skip: dict[str, str] | None = None) -> list[FileCheck]:
    """Compile each of ``files`` (paths relative to ``out_dir``) with hipcc; one ``FileCheck`` per file, in order.

    Headers are not compiled on their own (they are checked through the files that include them); nor is a unit
    ``skip`` names (its reason is the note: CPU-only, another platform's). ``flags``: a unit's own include/macro/
    standard flags (the project's build, ``port.build``), else ``-I <root> [-I <root>/include]``. Without
    hipcc every file is ``not available`` with the install hint.
    """
    root = Path(out_dir)
    runner = runner or SubprocessRunner()
    skip = skip or {}
    flags = flags or {}
    units = [f for f in files if f.endswith(UNITS) and f not in skip]
    results: dict[str, FileCheck] = {f: FileCheck(f, "skipped", note=skip.get(f) or
                                                  "header: checked through the files that include it")
                                     for f in files if f not in units}
    tool = find_toolchain(runner, arch) if units else Toolchain(None, arch or DEFAULT_ARCH)
    if units and (tool.hipcc is None or tool.note.startswith(("hipcc cannot", "hipcc supports none"))):
        for f in units:
            status: CheckStatus = "not available" if tool.hipcc is None else "error"
            results[f] = FileCheck(f, status, note=tool.note, arch=tool.arch)
        return [results[f] for f in files]
    done = 0
    total = len(units)
    # the project root and a top-level include/ folder: where build files usually point -I
    where = root.resolve()
    includes = ["-I", str(where)] + (["-I", str(where / "include")] if (root / "include").is_dir() else [])

    def one(rel: str) -> FileCheck:
        hipcc = tool.hipcc
        assert hipcc is not None  # one() runs for units only, and without a hipcc they returned above
        with tempfile.TemporaryDirectory(prefix="hipwizard-cc-") as tmp:
            # The file by its absolute name, from an empty folder of our own: clang reads any argument
            # that starts with "@" as a response file, the driver's own "-main-file-name @opts.cu" to cc1
            # included, relative to the working folder; there, no file of the user's can answer it.
            lang, unit_flags = language_first(flags.get(rel, includes))
            argv = [hipcc, f"--offload-arch={tool.arch}", *lang, "-c", path_operand(where / rel),
                    *unit_flags, "-o", path_operand(Path(tmp) / "out.o")]
            res = runner.run(argv, timeout=300, env=HIP_ENV, cwd=tmp)
        diags = parse_diagnostics(res.output, root)
        status = classify(res, diags)
        note = tool.note
        if status == "error":
            note = res.explain()
        elif status == "missing-header":
            note = missing_note(sorted({d.missing_header for d in diags}))
        elif status == "failed" and not diags:
            note = res.explain()
            if rel.endswith(".c") and "not allowed with 'C'" in res.output:
                note = ("hipcc compiles a .c file as C, nvcc compiled it as C++: the build needs `-x hip` (or "
                        "`-x c++`) before it, or the file renamed .cpp; " + note)
        elif status == "failed":
            note = failure_note(diags) or note
        return FileCheck(rel, status, diags, note, tool.arch, res.duration_s, (flags_from or {}).get(rel, ""))

    workers = max(1, min(jobs or os.cpu_count() or 1, total or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for check in pool.map(one, units):
            results[check.path] = check
            done += 1
            if progress:
                progress(Progress(STAGE, done, total, check.path))
    return [results[f] for f in files]
