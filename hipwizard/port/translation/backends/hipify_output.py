"""Parsers for what AMD's hipify tools print: per-file statistics and warnings.

Both tools print statistics as ``[HIPIFY] info: file 'PATH' statistics:`` followed by ``  NAME: VALUE``
lines (``CONVERTED refs count``, ``TOTAL lines of code``, ``WARNINGS`` ...). hipify-perl warnings look like
``  PATH:LINE: warning: unsupported device function "__shfl_xor_sync": <code>``; hipify-clang's are clang
diagnostics ``PATH:LINE:COL: warning: 'cudaFoo' is unsupported in 'HIP'.``
"""

from __future__ import annotations

import re

from hipwizard.port.model import Diagnostic, DiagnosticKind

_FILE_HEADER = re.compile(r"^\[HIPIFY\] info: file '(?P<path>.+)' statistics:\s*$")
_STAT = re.compile(r"^  (?P<name>[A-Za-z][A-Za-z ()%]+?): (?P<value>-?[\d.]+)\s*$")
_PERL_WARN = re.compile(r"^\s*(?P<path>.+?):(?P<line>\d+): warning: (?P<msg>.+?)(?:: (?P<code>.*))?$")
_PERL_NAME = re.compile(r'"(?P<q>[^"]+)"|identifier: (?P<i>\w+)')
_CLANG_WARN = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): warning: '(?P<name>[^']+)' is (?P<what>unsupported|deprecated|experimental)\b(?P<rest>.*)$")

_STAT_KEYS = {"CONVERTED refs count": "converted", "UNCONVERTED refs count": "unsupported",
              "TOTAL lines of code": "lines", "WARNINGS": "warnings", "CHANGED lines of code": "changed_lines"}


def parse_stats(text: str) -> dict[str, dict[str, int]]:
    """{path: {"converted": n, "lines": n, "warnings": n, ...}} from ``-print-stats`` / ``--print-stats`` output."""
    out: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in text.splitlines():
        m = _FILE_HEADER.match(line)
        if m:
            current = out.setdefault(m.group("path"), {})
            continue
        if line.startswith("[HIPIFY]"):
            current = None  # "CONVERTED refs by names:" and other sections follow
            continue
        s = _STAT.match(line)
        if s and current is not None and s.group("name") in _STAT_KEYS:
            current[_STAT_KEYS[s.group("name")]] = int(float(s.group("value")))
    return out


def parse_perl_warnings(text: str) -> dict[str, list[Diagnostic]]:
    """hipify-perl's warning lines -> {path: [Diagnostic]}."""
    out: dict[str, list[Diagnostic]] = {}
    for line in text.splitlines():
        m = _PERL_WARN.match(line)
        if not m or m.group("path").startswith("warning"):
            continue
        msg = m.group("msg")
        names = _PERL_NAME.search(msg) or _PERL_NAME.search(line)
        name = (names.group("q") or names.group("i")) if names else msg.rsplit(" ", 1)[-1]
        kind: DiagnosticKind = "unsupported" if "unsupported" in msg else "deprecated" if "deprecated" in msg else \
            "removed" if "removed" in msg else "warning"
        out.setdefault(m.group("path"), []).append(Diagnostic(kind, name, int(m.group("line")), msg))
    return out


def parse_clang_warnings(text: str) -> dict[str, list[Diagnostic]]:
    """hipify-clang's clang-style warnings -> {path: [Diagnostic]}."""
    out: dict[str, list[Diagnostic]] = {}
    for line in text.splitlines():
        m = _CLANG_WARN.match(line)
        if not m:
            continue
        kinds: dict[str, DiagnosticKind] = {"unsupported": "unsupported", "deprecated": "deprecated",
                                            "experimental": "warning"}  # every word _CLANG_WARN matches
        kind = kinds[m.group("what")]
        msg = f"'{m.group('name')}' is {m.group('what')}{m.group('rest')}".strip()
        out.setdefault(m.group("path"), []).append(Diagnostic(kind, m.group("name"), int(m.group("line")), msg))
    return out
