"""Warp-size data flow from a kernel's body to its callers (issue 15, written from HeCBench's in-sample split).

Real ports of kernels that size a reduction, a lane index or a shuffle by a 32-wide warp do not stop at the body:
the human adds a warp-size template parameter to the kernel (or helper) and picks it on the host from the device's
warp size (``if (warpSize == 64) k<64><<<...>>> else k<32><<<...>>>``), so the function's head and every launch or
call of it change too (HeCBench f27000a5: src/gemv-hip, src/mpc-hip, src/score-hip, src/softmax-online-hip,
src/addBiasResidualLayerNorm-hip, src/quantAQLM-hip). ``warp_functions`` finds the functions whose bodies hold a
size-sensitive warp finding; ``WARP_KERNEL_USE`` flags their heads and their launches/calls in the same file;
``risk_tree`` carries the same facts to the other files of the folder (a kernel in ``kernels.h`` launched from
``main.cu``).
"""

from __future__ import annotations

import re

from hipwizard.port.risk.base import RiskRule
from hipwizard.port.risk.device import DEVICE_RULES
from hipwizard.port.risk.line_search import matching_lines
from hipwizard.port.risk.rules_host import _FUNC, call_lines, warp32_const_uses, warp32_consts

# findings that size something by 32 lanes (not the mask/_sync spelling, which a port fixes in place)
# (LANE_MASK_31 left out: '& 31' is as often a bank or bit index; in-sample it added places, no caught edit)
SIZE_RULES = ("WARP32_LITERAL", "SHFL_LOOP_16")
_SIZE_DETECTORS = {rule.rule_id: rule for rule in DEVICE_RULES if rule.rule_id in SIZE_RULES}
_NOT_FUNC = {"if", "for", "while", "switch", "return", "sizeof", "catch"}
_DEVICE = re.compile(r"__(?:global|device)__")
_TEMPLATE = re.compile(r"^\s*template\s*<")
_BACK = 400  # lines looked back for the enclosing function's head


def enclosing_function(lines: list[str], i: int) -> tuple[str, int] | None:
    """(name, head line) of the ``__global__``/``__device__`` function whose body holds line ``i``; the head
    line is its ``template <...>`` line when it has one. None at file scope or in host code."""
    depth = 0
    for j in range(i, max(-1, i - _BACK), -1):
        line = lines[j]
        if "{" not in line and "}" not in line:
            continue
        for ch in reversed(line if j < i else line[: len(line)]):
            if ch == "}":
                depth += 1
            elif ch == "{":
                depth -= 1
                if depth < 0:  # an unmatched '{' above: a block opens here; is it a function's?
                    head = _head(lines, j)
                    if head is not None:
                        return head
                    depth = 0
    return None


def _head(lines: list[str], j: int) -> tuple[str, int] | None:
    for k in range(j, max(-1, j - 4), -1):
        m = _FUNC.match(lines[k])
        if m and m.group(1) not in _NOT_FUNC:
            window = " ".join(lines[max(0, k - 2):k + 1])
            if not _DEVICE.search(window):
                return None
            top = k - 1 if k > 0 and _TEMPLATE.match(lines[k - 1]) else k
            return m.group(1), top
        if k < j and lines[k].rstrip().endswith((";", "}")):
            break
    return None


def warp_functions(lines: list[str], consts: set[str] | None = None,
                   callees: set[str] | None = None) -> dict[str, int]:
    """{function: head line} for each device function or kernel whose body sizes something by a 32-wide warp
    (the size rules' findings, and uses of ``consts``: names defined from 32, here or in another file), or calls
    such a function (``callees``: those of other files): a block reduction built on a 32-lane warp reduction is
    sized by it too, and so is the kernel that calls it (addBiasResidualLayerNorm-hip gives all three a
    warp-size parameter)."""
    hits: set[int] = set()
    for rule_id in SIZE_RULES:
        hits.update(_SIZE_DETECTORS[rule_id].detect(lines))
    names = set(consts or ()) | set(warp32_consts(lines).values())
    hits.update(warp32_const_uses(lines, names))
    out: dict[str, int] = {}
    for i in sorted(hits):
        found = enclosing_function(lines, i)
        if found is not None:
            out.setdefault(*found)
    # callers of warp-sized reductions, a few levels up (a helper that only reads a lane id, called all over a
    # file, does not spread: in-sample, its callers stay as they are)
    known = set(callees or ()) | reducers(lines, out)
    for _ in range(_DEPTH):
        grown = set()
        for i in call_lines(lines, known):
            found = enclosing_function(lines, i)
            if found is not None and found[0] not in out:
                out[found[0]] = found[1]
                grown.add(found[0])
        if not grown:
            break
        known |= grown
    return out


def reducers(lines: list[str], functions: dict[str, int]) -> set[str]:
    """The ``functions`` whose bodies shuffle (a warp reduction or scan, not a mere lane-id helper)."""
    out = set()
    for i in matching_lines(_SHFL, lines):
        found = enclosing_function(lines, i)
        if found is not None and found[0] in functions:
            out.add(found[0])
    return out


_SHFL = re.compile(r"\b__shfl\w*\s*\(|\.\s*shfl\w*\s*\(")


_DEPTH = 3
_FEW_NAMES = 16  # up to this many functions, a literal search per name is the faster way
_WORD = re.compile(r"\w+")


def warp_function_uses(lines: list[str], functions: dict[str, int] | set[str]) -> list[int]:
    """Launches (``k<<<``, ``k<T><<<``, ``hipLaunchKernelGGL(k``) and calls with template arguments (``f<T>(``)
    of ``functions`` in ``lines``, definitions aside (a plain call ``f(x)`` is left: in-sample, ports that give a
    helper a warp-size parameter spell it out where template arguments already are)."""
    if not functions:
        return []
    name = "|".join(map(re.escape, sorted(functions)))
    use = re.compile(rf"(?<![\w.>:])(?:{name})\s*(?:<[^;]*?>\s*)?<<<|(?<![\w.>:])(?:{name})\s*<[^;<>]*>\s*\(|"
                     rf"hipLaunchKernelGGL\s*\(\s*(?:HIP_KERNEL_NAME\s*\(\s*)?(?:{name})\b")
    if len(functions) <= _FEW_NAMES:
        found = matching_lines(use, lines)
    else:
        # Many names (a big file has hundreds of kernels): one literal search per name is a pass over the text
        # per name. Every form above holds the name as a whole identifier, so the lines holding one of the
        # names as a word are the only candidates: one pass over the words of each line.
        names = set(functions)
        found = [i for i, line in enumerate(lines) if "(" in line or "<" in line
                 if not names.isdisjoint(_WORD.findall(line)) and use.search(line)]
    return [i for i in found if not _FUNC.match(lines[i])]


def _warp_kernel_use(lines: list[str]) -> list[int]:
    functions = warp_functions(lines)
    if not functions:
        return []
    return sorted(set(functions.values()) | set(warp_function_uses(lines, functions)))


FLOW_RULES: tuple[RiskRule, ...] = (
    RiskRule("WARP_KERNEL_USE", "high", "this kernel or helper sizes its work by a 32-wide warp (see the flags in "
             "its body): on a 64-lane wavefront its head and every launch or call need the warp size too",
             "give it a warp-size template parameter (or read warpSize inside) and pick 64 or 32 on the host from "
             "hipDeviceAttributeWarpSize; re-check the grid/block maths at each launch",
             "zjin-lcf/HeCBench@f27000a5 src/gemv-hip, src/mpc-hip, src/score-hip, src/softmax-online-hip "
             "(k<64><<<...>>> chosen by hipDeviceAttributeWarpSize)", _warp_kernel_use),
)
