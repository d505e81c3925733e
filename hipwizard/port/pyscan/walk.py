"""Find a tree's Python files and turn those the rules have something to say about into review files, with
the scan's own rules for what is read: the same skipped folders, regular files only, the same size cap, and a
name that is not UTF-8 named rather than read."""

from __future__ import annotations

import os
from pathlib import Path

from hipwizard.port.model import FileTranslation
from hipwizard.port.pyscan.translation import python_translation, scan_python
from hipwizard.port.risk.flags import attach_findings
from hipwizard.port.translation.scan import (
    MAX_BYTES,
    SKIP_DIR_PREFIXES,
    SKIP_DIRS,
    Skip,
    SkippedFile,
    decode_source,
    read_bounded,
    shown_path,
)

SUFFIXES = (".py", ".pyw")


def python_files(root: Path, exclude: list[Path] | None = None) -> list[Path]:
    """Python files under ``root`` (or ``root`` itself), sorted; symlinked folders are not followed."""
    if not root.is_dir():
        return [root] if root.name.endswith(SUFFIXES) else []
    excluded = {p.resolve() for p in exclude or []}
    out: list[Path] = []
    for folder, dirs, names in os.walk(root, followlinks=False):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(SKIP_DIR_PREFIXES)
                         and not (here / d).is_symlink() and (here / d).resolve() not in excluded)
        out.extend(here / n for n in sorted(names) if n.endswith(SUFFIXES) and not (here / n).is_symlink())
    return sorted(out)


def python_review_files(root: str | os.PathLike[str], *, exclude: list[Path] | None = None,
                        max_bytes: int = MAX_BYTES, context: int = 3,
                        claimed: dict[str, FileTranslation] | None = None) -> tuple[list[FileTranslation], list[SkippedFile]]:
    """(review files of the Python files with findings, Python files not read and why). A file another room
    already made a review file of (``claimed``: a setup.py the build-file translation rewrote) gets the Python
    rules' flags on its translated text instead (no second review file, no second set of fixes)."""
    root = Path(root)
    base = root if root.is_dir() else root.parent
    files: list[FileTranslation] = []
    skipped: list[SkippedFile] = []
    for path in python_files(root, exclude):
        rel = path.relative_to(base).as_posix()
        if claimed and rel in claimed:
            attach_findings(claimed[rel], scan_python(claimed[rel].translated, rel))  # type: ignore[arg-type]
            continue
        if shown_path(rel) != rel:
            skipped.append(SkippedFile(shown_path(rel), "the file name is not valid UTF-8 (rename it to port it)"))
            continue
        try:
            data = read_bounded(path, max_bytes)
        except (Skip, OSError) as why:
            skipped.append(SkippedFile(rel, str(why) if isinstance(why, Skip) else (why.strerror or str(why))))
            continue
        if b"\x00" in data[:8192]:
            continue
        text, encoding = decode_source(data)
        ft = python_translation(rel, text, encoding, context)
        if ft is not None:
            files.append(ft)
    return files, skipped
