"""A ``.py`` file as the port's review sees it: a ``FileTranslation`` whose hunks are the mechanical fixes and
whose flags are every finding (on the fix's hunk, else on the untouched line), so Python files are reviewed,
accepted and written like translated CUDA sources."""

from __future__ import annotations

from hipwizard.port.model import FileTranslation
from hipwizard.port.pyscan.fallback import scan_lines
from hipwizard.port.pyscan.model import PyFinding, Replacement
from hipwizard.port.pyscan.source import PySource
from hipwizard.port.pyscan.visitor import scan_source
from hipwizard.port.risk.flags import attach_findings
from hipwizard.port.translation.hunks import split_hunks

BACKEND = "pyscan"


def scan_python(text: str, path: str = "<file>") -> list[PyFinding]:
    """The Python rules' findings in ``text`` (never imported or run): from its AST, or by line pattern when
    it does not parse."""
    try:
        src = PySource(text, path)
    except (SyntaxError, ValueError, RecursionError):
        return scan_lines(text)
    return scan_source(src)


def apply_fixes(text: str, findings: list[PyFinding]) -> str:
    """``text`` with every finding's replacements made (an overlapping later one is left out)."""
    edits = sorted({r for f in findings for r in f.fix}, key=lambda r: (r.start, r.end))
    out, at = [], 0
    for r in edits:
        if r.start < at:
            continue
        out.append(text[at:r.start])
        out.append(r.text)
        at = r.end
    out.append(text[at:])
    return "".join(out)


def python_translation(path: str, text: str, encoding: str = "utf-8", context: int = 3) -> FileTranslation | None:
    """The review's view of one Python file; None when no rule fires (nothing to review)."""
    findings = scan_python(text, path)
    if not findings:
        return None
    translated = apply_fixes(text, findings)
    ft = FileTranslation(path=path, original=text, translated=translated, backend=BACKEND,
                         hunks=split_hunks(path, text, translated, context=context), encoding=encoding)
    if translated.count("\n") == text.count("\n"):  # fixes stay on their lines: original line = translated line
        attach_findings(ft, findings)  # type: ignore[arg-type]  # PyFinding has Finding's shape
    else:
        ft.untouched_flags = [f.flag() for f in findings]
    return ft


__all__ = ["BACKEND", "Replacement", "apply_fixes", "python_translation", "scan_python"]
