"""A unit stopped by a missing ROCm library header: which package installs it, and what is still ahead.

hipcc stops a unit at the first header it cannot find, so whatever the unit holds after that line is never
compiled: the check cannot say it is fine. ``library_for(header)`` names the library and its package from the
library table (``assets/cuda_libraries.yaml``); ``lines_ahead(...)`` lists the lines hipwizard flagged (a hunk's
risk, a risk on an untouched line, an API unsupported / too new / removed / opt-in in the target HIP) that lie
after the stop, in the unit and in the project headers it includes after it (in include order, each header
once, as include guards do).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable

from hipwizard.port.build.units import INCLUDE, project_includes
from hipwizard.port.buildfiles.libraries import library_table

API_KINDS = ("unsupported", "too_new", "removed", "opt_in")


@dataclass(frozen=True)
class AheadLine:
    file: str
    line: int
    what: str  # the rule id, or "unsupported: cudaFoo"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.what}"


def library_for(header: str) -> tuple[str, str]:
    """(library name, the package that installs it) for a ROCm header; ("", "") when the table has no row."""
    want = PurePosixPath(header)
    for lib in library_table().libraries:
        if lib.hip is None:
            continue
        for h in lib.hip.headers:
            have = PurePosixPath(h)
            if h == header or (len(want.parts) > 1 and have.parts[0] == want.parts[0] and have.parts[0] != "hip") \
                    or (len(want.parts) == 1 and have.name == want.name):
                return lib.name, lib.hip.install
    return "", ""


def cuda_header_note(header: str) -> str:
    """What a CUDA header still in the translated code needs ("" when ``header`` is not one the table knows by
    name or by its folder: ``nvtx3/nvToolsExt.h``, ``cooperative_groups/reduce.h``)."""
    want = PurePosixPath(header)
    for lib in library_table().libraries:
        names = [PurePosixPath(h) for h in lib.headers]
        if any(h == want or (len(want.parts) > 1 and h.stem == want.parts[0]) for h in names):
            return f"a CUDA header left in the code: {header} ({lib.name}: {lib.advice()})"
    return ""


def flagged_lines(review) -> dict[str, dict[int, list[str]]]:
    """{file: {translated line: [what hipwizard said there]}} from a review: hunk flags, untouched risks, API
    diagnostics."""
    out: dict[str, dict[int, list[str]]] = {}

    def put(path: str, line: int | None, what: str) -> None:
        if line:
            out.setdefault(path, {}).setdefault(int(line), []).append(what)

    for h in review.hunks:
        for f in h.flags:
            put(h.file, f.line, f.rule_id)
    for path, risks in review.untouched.items():
        for r in risks:
            put(path, r.flag.line, r.flag.rule_id)
    for path, diags in review.diagnostics.items():
        for d in diags:
            if d.kind in API_KINDS:
                put(path, d.line, f"{d.kind.replace('_', ' ')}: {d.name}")
    return out


def _segments(root: Path, unit: str, read: Callable[[str], str],
              dirs: tuple[str, ...] = ()) -> list[tuple[str, int, int]]:
    """The unit as the preprocessor reads it: (file, first line, last line) pieces in order, each project header
    entered at its first ``#include`` and never again."""
    seen: set[str] = set()
    out: list[tuple[str, int, int]] = []

    def walk(rel: str, depth: int) -> None:
        seen.add(rel)
        text = read(rel)
        lines = text.splitlines()
        start = 1
        for m in INCLUDE.finditer(text):
            target = project_includes(root, rel, m.group(0), dirs)
            if not target or target[0] in seen or depth > 32:
                continue
            at = text.count("\n", 0, m.start()) + 1
            out.append((rel, start, at))
            walk(target[0], depth + 1)
            start = at + 1
        out.append((rel, start, max(len(lines), start)))

    walk(unit, 0)
    return out


def lines_ahead(root: Path, unit: str, stop_file: str, stop_line: int, flags: dict[str, dict[int, list[str]]],
                read: Callable[[str], str], dirs: tuple[str, ...] = ()) -> list[AheadLine]:
    """The flagged lines the compiler never reached: after ``stop_file:stop_line`` in ``unit``'s include order."""
    ahead: list[AheadLine] = []
    segments = _segments(root, unit, read, dirs)
    # the stop not found in the unit's project files (a header outside the tree): everything is ahead
    passed = not any(f == stop_file and a <= stop_line <= b for f, a, b in segments)
    for file, first, last in segments:
        if not passed and file == stop_file and first <= stop_line <= last:
            passed, first = True, stop_line + 1
        elif not passed:
            continue
        for line in sorted(n for n in flags.get(file, {}) if first <= n <= last):
            ahead.extend(AheadLine(file, line, what) for what in dict.fromkeys(flags[file][line]))
    return ahead
