"""Find a tree's build files and turn them into review files, with the scan's own rules for what is read: the
same skipped folders, regular files only, the same size cap, and a name that is not UTF-8 named rather than
read. Which files are build files: ``dispatch.build_kind``."""

from __future__ import annotations

import os
from pathlib import Path

from hipwizard.port.buildfiles.dispatch import build_kind
from hipwizard.port.buildfiles.model import BuildTarget
from hipwizard.port.buildfiles.review import build_file_translation
from hipwizard.port.model import FileTranslation
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


def build_files(root: Path, exclude: list[Path] | None = None) -> list[Path]:
    """Files under ``root`` (or ``root`` itself) named like build files, sorted; symlinks are not followed."""
    if not root.is_dir():
        return [root] if build_kind(root.name) else []
    excluded = {p.resolve() for p in exclude or []}
    out: list[Path] = []
    for folder, dirs, names in os.walk(root, followlinks=False):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(SKIP_DIR_PREFIXES)
                         and not (here / d).is_symlink() and (here / d).resolve() not in excluded)
        out.extend(here / n for n in sorted(names) if build_kind(n) and not (here / n).is_symlink())
    return sorted(out)


def build_review_files(root: str | os.PathLike[str], target: BuildTarget = BuildTarget(), *,
                       exclude: list[Path] | None = None, max_bytes: int = MAX_BYTES,
                       context: int = 3) -> tuple[list[FileTranslation], list[SkippedFile]]:
    """(review files of the tree's CUDA build files, build files not read and why)."""
    root = Path(root)
    base = root if root.is_dir() else root.parent
    files: list[FileTranslation] = []
    skipped: list[SkippedFile] = []
    for path in build_files(root, exclude):
        rel = path.relative_to(base).as_posix()
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
        ft = build_file_translation(rel, text, target, encoding=encoding, context=context)
        if ft is not None:
            files.append(ft)
    return files, skipped
