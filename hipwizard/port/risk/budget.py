"""What the review shows of a file's flags: the kinds that mark real porting work first, and a budget so one file
cannot drown the review.

How often a kind marks a real divergence is measured, not guessed (``assets/risk_precision.yaml``, written by
``benchmarks/amd_divergence.py --write-precision``, read by ``port.measured``): in projects that build for both vendors, the share of a kind's
flagged lines that lie within 3 lines of code the humans guarded for AMD (``#ifdef USE_ROCM`` and friends).

Per file:
- a kind measured at least ``PRECISE_AT`` precise shows up to ``PRECISE_PER_KIND`` places, outside the file's budget;
- a kind measured *quiet* (under ``QUIET_BELOW`` over at least ``QUIET_MIN_PLACES`` lines) is demoted: its findings
  become notes (``Diagnostic("warning", rule_id, original line, ...)``, counted in ``stats["flags_demoted"]``), not
  flags (with ``DEMOTE_QUIET`` off it shows ``QUIET_PER_KIND`` places instead) - except its first finding on an
  ``#include`` line (a header HIP lacks stops the build: llm.c's ``cooperative_groups/reduce.h``) or on a hunk (a
  hunk's flags decide whether "accept unflagged" takes it), which stays a flag standing for the kind's other lines;
- every other kind shows up to ``PER_KIND`` places, and those kinds together up to ``PER_FILE``, the more precise
  kinds first (every kind still shows its first place);
- a long file gets room in proportion: at least ``*_PER_KLINE`` places per thousand of its lines.
A place is a run of one kind's lines at most ``CLUSTER_GAP`` apart (four CUB includes in a row): its first line
stands for the others. A folded flag is not lost: the kind's first shown flag names the lines it stands for
(``... also lines 120, 340``) and ``stats["flags_folded"]`` counts them. Within a hunk the flags are ordered most
precise kind first. A kind the corpus never showed ranks as ``UNMEASURED``.

The translator's API diagnostics (an unsupported / too new / removed / opt-in / deprecated name: ``DIAG_FOLD``) are
folded per file and kind the same way (``diag:<kind>`` in the asset: its places in runs, its room by its precision,
outside the flags' file budget; never demoted; a kind on at most ``DIAG_LIST_UPTO`` lines of a file is listed
whole): a folded diagnostic stays in the file's list with ``folded_into``
naming the shown line that stands for it (the nearest shown place above it, else the first), so every count of
lines that need a hand edit and the compile check's predictions still see it; the review lists the shown ones, each
naming the lines folded into it (``model.fold_note``), and ``stats["api_lines_folded"]`` counts them. jaxlib's
``vendor.h`` (37 unsupported cuDNN RNN / cuSOLVER aliases in one CUDA branch) is a handful of places, not 37.
"""

from __future__ import annotations

import re
from dataclasses import replace

from hipwizard.port.measured import ASSET as ASSET  # the asset, named here for its readers
from hipwizard.port.measured import UNMEASURED, measured
from hipwizard.port.model import Diagnostic, FileTranslation, Hunk, RiskFlag

ENABLED = True  # off: every finding is a flag (how the asset itself is measured)
PER_KIND = 4
PER_FILE = 12
QUIET_PER_KIND = 1
# a file of N thousand lines gets at least this many places N times over (a 5,000-line file is not a 200-line one)
KIND_PER_KLINE = 15
FILE_PER_KLINE = 25
PRECISE_PER_KLINE = 15
QUIET_BELOW = 0.1
PRECISE_AT = 0.5  # a kind measured at least this precise gets its own, larger budget
PRECISE_PER_KIND = 10
QUIET_MIN_PLACES = 3
DEMOTE_QUIET = True  # a quiet kind is a note (a "warning" diagnostic), not a flag
DEMOTE_KEEPS_HUNKS = True  # ... but its first place on a changed line (a hunk) stays a flag, standing for the rest
SPREAD = True  # a kind's places past its room: show ones spread over the file, not the first ones
CLUSTER_GAP = 2  # a kind's lines this close are one place
FOLD_DIAGNOSTICS = True  # off: every API diagnostic is listed on its own line
DIAG_FOLD = ("unsupported", "too_new", "removed", "opt_in", "deprecated")  # the API diagnostics the review lists
DIAG_LIST_UPTO = 2  # a kind on this few lines of a file is listed whole: only repeated diagnostics fold
_INCLUDE = re.compile(r"^\s*#\s*include\b")


def precision(kind: str) -> float:
    v = measured().get(kind, {}).get("precision")
    return float(v) if isinstance(v, (int, float)) else UNMEASURED


def quiet(kind: str) -> bool:
    v = measured().get(kind, {})
    return precision(kind) < QUIET_BELOW and int(v.get("places", 0) or 0) >= QUIET_MIN_PLACES


def apply_budget(files: list[FileTranslation]) -> int:
    """Fold each file's flags to the budget (hunk flags and flags on untouched lines alike); returns how many
    flagged lines were folded."""
    if not ENABLED:
        return 0
    for ft in files:
        _fold_diagnostics(ft)
    return sum(_budget_file(ft) for ft in files)


def budgeted(files: list[FileTranslation]) -> list[FileTranslation]:
    """``files`` after ``apply_budget``."""
    apply_budget(files)
    return files


def _line_text(ft: FileTranslation, line: int) -> str:
    lines = ft.translated.split("\n", line)
    return lines[line - 1] if 0 < line <= len(lines) else ""


def _original_line(ft: FileTranslation, hunk: Hunk | None, line: int) -> int:
    """A translated line's line in the original: inside a hunk, its old side; elsewhere, shifted by the hunks
    above it."""
    if hunk is not None:
        return max(hunk.old_start + min(max(line - hunk.new_start, 0), max(len(hunk.old_lines) - 1, 0)), 1)
    shift = 0
    for h in sorted(ft.hunks, key=lambda x: x.new_start):
        if h.new_start + len(h.new_lines) > line:
            break
        shift += len(h.old_lines) - len(h.new_lines)
    return max(line + shift, 1)


def _cluster_heads(lines: list[int]) -> list[int]:
    """The first line of each run of a kind's lines (sorted) no more than ``CLUSTER_GAP`` apart: one place to
    review (four CUB includes in a row, a block of inline asm)."""
    heads: list[int] = []
    prev = None
    for n in lines:
        if prev is None or n - prev > CLUSTER_GAP:
            heads.append(n)
        prev = n
    return heads


def _spread(heads: list[int], room: int) -> list[int]:
    """``room`` of a kind's places, spread over the file (the first and the last among them) when there are more
    than that: the places shown stand for the rest, so one function's cluster does not take the allowance."""
    if len(heads) <= room or not SPREAD:
        return heads[:room]
    if room == 1:
        return heads[:1]
    return sorted({heads[round(k * (len(heads) - 1) / (room - 1))] for k in range(room)})


def _fold_diagnostics(ft: FileTranslation) -> int:
    """Fold the file's repeated API diagnostics of each kind as a rule kind folds (runs of lines one place, a room
    by the kind's measured precision, spread over the file); returns how many lines were folded. A folded one keeps
    its place in ``ft.diagnostics`` (counted as a line that needs a hand edit) with ``folded_into`` set."""
    if not FOLD_DIAGNOSTICS:
        return 0
    by_kind: dict[str, list[int]] = {}
    for d in ft.diagnostics:
        if d.kind in DIAG_FOLD and d.line and not d.folded_into:
            by_kind.setdefault(d.kind, []).append(d.line)
    klines = ft.translated.count("\n") / 1000
    into: dict[tuple[str, int], int] = {}
    for kind, found in by_kind.items():
        lines = sorted(set(found))
        if len(lines) <= DIAG_LIST_UPTO:
            continue
        p = precision(f"diag:{kind}")
        room = max(1, PRECISE_PER_KIND, round(PRECISE_PER_KLINE * klines)) if p >= PRECISE_AT else \
            max(1, PER_KIND, round(KIND_PER_KLINE * klines))
        shown = _spread(_cluster_heads(lines), room)
        for n in lines:
            if n not in shown:
                above = [s for s in shown if s < n]
                into[(kind, n)] = above[-1] if above else shown[0]
    if not into:
        return 0
    ft.diagnostics = [replace(d, folded_into=into[(d.kind, d.line or 0)]) if (d.kind, d.line or 0) in into else d
                      for d in ft.diagnostics]
    ft.stats["api_lines_folded"] = ft.stats.get("api_lines_folded", 0) + len(into)
    return len(into)


def _budget_file(ft: FileTranslation) -> int:
    # every (kind, line) the file shows, with where it lives: a hunk or the untouched list
    where: dict[tuple[str, int], list[tuple[Hunk | None, RiskFlag]]] = {}
    for h in ft.hunks:
        h.flags.sort(key=lambda f: -precision(f.rule_id))
        for f in h.flags:
            where.setdefault((f.rule_id, f.line or 0), []).append((h, f))
    for f in ft.untouched_flags:
        where.setdefault((f.rule_id, f.line or 0), []).append((None, f))
    by_kind: dict[str, list[int]] = {}
    for kind, line in sorted(where):
        by_kind.setdefault(kind, []).append(line)
    shown: dict[str, list[int]] = {}
    klines = ft.translated.count("\n") / 1000  # a long file gets room in proportion
    budget = max(PER_FILE, round(FILE_PER_KLINE * klines))
    per_kind = max(PER_KIND, round(KIND_PER_KLINE * klines))
    for kind in sorted(by_kind, key=lambda k: (-precision(k), k)):
        heads = _cluster_heads(by_kind[kind])
        if precision(kind) >= PRECISE_AT:  # outside the file's budget
            shown[kind] = _spread(heads, max(1, PRECISE_PER_KIND, round(PRECISE_PER_KLINE * klines)))
            continue
        if quiet(kind) and DEMOTE_QUIET:  # a header HIP lacks stops the build; a hunk's flag gates its acceptance
            shown[kind] = [n for n in by_kind[kind] if (DEMOTE_KEEPS_HUNKS and any(h for h, _ in where[(kind, n)]))
                           or _INCLUDE.match(_line_text(ft, n))][:1]
            continue
        room = max(1, min(QUIET_PER_KIND if quiet(kind) else per_kind, budget))  # every kind shows once
        shown[kind] = _spread(heads, room)
        budget -= len(shown[kind])
    folded = 0
    for kind, lines in by_kind.items():
        keep = set(shown[kind])
        rest = [n for n in lines if n not in keep]
        if not rest:
            continue
        if not keep:  # demoted: a note on the original's line, no flag
            for n in rest:
                hunk, f = where[(kind, n)][0]
                ft.diagnostics.append(Diagnostic("warning", kind, _original_line(ft, hunk, n),
                                                 f"{f.reason} (a note: measured near real AMD divergence in "
                                                 f"{precision(kind):.0%} of cases; {f.hint})"))
            ft.stats["flags_demoted"] = ft.stats.get("flags_demoted", 0) + len(rest)
        else:
            folded += len(rest)
        for n in rest:
            for hunk, f in where[(kind, n)]:
                if hunk is None:
                    ft.untouched_flags.remove(f)
                else:
                    hunk.flags.remove(f)
        if not keep:
            continue
        note = f" (also {'line' if len(rest) == 1 else 'lines'} {', '.join(map(str, rest[:12]))}" + \
            (f" and {len(rest) - 12} more" if len(rest) > 12 else "") + " in this file)"
        hunk, f = where[(kind, shown[kind][0])][0]
        target = ft.untouched_flags if hunk is None else hunk.flags
        target[target.index(f)] = replace(f, reason=f.reason + note)
    if folded:
        ft.stats["flags_folded"] = ft.stats.get("flags_folded", 0) + folded
    return folded
