"""Write a review's decisions into the output directory, then compile-check what was written.

Each reviewed file is rebuilt from its original text: accepted hunks take the translation, edited hunks
the user's text, rejected and pending hunks keep the original. Files go into the output directory only,
each written atomically; a review naming a path that would leave it (``..``, an absolute path, a symlink
pointing out) is refused as a whole before anything is written. The output folder is the user's working
tree (``worktree``): a file the user edited since hipwizard wrote it is merged three ways, never overwritten;
a conflicting merge leaves the user's file as it is and is reported (status ``conflict``). Where each hunk landed in the written file is recorded, so a compiler error on line N maps
back to the hunk that produced line N.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal

from hipwizard.errors import UserError
from hipwizard.port.build.check import check_tree
from hipwizard.port.model import Hunk
from hipwizard.port.output.compile_check import DEFAULT_ARCH
from hipwizard.port.output.worktree import WorkTree, copy_file
from hipwizard.port.review.state import ReviewState, fingerprint
from hipwizard.port.translation.hunks import split_lines
from hipwizard.progress import ProgressFn

FileStatus = Literal["written", "merged", "kept", "conflict", "stale", "error"]
ON_DISK = ("written", "merged", "kept")  # the file in the output folder holds this write's result
# How far (in lines) from a hunk a compiler error may be and still be blamed on it.
NEAR_LINES = 3


@dataclass
class CompileError:
    line: int | None
    message: str
    hunk_id: str | None  # the hunk whose output lines hold (or are next to) the error


@dataclass
class FileResult:
    path: str
    status: FileStatus
    detail: str = ""
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)  # hunk id -> output lines [a, b)
    check: str = ""  # the compile check's status ("ok", "failed", "missing-header", "skipped", ...); "" = none
    errors: list[CompileError] = field(default_factory=list)

    @property
    def symbol(self) -> str:
        """✔ written and compiles, ✖ not written or does not compile, ⚠ missing ROCm header / no hipcc,
        ○ written, not compiled (a header, or no check asked)."""
        if self.status not in ON_DISK or self.errors or self.check in ("failed", "error"):
            return "✖"
        if self.check == "ok":
            return "✔"
        return "⚠" if self.check in ("missing-header", "not available") else "○"


@dataclass
class ApplyReport:
    out: Path
    files: list[FileResult]
    copied: int = 0
    check_note: str = ""
    arch: str = ""  # the --offload-arch the compile check used ("" when nothing was compiled)
    checked: bool = False  # a compile check ran (False: none asked, or nothing to compile)
    check_how: str = ""  # where the units' flags came from (the project's build), "" = default flags
    stopped: dict[str, str] = field(default_factory=dict)  # unit -> why a missing library header stopped it
    ahead: dict[str, list[str]] = field(default_factory=dict)  # such a unit -> the flagged lines never compiled

    @property
    def error_count(self) -> int:
        """Compiler errors, all files together."""
        return sum(len(f.errors) for f in self.files)

    @property
    def written(self) -> int:
        """Files whose new result is in the output folder (written, or merged with the user's edits)."""
        return sum(f.status in ("written", "merged") for f in self.files)

    @property
    def conflicts(self) -> list["FileResult"]:
        return [f for f in self.files if f.status == "conflict"]

    @property
    def compile_errors(self) -> int:
        """Files with compile errors (a unit, or a header whose error a unit met), not errors."""
        return sum(1 for f in self.files if f.errors)


def safe_target(root: Path, rel: str) -> Path:
    """``root/rel``, refusing absolute paths, ``..`` and symlinks that lead out of ``root``."""
    if not rel or os.path.isabs(rel) or any(part == ".." for part in Path(rel).parts):
        raise UserError(f"refusing path {rel!r}: it would leave {root}")
    base = root.resolve()
    target = base / rel
    # resolve() follows every symlink on the way, including a final one that points out.
    if not target.resolve().is_relative_to(base):
        raise UserError(f"refusing path {rel!r}: a symlink leads out of {root}")
    return target


def rebuild(original: str, hunks: list[Hunk], choose: Callable[[Hunk], list[str]]
            ) -> tuple[str, dict[str, tuple[int, int]]]:
    """The file text with each hunk's chosen lines in place of its old lines.

    ``hunks`` are the file's hunks (any order); ``choose(h)`` returns the lines to put there. Returns the
    text and, per hunk id, the 1-based output line range [start, end) its lines occupy. Raises
    ``ValueError`` when a hunk's old lines are not where it says (the source changed).
    """
    lines = split_lines(original)  # the engine's line model: only \n ends a line
    eol = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    out: list[str] = []
    spans: dict[str, tuple[int, int]] = {}
    pos = 0
    for h in sorted(hunks, key=lambda h: h.old_start):
        start = h.old_start - 1 if h.old_lines or h.old_start > 0 else 0
        end = start + len(h.old_lines)
        if start < pos or end > len(lines) or [_bare(x) for x in lines[start:end]] != [_bare(x) for x in h.old_lines]:
            raise ValueError(f"hunk at line {h.old_start} of {h.file} does not match the source")
        out.extend(lines[pos:start])
        first = len(out) + 1
        chosen = choose(h)
        at_eof_without_eol = end == len(lines) and lines and not lines[-1].endswith(("\n", "\r"))
        for k, text in enumerate(chosen):
            if text.endswith(("\n", "\r")):
                out.append(text)
            elif k == len(chosen) - 1 and at_eof_without_eol:
                out.append(text)
            else:
                out.append(text + eol)
        spans[h.hunk_id] = (first, len(out) + 1)
        pos = end
    out.extend(lines[pos:])
    return "".join(out), spans


def _bare(line: str) -> str:
    return line.rstrip("\r\n")


def blame_line(spans: dict[str, tuple[int, int]], line: int | None) -> str | None:
    """The hunk whose output lines hold ``line``, else the nearest one within ``NEAR_LINES``."""
    if line is None:
        return None
    best, best_dist = None, NEAR_LINES + 1
    for hid, (a, b) in spans.items():
        last = max(b - 1, a)  # an empty span (a deletion) sits at line a
        dist = 0 if a <= line <= last else min(abs(line - a), abs(line - last))
        if dist < best_dist:
            best, best_dist = hid, dist
    return best


def apply(state: ReviewState, *, copy_untouched: bool = True, check: bool = True, arch: str | None = None,
          runner=None, jobs: int | None = None, progress: ProgressFn | None = None, force: bool = False,
          merge_runner=None, environment: dict | None = None) -> ApplyReport:
    """Write every reviewed file into ``state.out`` and (``check``) compile-check the written files.

    A file the user edited since hipwizard wrote it is merged (``git merge-file`` through ``merge_runner``,
    default the real one); one hipwizard never wrote is kept unless ``force``. Raises ``UserError`` before
    writing anything when a path of the review would leave its folders, the output directory cannot be
    created or written, or the record of earlier writes is damaged; per-file problems (a source that changed
    since the review, a file that cannot be written, a conflict with the user's edits) are results.
    """
    out = state.out
    for rel in state.files:  # a crafted state is refused as a whole, before anything is written
        safe_target(state.src, rel)
        safe_target(out, rel)
    tree = WorkTree.load(out, runner=merge_runner)
    if environment:
        tree.environment = environment  # the machine this write happened on (doctor.fingerprint)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create output directory {out}: {exc.strerror or exc}") from None
    if not os.access(out, os.W_OK):
        raise UserError(f"output directory {out} is not writable")
    results: list[FileResult] = []
    try:
        results += [_write_file(state, tree, rel, info, force) for rel, info in state.files.items()]
        copied, refused = _copy_untouched(state, tree) if copy_untouched else (0, [])
    finally:
        tree.save()  # what was written so far, even when interrupted
    report = ApplyReport(out, results + refused, copied)
    if check:
        _compile_check(report, arch=arch, runner=runner, jobs=jobs, progress=progress, review=state)
    compiled = any(f.check in ("ok", "failed", "missing-header") for f in report.files)
    state.record_write(report.written, report.compile_errors, arch=report.arch if compiled else "",
                       check_note=report.check_note)
    return report


def _write_file(state: ReviewState, tree: WorkTree, rel: str, info: dict, force: bool) -> FileResult:
    try:
        source = safe_target(state.src, rel)
        target = safe_target(state.out, rel)
        raw = source.read_bytes()
    except UserError as exc:
        return FileResult(rel, "error", str(exc))
    except OSError as exc:
        return FileResult(rel, "stale", f"source unreadable: {exc.strerror or exc}")
    if fingerprint(raw) != info.get("sha256"):
        return FileResult(rel, "stale", "source changed since the review; reopen the review to reconcile")
    hunks = [state.hunks[i] for i in state.by_file.get(rel, [])]
    try:
        text, spans = rebuild(raw.decode("utf-8", "surrogateescape"), hunks, state.chosen_lines)
    except ValueError as exc:
        return FileResult(rel, "stale", str(exc))
    try:
        placed = tree.place(rel, target, text.encode("utf-8", "surrogateescape"), force=force)
    except OSError as exc:
        return FileResult(rel, "error", f"cannot write {target}: {exc.strerror or exc}")
    return FileResult(rel, placed.status, placed.detail, spans=spans)


def _copy_untouched(state: ReviewState, tree: WorkTree) -> tuple[int, list[FileResult]]:
    """Copy the source tree's other regular files (project headers, build scripts, data) so the written tree
    builds on its own; never follows links; the user's edits to a copied file are merged, never overwritten,
    and a file there that hipwizard did not put there is kept (``worktree.copy_file``). Returns the number
    copied and a result for each copy that was refused (a conflict) or failed."""
    copied = 0
    refused: list[FileResult] = []
    src = state.src.resolve()
    out = state.out.resolve()
    for dirpath, dirnames, filenames in os.walk(src):
        # Skip hidden folders, links, and the output folder itself when it sits inside the sources.
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and not os.path.islink(os.path.join(dirpath, d))
                       and (Path(dirpath) / d).resolve() != out]
        for name in filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(src).as_posix()
            if rel in state.files or path.is_symlink() or not path.is_file():
                continue
            try:
                placed = copy_file(tree, rel, path, safe_target(state.out, rel))
            except OSError as exc:
                refused.append(FileResult(rel, "error", f"cannot copy: {exc.strerror or exc}"))
                continue
            except UserError as exc:
                refused.append(FileResult(rel, "error", str(exc)))
                continue
            copied += placed.status in ("written", "merged")
            if placed.status == "conflict":
                refused.append(FileResult(rel, "conflict", placed.detail or "kept as it is (not hipwizard's copy)"))
    return copied, refused


def _compile_check(report: ApplyReport, *, arch, runner, jobs, progress, review=None) -> None:
    """Run the engine's hipcc check on the written files; blame each error on the hunk that wrote its line
    (an error inside an included header goes to that header's hunks). A missing ROCm library header is a
    note on the file, not an error of the user's code."""
    written = [f for f in report.files if f.status in ON_DISK]
    if not written:
        return

    tree_check = check_tree(report.out, [f.path for f in written], arch=arch, runner=runner, jobs=jobs,
                            progress=progress, review=review)
    checks = tree_check.files
    report.checked = any(c.status in ("ok", "failed", "missing-header") for c in checks)
    report.check_how = tree_check.how
    report.stopped = {c.path: c.note for c in checks if c.status == "missing-header"}
    report.ahead = {c.path: [str(a) for a in c.ahead] for c in checks if c.ahead}
    report.arch = next((c.arch for c in checks if c.arch), "")
    if report.arch and report.arch != (arch or DEFAULT_ARCH):  # hipcc lacked the arch asked for: said once
        report.check_note = next((c.note for c in checks if c.status in ("ok", "failed") and c.note), "")
    by_path = {f.path: f for f in written}
    seen: set[tuple[str, int, str]] = set()
    for c in checks:
        result = by_path.get(c.path)
        if result is None:
            continue
        result.check = c.status
        if c.note:
            result.detail = c.note
            report.check_note = report.check_note or (c.note if c.status == "not available" else "")
        for d in c.errors:
            if d.severity == "warning" or d.missing_header:
                continue
            owner = by_path.get(d.file, result)
            key = (owner.path, d.line, d.message)
            if key in seen:  # a header's error repeats for every file that includes it
                continue
            seen.add(key)
            owner.errors.append(CompileError(d.line, d.message, blame_line(owner.spans, d.line)))
            if owner is not result and owner.check in ("", "skipped"):
                owner.check = "failed"
