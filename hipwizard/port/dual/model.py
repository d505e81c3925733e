"""The dual-target mode's words: the guard macro chosen per project, a guarded branch, the mode of a review.

``DualOptions`` is what the user chooses (the guard macro, default ``USE_ROCM``; the compat header's path in
the tree). A ``Branch`` is one place the CUDA source had to differ for AMD beyond renames: its ``kind`` says why
(``include``: CUDA headers swapped for the HIP ones and the compat header; ``code``: the translator changed more
than names; ``warp-size``: a 32-lane constant; ``no-hip``: a statement calling a CUDA API HIP has no counterpart for, left out of the AMD
build and flagged; ``build``: a build file's AMD lines). A review made in dual mode
records it in its backend name (``dual(USE_ROCM)+builtin``) so a re-run, a refresh and the write know the mode.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from hipwizard.errors import UserError

Mode = Literal["fork", "dual"]
MODES: tuple[str, ...] = ("fork", "dual")
DEFAULT_GUARD = "USE_ROCM"
HEADER = "hipwizard_compat.h"  # the generated compat header, at the root of the tree
MARKER = "hipwizard dual-target compat header"  # its first line says so: check knows a dual tree by it
BranchKind = Literal["include", "code", "warp-size", "no-hip", "build"]
_IDENT = re.compile(r"[A-Za-z_]\w*")
_BACKEND = re.compile(r"^dual\((?P<guard>[A-Za-z_]\w*)\)\+(?P<backend>.*)$")


@dataclass(frozen=True)
class DualOptions:
    """The project's guard macro (its AMD builds define it) and where the compat header goes."""

    guard: str = DEFAULT_GUARD
    header: str = HEADER

    def __post_init__(self) -> None:
        if not _IDENT.fullmatch(self.guard) or self.guard.startswith("__"):
            raise UserError(f"guard macro {self.guard!r} is not a macro name (letters, digits, _; e.g. USE_ROCM)",
                            field="guard")

    @property
    def condition(self) -> str:
        """The preprocessor condition of the AMD side."""
        return f"defined({self.guard}) || defined(__HIP_PLATFORM_AMD__)"

    def backend_name(self, backend: str) -> str:
        return f"dual({self.guard})+{backend}"


def parse_backend(name: str) -> tuple[DualOptions | None, str]:
    """A review's backend name -> (its dual options, or None for a fork review; the translator's name)."""
    m = _BACKEND.match(name or "")
    if m is None:
        return None, name
    return DualOptions(m.group("guard")), m.group("backend")


def check_mode(mode: str) -> Mode:
    if mode not in MODES:
        raise UserError(f"mode {mode!r}: choose fork (a HIP copy) or dual (one source for NVIDIA and AMD)",
                        field="mode")
    return mode  # type: ignore[return-value]


@dataclass(frozen=True)
class Branch:
    """A guarded branch of the dual-target tree: file, 1-based line of its ``#if`` in the result, kind."""

    file: str
    line: int
    kind: BranchKind
    lines: int  # lines of the AMD side

    def to_dict(self) -> dict:
        return {"file": self.file, "line": self.line, "kind": self.kind, "lines": self.lines}


def choose(mode: str | None, guard: str | None, recorded_mode: str | None, recorded_guard: str | None,
           previous_backend: str | None) -> DualOptions | None:
    """The options of a translation (None: fork mode): the mode asked for, else that of the review already at
    the output folder, else the workspace's recorded choice, else fork; the guard likewise, else ``USE_ROCM``.
    An existing review of the other mode (or guard) is refused (its decisions are about other hunks)."""
    before = parse_backend(previous_backend)[0] if previous_backend is not None else None
    if mode is None and previous_backend is not None:  # a re-run over a review goes on in its mode
        mode = "dual" if before is not None else "fork"
        recorded_guard = before.guard if before is not None else recorded_guard
    chosen = check_mode(mode or recorded_mode or "fork")
    options = DualOptions(guard or recorded_guard or DEFAULT_GUARD) if chosen == "dual" else None
    if guard and chosen == "fork":
        raise UserError("a guard macro is for the dual-target mode only (choose mode dual)", field="guard")
    if previous_backend is not None:
        if (before is None) != (options is None) or (before and options and before.guard != options.guard):
            was = f"dual-target ({before.guard})" if before else "fork"
            raise UserError(f"the output folder's review was made in {was} mode; choose another output folder "
                            "for this mode (or move the review away to start over)", field="mode")
    return options
