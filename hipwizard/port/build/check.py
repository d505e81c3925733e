"""Compile-check a written tree the way the project builds it: ``check_tree``.

1. Which files are GPU units (``units``): a CPU-only ``.c``/``.cpp`` and another platform's file are skipped
   with the reason, never counted "ok" nor failed.
2. Each unit's flags (``commands`` + ``flags``): the compile command the project's build gives it (a
   ``compile_commands.json``, CMake's export, ``make -Bn``), else the flags its nearest build file writes, else
   ``-I <root> [-I <root>/include]``. ``TreeCheck.how`` says which.
3. hipcc on each unit (``output.compile_check.check_files``).
4. A unit stopped by a missing ROCm library header: the package that installs it (in the note) and the flagged
   lines still ahead in that unit and its project headers (``ahead``, from the review beside the tree).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hipwizard.errors import UserError
from hipwizard.port.build.ahead import flagged_lines, lines_ahead
from hipwizard.port.build.commands import Commands, buildfile_flags, project_commands
from hipwizard.port.build.flags import check_flags
from hipwizard.port.build.run import BuildRun, run_build
from hipwizard.port.build.units import HEADERS, UNITS, closure, gpu_content, project_includes, unit_skip
from hipwizard.port.output.compile_check import HIP_ENV, FileCheck, check_files, find_toolchain
from hipwizard.port.review.state import ReviewState, state_path_for
from hipwizard.progress import ProgressFn
from hipwizard.runner import Runner, SubprocessRunner


@dataclass
class TreeCheck:
    """The check of a tree: one ``FileCheck`` per file asked, where the flags came from, what was tried."""

    files: list[FileCheck]
    how: str = ""  # "make -Bn (...)", "the project's compile_commands.json", ... ("" = the default flags)
    notes: list[str] = field(default_factory=list)
    build: BuildRun | None = None  # check --build: the build's own run

    @property
    def gpu_units(self) -> list[FileCheck]:
        """The files compiled as GPU units (not skipped)."""
        return [c for c in self.files if c.status != "skipped"]

    @property
    def failed_units(self) -> int:
        """Units that do not compile (their code, not a missing library header)."""
        return sum(c.status in ("failed", "error") for c in self.files)


def review_beside(root: Path):
    """The ``ReviewState`` whose output folder is ``root``, read without taking its lock; None when there is
    none or it cannot be read (the check goes on without the lines ahead of a missing header)."""
    path = state_path_for(root.resolve())
    if not path.is_file():
        return None
    try:
        return ReviewState.load(path)
    except (UserError, OSError):
        return None


def _reader(root: Path):
    cache: dict[str, str] = {}

    def read(rel: str) -> str:
        if rel not in cache:
            try:
                cache[rel] = (root / rel).read_text(encoding="utf-8", errors="replace")
            except OSError:
                cache[rel] = ""
        return cache[rel]

    return read


def check_tree(root: str | Path, files: list[str], *, arch: str | None = None, runner: Runner | None = None,
               jobs: int | None = None, progress: ProgressFn | None = None, review=None,
               build_runner: Runner | None = None) -> TreeCheck:
    """Check ``files`` (relative to ``root``) as the project builds them (see the module docstring).
    ``review``: the tree's ``ReviewState`` (for the lines ahead of a missing header), or None.
    ``build_runner`` runs make/cmake (default: a real one when ``runner`` is None, else ``runner``)."""
    root = Path(root)
    read = _reader(root)
    cmds_runner = build_runner or runner or SubprocessRunner()
    has_units = any(f.endswith(UNITS) for f in files)
    commands = project_commands(root, cmds_runner, env=HIP_ENV, arch=arch or "gfx942") if has_units else None
    skip = _skips(root, files, read, commands)
    units = [f for f in files if f.endswith(UNITS) and f not in skip]
    flags: dict[str, list[str]] = {}
    origin: dict[str, str] = {}
    for rel in units:
        cmd = commands.by_file.get(rel) if commands else None
        if cmd is not None:
            flags[rel], origin[rel] = check_flags(cmd.args, cmd.directory), commands.how if commands else ""
            continue
        found, source = buildfile_flags(root, rel)
        if source:
            base = ["-I" + str((root / rel).parent.resolve()), "-I" + str(root.resolve())]
            flags[rel], origin[rel] = [*base, *found], source if source.startswith("the ") else \
                f"the flags {source} writes"
    checks = check_files(root, files, arch=arch, runner=runner, jobs=jobs, progress=progress, flags=flags,
                         flags_from=origin, skip=skip)
    for c in checks:  # a unit built with flags its build computes: said, as the check went without them
        if c.status == "failed" and "not known here" in c.flags_from:
            c.note = f"checked without some of its flags: {c.flags_from}" + (f"; {c.note}" if c.note else "")
    _mark_ahead(root, checks, review, read, flags)
    how = commands.how if commands and commands.by_file else \
        ("the -I/-D/-std flags the build files write" if origin else "")
    return TreeCheck(checks, how, commands.notes if commands else [])


def _skips(root: Path, files: list[str], read, commands: Commands | None,
           built: set[str] | frozenset[str] = frozenset()) -> dict[str, str]:
    """{unit: why it is no GPU unit} for the units of ``files`` that are CPU-only, another platform's, #included
    by another file (unless the build compiles it itself) or left out by a build that was read whole."""
    named = set(commands.by_file if commands else ()) | set(built)
    skip: dict[str, str] = {}
    included: dict[str, str] = {}  # a unit another file #includes -> that file (compiled through it, not alone)
    for rel in files:
        for inc in project_includes(root, rel, read(rel)):
            if inc.endswith(UNITS) and inc != rel:
                included.setdefault(inc, rel)
    for rel in files:
        if not rel.endswith(UNITS):
            continue
        if rel in included and rel not in named:
            skip[rel] = f"#included by {included[rel]}: compiled as part of it, not on its own"
            continue
        headers = [h for h in closure(root, rel, read)[1:] if h.endswith(HEADERS)]
        why = unit_skip(rel, read(rel), included_gpu=any(gpu_content(read(h)) for h in headers)) or \
            (commands.builds_elsewhere(rel) if commands and rel not in built else "")
        if why:
            skip[rel] = why
    return skip


def _under(base: Path, folder: str) -> str:
    rel = Path(folder).relative_to(base).as_posix()
    return "" if rel == "." else rel


def _mark_ahead(root: Path, checks: list[FileCheck], review, read, flags: dict[str, list[str]] | None = None) -> None:
    if review is None:
        return
    marks = flagged_lines(review)
    base = root.resolve()
    for c in checks:
        stop = next((d for d in c.errors if d.missing_header), None)
        if c.status == "missing-header" and stop is not None:
            dirs = tuple(_under(base, f[2:]) for f in (flags or {}).get(c.path, [])
                         if f.startswith("-I") and Path(f[2:]).is_relative_to(base))
            c.ahead = lines_ahead(root, c.path, stop.file, stop.line, marks, read, dirs)


def build_tree(root: str | Path, files: list[str], *, arch: str, runner: Runner | None = None,
               jobs: int | None = None, progress: ProgressFn | None = None, review=None) -> TreeCheck:
    """``check --build``: run the tree's own build with hipcc (``run.run_build``) and report each file of
    ``files`` from it: skipped (no GPU unit), its compile in the build, or ``not built``. A build that compiled
    nothing (no Makefile/CMake, a failed configure) falls back to ``check_tree``, saying why."""
    root = Path(root)
    tool = find_toolchain(runner or SubprocessRunner(), arch)  # an arch this hipcc accepts (gfx942 -> gfx940...)
    build = run_build(root, arch=tool.arch, jobs=jobs, runner=runner)
    if not build.units:
        tree = check_tree(root, files, arch=arch, runner=runner, jobs=jobs, progress=progress, review=review)
        said = f"{build.note}" + (f"\n{build.tail}" if build.tail else "")
        tree.notes.insert(0, "the build compiled no unit (" + (said or build.status) + "); each unit was "
                          "checked on its own instead")
        tree.build = build
        return tree
    read = _reader(root)
    commands = project_commands(root, runner or SubprocessRunner(), env=HIP_ENV, arch=tool.arch)
    skip = _skips(root, files, read, commands, built=set(build.units))  # what the build compiled is a unit
    checks = []
    for rel in files:
        if rel in skip or not rel.endswith(UNITS):
            checks.append(FileCheck(rel, "skipped", note=skip.get(rel, "header: checked through its units")))
        elif rel in build.units:
            checks.append(build.units[rel])
        elif build.status == "ok":  # the build ran to the end without it: not part of the build
            checks.append(FileCheck(rel, "skipped", note=f"the project's build ({build.system}) does not compile it"))
        else:
            checks.append(FileCheck(rel, "not built", note="the build never compiled it (it stopped before, or the "
                                    "default target does not build it)", arch=arch))
    _mark_ahead(root, checks, review, read)
    tree = TreeCheck(checks, f"the project's own build ({build.system})", [build.note] if build.note else [], build)
    return tree
