"""Just enough C++ reading to find kernels: code told from comments and strings, balanced brackets, arguments.

``masked(text)`` blanks comments, strings and character literals (same length, same line breaks), so every search
runs on code only and positions stay those of the original text.
"""

from __future__ import annotations

import re

_MASK = re.compile(r"""//[^\n]*|/\*.*?(?:\*/|\Z)|"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'""", re.S)
_NON_NL = re.compile(r"[^\n]")
IDENT = re.compile(r"[A-Za-z_]\w*")
_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}


def masked(text: str) -> str:
    """Comments, strings and char literals replaced by spaces; a line continuation joins nothing (kept)."""
    return _MASK.sub(lambda m: _NON_NL.sub(" ", m.group(0)), text)


def matching(code: str, pos: int) -> int:
    """Index of the bracket closing the one at ``pos`` in masked ``code`` (-1 when unbalanced).

    ``<`` counts only its own kind (template argument lists have no other meaning of '<' inside them here)."""
    open_ch = code[pos]
    close_ch = _PAIRS[open_ch]
    depth = 0
    kinds = (open_ch, close_ch) if open_ch == "<" else ("(", ")", "[", "]", "{", "}")
    for i in range(pos, len(code)):
        c = code[i]
        if c not in kinds:
            continue
        if open_ch == "<":
            depth += 1 if c == "<" else -1
        else:
            depth += 1 if c in "([{" else -1
        if depth == 0:
            return i if c == close_ch else -1
    return -1


def split_top(text: str, sep: str = ",") -> list[str]:
    """``text`` split at ``sep`` outside brackets (parentheses, square, braces and template angles)."""
    parts, depth, angle = [], 0, 0
    cur: list[str] = []
    for i, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "<" and depth == 0 and not text.startswith("<<", i) and (i == 0 or text[i - 1] != "<"):
            angle += 1 if _looks_template(text, i) else 0
        elif c == ">" and angle and depth == 0:
            angle -= 1
        if c == sep and depth == 0 and angle == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _looks_template(text: str, i: int) -> bool:
    """A '<' right after a type-like identifier with a matching '>' before any ';' or ',' at depth 0."""
    before = text[:i].rstrip()
    if not before or not (before[-1].isalnum() or before[-1] == "_"):
        return False
    j = text.find(">", i)
    return j != -1 and "," not in text[i:j] or (j != -1 and "(" not in text[i:j])


def line_of(text: str, pos: int) -> int:
    """1-based line of offset ``pos``."""
    return text.count("\n", 0, pos) + 1


def identifiers(expr: str) -> list[str]:
    """Identifiers of an expression (member names after '.' or '->' are left out)."""
    out = []
    for m in IDENT.finditer(expr):
        before = expr[:m.start()].rstrip()
        if before.endswith(".") or before.endswith("->"):
            continue
        out.append(m.group(0))
    return out


def normalise(expr: str) -> str:
    """An expression with its spaces removed (to compare two spellings of the same text)."""
    return re.sub(r"\s+", "", expr)
