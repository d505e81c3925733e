"""A parsed Python file as the rules read it: the AST with parent links, what each imported name stands for,
and offsets into the text (``ast`` counts columns in UTF-8 bytes; replacements need characters)."""

from __future__ import annotations

import ast
import re

_LINE = re.compile(r".*?(?:\r\n|\r|\n)|.+\Z", re.S)  # the line ends ast counts (not str.splitlines' \x0c, \u2028, ...)


class PySource:
    """``text`` parsed once. Raises ``SyntaxError`` / ``ValueError`` (NUL bytes) when it does not parse."""

    def __init__(self, text: str, path: str = "<file>"):
        self.text = text
        self.tree = ast.parse(text, filename=path)
        self.lines = _LINE.findall(text)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))
        self.parent: dict[ast.AST, ast.AST] = {}
        self.aliases: dict[str, str] = {}  # local name -> what it stands for ("th" -> "torch")
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.aliases[a.asname] = a.name
                    else:
                        top = a.name.split(".")[0]
                        self.aliases.setdefault(top, top)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    if a.name != "*":
                        self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"

    def offset(self, lineno: int, col: int) -> int:
        """Character offset of ``ast``'s (1-based line, UTF-8 byte column)."""
        line = self.lines[lineno - 1] if lineno - 1 < len(self.lines) else ""
        if not line.isascii():
            col = len(line.encode("utf-8")[:col].decode("utf-8", "replace"))
        return self.starts[lineno - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (self.offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
                self.offset(node.end_lineno, node.end_col_offset))  # type: ignore[attr-defined]

    def segment(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def dotted(self, node: ast.AST | None) -> str | None:
        """``torch.version.cuda`` for ``th.version.cuda`` after ``import torch as th``; None for other expressions."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        parts.append(self.aliases.get(node.id, node.id))
        return ".".join(reversed(parts))

    def ancestors(self, node: ast.AST):
        while node in self.parent:
            node = self.parent[node]
            yield node


def in_truth_context(src: PySource, node: ast.AST) -> bool:
    """Is ``node``'s value only tested (``if x``, ``x is None``, ``not x``, ``bool(x)``, inside an ``and`` that
    is itself tested)? Then ``(x or y)`` keeps the code's meaning for CUDA and adds the HIP case."""
    parent = src.parent.get(node)
    if isinstance(parent, ast.Compare):
        ops, others = parent.ops, [parent.left, *parent.comparators]
        return (len(ops) == 1 and isinstance(ops[0], (ast.Is, ast.IsNot))
                and any(isinstance(o, ast.Constant) and o.value is None for o in others if o is not node))
    if isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)):
        return parent.test is node
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        return True
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "bool":
        return True
    if isinstance(parent, ast.BoolOp):
        return in_truth_context(src, parent)
    return False
