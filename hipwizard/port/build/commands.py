"""Each translation unit's compile command, found the way the project builds.

``project_commands(root, runner)`` tries, in order:
1. a ``compile_commands.json`` the project has (at ``root`` or in a ``build*/`` folder);
2. CMake: a configure of the written tree with ``-DCMAKE_EXPORT_COMPILE_COMMANDS=ON`` into a temporary folder
   (``-DCMAKE_HIP_ARCHITECTURES=<arch>``); a configure that fails is said, not hidden;
3. Make: a dry run ``make -Bn`` in every folder of the tree that holds a Makefile, its compiler lines parsed;
``variables`` (``{"USE_ROCM": "1"}``) are passed to make (``make -Bn USE_ROCM=1``) and CMake
(``-DUSE_ROCM=1``): a build that switches on one (a dual-target tree) is asked for that side's commands. It
returns ``Commands``: per unit (path relative to ``root``) the command's arguments and folder, and how they
were found. Units no command names are checked with the flags their nearest build file writes
(``buildfile_flags``: literal ``-I``/``-D``/``-std``, CMake's include directories, definitions and standard).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from hipwizard.port.build.units import UNITS
from hipwizard.runner import Runner, path_operand

COMPILERS = re.compile(r"(?:^|/)(?:hipcc(?:\.pl)?|nvcc|amdclang\+\+|clang\+\+(?:-\d+)?|clang(?:-\d+)?|g\+\+(?:-\d+)?|"
                       r"gcc(?:-\d+)?|c\+\+|cc|icpx|mpicxx|mpicc)$")
_ENTER = re.compile(r"^make(?:\[\d+\])?: Entering directory [`'](?P<dir>.+)'$")
_LEAVE = re.compile(r"^make(?:\[\d+\])?: Leaving directory")
MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
SKIP_DIRS = {".git", ".hipwizard", "build", "__pycache__", "node_modules"}
MAX_MAKE_DIRS = 400


@dataclass(frozen=True)
class CompileCommand:
    file: str  # relative to the checked root
    args: tuple[str, ...]  # the compiler's arguments, the compiler first
    directory: str  # where it runs (absolute)


@dataclass
class Commands:
    by_file: dict[str, CompileCommand] = field(default_factory=dict)
    how: str = ""  # where they came from, in words ("" = none found)
    notes: list[str] = field(default_factory=list)  # what was tried and did not work
    covered: set[str] = field(default_factory=set)  # folders (relative; "" = all) whose build was read whole

    def builds_elsewhere(self, rel: str) -> str:
        """Why the build does not compile ``rel`` although it read the folder ``rel`` is built from ("" when it
        does, or when no build read that folder)."""
        if rel in self.by_file:
            return ""
        parts = rel.split("/")[:-1]
        for n in range(len(parts), -1, -1):
            folder = "/".join(parts[:n])
            if folder in self.covered:
                return f"the project's build does not compile it ({self.how} does not name it)"
        return ""


def _rel(root: Path, directory: str, file: str) -> str | None:
    p = Path(file) if os.path.isabs(file) else Path(directory) / file
    try:
        return p.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def read_compile_commands(path: Path, root: Path) -> dict[str, CompileCommand]:
    """The entries of a ``compile_commands.json`` whose file lies under ``root`` (others are not ours)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    out: dict[str, CompileCommand] = {}
    for e in data if isinstance(data, list) else []:
        if not isinstance(e, dict) or not isinstance(e.get("file"), str):
            continue
        directory = str(e.get("directory") or path.parent)
        args = e.get("arguments")
        if not isinstance(args, list):
            try:
                args = shlex.split(str(e.get("command") or ""))
            except ValueError:
                continue
        rel = _rel(root, directory, e["file"])
        if rel and args:
            out.setdefault(rel, CompileCommand(rel, tuple(str(a) for a in args), directory))
    return out


def parse_make_dry_run(text: str, root: Path, start: Path) -> dict[str, CompileCommand]:
    """Compiler lines of ``make -n`` output (run in ``start``) -> the units they compile. A line is a compile
    when its first word (after ``cd DIR &&``) is a C/C++/HIP/CUDA compiler and it names a unit source."""
    out: dict[str, CompileCommand] = {}
    dirs = [str(start)]
    for raw in text.splitlines():
        line = raw.strip()
        m = _ENTER.match(line)
        if m:
            dirs.append(m.group("dir"))
            continue
        if _LEAVE.match(line):
            if len(dirs) > 1:
                dirs.pop()
            continue
        for part in re.split(r"\s*(?:&&|;)\s*", line):
            try:
                words = shlex.split(part)
            except ValueError:
                continue
            cwd = dirs[-1]
            if len(words) >= 2 and words[0] == "cd":
                cwd = str(Path(cwd) / words[1])
                continue
            while words and "=" in words[0] and not words[0].startswith("-"):  # VAR=value hipcc ...
                words = words[1:]
            if not words or not COMPILERS.search(words[0]):
                continue
            for w in words[1:]:
                if w.endswith(UNITS) and not w.startswith("-"):
                    rel = _rel(root, cwd, w)
                    if rel:
                        out.setdefault(rel, CompileCommand(rel, tuple(words), cwd))
    return out


def make_dirs(root: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        if any(n in filenames for n in MAKEFILES):
            found.append(Path(dirpath))
            if len(found) >= MAX_MAKE_DIRS:
                break
    return found


def _assignments(variables: Mapping[str, str] | None) -> list[str]:
    return [f"{k}={v}" for k, v in (variables or {}).items()]


def make_commands(root: Path, runner: Runner, env: dict[str, str], covered: set[str] | None = None,
                  variables: Mapping[str, str] | None = None) -> tuple[dict[str, CompileCommand], list[str]]:
    """``make -Bn [VAR=value...]`` (print every command, run none) in each folder with a Makefile; a folder whose
    top Makefile already had its units found by an outer one is still asked (its commands are kept where new)."""
    out: dict[str, CompileCommand] = {}
    notes = []
    for d in make_dirs(root):
        res = runner.run(["make", "-Bn", "-w", *_assignments(variables)], timeout=60, env=env, cwd=str(d))
        found = parse_make_dry_run(res.output, root, d)
        if found and res.ok and covered is not None:  # this folder's Makefile built: what it does not name, it skips
            covered.add(d.relative_to(root).as_posix() if d != root else "")
        if not found and not res.ok:
            rel = d.relative_to(root).as_posix() if d != root else "."
            notes.append(f"{' '.join(['make -Bn', *_assignments(variables)])} in {rel}: {res.explain()}")
        for k, v in found.items():
            out.setdefault(k, v)
    return out, notes


def cmake_commands(root: Path, runner: Runner, env: dict[str, str], arch: str,
                   variables: Mapping[str, str] | None = None) -> tuple[dict[str, CompileCommand], str]:
    """A configure of ``root`` that exports compile commands, into a temporary build folder: (commands, "") or
    ({}, why the configure failed)."""
    with tempfile.TemporaryDirectory(prefix="hipwizard-cmake-") as tmp:
        argv = ["cmake", "-S", path_operand(root), "-B", path_operand(tmp), "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
                f"-DCMAKE_HIP_ARCHITECTURES={arch}", *(f"-D{a}" for a in _assignments(variables))]
        res = runner.run(argv, timeout=180, env=env, cwd=tmp)
        db = Path(tmp) / "compile_commands.json"
        if res.ok and db.is_file():
            return read_compile_commands(db, root), ""
        return {}, f"CMake configure of the written tree failed ({cmake_error(res.output) or res.explain()})"


def cmake_error(output: str) -> str:
    """The first ``CMake Error`` message of a configure, on one line."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("CMake Error"):
            body = []
            for x in lines[i + 1:]:
                if x.startswith(("Call Stack", "CMake Error", "-- ")):
                    break
                if x.strip():
                    body.append(x.strip())
            return " ".join(body)[:300]
    return ""


def project_commands(root: Path, runner: Runner, *, env: dict[str, str], arch: str,
                     variables: Mapping[str, str] | None = None) -> Commands:
    """The units' compile commands (see the module docstring)."""
    root = root.resolve()
    cmds = Commands()
    for cand in [root / "compile_commands.json", *sorted(root.glob("build*/compile_commands.json"))]:
        if cand.is_file():
            found = read_compile_commands(cand, root)
            if found:
                cmds.by_file, cmds.how = found, f"the project's {cand.relative_to(root).as_posix()}"
                cmds.covered = {""}
                return cmds
    if (root / "CMakeLists.txt").is_file() and runner.which("cmake"):
        found, why = cmake_commands(root, runner, env, arch, variables)
        if found:
            cmds.by_file, cmds.how = found, "CMake's exported compile commands (a configure of the written tree)"
            cmds.covered = {""}
            return cmds
        cmds.notes.append(why)
    if runner.which("make") and make_dirs(root):
        found, notes = make_commands(root, runner, env, cmds.covered, variables)
        cmds.notes += notes
        if found:
            cmds.by_file = found
            cmds.how = f"{' '.join(['make -Bn', *_assignments(variables)])} (a dry run of the written tree's Makefiles)"
    return cmds


# --- the build file's own flags, when no command names a unit ---------------------------------------------------
_FLAG = re.compile(r"(?<![\w$(])(-D\s?[A-Za-z_]\w*(?:=[^\s$'\"()]+)?|-I\s?[^\s$'\"()]+|-std=[\w+]+|--std=[\w+]+)")
_CMAKE_CALL = re.compile(r"\b(?P<name>include_directories|target_include_directories|add_definitions|"
                         r"add_compile_definitions|target_compile_definitions|add_compile_options|"
                         r"target_compile_options)\s*\((?P<args>[^)]*)\)", re.I)
_CMAKE_STD = re.compile(r"\bset\s*\(\s*CMAKE_(?:CXX|HIP|CUDA)_STANDARD\s+(?P<v>\d+)", re.I)
_SETUP_INCLUDES = re.compile(r"include_dirs\s*=\s*\[(?P<v>[^\]]*)\]")
_QUOTED = re.compile(r"""["']([^"']+)["']""")
_CMAKE_KEYWORDS = {"PUBLIC", "PRIVATE", "INTERFACE", "SYSTEM", "BEFORE", "AFTER"}


def _cmake_flags(text: str, folder: Path) -> list[str]:
    text = re.sub(r"(?m)#.*$", "", text)  # comments (a commented-out call is no flag)
    flags: list[str] = []
    for m in _CMAKE_CALL.finditer(text):
        name, args = m.group("name").lower(), m.group("args").split()
        if name.startswith("target_"):
            args = args[1:]
        args = [a.strip('"') for a in args if a not in _CMAKE_KEYWORDS and "$<" not in a]
        for a in args:
            a = a.replace("${CMAKE_CURRENT_SOURCE_DIR}", str(folder)).replace("${PROJECT_SOURCE_DIR}", str(folder))
            if "${" in a:
                continue
            if name.endswith("include_directories"):
                flags.append(f"-I{a if os.path.isabs(a) else folder / a}")
            elif name.endswith("definitions"):
                flags.append(a if a.startswith("-D") else f"-D{a}")
            elif a.startswith(("-D", "-std=", "-I")):
                flags.append(a)
    std = _CMAKE_STD.search(text)
    if std:
        flags.append(f"-std=c++{std.group('v')}")
    return flags


_EXT_CALL = re.compile(r"\b(?:load|CUDAExtension|CppExtension|load_inline)\s*\(")
_EXT_ARGS = re.compile(r"\b(?:extra_cuda_cflags|extra_cflags|extra_include_paths|nvcc)\b['\"]?\s*[=:]\s*\[(?P<v>[^\]]*)\]")
_STRING = re.compile(r"""(?P<f>[fF]?)(?P<q>["'])(?P<s>[^"']*)(?P=q)""")


def _python_extension_flags(d: Path, root: Path, name: str) -> tuple[list[str], str] | None:
    """(flags, where) when a Python file in ``d`` builds ``name`` through torch's extension API (``load(...,
    sources=[...])``, ``CUDAExtension``): its literal -D/-I/-std flags; flags it computes (an f-string) are named
    in ``where`` as not known here. None when no Python file there names it."""
    for py in sorted(d.glob("*.py"))[:40]:
        try:
            text = py.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if name not in text or not _EXT_CALL.search(text):
            continue
        flags, computed = [], []
        for m in _EXT_ARGS.finditer(text):
            for sm in _STRING.finditer(m.group("v")):
                flag = sm.group("s")
                if not flag.startswith(("-D", "-I", "-std=", "--std=")):
                    continue
                if sm.group("f") and "{" in flag:
                    computed.append(flag.split("=", 1)[0])
                    continue
                flags.append(f"-I{d / flag[2:]}" if flag.startswith("-I") and not os.path.isabs(flag[2:]) else flag)
        flags += [f"-I{d / q}" for m in _SETUP_INCLUDES.finditer(text) for q in _QUOTED.findall(m.group("v"))]
        where = f"the torch extension call in {py.relative_to(root).as_posix()}"
        if computed:
            where += f" (flags it computes, not known here: {', '.join(computed)})"
        return [f"-I{d}", *dict.fromkeys(flags)], where
    return None


def buildfile_flags(root: Path, rel: str) -> tuple[list[str], str]:
    """(-I/-D/-std flags, the build files they came from) of the nearest folder above ``rel`` with a Makefile /
    CMakeLists.txt / setup.py (all of them there: a Makefile that only drives CMake gives nothing, its
    CMakeLists.txt the include folders); make variables are not expanded, so a flag spelled through one is missed."""
    root = root.resolve()
    folder = (root / rel).parent
    for d in (folder, *folder.parents):
        if not d.is_relative_to(root):
            break
        present = [d / name for name in (*MAKEFILES, "CMakeLists.txt", "setup.py") if (d / name).is_file()]
        py = _python_extension_flags(d, root, PurePosixPath(rel).name)
        if py is not None:
            return py
        if not present:
            continue
        flags: list[str] = []
        for f in present:
            text = f.read_text(encoding="utf-8", errors="replace")
            if f.name == "CMakeLists.txt":
                flags += _cmake_flags(text, d)
            if f.name == "setup.py":  # include_dirs=["csrc", ...] written literally
                flags += [f"-I{d / q}" for m in _SETUP_INCLUDES.finditer(text) for q in _QUOTED.findall(m.group("v"))]
            for flag in _FLAG.findall(text):
                flag = flag.replace(" ", "").replace("--std=", "-std=")
                if flag.startswith("-DCMAKE_"):  # a cmake invocation's option (a Makefile driving CMake)
                    continue
                if flag.startswith("-I") and not os.path.isabs(flag[2:]):
                    flag = f"-I{d / flag[2:]}"
                flags.append(flag)
        return list(dict.fromkeys(flags)), " and ".join(f.relative_to(root).as_posix() for f in present)
    return [], ""
