"""Both builds of a dual-target tree, compile-checked: nvcc for NVIDIA, hipcc for AMD.

``check_both(root, files, ...)`` compiles each GPU translation unit (``port.build.units``: CPU-only and other
platforms' files are skipped with the reason) twice: ``nvcc -c`` (compile only: no GPU needed) as the NVIDIA
build sees it, and ``hipcc -c --offload-arch=<arch> -D<guard>`` (``HIP_PLATFORM=amd``) as the AMD build does.
Each side asks the project's build which units it compiles and with which flags, as the fork mode's check does
(``port.build.commands``: a ``compile_commands.json``, CMake's export, ``make -Bn``): the NVIDIA side the build
as it is, the AMD side with the guard set (``make -Bn USE_ROCM=1``, ``-DUSE_ROCM=1``). A unit a build that was
read whole does not compile is skipped on that side with the reason; a unit no command names (no build could be
asked) gets the ``-I/-D/-std`` flags its nearest build file writes. A unit nvcc rejects is compiled from the untouched original too (``original``): when
that one compiles, the dual-target change broke the NVIDIA build, an error (``failed``); when it fails as well,
the NVIDIA side is ``skipped`` with the original's first error (not this port's doing). The AMD side is read
like the fork mode's check (a missing ROCm library header is ``missing-header``, not the code's fault).
"""

from __future__ import annotations

import os
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from hipwizard.port.build.commands import Commands, buildfile_flags, project_commands
from hipwizard.port.build.flags import check_flags, language_first
from hipwizard.port.build.units import closure, gpu_content, project_includes, unit_skip
from hipwizard.port.dual.model import DualOptions
from hipwizard.port.output.compile_check import (
    HIP_ENV,
    UNITS,
    CompileDiagnostic,
    FileCheck,
    classify,
    find_toolchain,
    parse_diagnostics,
)
from hipwizard.progress import Progress, ProgressFn
from hipwizard.runner import Runner, SubprocessRunner, path_operand

STAGE = "compile-checking both builds"
NVCC_HINT = "nvcc not found: install the CUDA toolkit to check the NVIDIA build"
# nvcc's front end: "file(12): error: message"; its host compiler: "file:12:5: error: message"
_NVCC_DIAG = re.compile(r"^(?P<file>[^:(\n]+)\((?P<line>\d+)\): (?P<sev>error|catastrophic error|warning)[^:]*: (?P<msg>.*)$")


@dataclass
class DualCheck:
    """One unit's two compiles."""

    path: str
    nvidia: FileCheck
    amd: FileCheck

    @property
    def status(self) -> str:
        """The worse of the two: failed > error > missing-header > not available > skipped > ok."""
        order = ("failed", "error", "missing-header", "not available", "skipped", "ok")
        return min(self.nvidia.status, self.amd.status, key=order.index)

    def to_dict(self) -> dict:
        return {"path": self.path, "status": self.status,
                **{side: {"status": c.status, "note": c.note, "arch": c.arch,
                          "errors": [e.__dict__ for e in c.errors]}
                   for side, c in (("nvidia", self.nvidia), ("amd", self.amd))}}


def _includes(root: Path, rel: str, guard: str, commands: Commands | None = None) -> list[str]:
    """The unit's flags: its compile command's ``-I/-D/-U/-std/-x`` (``check_flags``) when the build named it,
    else the root and include/ folders and the -I/-D/-std flags its nearest build file writes; less the guard
    macro (the dual Makefile passes it to hipcc only; each side says it or not itself)."""
    where = root.resolve()
    cmd = commands.by_file.get(rel) if commands else None
    if cmd is not None:
        flags = check_flags(cmd.args, cmd.directory)
    else:
        flags = [f"-I{where}", *([f"-I{where / 'include'}"] if (where / "include").is_dir() else []),
                 *buildfile_flags(where, rel)[0]]
    return [f for f in flags if f.split("=", 1)[0] not in (f"-D{guard}", f"-U{guard}")]


def nvcc_language(lang: list[str]) -> list[str]:
    """``-x<lang>`` flags (``check_flags`` spells the CUDA language hip) as nvcc takes them: ``-x cu``."""
    out: list[str] = []
    for f in lang:
        out += ["-x", "cu" if f[2:] in ("hip", "cuda", "cu") else f[2:]]
    return out


def parse_nvcc(output: str, root: Path) -> list[CompileDiagnostic]:
    """nvcc's errors (its front end's and its host compiler's)."""
    diags = list(parse_diagnostics(output, root))
    for line in output.splitlines():
        m = _NVCC_DIAG.match(line.strip())
        if m and m.group("sev") != "warning":
            file = m.group("file")
            try:
                file = Path(file).resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                pass
            diags.append(CompileDiagnostic(file, int(m.group("line")), 0, "error", m.group("msg")))
    return diags


def skip_reasons(root: Path, files: list[str], built: set[str] | frozenset[str] = frozenset()) -> dict[str, str]:
    """{unit: why it is checked on neither side}: #included by another file (compiled through it, unless a
    build compiles it itself: ``built``), CPU-only or another platform's (``port.build.units``), as the fork
    mode's check decides."""
    cache: dict[str, str] = {}

    def read(rel: str) -> str:
        if rel not in cache:
            try:
                cache[rel] = (root / rel).read_text(encoding="utf-8", errors="replace")
            except OSError:
                cache[rel] = ""
        return cache[rel]

    included: dict[str, str] = {}
    for rel in files:
        for inc in project_includes(root, rel, read(rel)):
            if inc.endswith(UNITS) and inc != rel:
                included.setdefault(inc, rel)
    skip: dict[str, str] = {}
    for rel in files:
        if rel in included and rel not in built:
            skip[rel] = f"#included by {included[rel]}: compiled as part of it, not on its own"
            continue
        headers = closure(root, rel, read)[1:]
        why = unit_skip(rel, read(rel), included_gpu=any(gpu_content(read(h)) for h in headers))
        if why:
            skip[rel] = why
    return skip


def _new_errors(now: list[CompileDiagnostic], before: list[CompileDiagnostic]) -> list[CompileDiagnostic]:
    """The errors of ``now`` the original did not have (by file and message: the branches move lines)."""
    seen = {(d.file, d.message) for d in before}
    return [d for d in now if (d.file, d.message) not in seen]


def rerooted(flags: list[str], old: Path, new: Path) -> list[str]:
    """``flags`` with the paths under ``old`` moved under ``new`` (the original's NVIDIA build is the dual tree's
    with the guard off: its flags, asked of the dual tree, serve the original without running its build)."""
    o, n = str(old.resolve()), str(new.resolve())
    out = []
    for f in flags:
        at = f.find(o)
        tail = f[at + len(o):] if at >= 0 else ""
        out.append(f[:at] + n + tail if at >= 0 and (not tail or tail.startswith("/")) else f)
    return out


def _nvcc(runner: Runner, nvcc: str, root: Path, rel: str, unit_flags: list[str]) -> FileCheck:
    lang, flags = language_first(unit_flags)
    with tempfile.TemporaryDirectory(prefix="hipwizard-nvcc-") as tmp:
        res = runner.run([nvcc, *nvcc_language(lang), "-c", path_operand(root.resolve() / rel), *flags,
                          "-o", path_operand(Path(tmp) / "out.o")], timeout=600, cwd=tmp)
    diags = parse_nvcc(res.output, root)
    status = classify(res, [d for d in diags if not d.missing_header])
    return FileCheck(rel, status, diags, "" if status == "ok" else (res.explain() if not diags else ""),
                     "nvcc", res.duration_s)


def _hipcc(runner: Runner, hipcc: str, arch: str, root: Path, rel: str, guard: str, unit_flags: list[str]) -> FileCheck:
    lang, flags = language_first(unit_flags)
    with tempfile.TemporaryDirectory(prefix="hipwizard-hipcc-") as tmp:
        res = runner.run([hipcc, f"--offload-arch={arch}", f"-D{guard}", *lang, "-c",
                          path_operand(root.resolve() / rel), *flags, "-o", path_operand(Path(tmp) / "out.o")],
                         timeout=600, env=HIP_ENV, cwd=tmp)
    diags = parse_diagnostics(res.output, root)
    status = classify(res, diags)
    note = ""
    if status == "missing-header":
        note = "ROCm library header(s) not installed: " + ", ".join(sorted({d.missing_header for d in diags}))
    elif status in ("error",) or (status == "failed" and not diags):
        note = res.explain()
    return FileCheck(rel, status, diags, note, arch, res.duration_s)


def check_both(root: str | os.PathLike[str], files: list[str], options: DualOptions | None = None, *,
               original: str | os.PathLike[str] | None = None, arch: str | None = None,
               runner: Runner | None = None, jobs: int | None = None,
               progress: ProgressFn | None = None, build_runner: Runner | None = None) -> list[DualCheck]:
    """Compile every unit of ``files`` (relative to ``root``) with nvcc and with hipcc (module docstring).
    ``build_runner`` runs make/cmake to ask the build (default: a real one when ``runner`` is None, else
    ``runner``)."""
    root_p = Path(root)
    options = options or DualOptions()
    cmds_runner = build_runner or runner or SubprocessRunner()
    runner = runner or SubprocessRunner()
    units = [f for f in files if f.endswith(UNITS)]
    nvcc = runner.which("nvcc")
    tool = find_toolchain(runner, arch) if units else None
    done = 0
    build_arch = tool.arch if tool is not None and tool.hipcc else arch or "gfx942"
    sides = {"nvidia": project_commands(root_p, cmds_runner, env={}, arch=build_arch),
             "amd": project_commands(root_p, cmds_runner, env=HIP_ENV, arch=build_arch,
                                     variables={options.guard: "1"})} if units else {}
    skips = skip_reasons(root_p, units, {u for c in sides.values() for u in c.by_file})
    # a unit a build read whole leaves out: skipped on that side, as the fork mode's check says it
    elsewhere = {side: {rel: c.builds_elsewhere(rel) for rel in units if c.builds_elsewhere(rel)}
                 for side, c in sides.items()}

    def one(rel: str) -> DualCheck:
        why = skips.get(rel, "")
        if why:  # a CPU-only or other platform's file: no GPU unit on either side
            return DualCheck(rel, FileCheck(rel, "skipped", note=why), FileCheck(rel, "skipped", note=why))
        nv_out, amd_out = elsewhere.get("nvidia", {}).get(rel, ""), elsewhere.get("amd", {}).get(rel, "")
        if nv_out:
            nv = FileCheck(rel, "skipped", note=nv_out)
        elif nvcc is None:
            nv = FileCheck(rel, "not available", note=NVCC_HINT)
        else:
            flags = _includes(root_p, rel, options.guard, sides.get("nvidia"))
            nv = _nvcc(runner, nvcc, root_p, rel, flags)
            if nv.status != "ok" and original is not None and (Path(original) / rel).is_file():
                before = _nvcc(runner, nvcc, Path(original), rel, rerooted(flags, root_p, Path(original)))
                new = _new_errors(nv.errors, before.errors)
                if before.status != "ok" and not new:
                    first = before.errors[0].message if before.errors else before.note
                    nv = FileCheck(rel, "skipped", before.errors,
                                   f"does not compile with nvcc in the original either (same errors): {first}",
                                   "nvcc", nv.duration_s)
                elif before.status != "ok":
                    nv.errors = new
                    nv.note = f"this change adds {len(new)} nvcc error(s) to the original's"
                else:
                    nv.note = "this change breaks the NVIDIA build (the original compiles)"
        if amd_out:
            amd = FileCheck(rel, "skipped", note=amd_out)
        elif tool is None or tool.hipcc is None:
            amd = FileCheck(rel, "not available", note=tool.note if tool else "")
        else:
            amd = _hipcc(runner, tool.hipcc, tool.arch, root_p, rel, options.guard,
                         _includes(root_p, rel, options.guard, sides.get("amd")))
        return DualCheck(rel, nv, amd)

    results = []
    with ThreadPoolExecutor(max_workers=max(1, min(jobs or os.cpu_count() or 1, len(units) or 1))) as pool:
        for check in pool.map(one, units):
            results.append(check)
            done += 1
            if progress:
                progress(Progress(STAGE, done, len(units), check.path))
    return results
