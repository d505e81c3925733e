"""The port step's user actions, one function each, called by both faces: ``hipwizard hipify / review /
check`` (``cli/port.py``, ``cli/port_review.py``) and the Port screen (``tui/port``). A fix lands here once.

Each action fetches what the doctor found in the workspace itself (``doctor.state.target_facts``): the HIP
version the translation checks APIs against (``too_new``) and the gfx arch the compile check builds for.
An explicit ``hip_version`` / ``arch`` (the CLI's ``--hip-version`` / ``--arch``) wins. ``ws`` may be None
(no workspace: no doctor facts, nothing recorded).

- ``translate``: start a migration (translate a tree, write a fresh review beside the output, record it in
  the workspace; optionally accept hunks, then ``write``). Run again over the same output, it reconciles:
  every decision whose hunk is unchanged is kept, changed ones come back pending with the old decision
  shown, vanished ones are listed (``review_reconcile``).
- ``open_review``: load the workspace's review and ``refresh`` it.
- ``refresh``: re-translate when the sources changed and reconcile the decisions.
- ``write``: write the decisions into the output folder (the user's working tree: hand edits are merged,
  never overwritten; ``worktree``) and compile-check them.
- ``resolve``: settle a file whose write met conflicting hand edits (keep mine / take new / merged).
- ``check``: compile-check a folder of HIP sources.

Errors a user can fix are ``UserError`` (one line); long actions report ``Progress``.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hipwizard.doctor.state import environment_stamp, target_facts
from hipwizard.errors import UserError
from hipwizard.port.dual.model import choose as choose_mode
from hipwizard.port.dual.model import parse_backend
from hipwizard.port.output.worktree import WorkTree, WorktreeStatus, is_foreign
from hipwizard.port.review.state import ReconcileReport, ReviewState, state_path_for
from hipwizard.port.risk.budget import apply_budget, budgeted
from hipwizard.port.state import PortLink, read_link, record_link, review_path
from hipwizard.port.translation.compat import hipcc_version, target_version
from hipwizard.port.translation.scan import SKIP_DIRS
from hipwizard.progress import ProgressFn
from hipwizard.runner import SubprocessRunner
from hipwizard.workspace import Workspace

# The translation engine, the writer, the compile check and the dual-target room are imported inside the
# actions that use them: together about 0.6 s more on 2 cores, paid when an action runs, not when the Port
# screen opens (the only deferred own-module imports here).
if TYPE_CHECKING:
    from hipwizard.port.build.check import TreeCheck
    from hipwizard.port.output.apply import ApplyReport
    from hipwizard.port.translation.engine import PortReport

Accept = Literal["all", "unflagged"]


@dataclass
class Translation:
    """What ``translate`` made: the engine's report, the saved review, and the write when hunks were accepted."""

    review: ReviewState
    report: PortReport
    written: ApplyReport | None = None
    reconciled: ReconcileReport | None = None  # a re-run over an existing review: what its decisions became
    dual: dict | None = None  # dual-target mode: the guard, renames in the compat header, branches by kind

    @property
    def too_new(self) -> dict[str, int]:
        """{CUDA name: occurrences} whose HIP counterpart is newer than the target HIP version."""
        return self.review.api_counts("too_new")


@dataclass
class Opened:
    """The workspace's migration as the Port screen opens it."""

    review: ReviewState | None  # None: nothing translated yet (``link`` says what was chosen, if anything)
    reconciled: ReconcileReport | None = None  # the sources had changed: what the reconcile kept
    link: PortLink = field(default_factory=PortLink)


def _facts(ws: Workspace | None):
    return target_facts(ws)


def _resolve(ws: Workspace | None, path: str | Path) -> Path:
    p = Path(path).expanduser()
    if not p.is_absolute() and ws is not None:
        p = ws.root / p
    return p.resolve()


def translate(ws: Workspace | None, src: str | Path, out: str | Path, *, backend: str = "auto",
              hip_version: str | None = None, hip_kernel_execution_syntax: bool = False, roc: bool = False,
              experimental: bool = False, accept: Accept | None = None, check: bool = True,
              arch: str | None = None, replace: bool = False, force: bool = False, max_bytes: int | None = None,
              copy_untouched: bool = True, mode: str | None = None, guard: str | None = None,
              progress: ProgressFn | None = None) -> Translation:
    """Translate ``src`` (a folder, or one file) into a review beside ``out``, its APIs checked against
    ``hip_version`` (default: the doctor's), and record the migration in ``ws``.

    A fresh review has every hunk pending. When ``out`` already has a review of the same source, it is
    reconciled with the new translation (``ReviewState.reconcile``: decisions of unchanged hunks kept, changed
    ones pending with the old decision shown, vanished ones listed) unless ``replace`` (start over).
    Relative paths are taken from the workspace folder. ``accept`` decides the pending hunks for scripted use
    and then writes them (``write``, compile-checked unless ``check`` is False, for ``arch``); into an
    existing non-empty folder hipwizard did not write, only with ``force``. Files over ``max_bytes`` (default:
    the engine's cap, 8 MiB) are skipped and named. Bad input raises ``UserError`` before anything is written.
    ``mode`` "dual" (default: the workspace's choice, else "fork"): the review is of the dual-target form
    (``port.dual``: the CUDA tree kept, a compat header, branches guarded by ``guard``, default USE_ROCM).
    """
    from hipwizard.port.translation.engine import port_tree

    src_p, out_p = _resolve(ws, src), _resolve(ws, out)
    _check_paths(src_p, out_p)
    if accept is not None and not force and is_foreign(out_p):
        raise UserError(f"{out_p} already holds files hipwizard did not write; --accept-* would overwrite them. "
                        "Choose an empty --out, or pass --force to overwrite them")
    existing = state_path_for(out_p)
    previous = None
    if existing.exists() and not replace:
        previous = ReviewState.load(existing, lock="hold")  # another session writing it: refused here
        root = src_p if src_p.is_dir() else src_p.parent
        if previous.src.resolve() != root:
            raise UserError(f"{existing} holds the review of {previous.src}, not {root}; choose another --out "
                            "(or move the review away to start over)")
    # the ROCm the APIs are checked against: given, else the doctor's, else the hipcc on PATH (the one check
    # compiles with), else the newest HIPIFY's tables know; the review keeps the version, the summary its source
    doctor_hip = _facts(ws).hip_version
    target = target_version(hip_version, doctor_hip, explicit_source="given",
                            found=None if hip_version or doctor_hip else hipcc_version(SubprocessRunner()))
    hip = hip_version or doctor_hip or (target.version if target.source.startswith("the hipcc") else None)
    link = read_link(ws) if ws is not None else PortLink()
    options = choose_mode(mode, guard, link.mode if link.src is not None else None, link.guard or None,
                          previous.backend if previous else None)
    limit: dict[str, Any] = {} if max_bytes is None else {"max_bytes": max_bytes}  # else port_tree's default
    report = port_tree(src_p, backend=backend, hip_version=hip, hip_kernel_execution_syntax=hip_kernel_execution_syntax,
                       roc=roc, experimental=experimental, exclude=[out_p], progress=progress,
                       arch=arch or _facts(ws).arch,  # build files compile for the arch the write checks
                       **limit)
    report.target = target
    if not report.files:
        why = "; ".join(f"{u.path}: {u.reason}" for u in [*report.unreadable, *report.skipped][:3])
        raise UserError(f"no CUDA sources could be read in {src_p}" + (f" ({why})" if why else ""))
    apply_budget(report.files)  # what the review shows: the telling kinds first, no file drowning it
    dual = None
    if options is not None:
        from hipwizard.port.dual.service import dualize

        tree = dualize(report.files, options)
        report.files = tree.files
        dual = {"guard": options.guard, "header": options.header, **tree.summary()}
    reconciled = None
    try:
        if previous is not None:
            review = previous
            reconciled = review.reconcile(report.files, hip)  # saves
        else:
            review = ReviewState.create(src_p if src_p.is_dir() else src_p.parent, out_p, report.files,
                                        hip_version=hip)
        review.environment = environment_stamp(ws)
        if options is not None:
            review.backend = options.backend_name(report.backend)
        if accept is not None:
            review.decide([h.hunk_id for h in review.hunks if accept == "all" or not h.flags], "accepted",
                          only_pending=True)
        review.save()
    except OSError as exc:
        raise UserError(f"cannot write the review state {existing}: {exc.strerror or exc}") from None
    if ws is not None:
        try:
            record_link(ws, review.src, review.out, mode="dual" if options else "fork",
                        guard=options.guard if options else None)
        except OSError:
            pass  # a read-only workspace still gets its translation; only the workspace link is missing
    result = Translation(review, report, reconciled=reconciled, dual=dual)
    if accept is not None:
        result.written = write(ws, review, check=check, arch=arch, force=force, copy_untouched=copy_untouched,
                               progress=progress)
    return result


def _check_paths(src_p: Path, out_p: Path) -> None:
    """One ``UserError`` for a source that is not there, or an output folder that cannot be ours: the source
    folder itself or inside it (the next run would read its own output), containing the source, under a
    regular file, or not writable (nor the folder beside it, where the review goes)."""
    if not src_p.exists():
        raise UserError(f"source {src_p} does not exist")
    root = src_p if src_p.is_dir() else src_p.parent
    if out_p == root or (src_p.is_dir() and src_p.is_relative_to(out_p)):
        raise UserError("the output folder must not be the source folder or contain it")
    if src_p.is_dir() and out_p.is_relative_to(src_p):
        raise UserError(f"the output folder {out_p} is inside the source folder {src_p}; choose one outside it "
                        "(the next run would read its own output as sources)")
    if out_p.exists() and not out_p.is_dir():
        raise UserError(f"output {out_p} exists and is not a folder")
    probe = out_p
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise UserError(f"the output folder {out_p} cannot be made: {probe} is a file, not a folder")
    for folder in {probe, out_p.parent} if out_p.parent.exists() else {probe}:
        if not _writable(folder):
            raise UserError(f"the output folder {out_p} cannot be written: {folder} is not writable")


def _writable(folder: Path) -> bool:
    """Whether a file can be made in ``folder`` (tried: permission bits say nothing to root nor of a
    read-only mount). The probe is removed at once."""
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    try:
        fd, name = tempfile.mkstemp(prefix=".hipwizard-probe.", dir=folder)
    except OSError:
        return False
    os.close(fd)
    os.unlink(name)
    return True


def _retranslate(review: ReviewState, hip_version: str | None, progress: ProgressFn | None,
                 arch: str | None = None):
    from hipwizard.port.translation.backends import BACKENDS
    from hipwizard.port.translation.engine import translate_tree

    if parse_backend(review.backend)[0] is not None:  # a dual-target review: its files in that form
        from hipwizard.port.dual.service import retranslate

        return retranslate(review, hip_version=hip_version, progress=progress, arch=arch)
    # The review's own backend, so unchanged files give the same hunks (and ids).
    backend = review.backend if review.backend in BACKENDS else "auto"
    return budgeted(translate_tree(review.src, backend=backend, hip_version=hip_version, progress=progress,
                                   exclude=[review.out], arch=arch))  # the flags translate showed


def refresh(ws: Workspace | None, review: ReviewState, *, hip_version: str | None = None,
            progress: ProgressFn | None = None) -> ReconcileReport | None:
    """Re-read the sources: when they changed since the review started, re-translate and reconcile the
    decisions (saved) and return what was kept; else None.

    The APIs are checked against ``hip_version``, else the doctor's, else the version the review was made
    for; when that differs from the review's (the doctor ran since), or the review predates untouched-line
    risks (state version 1), a fresh translation fills them in without touching any decision.
    """
    hip = hip_version or _facts(ws).hip_version or review.hip_version or None
    if review.changed_sources():
        review.environment = environment_stamp(ws)
        return review.reconcile(_retranslate(review, hip, progress, _facts(ws).arch), hip)
    stale = review.needs_untouched or (hip or "") != review.hip_version
    if stale and review.src.is_dir():
        translations = _retranslate(review, hip, progress, _facts(ws).arch)
        if review.needs_untouched:
            review.set_untouched(translations)
        review.set_diagnostics(translations, hip)
        try:
            review.save()
        except OSError:
            pass  # a read-only review still shows them, from memory
    return None


def open_review(ws: Workspace, path: Path | None = None, *, progress: ProgressFn | None = None) -> Opened:
    """The review at ``path`` (default: the workspace's), held for this session (``review_lock``), refreshed
    (``refresh``) and compacted — or read-only (``review.read_only``) when another session holds it; or, when
    none exists yet, the workspace's recorded source and output. Raises ``UserError`` for a damaged or
    newer review (the file is kept as it is)."""
    path = path or review_path(ws)
    if path is None or not path.exists():
        return Opened(None, link=read_link(ws))
    review = ReviewState.load(path, lock="try")
    if review.read_only is not None:  # another session writes it: shown as it is on disk, changed by none
        return Opened(review, None, read_link(ws))
    try:
        reconciled = refresh(ws, review, progress=progress)
    except OSError as exc:
        raise UserError(f"cannot update the review {review.path}: {exc.strerror or exc}") from None
    close(review)
    return Opened(review, reconciled, read_link(ws))


def close(review: ReviewState) -> None:
    """Fold the decision journal into the state file, ready to commit. Failing is harmless (the journal
    stays and is read with the state), so a read-only review still opens."""
    try:
        review.compact()
    except OSError:
        pass


def write(ws: Workspace | None, review: ReviewState, *, arch: str | None = None, check: bool = True,
          copy_untouched: bool = True, runner=None, jobs: int | None = None, force: bool = False,
          merge_runner=None, progress: ProgressFn | None = None) -> ApplyReport:
    """Write the review's decisions into its output folder and (``check``) compile-check what was written
    with hipcc for ``arch`` (default: the doctor's gfx arch, else gfx942). Files the user edited since the
    last write are merged with ``git merge-file`` (through ``merge_runner``), never overwritten; files
    hipwizard never wrote are kept unless ``force``. Per-file problems (conflicts included) are in the
    report; ``UserError`` when nothing can be written or the write cannot be recorded. ``copy_untouched``
    (default): the project's other files are copied too, under the same rules, so the tree builds on its own."""
    from hipwizard.port.output.apply import apply

    arch = arch or _facts(ws).arch
    dual, _ = parse_backend(review.backend)
    if dual is not None:  # the dual-target mode: the header, the patch, nvcc and hipcc too (port.dual.write)
        from hipwizard.port.dual.service import write_dual

        try:
            return write_dual(review, dual, arch=arch, check=check, runner=runner, jobs=jobs, force=force,
                              merge_runner=merge_runner, environment=environment_stamp(ws), progress=progress)
        except OSError as exc:
            raise UserError(f"cannot write the dual-target tree {review.out}: {exc.strerror or exc}") from None
    try:
        return apply(review, copy_untouched=copy_untouched, check=check, arch=arch, runner=runner, jobs=jobs,
                     progress=progress, force=force, merge_runner=merge_runner,
                     environment=environment_stamp(ws))
    except OSError as exc:
        raise UserError(f"cannot record the write in {review.path}: {exc.strerror or exc}") from None


def resolve(review: ReviewState, rel: str, choice: str) -> None:
    """Settle the conflict of ``rel`` in the review's output folder: keep ``mine``, take ``new`` or write
    ``merged`` (with conflict markers). Raises ``UserError``."""
    from hipwizard.port.output.apply import safe_target

    tree = WorkTree.load(review.out)
    try:
        tree.resolve(rel, choice, safe_target(review.out, rel))
    except OSError as exc:
        raise UserError(f"cannot resolve {rel}: {exc.strerror or exc}") from None


def output_hunks(review: ReviewState, *, edits: bool = True) -> list:
    """The output folder's own hunks (``worktree_hunks.OutputHunk``): each conflict region between the
    user's edits and the new result (to decide: mine or new), then (``edits``) each of the user's edits
    that every write keeps. Raises ``UserError`` when the record is damaged."""

    try:
        return WorkTree.load(review.out).output_hunks(edits=edits)
    except OSError as exc:
        raise UserError(f"cannot read the output folder {review.out}: {exc.strerror or exc}") from None


def choose(review: ReviewState, rel: str, index: int, choice: str) -> bool:
    """Decide conflict ``index`` (1-based) of ``rel``: ``mine`` or ``new``; the file is written once all of its
    conflicts are decided (returns True then). Raises ``UserError``."""
    from hipwizard.port.output.apply import safe_target

    tree = WorkTree.load(review.out)
    try:
        return tree.choose(rel, index, choice, safe_target(review.out, rel))
    except OSError as exc:
        raise UserError(f"cannot write {rel}: {exc.strerror or exc}") from None


def worktree_status(review: ReviewState, *, edited: bool = True) -> WorktreeStatus:
    """The output folder as a working tree: the files in conflict (path -> why) and the paths the user edited
    since hipwizard wrote them (``edited`` False: not looked for, it reads every written file). A damaged
    record reads as its one-line ``error``."""

    try:
        tree = WorkTree.load(review.out)
    except UserError as exc:
        return WorktreeStatus(error=str(exc))
    return WorktreeStatus({rel: c.get("why") or f"{c.get('count', 0)} conflict(s) with your edits"
                           for rel, c in tree.conflicts.items()}, tree.edited() if edited else [])


def check(ws: Workspace | None, folder: str | Path, *, arch: str | None = None, jobs: int | None = None,
          runner=None, build_runner=None, build: bool = False, progress: ProgressFn | None = None) -> TreeCheck:
    """Compile-check every translation unit under ``folder`` with hipcc for ``arch`` (default: the doctor's
    gfx arch, else gfx942), the way the project builds it (``port.build.check``: the build's own compile
    commands or its build file's flags; GPU units only; the review beside the folder, when there is one, names
    the flagged lines a missing library header hides). ``build``: run the folder's own build (make / CMake)
    with hipcc instead and report each unit from it. Raises ``UserError`` when the folder holds no unit."""
    from hipwizard.port.build.check import build_tree, check_tree, review_beside
    from hipwizard.port.output.compile_check import DEFAULT_ARCH, UNITS

    root = Path(folder).expanduser()
    if not root.is_dir():
        raise UserError(f"{folder} is not a folder")
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                   if p.is_file() and p.suffix in UNITS and not (set(p.relative_to(root).parts) & SKIP_DIRS))
    if not files:
        raise UserError(f"no translation units ({' '.join(UNITS)}) under {folder}")
    arch, review = arch or _facts(ws).arch, review_beside(root)
    if build:
        return build_tree(root, files, arch=arch or DEFAULT_ARCH, runner=runner, jobs=jobs, progress=progress,
                          review=review)
    return check_tree(root, files, arch=arch, jobs=jobs, runner=runner, progress=progress, review=review,
                      build_runner=build_runner)
