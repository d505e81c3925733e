"""The port step's domain objects, shared by the engine (translate, hunks, risks, compile check) and
the review (state, screen). Plain dataclasses; JSON-friendly through ``to_dict``/``from_dict``.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import Literal

Severity = Literal["high", "med", "low"]
SEVERITY_ORDER: dict[str, int] = {"high": 0, "med": 1, "low": 2}


@dataclass(frozen=True)
class RiskFlag:
    """Why a hunk needs a human: a rule from PORTING_RISKS (e.g. WARP32_LITERAL)."""

    rule_id: str
    severity: Severity
    reason: str
    hint: str
    source: str = ""
    line: int | None = None  # 1-based line in the translated file the flag points at

    def to_dict(self) -> dict:
        # asdict's answer (the fields are plain values) without its deep copy: a big review has ~10^5 of these
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: dict) -> "RiskFlag":
        return cls(**d)


DiagnosticKind = Literal["unsupported", "deprecated", "removed", "too_new", "opt_in", "warning", "error"]


@dataclass(frozen=True)
class Diagnostic:
    """Something the translator reports about a file: unsupported / deprecated / newer-than-runtime names."""

    kind: DiagnosticKind
    name: str
    line: int | None
    message: str
    # the review shows this line through its kind's diagnostic on that line (the budget folds a file's repeated
    # API diagnostics as it folds a rule kind: ``fold_note``); 0: shown. A folded line still counts everywhere
    # (``hand_edit_lines``, the compile check's predictions, the API counts): it is only not listed on its own.
    folded_into: int = 0

    def to_dict(self) -> dict:
        d = asdict(self)
        if not self.folded_into:
            del d["folded_into"]  # the JSON of a diagnostic shown on its own is as it always was
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Diagnostic":
        return cls(**d)


@dataclass
class Hunk:
    """One contiguous change between the original and the translated file.

    ``old_start``/``new_start`` are 1-based line numbers of the first changed line; the context lines
    are the unchanged lines shown around it. ``hunk_id`` is stable for the same file and text, so a
    decision survives a re-translation when the text did not change.
    """

    file: str
    old_start: int
    old_lines: list[str]
    new_start: int
    new_lines: list[str]
    context_before: list[str] = field(default_factory=list)
    context_after: list[str] = field(default_factory=list)
    flags: list[RiskFlag] = field(default_factory=list)
    hunk_id: str = ""

    def __post_init__(self) -> None:
        if not self.hunk_id:
            self.hunk_id = self.content_key()

    def content_key(self) -> str:
        h = hashlib.sha1()
        h.update(self.file.encode())
        for line in ("\x00".join(self.context_before), "\x01".join(self.old_lines), "\x02".join(self.new_lines)):
            h.update(line.encode("utf-8", "surrogatepass"))
            h.update(b"\x1e")
        return h.hexdigest()[:16]

    @property
    def max_severity(self) -> Severity | None:
        if not self.flags:
            return None
        return min((f.severity for f in self.flags), key=SEVERITY_ORDER.__getitem__)

    def to_dict(self) -> dict:
        # asdict's fields and order, lists of lines copied one level (strings are immutable): asdict's deep
        # copy of every line was most of a big review's save
        d = {}
        for f in fields(self):
            value = getattr(self, f.name)
            is_record = is_dataclass(value) and not isinstance(value, type)
            d[f.name] = list(value) if isinstance(value, list) else asdict(value) if is_record else value
        d["flags"] = [f.to_dict() for f in self.flags]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Hunk":
        """A hunk from its ``to_dict`` form. Raises ``TypeError`` naming the first field of a wrong type."""
        if not isinstance(d, dict):
            raise TypeError(f"a hunk is {type(d).__name__}, not an object")
        for name, kind in _HUNK_FIELDS.items():
            value = d.get(name)
            if name not in d and name in ("context_before", "context_after", "flags", "hunk_id"):
                continue
            ok = (isinstance(value, int) and not isinstance(value, bool)) if kind is int else (
                isinstance(value, str) if kind is str else
                isinstance(value, list) and all(isinstance(x, dict if name == "flags" else str) for x in value))
            if not ok:
                raise TypeError(f"hunk field {name!r} is {type(value).__name__}, expected "
                                f"{'a list' if kind is list else kind.__name__}")
        d = dict(d)
        d["flags"] = [RiskFlag.from_dict(f) for f in d.get("flags", [])]
        return cls(**d)


_HUNK_FIELDS = {"file": str, "old_start": int, "old_lines": list, "new_start": int, "new_lines": list,
                "context_before": list, "context_after": list, "flags": list, "hunk_id": str}


@dataclass
class FileTranslation:
    """A source file, what the backend made of it, and the hunks between the two."""

    path: str  # relative to the source root
    original: str
    translated: str
    backend: str
    hunks: list[Hunk] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)
    # Risks on lines the translation left unchanged (no hunk to hang them on), e.g. `#define WARP_SIZE 32`.
    untouched_flags: list[RiskFlag] = field(default_factory=list)
    # "utf-8", or "utf-8+surrogateescape" when the source was not UTF-8: write with
    # hipwizard.port.translation.scan.encode_source so its bytes come back unchanged.
    encoding: str = "utf-8"


@dataclass(frozen=True)
class UntouchedRisk:
    """A risk on a line the translation left unchanged (no hunk to decide, a manual edit to make).

    ``flag.line`` is the line in the translated file; ``old_line`` the same line in the original (they
    differ when hunks above it added or removed lines); ``code`` is the line's text, without its ending.
    """

    flag: RiskFlag
    code: str
    old_line: int | None = None

    def to_dict(self) -> dict:
        return {**self.flag.to_dict(), "code": self.code, "old_line": self.old_line}

    @classmethod
    def from_dict(cls, d: dict) -> "UntouchedRisk":
        d = dict(d)
        code, old_line = str(d.pop("code", "")), d.pop("old_line", None)
        return cls(RiskFlag.from_dict(d), code, old_line)

    @classmethod
    def of(cls, ft: FileTranslation) -> tuple["UntouchedRisk", ...]:
        """The untouched-line flags of a translation, with their code lines and original line numbers."""
        if not ft.untouched_flags:
            return ()
        lines = ft.translated.split("\n")
        # the shift at line n: lines removed minus lines added by the hunks that end at or above it (prefix
        # sums over the hunks by their end, and a bisection per flag: linear in hunks + flags, not their product)
        ends, shifts, total = [], [0], 0
        for h in sorted(ft.hunks, key=lambda h: h.new_start + len(h.new_lines)):
            ends.append(h.new_start + len(h.new_lines))
            total += len(h.old_lines) - len(h.new_lines)
            shifts.append(total)
        out = []
        for f in ft.untouched_flags:
            n = f.line or 0
            shift = shifts[bisect.bisect_right(ends, n)]
            code = lines[n - 1].rstrip("\r") if 0 < n <= len(lines) else ""
            out.append(cls(f, code, n + shift if n else None))
        return tuple(out)


HAND_EDIT_KINDS = ("unsupported", "too_new", "removed")  # API diagnostics whose line does not build as it is


def hand_edit_lines(untouched: Mapping[str, tuple[UntouchedRisk, ...]],
                    diagnostics: Mapping[str, Sequence[Diagnostic]]) -> dict[str, int]:
    """Lines that need a hand edit, each counted once in the original's numbering: those with risks on unchanged
    lines (``risks``), those with an unsupported / too new / removed API (``api``), and the union (``total``)."""
    risk = {(p, r.old_line) for p, risks in untouched.items() for r in risks if r.old_line}
    api = {(p, d.line) for p, diags in diagnostics.items() for d in diags if d.kind in HAND_EDIT_KINDS and d.line}
    return {"total": len(risk | api), "risks": len(risk), "api": len(api)}


def fold_note(head: Diagnostic, diags: Sequence[Diagnostic]) -> str:
    """What a shown API diagnostic says of the lines folded into it (``Diagnostic.folded_into``), for the file's
    ``diags``: " (also lines 78 cudnnX, 79 cudnnY + cudnnZ in this file: each needs a hand edit)"; "" when it stands
    for none, or when another diagnostic of its kind on its line already says it."""
    if head.folded_into or not head.line:
        return ""
    same = [d for d in diags if d.kind == head.kind and d.line == head.line and not d.folded_into]
    if not same or same[0] is not head:
        return ""
    names: dict[int, list[str]] = {}
    for d in diags:
        if d.kind == head.kind and d.folded_into == head.line and d.line:
            names.setdefault(d.line, []).append(d.name)
    if not names:
        return ""
    items = [f"{n} {' + '.join(dict.fromkeys(ns))}" for n, ns in sorted(names.items())]
    more = f" and {len(items) - 12} more" if len(items) > 12 else ""
    why = ": each needs a hand edit" if head.kind in HAND_EDIT_KINDS else ""
    return f" (also {'line' if len(items) == 1 else 'lines'} {', '.join(items[:12])}{more} in this file{why})"
