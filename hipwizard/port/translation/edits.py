"""An edit log: the replacements a translator made, in the original text's offsets.

The built-in translator rewrites a file in passes (names and includes, then launches, then argument rules,
then the runtime header). Each pass records ``Edit(start, end, text)`` on the text it was given;
``EditLog.then(edits)`` folds a pass's edits back onto the original's offsets, in time linear in the text
and the edits. The engine turns the final log into hunks (``hunks.hunks_from_edits``) without diffing the
whole file, which keeps a 7 MB file's hunks to a fraction of a second.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hipwizard.port.translation.lexer import mask_non_code


@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` with ``new`` (an insertion when ``start == end``)."""

    start: int
    end: int
    new: str


def apply_edits(text: str, edits: list[Edit]) -> str:
    """``text`` with ``edits`` (sorted, not overlapping) applied."""
    out, pos = [], 0
    for e in edits:
        out.append(text[pos:e.start])
        out.append(e.new)
        pos = e.end
    out.append(text[pos:])
    return "".join(out)


@dataclass(frozen=True)
class Span:
    """One changed stretch: ``original[start:end]`` became ``translated[new_start:new_end]``."""

    start: int
    end: int
    new_start: int
    new_end: int


@dataclass
class EditLog:
    """The original text, the current text and the changed spans between them (sorted, disjoint)."""

    original: str
    text: str = ""
    spans: list[Span] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.text:
            self.text = self.original

    def then(self, edits: list[Edit]) -> None:
        """Apply one pass's ``edits`` (sorted, disjoint, in offsets of the current ``text``)."""
        edits = [e for e in edits if self.text[e.start:e.end] != e.new]
        if not edits:
            return
        new_text = apply_edits(self.text, edits)
        # Each edit's span in original offsets: a position inside an earlier replacement widens to all of it.
        spans = self.spans
        k, delta = 0, 0  # spans[k]: the first span ending after the position; delta = current - original there

        def locate(c: int) -> tuple[int, int] | None:
            nonlocal k, delta
            while k < len(spans) and spans[k].new_end <= c:
                delta = spans[k].new_end - spans[k].end
                k += 1
            if k < len(spans) and spans[k].new_start < c:
                return spans[k].start, spans[k].end
            return None

        mapped: list[tuple[int, int, int]] = []  # (original start, original end, length change)
        for e in edits:
            inside = locate(e.start)
            lo = inside[0] if inside else e.start - delta
            inside = locate(e.end)
            hi = inside[1] if inside else e.end - delta
            mapped.append((lo, hi, len(e.new) - (e.end - e.start)))
        # Merge the old spans and the mapped ones into groups of overlapping original stretches.
        items = [(s.start, s.end, (s.new_end - s.new_start) - (s.end - s.start)) for s in spans] + mapped
        items.sort(key=lambda t: (t[0], t[1]))
        merged: list[list[int]] = []
        for lo, hi, change in items:
            if merged and lo <= merged[-1][1]:  # touching ones merge too: order at one offset stays unambiguous
                merged[-1][1] = max(merged[-1][1], hi)
                merged[-1][2] += change
            else:
                merged.append([lo, hi, change])
        out, shift = [], 0
        for lo, hi, change in merged:
            out.append(Span(lo, hi, lo + shift, hi + shift + change))
            shift += change
        self.text, self.spans = new_text, out


def carry_mask(masked: str, text: str, spans: list[Span]) -> str:
    """``mask_non_code(text)``, from the masking of the text ``spans`` came from: outside the spans the
    two texts are equal, and each span is whole tokens (a name, an include line, a wrapped argument, a
    launch), so only the spans' new text is masked. A few times faster than masking ``text`` again."""
    out, pos = [], 0
    for s in spans:
        out.append(masked[pos:s.start])
        new = text[s.new_start:s.new_end]
        out.append(mask_non_code(new) if ('"' in new or "'" in new or "/" in new) else new)
        pos = s.end
    out.append(masked[pos:])
    return "".join(out)
