"""``check --build``: run the translated build itself with hipcc and report per unit.

Make (a ``Makefile`` at the top): ``make -k -j N`` in the written tree, with ``HIP_PLATFORM=amd``; CMake (a
``CMakeLists.txt``): a configure into a temporary folder and ``cmake --build``. Every hipcc call goes through the
recorder (``recorder.py``): first on ``PATH`` as ``hipcc``, as ``$(HIPCC)`` and as ``$(ROCM_PATH)/bin/hipcc`` (a
temporary ROCm root whose other folders are the real one's), and as CMake's compiler launcher, so each unit's
command, status and errors are known and every ``--offload-arch`` is the target's. A GPU unit the build never
compiled is ``not built``; a build that fails after its units compiled (a link) says so with its last lines.
A ``setup.py`` extension is not built here (it needs a ROCm torch; ``pip install .`` builds it).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hipwizard.port.build.commands import make_dirs as find_make_dirs
from hipwizard.port.build.units import UNITS
from hipwizard.port.output.compile_check import (
    HIP_ENV,
    INSTALL_HINT,
    FileCheck,
    classify,
    failure_note,
    missing_note,
    parse_diagnostics,
)
from hipwizard.runner import Runner, RunResult, SubprocessRunner, path_operand

RECORDER = Path(__file__).with_name("recorder.py")
_TOOLS = ("hip", "roc", "amd", "clang", "llvm", "lld", "ld.lld")


@dataclass
class BuildRun:
    system: str  # "make", "cmake" or "" (no build this mode can run)
    status: str  # "ok", "failed", "not available"
    note: str = ""
    tail: str = ""  # the build's last lines when it failed
    units: dict[str, FileCheck] = field(default_factory=dict)  # unit -> its compile in the build


def _fake_root(tmp: Path, hipcc: str, wrapper: Path) -> Path:
    """A ROCm root whose ``bin/hipcc`` is the wrapper and whose other folders are the real root's."""
    real_bin = Path(hipcc).resolve().parent
    real_root = real_bin.parent
    root = tmp / "rocm"
    (root / "bin").mkdir(parents=True)
    shutil.copy2(wrapper, root / "bin" / "hipcc")
    for entry in real_bin.iterdir():
        if entry.name != "hipcc" and entry.name.startswith(_TOOLS):
            (root / "bin" / entry.name).symlink_to(entry)
    for entry in real_root.iterdir():
        if entry.name != "bin":
            (root / entry.name).symlink_to(entry)
    return root


def _wrapper(tmp: Path, log: Path, real: str, arch: str) -> Path:
    w = tmp / "wrap" / "hipcc"
    w.parent.mkdir(parents=True)
    w.write_text(f"#!/bin/sh\nexec {_q(sys.executable)} {_q(str(RECORDER))} {_q(str(log))} {_q(real)} "
                 f"{_q(arch)} \"$@\"\n", encoding="utf-8")
    w.chmod(0o755)
    return w


def _q(s: str) -> str:
    return "'" + s.replace("'", "'\"'\"'") + "'"


def _records(log: Path, root: Path) -> dict[str, FileCheck]:
    out: dict[str, FileCheck] = {}
    if not log.is_file():
        return out
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        for a in rec.get("argv", [])[1:]:
            if not a.endswith(UNITS) or a.startswith("-"):
                continue
            p = Path(a) if os.path.isabs(a) else Path(rec.get("cwd", ".")) / a
            try:
                rel = p.resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                continue
            res = RunResult(tuple(rec["argv"]), "ok" if rec.get("rc") == 0 else "failed", rec.get("rc"),
                            "", rec.get("output", ""))
            diags = parse_diagnostics(rec.get("output", ""), root)
            status = classify(res, diags)
            note = missing_note(sorted({d.missing_header for d in diags})) if status == "missing-header" else \
                failure_note(diags) if status == "failed" else ""
            out[rel] = FileCheck(rel, status, diags, note, next((x.split("=", 1)[1] for x in rec["argv"]
                                                                if x.startswith("--offload-arch=")), ""),
                                 flags_from="the project's build (check --build)")
    return out


def run_build(root: str | Path, *, arch: str, jobs: int | None = None, runner: Runner | None = None,
              timeout: float = 1800) -> BuildRun:
    """Run the written tree's own build (see the module docstring)."""
    root = Path(root)
    runner = runner or SubprocessRunner()
    hipcc = runner.which("hipcc")
    if hipcc is None:
        return BuildRun("", "not available", f"hipcc not found: {INSTALL_HINT}")
    make_dirs = find_make_dirs(root)
    system = "make" if root in make_dirs or (make_dirs and not (root / "CMakeLists.txt").is_file()) else \
        "cmake" if (root / "CMakeLists.txt").is_file() else ""
    if not system:
        why = "a setup.py extension builds with `pip install .` under a ROCm torch; " if (root / "setup.py").is_file() \
            else ""
        return BuildRun("", "not available", why + "--build runs the tree's Makefiles or a CMake build at its top")
    if runner.which(system) is None:
        return BuildRun(system, "not available", f"{system} not found")
    n = str(max(1, jobs or os.cpu_count() or 1))
    with tempfile.TemporaryDirectory(prefix="hipwizard-build-") as tmp_s:
        tmp = Path(tmp_s)
        log = tmp / "compiles.jsonl"
        wrapper = _wrapper(tmp, log, hipcc, arch)
        env = {**HIP_ENV, "PATH": f"{wrapper.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        failed: list[tuple[Path, RunResult]] = []
        make_note = ""
        if system == "make":
            fake = _fake_root(tmp, hipcc, wrapper)
            for d in make_dirs:  # the top first; a folder with its own Makefile is built by it too
                one = runner.run(["make", "-k", f"-j{n}", f"ROCM_PATH={fake}", f"HIPCC={wrapper}"], timeout=timeout,
                                 env=env, cwd=str(d))
                if not one.ok:
                    failed.append((d, one))
            res = failed[-1][1] if failed else RunResult(("make",), "ok", 0)
            if failed:
                where = ", ".join((d.relative_to(root).as_posix() or ".") for d, _ in failed[:6])
                more = f" and {len(failed) - 6} more" if len(failed) > 6 else ""
                make_note = f"make failed in {len(failed)} of {len(make_dirs)} folder(s): {where}{more}"
        else:
            build = tmp / "build"
            launcher = tmp / "wrap" / "launch"
            launcher.write_text(f"#!/bin/sh\nexec {_q(sys.executable)} {_q(str(RECORDER))} {_q(str(log))} --launch "
                                f"{_q(arch)} \"$@\"\n", encoding="utf-8")
            launcher.chmod(0o755)
            res = runner.run(["cmake", "-S", path_operand(root), "-B", path_operand(build),
                              f"-DCMAKE_HIP_ARCHITECTURES={arch}", f"-DCMAKE_HIP_COMPILER_LAUNCHER={launcher}",
                              f"-DCMAKE_CXX_COMPILER_LAUNCHER={launcher}"], timeout=600, env=env, cwd=tmp_s)
            if res.ok:
                res = runner.run(["cmake", "--build", path_operand(build), "-j", n, "--", "-k"], timeout=timeout,
                                 env=env, cwd=tmp_s)
            elif not log.is_file():
                lines = [x for x in res.output.splitlines() if x.strip()]
                return BuildRun("cmake", "failed", "CMake could not configure the written tree",
                                "\n".join(lines[-12:]))
        units = _records(log, root)
    tail = "" if res.ok else "\n".join(res.output.splitlines()[-12:])
    note = "" if res.ok else ("the build failed after every unit compiled (a link step?)" if units and all(
        u.status == "ok" for u in units.values()) else res.explain())
    if system == "make" and failed:
        note = make_note + (f"; {note}" if note.startswith("the build failed after") else "")
    return BuildRun(system, "ok" if res.ok else "failed", note, tail, units)
