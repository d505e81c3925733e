"""A translated build file as the port's review sees it: a ``FileTranslation`` whose hunks are the changed
lines and whose flags are the translator's (each on the hunk that produced its line, else on the untouched
line), so build files are reviewed, accepted and written like translated CUDA sources."""

from __future__ import annotations

from hipwizard.port.buildfiles.dispatch import build_kind, translate_build_file
from hipwizard.port.buildfiles.libraries import LibraryTable
from hipwizard.port.buildfiles.model import BuildTarget, BuildTranslation
from hipwizard.port.model import FileTranslation, RiskFlag
from hipwizard.port.translation.hunks import split_hunks

BACKEND = "buildfiles"


def attach_flags(ft: FileTranslation, flags: list[RiskFlag]) -> None:
    """Each flag (a line of ``ft.translated``) onto the hunk whose new lines hold it, else among the untouched
    flags; a rule already on that hunk or line is not added twice."""
    owner = {h.new_start + k: h for h in ft.hunks for k in range(len(h.new_lines))}
    untouched = {(f.rule_id, f.line) for f in ft.untouched_flags}
    for flag in flags:
        hunk = owner.get(flag.line or 0)
        if hunk is None:
            if (flag.rule_id, flag.line) not in untouched:
                untouched.add((flag.rule_id, flag.line))
                ft.untouched_flags.append(flag)
        elif all(x.rule_id != flag.rule_id for x in hunk.flags):
            hunk.flags.append(flag)
    ft.untouched_flags.sort(key=lambda f: (f.line or 0, f.rule_id))


def file_translation(path: str, original: str, result: BuildTranslation, encoding: str = "utf-8",
                     context: int = 3) -> FileTranslation:
    """The review file of ``result`` (the translation of ``original``, the file at ``path``)."""
    ft = FileTranslation(path=path, original=original, translated=result.text, backend=BACKEND,
                         hunks=split_hunks(path, original, result.text, context=context), encoding=encoding,
                         stats={"build_flags": len(result.flags)})
    attach_flags(ft, [f.to_risk() for f in result.flags])
    return ft


def build_file_translation(path: str, text: str, target: BuildTarget = BuildTarget(), *, encoding: str = "utf-8",
                           table: LibraryTable | None = None, context: int = 3) -> FileTranslation | None:
    """The review file of the build file ``text`` at ``path``, or None when it is no CUDA build file or
    nothing in it changes or needs a flag."""
    result = translate_build_file(path, text, target, table)
    if result is None or (result.text == text and not result.flags):
        return None
    return file_translation(path, text, result, encoding, context)


def merge_build_files(files: list[FileTranslation], builds: list[FileTranslation]) -> None:
    """Add ``builds`` to ``files``; a build file already there (``setup.py``, made a review file by the Python
    scan) is not listed twice: its build flags join that file's (both translations keep every line where it
    was, so a line number means the same line in either; CUDA_HOME as a path is the scan's flag already)."""
    present = {f.path: f for f in files}
    for b in builds:
        other = present.get(b.path)
        if other is None:
            files.append(b)
            continue
        flags = [f for h in b.hunks for f in h.flags] + b.untouched_flags
        attach_flags(other, [f for f in flags if f.rule_id != "BUILD_CUDA_HOME_PATH"])


__all__ = ["BACKEND", "attach_flags", "build_file_translation", "build_kind", "file_translation", "merge_build_files"]
