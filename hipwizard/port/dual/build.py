"""Build files in dual-target form: one file that builds for NVIDIA as before and for AMD when asked.

From a build file's fork-mode translation (``buildfiles``), each changed line becomes a branch in the file's
own conditional syntax, switched by the project's guard:

- Makefiles: ``make USE_ROCM=1`` takes the translated lines (hipcc, ``--offload-arch``, the HIP libraries) and
  passes ``-DUSE_ROCM`` to hipcc (``HIPCC_COMPILE_FLAGS_APPEND``); plain ``make`` is the old build.
- CMake: ``option(USE_ROCM ...)`` (OFF); ``-DUSE_ROCM=ON`` switches the language to HIP (the translated
  ``project``/``enable_language``/``LANGUAGE HIP`` lines) and defines the macro.
- shell build scripts: ``USE_ROCM=1 ./build.sh``.
- ``setup.py``: the fork translation already works on either torch (its gates are widened, never narrowed:
  ``CUDA_HOME is not None or ROCM_HOME is not None``; a ROCm torch hipifies the extension itself and defines
  ``USE_ROCM``), so it is taken as it is. ``pyproject.toml`` carries flags only.

A branch never splits a line continued with a backslash, nor (CMake) a command spanning lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hipwizard.port.buildfiles import build_kind
from hipwizard.port.dual.model import Branch, DualOptions
from hipwizard.port.dual.source import Edit
from hipwizard.port.model import FileTranslation
from hipwizard.port.translation.hunks import split_lines


@dataclass(frozen=True)
class _Syntax:
    begin: str
    other: str
    end: str
    preamble: tuple[str, ...]


def _syntax(kind: str, guard: str) -> _Syntax | None:
    if kind == "make":
        return _Syntax(f"ifeq ($({guard}),1)", "else", "endif", (
            f"# hipwizard dual-target: `make {guard}=1` builds for AMD GPUs with hipcc; plain `make` builds as before",
            f"ifeq ($({guard}),1)", f"export HIPCC_COMPILE_FLAGS_APPEND += -D{guard}", "endif"))
    if kind == "cmake":
        return _Syntax(f"if({guard})", "else()", "endif()", (
            f'option({guard} "Build for AMD GPUs with HIP instead of CUDA (hipwizard dual-target)" OFF)',
            f"if({guard})", f"  add_compile_definitions({guard})", "endif()"))
    if kind == "shell":
        return _Syntax(f'if [ "${{{guard}:-0}}" = 1 ]; then', "else", "fi", (
            f"# hipwizard dual-target: {guard}=1 builds for AMD GPUs with hipcc; unset, it builds as before",))
    return None


_PROJECT = re.compile(r"^\s*project\s*\(", re.I)
_SHEBANG = re.compile(r"^#!")


def _depth(line: str) -> int:
    """Parentheses a CMake line leaves open (comments and quoted strings skipped)."""
    line = re.sub(r'"(?:\\.|[^"\\])*"', "", line)
    line = line.split("#", 1)[0]
    return line.count("(") - line.count(")")


_OPENS = {"make": re.compile(r"^\s*(?:ifeq|ifneq|ifdef|ifndef)\b"),
          "cmake": re.compile(r"^\s*(?:if|foreach|while|function|macro|block)\s*\(", re.I),
          "shell": re.compile(r"^\s*(?:if|case|for|while|until)\b")}
_CLOSES = {"make": re.compile(r"^\s*endif\b"),
           "cmake": re.compile(r"^\s*(?:endif|endforeach|endwhile|endfunction|endmacro|endblock)\s*\(", re.I),
           "shell": re.compile(r"^\s*(?:fi|esac|done)\b")}


def _nesting(kind: str, lines: list[str]) -> int:
    """Conditionals (loops, functions) ``lines`` open and leave open."""
    opens, closes = _OPENS.get(kind), _CLOSES.get(kind)
    if opens is None or closes is None:
        return 0
    return sum(1 for x in lines if opens.match(x)) - sum(1 for x in lines if closes.match(x))


def dual_build_file(ft: FileTranslation, options: DualOptions) -> tuple[str, list[Branch], list[Edit]]:
    """The dual-target text of the build file ``ft`` (its fork-mode translation), its branches, and the
    edits that make it from the original. A changed line that opens a conditional takes the whole block."""
    kind = build_kind(ft.path)
    syntax = _syntax(kind or "", options.guard)
    if syntax is None or not ft.hunks:
        return ft.translated, [], []
    lines = split_lines(ft.original)
    eol = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    # units: (old lines, new lines); unchanged lines are units of one line with old == new
    units: list[tuple[list[str], list[str]]] = []
    pos = 0
    for h in sorted(ft.hunks, key=lambda h: h.old_start):
        start = max(h.old_start - 1, 0) if h.old_lines else h.old_start - 1 if h.old_start > 0 else 0
        units.extend(([x], [x]) for x in lines[pos:start])
        if len(h.old_lines) == len(h.new_lines):
            units.extend(([o], [n]) for o, n in zip(h.old_lines, h.new_lines, strict=True))
        else:
            units.append((list(h.old_lines), list(h.new_lines)))
        pos = start + len(h.old_lines)
    units.extend(([x], [x]) for x in lines[pos:])
    joined: list[tuple[list[str], list[str]]] = []
    depth = 0
    for old, new in units:
        last = joined[-1] if joined else None
        open_before = last is not None and (
            bool(last[0]) and last[0][-1].rstrip("\r\n").endswith("\\") or depth > 0
            or (last[0] != last[1] and _nesting(kind or "", last[0]) > 0))
        if last is not None and open_before:
            last[0].extend(old)
            last[1].extend(new)
        else:
            joined.append((list(old), list(new)))
        if kind == "cmake":
            depth = max(0, depth + sum(_depth(x) for x in old))
    out: list[str] = []
    branches: list[Branch] = []
    edits: list[Edit] = []
    old_line = 0
    pre = [x + eol for x in syntax.preamble]
    placed = False
    if kind != "cmake":  # at the top (after a shebang)
        first = joined[0][0][0] if joined and joined[0][0] else ""
        if not _SHEBANG.match(first):
            out.extend(pre)
            edits.append(Edit(1, [], list(pre)))
            placed = True
    i = 0
    while i < len(joined):
        old, new = joined[i]
        if old == new:
            if kind == "cmake" and not placed and old and _PROJECT.match(old[0]):
                out.extend(pre)
                edits.append(Edit(old_line + 1, [], list(pre)))
                placed = True
            out.extend(old)
            old_line += len(old)
            if not placed:  # the shebang line
                out.extend(pre)
                edits.append(Edit(old_line + 1, [], list(pre)))
                placed = True
            i += 1
            continue
        j = i
        while j + 1 < len(joined) and joined[j + 1][0] != joined[j + 1][1]:
            j += 1
        olds = [x for k in range(i, j + 1) for x in joined[k][0]]
        news = [x for k in range(i, j + 1) for x in joined[k][1]]
        block = []
        if kind == "cmake" and not placed and any(_PROJECT.match(x) for x in olds):
            block.extend(pre)
            placed = True
        branches.append(Branch(ft.path, len(out) + len(block) + 1, "build", len(news)))
        block.append(syntax.begin + eol)
        block.extend(x if x.endswith("\n") else x + eol for x in news)
        if olds:
            block.append(syntax.other + eol)
            block.extend(x if x.endswith("\n") else x + eol for x in olds)
        block.append(syntax.end + eol)
        edits.append(Edit(old_line + 1, olds, block))
        old_line += len(olds)
        out.extend(block)
        i = j + 1
    if not placed:
        out[:0] = pre
        edits.insert(0, Edit(1, [], list(pre)))
        branches = [Branch(b.file, b.line + len(pre), b.kind, b.lines) for b in branches]
    return "".join(out), branches, edits
