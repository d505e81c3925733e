"""Which lines of a file a regex matches, each line searched on its own, in time that stays linear.

The risk rules are per-line regexes. Searching every line of a 7 MB file with 31 rules costs minutes in
Python's ``re``, and one search over the whole text is little better when a pattern has no literal prefix
(``\\b...``, ``(?i)...``, alternations): the engine tries it at every position. So ``matching_lines`` first
finds the literals any match must contain (``required_literals``: for each alternative, its longest run of
plain characters) with ``str.find``, which skips through the text at C speed, and runs the regex only on
the lines holding one. A pattern without such literals is searched over the whole text instead, resuming
on the line after each hit (a match inside one line is also a match in the text, so none is missed).
Either way, a line is reported only when the regex matches that line alone: same answers as a per-line loop.
"""

from __future__ import annotations

import bisect
import re
from functools import lru_cache

# The regex parser's own modules (Python >= 3.11, the oldest hipwizard runs on); typeshed does not list them.
from re import _constants as _c  # type: ignore[attr-defined]
from re import _parser as _p  # type: ignore[attr-defined]

MIN_LITERAL = 2  # shorter literals occur everywhere in code: the whole-text search is as fast


class CodeLines(list):
    """Lines with their joined text, its lower-case form and the line offsets, computed once per file."""

    def __init__(self, lines: list[str]):
        super().__init__(lines)
        self.text = "\n".join(lines)
        self.starts = [0]
        for line in lines[:-1]:
            self.starts.append(self.starts[-1] + len(line) + 1)
        self._lower: str | None = None

    @property
    def lower(self) -> str | None:
        """``text.lower()``, or None when lowering changes offsets (non-ASCII case pairs)."""
        if self._lower is None:
            low = self.text.lower()
            self._lower = low if len(low) == len(self.text) else ""
        return self._lower or None


def matching_lines(rx: re.Pattern, lines: list[str]) -> list[int]:
    """Indices (0-based, ascending) of the lines that ``rx.search`` matches on their own."""
    literals = required_literals(rx.pattern, rx.flags)
    if len(lines) <= 8:
        if literals is not None:  # a few lines (a hunk's): one look for the literals before any regex
            text = "\n".join(lines)
            low = text.lower() if any(folded for _, folded in literals) else text
            if not any(lit in (low if folded else text) for lit, folded in literals):
                return []
        return [i for i, line in enumerate(lines) if rx.search(line)]
    code = lines if isinstance(lines, CodeLines) else CodeLines(lines)
    if literals is not None:
        lower = code.lower if any(folded for _, folded in literals) else None
        if lower is not None or not any(folded for _, folded in literals):
            return _by_literals(rx, code, literals, lower)
    return _by_search(rx, code)


def _by_literals(rx: re.Pattern, code: CodeLines, literals, lower: str | None) -> list[int]:
    candidates: set[int] = set()
    starts = code.starts
    for literal, folded in literals:
        text = lower if folded and lower is not None else code.text  # lower is given when a literal is folded
        pos = text.find(literal)
        while pos != -1:
            k = bisect.bisect_right(starts, pos) - 1
            candidates.add(k)
            if k + 1 >= len(starts):
                break
            pos = text.find(literal, starts[k + 1])
    return [k for k in sorted(candidates) if rx.search(code[k])]


def _by_search(rx: re.Pattern, code: CodeLines) -> list[int]:
    text, starts, pos = code.text, code.starts, 0
    out: list[int] = []
    while True:
        m = rx.search(text, pos)
        if m is None:
            return out
        k = bisect.bisect_right(starts, m.start()) - 1
        if rx.search(code[k]):
            out.append(k)
        if k + 1 >= len(starts):
            return out
        pos = starts[k + 1]


@lru_cache(maxsize=512)
def required_literals(pattern: str, flags: int = 0) -> tuple[tuple[str, bool], ...] | None:
    """Strings (with "case-folded?") of which every match of ``pattern`` contains at least one, or None when
    some alternative has no plain run of ``MIN_LITERAL`` characters."""
    try:
        parsed = _p.parse(pattern, flags)
    except re.error:
        return None
    found = _required(list(parsed.data), bool(flags & re.IGNORECASE))
    return tuple(sorted(found)) if found else None


def _required(seq: list, folded: bool) -> set[tuple[str, bool]] | None:
    """The best set of required literals of one sequence of parsed ops."""
    best: set[tuple[str, bool]] | None = None
    run: list[str] = []

    def consider(option: set[tuple[str, bool]] | None) -> None:
        nonlocal best
        if option and (best is None or _score(option) > _score(best)):
            best = option

    for op, av in seq + [(None, None)]:
        if op is _c.LITERAL:
            run.append(chr(av))
            continue
        if len(run) >= MIN_LITERAL:
            text = "".join(run)
            consider({(text.lower() if folded else text, folded)})
        run = []
        if op is _c.SUBPATTERN:
            add = av[1]
            consider(_required(list(av[-1].data), folded or bool(add & re.IGNORECASE)))
        elif op is _c.BRANCH:
            options = [_required(list(alt.data), folded) for alt in av[1]]
            present = [o for o in options if o]
            if len(present) == len(options):
                consider(set().union(*present))
    return best


def _score(option: set[tuple[str, bool]]) -> tuple[int, int]:
    # the rarest set first: longer shortest literal, then fewer literals
    return min(len(s) for s, _ in option), -len(option)
