"""Text from outside made inert: the one sanitiser for everything that reaches a terminal or a document.

Text from outside (tool output, a paste, a capture's device name, a file or run name, a config value) can hold
terminal control sequences: OSC 52 writes the clipboard, OSC 0 sets the window title, DCS/APC/PM/SOS strings
and CSI sequences move the cursor or rewrite what the user sees. ``inert`` removes them all: whole ESC
sequences (7-bit and 8-bit introducers), every other C0 control but those the caller keeps, DEL, every C1
control (U+0080-U+009F), the bidirectional overrides that reorder what is shown, and lone surrogates (a file
name that is not UTF-8), which become U+FFFD so that printing never fails. Printable Unicode is kept.

On top of it, one variant per place the text lands:

- ``inert_line``: one line (newlines and tabs become spaces), for a name in a table row or a message.
- ``markup``: Textual/Rich markup escaped (every ``[``), for text put into a widget that reads markup.
- ``markdown`` / ``markdown_cell``: HTML special characters as entities, link/image/math syntax neutralised,
  ``|`` escaped, one line, for untrusted text in a Markdown document.

``InertStream`` / ``inert_stdout``: the headless commands' stdout passes through ``inert`` (the CLI's entry
wraps every sub-command in it), so no print of a name from outside can act on the terminal.

Plain Python on the shared floor, usable by every step and both faces.
"""

from __future__ import annotations

import contextlib
import functools
import re
import sys

# A whole escape sequence, 7-bit or 8-bit introducer:
#   CSI  ESC [ / 0x9b, parameters, intermediates, one final byte;
#   OSC  ESC ] / 0x9d, DCS ESC P / 0x90, SOS ESC X / 0x98, PM ESC ^ / 0x9e, APC ESC _ / 0x9f: a string ended by
#        BEL, ST (ESC \ or 0x9c) or, unterminated, the end of the line (the rest of the text stays, as data);
#   any other ESC sequence: ESC, intermediates (0x20-0x2f), one final byte (ESC 7, ESC c, ESC ( B, ...).
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|(?:\x1b[\]PX^_]|[\x9d\x90\x98\x9e\x9f])[^\x07\x9c\x1b\n]*(?:\x07|\x9c|\x1b\\)?"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?"
)
# C0 controls (tab, newline and carriage return handled by ``keep``), DEL, C1 controls, bidi overrides and
# isolates (U+202A-U+202E, U+2066-U+2069): none is text a user meant to show.
_CONTROLS = "".join(chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F),
                                     *range(0x2066, 0x206A)))
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def inert(text: object, keep: str = "\n\t") -> str:
    """``text`` (any object, as ``str``) with no control sequence or control character left, but those in
    ``keep`` (default newline and tab). Never raises; the result encodes as UTF-8."""
    s = text if isinstance(text, str) else str(text)
    if s.isprintable() and s.isascii():  # the common case, quickly
        return s
    s = _SURROGATE.sub("\ufffd", _SEQUENCE.sub("", s))
    return s.translate(_dropped(keep))


@functools.lru_cache(maxsize=8)
def _dropped(keep: str) -> dict[int, None]:
    return {ord(c): None for c in _CONTROLS if c not in keep}


def inert_line(text: object) -> str:
    """``inert`` on one line: newlines, carriage returns and tabs become spaces."""
    return re.sub(r"[\r\n\t]", " ", inert(text, keep="\r\n\t"))


def markup(text: object, keep: str = "\n\t") -> str:
    """``inert`` text escaped for Textual markup: every ``[`` is a literal bracket. (Textual reads ``\\[`` as a
    bracket and any other backslash as itself, so backslashes are not doubled; a trailing backslash gets a
    zero-width space after it, or it would escape the tag that follows.)"""
    s = inert(text, keep).replace("[", "\\[")
    return s + "\u200b" if s.endswith("\\") else s


# Markdown: HTML specials become entities (no raw HTML, no autolink), and the characters that open a link, an
# image, a math span or a table cell, or that escape, are backslash-escaped (CommonMark escapes any ASCII
# punctuation). Backticks stay: inside a code span everything is literal, so the document's own `commands` work.
_MD = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\\": "\\\\", "[": "\\[", "]": "\\]",
                     "$": "\\$", "|": "\\|"})


def markdown(text: object) -> str:
    """Untrusted text as literal Markdown text on one line: nothing in it becomes HTML, a link, an image,
    math, a heading, a list item or a table cell boundary."""
    s = inert_line(text).translate(_MD)
    return "\\" + s if s[:1] in ("#", "-", "+", "*", "=") else s


markdown_cell = markdown  # a table cell needs nothing more: ``|`` is escaped and the text is one line


class InertStream:
    """A text stream that writes ``inert`` text (newlines and tabs kept) to the stream it wraps; every other
    attribute (``flush``, ``fileno``, ``isatty``, ``encoding``...) is the wrapped stream's. A sequence split
    over two writes cannot re-form: each write loses its own ESC."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(inert(text))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextlib.contextmanager
def inert_stdout():
    """``sys.stdout`` as an ``InertStream`` for the block (a headless command's printing), then as it was."""
    outer = sys.stdout
    sys.stdout = InertStream(outer) if outer is not None and not isinstance(outer, InertStream) else outer
    try:
        yield
    finally:
        sys.stdout = outer
