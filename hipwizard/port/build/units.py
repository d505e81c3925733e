"""Which files of a written tree count as GPU translation units.

A unit counts when it holds HIP content: a kernel, a launch, a device function, a HIP runtime call or header
(``gpu_content``). A CPU-only ``.c``/``.cpp`` compiles with any C++ compiler and says nothing about the port:
it is skipped, with the reason. So is a file only another platform builds (Windows-only: ``<windows.h>`` outside
an ``#ifdef _WIN32``-style guard, or a ``_win``/``win32`` file name): not a failure of the port.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

UNITS = (".cu", ".cpp", ".cc", ".cxx", ".c", ".hip")
HEADERS = (".h", ".cuh", ".hpp", ".hh", ".hxx", ".inc", ".inl")
_GPU = re.compile(r"__global__|__device__|<<<|hipLaunchKernelGGL|\bhip[A-Z]\w*\s*\(|#\s*include\s*[<\"]hip/|"
                  r"__shared__|\bthreadIdx\b|\bblockIdx\b")
_WINDOWS_HEADER = re.compile(r"^\s*#\s*include\s*<(?P<h>(?:windows|winsock2|direct|io|conio|tchar)\.h)>", re.M | re.I)
_WIN_GUARD = re.compile(r"^\s*#\s*(?:if|ifdef|elif)\b.*\b(?:_WIN32|_WIN64|_MSC_VER|WIN32|__MINGW32__)\b", re.M)
_WIN_NAME = re.compile(r"(?:^|[_\-/.])(?:win|win32|win64|windows|msvc)(?:[_\-.]|$)", re.I)
INCLUDE = re.compile(r'^\s*#\s*include\s*(?P<q>["<])(?P<name>[^">]+)[">]', re.M)


def gpu_content(text: str) -> bool:
    """Whether ``text`` holds HIP/GPU code (a kernel, a launch, a device function, a HIP call or header)."""
    return bool(_GPU.search(text))


def platform_only(rel: str, text: str) -> str:
    """Why ``rel`` is built only on another platform ("" when it is not): Windows-only files."""
    path = PurePosixPath(rel)
    if _WIN_NAME.search(path.stem) or any(_WIN_NAME.fullmatch(p) for p in path.parent.parts):
        return "Windows-only (by its name): not built on Linux"
    m = _WINDOWS_HEADER.search(text)
    if m and not _WIN_GUARD.search(text[: m.start()]):
        return f"Windows-only (includes <{m.group('h')}> outside a _WIN32 guard): not built on Linux"
    return ""


def unit_skip(rel: str, text: str, included_gpu: bool = False) -> str:
    """Why ``rel`` (a translation unit by its suffix) is not checked as a GPU unit ("" when it is one).
    ``included_gpu``: one of its project headers holds GPU code (a ``.cpp`` that includes the kernels)."""
    why = platform_only(rel, text)
    if why:
        return why
    if gpu_content(text) or included_gpu or rel.endswith((".cu", ".hip")):
        return ""
    return "CPU-only: no HIP content (a host compiler builds it; not a GPU unit)"


def project_includes(root, rel: str, text: str, dirs: tuple[str, ...] = ()) -> list[str]:
    """The project files (relative to ``root``) that ``rel`` includes with quotes or angle brackets, found beside
    it, in ``dirs`` (the unit's include folders, relative to ``root``), at the root or under ``root/include``; one
    level (the caller walks further)."""
    here = PurePosixPath(rel).parent
    found = []
    for m in INCLUDE.finditer(text):
        name = m.group("name")
        for cand in ((here / name).as_posix(), *(f"{d}/{name}" if d else name for d in dirs), name, f"include/{name}"):
            cand = _norm(cand)
            if cand and (root / cand).is_file():
                found.append(cand)
                break
    return found


def _norm(path: str) -> str:
    parts: list[str] = []
    for p in PurePosixPath(path).parts:
        if p == "..":
            if not parts:
                return ""
            parts.pop()
        elif p != ".":
            parts.append(p)
    return "/".join(parts)


def closure(root, rel: str, read) -> list[str]:
    """``rel`` and every project header it includes, transitively (``read(rel) -> text``), in include order."""
    seen: dict[str, None] = {}
    todo = [rel]
    while todo:
        cur = todo.pop(0)
        if cur in seen:
            continue
        seen[cur] = None
        todo.extend(project_includes(root, cur, read(cur)))
    return list(seen)
