"""The dual-target mode inside the port's services: make the review files, write and check a tree.

``services.translate`` / ``refresh`` / ``write`` call these when a review is in dual mode (its backend name
says so, ``model.parse_backend``): ``dualize`` turns the engine's translations into the dual-target review
files; ``write_dual`` writes the decisions (``output.apply``, the tree's other files copied so nvcc and hipcc
find every header), then the compat header, the patch and both builds' check (``write.finish``);
``check_dual`` checks a written dual-target tree both ways (``hipwizard check`` on such a folder).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from hipwizard.errors import UserError
from hipwizard.port.dual.check import DualCheck, check_both
from hipwizard.port.dual.model import HEADER, MARKER, DualOptions, parse_backend
from hipwizard.port.dual.tree import DualTree, dual_tree
from hipwizard.port.dual.write import DualWrite, finish
from hipwizard.port.model import FileTranslation
from hipwizard.port.output.apply import ApplyReport, apply
from hipwizard.port.output.compile_check import UNITS
from hipwizard.port.review.state import ReviewState
from hipwizard.port.translation.engine import translate_tree
from hipwizard.progress import ProgressFn


@dataclass
class DualApplyReport(ApplyReport):
    """A dual-target write: the port's write report and what the mode added (header, patch, both checks)."""

    dual: DualWrite | None = None


def dualize(files: list[FileTranslation], options: DualOptions) -> DualTree:
    return dual_tree(files, options)


def retranslate(review: ReviewState, *, hip_version: str | None, progress: ProgressFn | None,
                arch: str | None) -> list[FileTranslation]:
    """The review's sources translated again, in the review's mode (the dual form for a dual review)."""
    from hipwizard.port.translation.backends import BACKENDS

    options, backend = parse_backend(review.backend)
    backend = backend if backend in BACKENDS else "auto"
    files = translate_tree(review.src, backend=backend, hip_version=hip_version, progress=progress,
                           exclude=[review.out], arch=arch)
    return dual_tree(files, options).files if options is not None else files


def write_dual(review: ReviewState, options: DualOptions, *, arch: str | None, check: bool, runner=None,
               jobs: int | None = None, force: bool = False, merge_runner=None, environment: dict | None = None,
               progress: ProgressFn | None = None) -> DualApplyReport:
    """Write a dual review into its output folder with the compat header and the patch; check both builds.
    Raises ``UserError`` (from ``apply``) or ``OSError``."""
    _, backend = parse_backend(review.backend)
    from hipwizard.port.translation.backends import BACKENDS

    files = translate_tree(review.src, backend=backend if backend in BACKENDS else "auto",
                           hip_version=review.hip_version or None, exclude=[review.out], arch=arch)
    tree = dual_tree(files, options)
    base = apply(review, copy_untouched=True, check=False, arch=arch, runner=runner, jobs=jobs, progress=progress,
                 force=force, merge_runner=merge_runner, environment=environment)
    report = DualApplyReport(**{k: getattr(base, k) for k in base.__dataclass_fields__})
    report.dual = finish(review, report, tree, options, check=check, arch=arch, runner=runner, jobs=jobs,
                         merge_runner=merge_runner, progress=progress)
    return report


def dual_options_of(folder: Path) -> DualOptions | None:
    """The options of a written dual-target tree (its compat header says so, and names the guard), or None."""
    header = Path(folder) / HEADER
    try:
        with open(header, encoding="utf-8", errors="replace") as fh:
            head = fh.read(4096)
    except OSError:
        return None
    if MARKER not in head.split("\n", 1)[0]:
        return None
    m = re.search(r"^#if defined\((?P<guard>[A-Za-z_]\w*)\)", head, re.M)
    return DualOptions(m.group("guard")) if m else DualOptions()


def check_dual(folder: str | Path, *, arch: str | None = None, jobs: int | None = None, runner=None,
               progress: ProgressFn | None = None) -> list[DualCheck] | None:
    """Both builds of every unit of a written dual-target tree (None: ``folder`` is no such tree). The
    untouched original, to tell a broken NVIDIA build from one that never built, is the review's source."""
    from hipwizard.port.review.state import state_path_for
    from hipwizard.port.translation.scan import SKIP_DIRS

    root = Path(folder).expanduser()
    options = dual_options_of(root)
    if options is None:
        return None
    original = None
    state = state_path_for(root)
    if state.is_file():
        try:
            original = ReviewState.load(state).src
        except (UserError, OSError):
            original = None
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                   if p.is_file() and p.suffix in UNITS and not (set(p.relative_to(root).parts) & SKIP_DIRS))
    if not files:
        raise UserError(f"no translation units ({' '.join(UNITS)}) under {folder}")
    return check_both(root, files, options, original=original, arch=arch, runner=runner, jobs=jobs,
                      progress=progress)
