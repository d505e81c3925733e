"""CUDA's chevron launches as HIP calls: ``k<<<g, b, s, st>>>(args)`` -> ``hipLaunchKernelGGL(k, dim3(g), dim3(b),
s, st, args)`` (``--hip-kernel-execution-syntax``), as edits the built-in translator logs."""

from __future__ import annotations

import re

from hipwizard.port.translation.edits import Edit, apply_edits
from hipwizard.port.translation.lexer import mask_non_code, matching, split_top_level, template_start

_KERNEL_NAME = re.compile(r"((?:::)?[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)\s*$")


def rewrite_launches(text: str) -> tuple[str, int]:
    """``k<<<g, b, s, st>>>(args)`` -> ``hipLaunchKernelGGL(k, dim3(g), dim3(b), s, st, args)``."""
    edits = launch_edits(text)
    return apply_edits(text, edits), len(edits)


def launch_edits(text: str) -> list[Edit]:
    """The replacements ``rewrite_launches`` makes, in order."""
    if "<<<" not in text:
        return []
    masked = mask_non_code(text)
    edits: list[Edit] = []
    last = 0
    pos = masked.find("<<<")
    while pos != -1:
        close = masked.find(">>>", pos + 3)
        tmpl = template_start(masked, pos)
        # a kernel name is short: looking back a bounded window keeps many launches linear
        name_m = _KERNEL_NAME.search(masked, max(last, tmpl - 1024), tmpl)
        paren = close + 3 if close != -1 else -1
        while 0 <= paren < len(masked) and masked[paren].isspace():
            paren += 1
        if close == -1 or name_m is None or paren >= len(masked) or masked[paren] != "(" or name_m.start() < last:
            pos = masked.find("<<<", pos + 3)
            continue
        end = matching(masked, paren, "(", ")")
        if end == -1:
            break
        name = text[name_m.start(1):pos].strip()
        config = [c.strip() for c in split_top_level(text[pos + 3:close])]
        while len(config) < 4:
            config.append("0")
        for i in (0, 1):
            if not re.match(r"^dim3\s*\(", config[i]):
                config[i] = f"dim3({config[i]})"
        kernel = f"HIP_KERNEL_NAME({name})" if tmpl != pos else name
        args = text[paren + 1:end].strip()
        call = f"hipLaunchKernelGGL({kernel}, {', '.join(config[:4])}" + (f", {args})" if args else ")")
        edits.append(Edit(name_m.start(1), end + 1, call))
        last = end + 1
        pos = masked.find("<<<", last)
    return edits
