"""What a dual-target write adds to the port's write: the compat header, the patch, both builds checked.

``finish(review, report, tree, options)`` runs after ``output.apply`` wrote the review's decisions (and the
tree's other files) into the output folder: it places the compat header there (through the output folder's
record, so the user's edits to it are merged, never overwritten), writes the patch of the whole change beside
the output folder (``<out>.dual.patch``, as the review is ``<out>.review.json``: nothing lands in the CUDA
tree), and (``check``) compiles every written unit with nvcc and with hipcc, each error on the hunk that
wrote its line, and the write recorded with both sides' errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hipwizard.atomic import atomic_write_bytes
from hipwizard.port.dual.check import DualCheck, check_both
from hipwizard.port.dual.model import DualOptions
from hipwizard.port.dual.patch import tree_patch
from hipwizard.port.dual.tree import DualTree
from hipwizard.port.output.apply import ON_DISK, ApplyReport, CompileError, FileResult, blame_line, safe_target
from hipwizard.port.output.worktree import WorkTree
from hipwizard.port.review.state import ReviewState
from hipwizard.progress import ProgressFn


def patch_path(out: Path) -> Path:
    """Where the patch of a dual-target output folder goes: beside it."""
    out = Path(out).expanduser().resolve()
    return out.parent / f"{out.name}.dual.patch"


@dataclass
class DualWrite:
    patch: Path
    header: str  # its status in the output folder ("written", "merged", "kept", "conflict")
    checks: list[DualCheck] = field(default_factory=list)


def finish(review: ReviewState, report: ApplyReport, tree: DualTree, options: DualOptions, *, check: bool = True,
           arch: str | None = None, runner=None, jobs: int | None = None, merge_runner=None,
           progress: ProgressFn | None = None) -> DualWrite:
    """The header, the patch and the two-sided check (module docstring). Raises ``OSError``."""
    out = review.out
    record = WorkTree.load(out, runner=merge_runner)
    try:
        placed = record.place(options.header, safe_target(out, options.header), tree.header.encode(), force=False)
    finally:
        record.save()
    report.files.append(FileResult(options.header, placed.status, placed.detail))
    paths = [f.path for f in report.files if f.status in ON_DISK]
    target = patch_path(out)
    # sources that are not UTF-8 keep their bytes (read with surrogateescape, written back the same way)
    atomic_write_bytes(target, tree_patch(review.src, out, paths).encode("utf-8", "surrogateescape"))
    result = DualWrite(target, placed.status)
    if check:
        by_path = {f.path: f for f in report.files if f.status in ON_DISK}
        result.checks = check_both(out, list(by_path), options, original=review.src, arch=arch, runner=runner,
                                   jobs=jobs, progress=progress)
        for c in result.checks:
            owner = by_path[c.path]
            owner.check = c.status
            for side, fc in (("nvcc", c.nvidia), ("hipcc", c.amd)):
                if fc.status == "failed":
                    for d in fc.errors:
                        if not d.missing_header:
                            line_owner = by_path.get(d.file, owner)
                            line_owner.errors.append(CompileError(d.line, f"{side}: {d.message}",
                                                                  blame_line(line_owner.spans, d.line)))
                if fc.note and fc.status != "ok":
                    owner.detail = "; ".join(x for x in (owner.detail, f"{side}: {fc.note}") if x)
        report.arch = next((c.amd.arch for c in result.checks if c.amd.arch), "")
        if hasattr(report, "checked"):  # the write report says a check ran
            report.checked = any(c.status in ("ok", "failed", "missing-header", "skipped") for c in result.checks)
        review.record_write(report.written, report.compile_errors, arch=report.arch, check_note=report.check_note)
    return result
