"""The port engine: scan a tree, translate it with a backend, split hunks, flag risks.

``port_tree(src, ...) -> PortReport`` is the full result (translations, skipped and unreadable files);
``translate_tree(src, ...) -> list[FileTranslation]`` is the short form. Nothing here writes files: the
review state and ``apply`` (writing accepted hunks into the output folder) build on these results.

Files over ``max_bytes`` (default ``scan.MAX_BYTES``, 8 MiB) are skipped and named with the reason. Progress
goes through ``progress`` in two stages, each counting files with the bytes done in ``item``: the backend's
"translating", then "checking" (hunks and risk rules; a file of 1 MiB or more also reports when it starts).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from hipwizard.errors import UserError
from hipwizard.port.buildfiles.model import DEFAULT_ARCH, BuildTarget
from hipwizard.port.buildfiles.review import BACKEND as BUILD_BACKEND
from hipwizard.port.buildfiles.review import merge_build_files
from hipwizard.port.buildfiles.walk import build_review_files
from hipwizard.port.model import SEVERITY_ORDER, FileTranslation, UntouchedRisk, hand_edit_lines
from hipwizard.port.pyscan import find_native, python_review_files
from hipwizard.port.risk.budget import precision
from hipwizard.port.risk.flags import attach_findings, flag_translation, summarize_flags
from hipwizard.port.risk.tree import flag_tree
from hipwizard.port.translation.backends import choose_backend
from hipwizard.port.translation.backends.base import BIG_FILE
from hipwizard.port.translation.builtin import TranslateOptions
from hipwizard.port.translation.compat import Target, target_version
from hipwizard.port.translation.edits import carry_mask
from hipwizard.port.translation.hunks import flagged_counts, hunks_from_edits, split_hunks
from hipwizard.port.translation.own_names import drop_own_unsupported, project_names
from hipwizard.port.translation.scan import MAX_BYTES, ScanResult, SkippedFile, SourceFile, scan_tree
from hipwizard.progress import Progress, ProgressFn
from hipwizard.runner import Runner
from hipwizard.units import MIB

CHECKING = "checking"  # the progress stage after translation: hunks and risk rules


@dataclass
class PortReport:
    """Everything one translation run found."""

    src: str
    backend: str
    files: list[FileTranslation] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    unreadable: list[SkippedFile] = field(default_factory=list)
    failed: list[SkippedFile] = field(default_factory=list)  # the backend could not translate these
    max_bytes: int = MAX_BYTES  # the size cap the scan applied
    target: Target | None = None  # the ROCm/HIP version the APIs were checked against, and why that one

    def summary(self) -> dict:
        """Counts for the CLI and the screen: files, hunks, flags by severity, unsupported APIs."""
        flags = summarize_flags(self.files)
        unsupported: dict[str, int] = {}
        too_new: dict[str, int] = {}
        opt_in: dict[str, int] = {}
        for ft in self.files:
            for d in ft.diagnostics:
                seen = {"unsupported": unsupported, "too_new": too_new, "opt_in": opt_in}.get(d.kind)
                if seen is not None:
                    seen[d.name] = seen.get(d.name, 0) + 1
        target = self.target or target_version()
        return {
            "src": self.src,
            "backend": self.backend,
            "files": len(self.files),
            "files_changed": sum(1 for f in self.files if f.hunks),
            "build_files": sum(1 for f in self.files if f.backend == BUILD_BACKEND),
            "hunks": sum(len(f.hunks) for f in self.files),
            # Flagged hunks by their highest flag (``hunks.flagged_counts``: the count every face shows).
            "flagged_hunks": flagged_counts(h for f in self.files for h in f.hunks)["total"],
            "flagged_hunks_by_severity": {s: n for s, n in flagged_counts(
                h for f in self.files for h in f.hunks).items() if s != "total"},
            "flags_by_severity": {s: flags["hunks"].get(s, 0) for s in SEVERITY_ORDER},
            "untouched_flags_by_severity": {s: flags["untouched"].get(s, 0) for s in SEVERITY_ORDER},
            # the kinds that most often mark real AMD divergence first (measured: risk/budget.py's asset)
            "flags_by_rule": dict(sorted(flags["rules"].items(), key=lambda kv: (-precision(kv[0]), kv[0]))),
            "unsupported": dict(sorted(unsupported.items())),
            # every line a person must edit: risks on unchanged lines and API lines that do not build as they are
            "hand_edit_lines": hand_edit_lines({f.path: UntouchedRisk.of(f) for f in self.files},
                                               {f.path: f.diagnostics for f in self.files}),
            "too_new": dict(sorted(too_new.items())),
            "opt_in": dict(sorted(opt_in.items())),
            "target": target.to_dict(),
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "skipped_count": len(self.skipped),
            "skipped_by_kind": skipped_by_kind(self.skipped),
            "max_file_bytes": self.max_bytes,
            "unreadable": [{"path": s.path, "reason": s.reason} for s in self.unreadable],
            "failed": [{"path": s.path, "reason": s.reason} for s in self.failed],
        }


def skip_kind(reason: str) -> str:
    """What kind of skip a reason is, for a header that says them apart: "no CUDA content" (most of a tree),
    "too large" (over the size cap), "binary", "generated", else "other"."""
    for prefix, kind in (("no CUDA content", "no CUDA content"), ("too large", "too large"), ("binary", "binary"),
                         ("generated", "generated")):
        if reason.startswith(prefix):
            return kind
    return "other"


def skipped_by_kind(skipped: list[SkippedFile]) -> dict[str, int]:
    """{kind: files}, the most frequent first."""
    counts: dict[str, int] = {}
    for s in skipped:
        kind = skip_kind(s.reason)
        counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def port_tree(src: str | os.PathLike[str], *, backend: str = "auto", hip_version: str | None = None,
              hip_kernel_execution_syntax: bool = False, roc: bool = False, experimental: bool = False,
              runner: Runner | None = None, progress: ProgressFn | None = None,
              exclude: list[Path] | None = None, context: int = 3, max_bytes: int = MAX_BYTES,
              arch: str | None = None) -> PortReport:
    """Translate every CUDA source under ``src`` of at most ``max_bytes`` bytes (larger ones are skipped,
    named with the reason), and its CUDA build files (``buildfiles``: Makefiles, CMake, setup.py, pyproject,
    nvcc scripts) for the gfx ``arch`` (default gfx942). Raises ``UserError`` when ``src`` does not exist or ``max_bytes`` < 1."""
    root = Path(src).expanduser()
    if not root.exists():
        raise UserError(f"{root} does not exist")
    if max_bytes < 1:
        raise UserError(f"the file size cap must be at least 1 byte (got {max_bytes})")
    options = TranslateOptions(hip_kernel_execution_syntax, roc, experimental, hip_version)
    chosen = choose_backend(backend, options, runner)
    scanned: ScanResult = scan_tree(root, exclude=exclude, max_bytes=max_bytes)
    report = PortReport(str(root), chosen.name, skipped=scanned.skipped, unreadable=scanned.unreadable,
                        max_bytes=max_bytes, target=target_version(hip_version, explicit_source="given"))
    sizes = _ByteCount(scanned.files)
    results = chosen.translate(scanned.files, sizes.wrap(progress))
    for n, result in enumerate(results):
        sf = result.source
        big = len(sf.text) >= BIG_FILE
        if progress is not None and big:
            progress(Progress(CHECKING, n, len(results), sizes.item(n, sf.path)))
        if result.error:
            report.failed.append(SkippedFile(sf.path, result.error))
        hunks = (hunks_from_edits(sf.path, sf.text, result.text, result.spans, context=context)
                 if result.spans is not None else split_hunks(sf.path, sf.text, result.text, context=context))
        ft = FileTranslation(
            path=sf.path, original=sf.text, translated=result.text, backend=chosen.name, hunks=hunks,
            diagnostics=result.diagnostics, stats=result.stats, encoding=sf.encoding,
        )
        masks = None
        if result.spans is not None and result.masked_original is not None:
            masks = (result.masked_original, carry_mask(result.masked_original, result.text, result.spans))
        flag_translation(ft, masks=masks)
        attach_findings(ft, find_native(ft.translated))  # NVML / nvidia-smi in host code (strings included)
        report.files.append(ft)
        if progress is not None and (big or sizes.due(n)):
            progress(Progress(CHECKING, n + 1, len(results), sizes.item(n + 1, sf.path)))
    # names the project defines itself (llm.c's cudaCheck in llmc/cuda_common.h) are not unsupported CUDA APIs
    drop_own_unsupported(report.files, project_names(f.original for f in report.files))
    flag_tree(report.files)  # warp-size facts of one file flagged where the folder's other files use them
    builds, unread = build_review_files(root, BuildTarget(arch or DEFAULT_ARCH), exclude=exclude,
                                        max_bytes=max_bytes, context=context)
    merge_build_files(report.files, builds)
    report.skipped.extend(unread)
    # Python files with findings (a setup.py the build files claimed gets the Python flags on its translation)
    python, unread = python_review_files(root, exclude=exclude, max_bytes=max_bytes, context=context,
                                         claimed={f.path: f for f in report.files})
    report.files.extend(python)
    report.skipped.extend(unread)
    return report


class _ByteCount:
    """Bytes done after each file, to show beside the file count ("3.1/7.6 MiB")."""

    def __init__(self, files: list[SourceFile]):
        self.done = [0]
        for f in files:
            self.done.append(self.done[-1] + len(f.text))
        self._last = -1.0

    def item(self, n: int, path: str) -> str:
        return f"{path} ({self.done[n] / MIB:.1f}/{self.done[-1] / MIB:.1f} MiB)"

    def due(self, n: int) -> bool:
        """Report after file ``n``? At most ~100 reports a stage, and always the last."""
        step = max(1, (len(self.done) - 1) // 100)
        return (n + 1) % step == 0 or n + 2 == len(self.done)

    def wrap(self, progress: ProgressFn | None) -> ProgressFn | None:
        """The backend's file counts, with the bytes they stand for."""
        if progress is None:
            return None

        def report(p: Progress) -> None:
            n = p.done if p.done is not None and 0 <= p.done < len(self.done) else None
            path = p.item.rsplit(" (", 1)[0]
            progress(Progress(p.stage, p.done, p.total, self.item(n, path) if n is not None else p.item))

        return report


def translate_tree(src: str | os.PathLike[str], *, backend: str = "auto", hip_version: str | None = None,
                   **options) -> list[FileTranslation]:
    """Short form of ``port_tree``: just the translations (hunks and flags filled)."""
    return port_tree(src, backend=backend, hip_version=hip_version, **options).files
