"""The port engine: scan a tree, translate it with a backend, split hunks, flag risks.

``port_tree(src, ...) -> PortReport`` is the full result (translations, skipped and unreadable files);
``translate_tree(src, ...) -> list[FileTranslation]`` is the short form. Nothing here writes files: the
review state and ``apply`` (writing accepted hunks into the output folder) build on these results.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from hipwizard.errors import UserError
from hipwizard.port.backends import choose_backend
from hipwizard.port.builtin import TranslateOptions
from hipwizard.port.hunks import split_hunks
from hipwizard.port.model import SEVERITY_ORDER, FileTranslation
from hipwizard.port.risks import flag_translation, summarize_flags
from hipwizard.port.scan import ScanResult, SkippedFile, scan_tree
from hipwizard.progress import ProgressFn
from hipwizard.runner import Runner


@dataclass
class PortReport:
    """Everything one translation run found."""

    src: str
    backend: str
    files: list[FileTranslation] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    unreadable: list[SkippedFile] = field(default_factory=list)
    failed: list[SkippedFile] = field(default_factory=list)  # the backend could not translate these

    def summary(self) -> dict:
        """Counts for the CLI and the screen: files, hunks, flags by severity, unsupported APIs."""
        flags = summarize_flags(self.files)
        unsupported: dict[str, int] = {}
        too_new: dict[str, int] = {}
        for ft in self.files:
            for d in ft.diagnostics:
                if d.kind == "unsupported":
                    unsupported[d.name] = unsupported.get(d.name, 0) + 1
                elif d.kind == "too_new":
                    too_new[d.name] = too_new.get(d.name, 0) + 1
        return {
            "src": self.src,
            "backend": self.backend,
            "files": len(self.files),
            "files_changed": sum(1 for f in self.files if f.hunks),
            "hunks": sum(len(f.hunks) for f in self.files),
            "flagged_hunks": sum(1 for f in self.files for h in f.hunks if h.flags),
            "flags_by_severity": {s: flags["hunks"].get(s, 0) for s in SEVERITY_ORDER},
            "untouched_flags_by_severity": {s: flags["untouched"].get(s, 0) for s in SEVERITY_ORDER},
            "flags_by_rule": dict(sorted(flags["rules"].items())),
            "unsupported": dict(sorted(unsupported.items())),
            "too_new": dict(sorted(too_new.items())),
            "skipped": len(self.skipped),
            "unreadable": [{"path": s.path, "reason": s.reason} for s in self.unreadable],
            "failed": [{"path": s.path, "reason": s.reason} for s in self.failed],
        }


def port_tree(src: str | os.PathLike[str], *, backend: str = "auto", hip_version: str | None = None,
              hip_kernel_execution_syntax: bool = False, roc: bool = False, experimental: bool = False,
              runner: Runner | None = None, progress: ProgressFn | None = None,
              exclude: list[Path] | None = None, context: int = 3) -> PortReport:
    """Translate every CUDA source under ``src``. Raises ``UserError`` only when ``src`` does not exist."""
    root = Path(src).expanduser()
    if not root.exists():
        raise UserError(f"{root} does not exist")
    options = TranslateOptions(hip_kernel_execution_syntax, roc, experimental, hip_version)
    chosen = choose_backend(backend, options, runner)
    scanned: ScanResult = scan_tree(root, exclude=exclude)
    report = PortReport(str(root), chosen.name, skipped=scanned.skipped, unreadable=scanned.unreadable)
    for result in chosen.translate(scanned.files, progress):
        sf = result.source
        if result.error:
            report.failed.append(SkippedFile(sf.path, result.error))
        ft = FileTranslation(
            path=sf.path, original=sf.text, translated=result.text, backend=chosen.name,
            hunks=split_hunks(sf.path, sf.text, result.text, context=context),
            diagnostics=result.diagnostics, stats=result.stats, encoding=sf.encoding,
        )
        flag_translation(ft)
        report.files.append(ft)
    return report


def translate_tree(src: str | os.PathLike[str], *, backend: str = "auto", hip_version: str | None = None,
                   **options) -> list[FileTranslation]:
    """Short form of ``port_tree``: just the translations (hunks and flags filled)."""
    return port_tree(src, backend=backend, hip_version=hip_version, **options).files
