"""Find the ``__global__`` kernels of a CUDA (or HIP) source and the project's own launch sites.

A kernel is a ``__global__`` function *definition* (a declaration or an inline host function is not): its
template parameters, its parameters (type, pointer, ``const``) and its body. A launch site is ``name<...><<<grid,
block, smem, stream>>>(args)`` or ``hipLaunchKernelGGL(name, grid, block, smem, stream, args...)``, with the host
function around it (its parameters and the local definitions before the launch, to resolve the geometry).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hipwizard.parity.kernels.source import IDENT, line_of, masked, matching, split_top

_GLOBAL = re.compile(r"\b__global__\b")
_QUALIFIERS = re.compile(r"\b(?:__global__|__device__|__host__|static|inline|__inline__|__forceinline__|extern|"
                         r"__noinline__|void|C)\b|__launch_bounds__\s*\([^)]*\)|\"C\"")
_TEMPLATE_BEFORE = re.compile(r"template\s*<$")
_VECTOR = re.compile(r"^(?:u?char|u?short|u?int|u?long|u?longlong|float|double|half|__half|bfloat16|__nv_bfloat16)"
                     r"([1-4])$")
SCALAR_TYPES = {
    "float", "double", "int", "unsigned", "unsigned int", "long", "unsigned long", "long long",
    "unsigned long long", "size_t", "int64_t", "uint64_t", "int32_t", "uint32_t", "short", "unsigned short",
    "int16_t", "uint16_t", "char", "unsigned char", "int8_t", "uint8_t", "bool", "half", "__half",
    "__nv_bfloat16", "nv_bfloat16", "hip_bfloat16", "__hip_bfloat16", "floatX", "signed char", "ptrdiff_t",
    "long int", "unsigned long int", "uint", "int2", "float2", "float4", "int4", "double2", "half2", "__half2",
    "__nv_bfloat162", "uchar4", "char4", "short2", "uint4", "uint2", "double4", "float3", "int3",
}


@dataclass
class Param:
    name: str
    type: str  # declared type, qualifiers kept ("const float* __restrict__")
    pointer: bool
    const: bool  # the pointee is const
    base: str  # the element (pointee or scalar) type without qualifiers ("float", "T", "floatX")


@dataclass
class TemplateParam:
    kind: str  # "type" or the non-type's type ("int")
    name: str
    default: str = ""


@dataclass
class Kernel:
    name: str
    path: str  # the file, as given
    line: int
    params: list[Param]
    template: list[TemplateParam]
    body: str = field(repr=False)  # masked body text between the braces
    start: int = 0  # offset of the first character of the definition (its template line if any)
    end: int = 0  # offset after the closing brace


@dataclass
class LaunchSite:
    kernel: str
    path: str
    line: int
    template_args: list[str]
    config: list[str]  # grid, block[, smem[, stream]]
    args: list[str]
    host_params: list[str]  # names of the enclosing host function's parameters
    host_function: str
    definitions: dict[str, str]  # local name -> its last definition before the launch (masked text)


def find_kernels(text: str, path: str = "") -> list[Kernel]:
    """Every ``__global__`` function defined in ``text`` (in order)."""
    code = masked(text)
    out: list[Kernel] = []
    for m in _GLOBAL.finditer(code):
        if _in_macro(code, m.start()):
            continue
        paren = code.find("(", m.end())
        if paren == -1:
            continue
        head = code[m.end():paren]
        # __launch_bounds__(...) opens a parenthesis before the name's: step over it
        while re.search(r"__launch_bounds__\s*$", head):
            close = matching(code, paren)
            if close == -1:
                break
            paren = code.find("(", close + 1)
            head = code[m.end():paren]
        names = IDENT.findall(_QUALIFIERS.sub(" ", head))
        if not names:
            continue
        name = names[-1]
        close = matching(code, paren)
        if close == -1:
            continue
        after = code[close + 1:close + 400].lstrip()
        after = re.sub(r"^(?:const\b|noexcept\b|__attribute__\s*\(\(.*?\)\))\s*", "", after)
        if not after.startswith("{"):
            continue  # a declaration
        brace = code.find("{", close)
        end = matching(code, brace)
        if end == -1:
            continue
        start, template = _template_before(code, m.start())
        params = [p for p in (_param(t) for t in split_top(code[paren + 1:close])) if p is not None]
        body = code[brace + 1:end].replace("\\\n", "  ")
        out.append(Kernel(name, path, line_of(text, m.start()), params, template, body, start, end + 1))
    return out


def _in_macro(code: str, pos: int) -> bool:
    line_start = code.rfind("\n", 0, pos) + 1
    return code[line_start:pos].lstrip().startswith("#")


def _template_before(code: str, pos: int) -> tuple[int, list[TemplateParam]]:
    before = code[:pos].rstrip()
    # the text before __global__ may hold "static" etc.; a template list ends with '>'
    stripped = re.sub(r"(?:\b(?:static|inline|__inline__|__forceinline__)\s*)+$", "", before).rstrip()
    if not stripped.endswith(">"):
        return pos, []
    depth, i = 0, len(stripped) - 1
    while i >= 0:
        if stripped[i] == ">":
            depth += 1
        elif stripped[i] == "<":
            depth -= 1
            if depth == 0:
                break
        i -= 1
    head = stripped[:i].rstrip()
    if not head.endswith("template"):
        return pos, []
    params = []
    for part in split_top(stripped[i + 1:-1]):
        default = ""
        if "=" in part:
            part, default = (s.strip() for s in part.split("=", 1))
        words = part.split()
        if not words:
            continue
        kind = "type" if words[0] in ("typename", "class") else " ".join(words[:-1])
        params.append(TemplateParam(kind, words[-1].strip("."), default))
    return len(head) - len("template"), params


def _param(text: str) -> Param | None:
    text = text.split("=", 1)[0].strip()
    if not text or text == "void":
        return None
    array = text.endswith("]")
    if array:
        text = text[:text.index("[")].strip()
    m = re.search(r"([A-Za-z_]\w*)\s*$", text)
    if not m:
        return None
    name, typ = m.group(1), text[:m.start()].strip()
    if not typ:
        return None
    pointer = "*" in typ or array
    clean = re.sub(r"\b(?:__restrict__|__restrict|restrict|volatile|struct)\b", " ", typ)
    const = pointer and bool(re.search(r"\bconst\b", clean.split("*")[0]))
    base = " ".join(re.sub(r"\bconst\b|\*|&", " ", clean).split())
    return Param(name, " ".join(typ.split()), pointer, const, base)


_LAUNCH = re.compile(r"\b([A-Za-z_]\w*)\s*(<(?:[^<>;]|<[^<>;]*>)*>)?\s*<<<")
_GGL = re.compile(r"\bhipLaunchKernelGGL\s*\(")


def find_launches(text: str, path: str = "", kernels: set[str] | None = None) -> list[LaunchSite]:
    """Every launch in ``text`` (of ``kernels`` when given), with its host function's context."""
    code = masked(text)
    pairs = _brace_pairs(code)
    out: list[LaunchSite] = []
    for m in _LAUNCH.finditer(code):
        name = m.group(1)
        if kernels is not None and name not in kernels:
            continue
        cfg_end = code.find(">>>", m.end())
        if cfg_end == -1:
            continue
        paren = cfg_end + 3
        while paren < len(code) and code[paren].isspace():
            paren += 1
        if paren >= len(code) or code[paren] != "(":
            continue
        close = matching(code, paren)
        if close == -1:
            continue
        targs = split_top(m.group(2)[1:-1]) if m.group(2) else []
        site = _site(text, code, m.start(), name, targs, split_top(code[m.end():cfg_end]),
                     split_top(code[paren + 1:close]), path, pairs)
        out.append(site)
    for m in _GGL.finditer(code):
        close = matching(code, m.end() - 1)
        if close == -1:
            continue
        parts = split_top(code[m.end():close])
        if len(parts) < 5:
            continue
        head = parts[0].strip()
        head = re.sub(r"^HIP_KERNEL_NAME\s*\((.*)\)$", r"\1", head, flags=re.S).strip()
        tm = re.match(r"([A-Za-z_]\w*)\s*(?:<(.*)>)?$", head, re.S)
        if not tm or (kernels is not None and tm.group(1) not in kernels):
            continue
        targs = split_top(tm.group(2)) if tm.group(2) else []
        out.append(_site(text, code, m.start(), tm.group(1), targs, parts[1:5], parts[5:], path, pairs))
    out.sort(key=lambda s: s.line)
    return out


def _site(text: str, code: str, pos: int, name: str, targs: list[str], config: list[str], args: list[str],
          path: str, pairs: list[tuple[int, int]] | None = None) -> LaunchSite:
    fn_start, fn_name, fn_params = _enclosing_function(code, pos, pairs)
    body = code[fn_start:pos]
    definitions: dict[str, str] = {}
    for dm in re.finditer(r"(?:^|(?<=[;{}(]))\s*((?:(?:const|constexpr|static|unsigned|signed|long|short|int|size_t|"
                          r"int64_t|uint64_t|int32_t|uint32_t|auto|float|double|dim3)\s+)+)([A-Za-z_]\w*)\s*"
                          r"(?:=\s*([^;{]+?)|\(([^;]*?)\)|=?\s*\{([^;]*?)\})\s*;", body, re.M):
        value = (dm.group(3) or dm.group(4) or dm.group(5) or "").strip()
        words = [w for w in dm.group(1).split() if w not in ("const", "constexpr", "static")]
        typ = " ".join(words)
        if value and typ == "dim3" and not value.startswith("dim3"):
            value = f"dim3({value})"  # dim3 g(1, n) / dim3 g{1, n}: the launch's config reads as a dim3
        elif value and typ and typ != "auto" and typ != "dim3":
            value = f"({typ})({value})"  # the local's own type: an inlined expression keeps it (ceil_div<T>)
        definitions[dm.group(2)] = value
    for dm in re.finditer(r"(?:^|(?<=[;{}]))\s*(?:(?:unsigned|signed|long|short|int|size_t|int64_t|uint64_t|"
                          r"int32_t|uint32_t)\s+)+([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*;", body, re.M):
        for local in dm.group(1).replace(" ", "").split(","):  # int in, hid, out; (assigned below, or a dimension)
            definitions[local] = local
    for dm in re.finditer(r"(?:^|(?<=[;{}]))\s*([A-Za-z_]\w*)\s*=\s*([^;=][^;]*?)\s*;", body):  # plain assignments
        if dm.group(1) in definitions:
            definitions[dm.group(1)] = dm.group(2).strip()
    return LaunchSite(name, path, line_of(text, pos), targs, config, args, fn_params, fn_name, definitions)


def _brace_pairs(code: str) -> list[tuple[int, int]]:
    """(open, close) of every brace pair of masked ``code``, by opening position."""
    pairs, stack = [], []
    for m in re.finditer(r"[{}]", code):
        if m.group(0) == "{":
            stack.append(m.start())
        elif stack:
            pairs.append((stack.pop(), m.start()))
    pairs.sort()
    return pairs


def _enclosing_function(code: str, pos: int, pairs: list[tuple[int, int]] | None = None) -> tuple[int, str, list[str]]:
    """(body start, name, parameter names) of the function around ``pos``: the innermost enclosing brace
    that follows a parameter list whose name is no control keyword."""
    pairs = _brace_pairs(code) if pairs is None else pairs
    enclosing = sorted((o for o, c in pairs if o < pos < c), reverse=True)
    for outer in enclosing:
        head = code[max(0, outer - 3000):outer].rstrip()
        head = re.sub(r"\)\s*(?:const|noexcept|override|mutable)?\s*(?:->\s*[\w:<>]+\s*)?$", ")", head)
        if not head.endswith(")"):
            continue
        depth, j = 0, len(head) - 1
        while j >= 0:
            if head[j] == ")":
                depth += 1
            elif head[j] == "(":
                depth -= 1
                if depth == 0:
                    break
            j -= 1
        names = IDENT.findall(head[:j])
        if not names or names[-1] in ("if", "for", "while", "switch", "catch"):
            continue
        params = [p.name for p in (_param(t) for t in split_top(head[j + 1:-1])) if p is not None]
        return outer + 1, names[-1], params
    return 0, "", []
