"""A kernel's spec: what a generated driver needs to call it, drafted from the source, edited by the user.

Drafting: template arguments from the launch site (else the template's default, else ``float`` / 256 for a
block-like name / 4); each pointer a buffer with its element type, role and extent; each scalar a value (an int a
*dimension* of the sweep, a floating scalar the launch site's literal or 1); launch geometry from the first launch
site, host locals substituted and host expressions mapped onto the kernel's own arguments; host names left over
become dimensions too. Dimensions named like a block size are fixed (their drafted value), the others are swept.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from hipwizard.parity.kernels.bounds import Geometry, extent, written
from hipwizard.parity.kernels.find import Kernel, LaunchSite
from hipwizard.parity.kernels.source import IDENT, identifiers, normalise, split_top

FLOAT_TYPES = {"float": 4, "double": 8, "half": 2, "__half": 2, "__nv_bfloat16": 2, "nv_bfloat16": 2,
               "hip_bfloat16": 2, "__hip_bfloat16": 2, "floatX": 4, "bf16": 2}
INT_TYPES = {"int": 4, "unsigned": 4, "unsigned int": 4, "uint": 4, "long": 8, "unsigned long": 8, "long long": 8,
             "unsigned long long": 8, "size_t": 8, "int64_t": 8, "uint64_t": 8, "int32_t": 4, "uint32_t": 4,
             "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2, "char": 1, "unsigned char": 1,
             "signed char": 1, "int8_t": 1, "uint8_t": 1, "bool": 1, "long int": 8, "unsigned long int": 8,
             "ptrdiff_t": 8}
VECTORS = {"float2": ("float", 2), "float3": ("float", 3), "float4": ("float", 4), "double2": ("double", 2),
           "double4": ("double", 4), "int2": ("int", 2), "int3": ("int", 3), "int4": ("int", 4),
           "uint2": ("unsigned", 2), "uint4": ("unsigned", 4), "half2": ("half", 2), "__half2": ("half", 2),
           "__nv_bfloat162": ("__nv_bfloat16", 2), "uchar4": ("unsigned char", 4), "char4": ("char", 4),
           "short2": ("short", 2)}
BLOCKISH = re.compile(r"(?i)block|thread|^bs$|tpb|^nt$|warps?_per|^wg|group_size|^BLOCK")
_CONTROL = {"sizeof", "if", "for", "while", "return", "dim3", "min", "max", "std", "ceil", "floor", "int", "float",
            "unsigned", "size_t", "long", "double", "const", "static_cast", "true", "false", "nullptr"}


@dataclass
class Buffer:
    name: str
    type: str  # the element type as the kernel sees it (template parameters substituted)
    role: str  # "in", "out" or "inout"
    extent: str  # a C++ expression over the dimensions: elements the kernel reaches


@dataclass
class Scalar:
    name: str
    type: str
    value: str  # a C++ expression: a dimension's name, or a literal


@dataclass
class KernelSpec:
    kernel: str
    file: str  # the original source, relative to the original tree
    line: int
    template_args: list[str]
    buffers: list[Buffer]
    scalars: list[Scalar]
    dims: dict[str, int]  # dimension -> its drafted (fixed) value; swept ones are varied by the sweep
    swept: list[str]  # the dimensions the sweep varies (innermost last)
    grid: list[str]
    block: list[str]
    shared_bytes: str  # dynamic shared memory, a C++ expression ("0" if none)
    launch_site: str = ""  # "file:line" the geometry came from, "" = drafted without one
    notes: list[str] = field(default_factory=list)
    unsupported: str = ""  # why no driver can be generated ("" = supported)
    order: str = ""  # "b" (buffer) or "s" (scalar) per kernel parameter, in declaration order
    reference: str = ""  # the user's oracle: a torch expression over the buffers ("" = the float64 twin)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> KernelSpec:
        d = dict(d)
        d["buffers"] = [Buffer(**b) for b in d.get("buffers", [])]
        d["scalars"] = [Scalar(**s) for s in d.get("scalars", [])]
        return cls(**d)


def element(type_text: str) -> tuple[str, int] | None:
    """(scalar element, lanes) of a buffer element type; None for a struct or anything unknown."""
    if type_text in VECTORS:
        return VECTORS[type_text]
    if type_text in FLOAT_TYPES or type_text in INT_TYPES:
        return type_text, 1
    return None


def _template_args(kernel: Kernel, site: LaunchSite | None, resolve) -> tuple[list[str], list[str]]:
    args, notes = [], []
    explicit = site.template_args if site else []
    for i, tp in enumerate(kernel.template):
        value = ""
        if i < len(explicit):
            value = resolve(explicit[i])
            if value and any(n for n in identifiers(value) if n not in _CONTROL and not n[0].isupper()
                             and tp.kind != "type" and not n.startswith("__")):
                value = ""
            if tp.kind == "type" and (value in {t.name for t in kernel.template}
                                      or re.fullmatch(r"[A-Z][A-Za-z0-9]?", value)):
                value = ""  # the host function's own template parameter (kernel<T><<<..>>> inside a template)
        if not value:
            value = tp.default or ("float" if tp.kind == "type" else "256" if BLOCKISH.search(tp.name) else "4")
            notes.append(f"template argument {tp.name} = {value} (drafted: edit to taste)")
        args.append(value)
    return args, notes


def draft(kernel: Kernel, site: LaunchSite | None, source_dims: dict[str, int] | None = None,
          types: dict[str, str] | None = None) -> KernelSpec:
    """The drafted spec of ``kernel`` (``site``: its first launch site; ``source_dims``: literals found in
    the source for host names, e.g. ``int B = 8``)."""
    notes: list[str] = []
    source_dims = source_dims or {}
    scalars_by_name = {p.name: p for p in kernel.params if not p.pointer}
    rename: dict[str, str] = {}  # host text -> kernel name
    extra: set[str] = set()

    def resolve(expr: str, depth: int = 0) -> str:
        """A host expression with host locals substituted and host names mapped onto the kernel's scalars."""
        if site is None:
            return expr
        text = expr
        for _ in range(6):
            changed = False
            for m in list(re.finditer(r"(?<![\w.])([A-Za-z_]\w*)\s*\.\s*([xyz])\b", text))[::-1]:
                d = site.definitions.get(m.group(1))
                if d is not None:  # a dim3's component
                    inner = re.fullmatch(r"dim3\s*[({](.*)[)}]", d.strip(), re.S)
                    parts = [*split_top(inner.group(1) if inner else d), "1", "1", "1"]
                    text = text[:m.start()] + f"({parts['xyz'.index(m.group(2))]})" + text[m.end():]
                    changed = True
            for name in set(identifiers(text)):
                d = site.definitions.get(name)
                if name in rename:
                    continue  # passed to the kernel as is: the kernel's own name for it
                if d is not None and "argv" not in d and "[" not in d and "->" not in d and d != name and \
                        not d.startswith("{"):
                    text = re.sub(rf"(?<![\w.]){re.escape(name)}\b", f"({d})" if not IDENT.fullmatch(d) else d, text)
                    changed = True
            if not changed:
                break
        for host, kname in sorted(rename.items(), key=lambda kv: -len(kv[0])):
            if not IDENT.fullmatch(host):
                text = normalise(text).replace(host, kname)
        out = []
        pos = 0
        for m in IDENT.finditer(text):
            name = m.group(0)
            before = text[:m.start()].rstrip()
            after = text[m.end():].lstrip()
            if before.endswith((".", "->", "::")) or after.startswith(("(", "::", "<")):
                continue
            if name in rename:
                out.append(text[pos:m.start()] + rename[name])
                pos = m.end()
            elif name in scalars_by_name or name in _CONTROL:
                continue
            elif name in site.host_params or name in site.definitions:  # (before the macro test: B, NH, C)
                new = name if name not in scalars_by_name else f"{name}_host"
                extra.add(new)
                out.append(text[pos:m.start()] + new)
                pos = m.end()
        out.append(text[pos:])
        return "".join(out)

    if site is not None:
        for arg, p in zip(site.args, kernel.params, strict=False):
            if p.pointer:
                continue
            host = normalise(arg)
            if IDENT.fullmatch(host) or host not in rename:
                rename.setdefault(host, p.name)
    template_args, tnotes = _template_args(kernel, site, resolve)
    notes += tnotes
    subst = {tp.name: a for tp, a in zip(kernel.template, template_args, strict=False)}

    types = types or {}

    def concrete(type_text: str) -> str:
        t = subst.get(type_text, type_text)
        resolved = types.get(t, t)
        return resolved if element(resolved) is not None and element(t) is None else t

    # launch geometry
    if site is not None:
        cfg = [resolve(c) for c in site.config]
        grid, block = _dim3(cfg[0]), _dim3(cfg[1])
        shared = cfg[2] if len(cfg) > 2 and cfg[2] not in ("", "0") else "0"
        launch = f"{site.path}:{site.line}"
    else:
        first = next((p.name for p in reversed(kernel.params) if not p.pointer and p.base in INT_TYPES), "")
        block = ["256", "1", "1"]
        grid = [f"hw_cdiv({first}, 256)" if first else "1", "1", "1"]
        shared = "0"
        launch = ""
        notes.append("no launch site in the project: geometry drafted as one thread per element of "
                     f"{first or 'one block'}")
    if re.search(r"\bextern\s+__shared__", kernel.body) and shared == "0":
        shared = f"({block[0]}) * ({block[1]}) * 8"
        notes.append("dynamic shared memory with no size at the launch: drafted as 8 bytes per thread")
    # dimensions: int scalars and host names the geometry kept
    int_scalars = [p.name for p in kernel.params if not p.pointer and concrete(p.base) in INT_TYPES]
    dims_all = set(int_scalars) | extra
    geometry = Geometry(tuple(grid), tuple(block))  # type: ignore[arg-type]
    buffers, unsupported = [], ""
    for p in kernel.params:
        base = concrete(p.base)
        if not p.pointer:
            continue
        if element(base) is None:
            unsupported = unsupported or f"buffer {p.name} has element type {base} (not a number or a vector)"
        wrote, read, handed = written(kernel.body, p.name)
        role = "in" if p.const or not (wrote or handed) else ("out" if wrote and not read and not handed else "inout")
        ext = extent(kernel, p.name, geometry, dims_all, subst)
        if ext is None:
            ext = _fallback(grid, block)
            notes.append(f"extent of {p.name} not found from its indices: drafted as one element per thread")
        buffers.append(Buffer(p.name, base, role, ext))
    if not any(b.role != "in" for b in buffers):
        notes.append("no buffer is written: nothing to compare")
    scalars = []
    for i, p in enumerate(kernel.params):
        if p.pointer:
            continue
        base = concrete(p.base)
        if base in INT_TYPES:
            scalars.append(Scalar(p.name, base, p.name))
        elif base in FLOAT_TYPES:
            lit = site.args[i] if site and i < len(site.args) else ""
            lit = resolve(lit) if lit else ""
            value = lit if re.fullmatch(r"[-+]?[\d.]+(?:[eE][-+]?\d+)?[fF]?", lit.strip()) else (
                "1e-5" if "eps" in p.name.lower() else "1.0")
            scalars.append(Scalar(p.name, base, value))
        else:
            unsupported = unsupported or f"scalar {p.name} has type {base} (not a number)"
            scalars.append(Scalar(p.name, base, "0"))
    used = " ".join([*(b.extent for b in buffers), *grid, *block, shared])
    dims: dict[str, int] = {}
    swept = []
    for name in [*int_scalars, *sorted(extra)]:
        fixed = BLOCKISH.search(name) is not None or not re.search(rf"\b{re.escape(name)}\b", used)
        literal = source_dims.get(name.removesuffix("_host"), 0)
        if fixed:
            dims[name] = literal if literal > 0 else (256 if BLOCKISH.search(name) else 1)
        else:
            dims[name] = literal if literal > 0 else 4
            swept.append(name)
    swept = _inner_last(swept, grid)
    order = "".join("b" if p.pointer else "s" for p in kernel.params)
    return KernelSpec(kernel.name, kernel.path, kernel.line, template_args, buffers, scalars, dims, swept,
                      list(grid), list(block), shared, launch, notes, unsupported, order)


def _inner_last(swept: list[str], grid: list[str]) -> list[str]:
    """The swept dimensions with those the grid does not count last: a row-wise kernel (a block per row, its threads
    over the columns) gets its column count straddled over 32/64 lanes, not its row count."""
    text = " ".join(grid)
    counted = [n for n in swept if re.search(rf"\b{re.escape(n)}\b", text)]
    free = [n for n in swept if n not in counted]
    return counted + free if counted and free else swept


def _dim3(expr: str) -> list[str]:
    e = expr.strip()
    while e.startswith("(") and e.endswith(")") and len(split_top(e[1:-1])) == 1 and _closes_last(e):
        e = e[1:-1].strip()  # (dim3(1, n)): a substituted local keeps its parentheses
    m = re.fullmatch(r"dim3\s*[({](.*)[)}]", e, re.S)
    parts = split_top(m.group(1)) if m else [e]
    if m and len(parts) == 1 and re.match(r"[(\s]*dim3\b", parts[0]):
        return _dim3(parts[0])  # dim3(block1D) with block1D a dim3 local
    parts = [p for p in parts if p] + ["1", "1", "1"]
    return parts[:3]


def _closes_last(e: str) -> bool:
    """Does the opening parenthesis at 0 close at the very end (not "(a) * (b)")?"""
    depth = 0
    for i, ch in enumerate(e):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            return i == len(e) - 1
    return False


def _fallback(grid: list[str], block: list[str]) -> str:
    return " * ".join(f"({g})" for g in (*grid, *block) if g != "1") or "1"


def source_literals(code: str) -> dict[str, int]:
    """Host names given a small literal in the source (``int B = 8;``), for drafting dimension values."""
    out: dict[str, int] = {}
    for m in re.finditer(r"\b(?:const\s+)?(?:int|size_t|long|unsigned)\s+([A-Za-z_]\w*)\s*=\s*(\d+)\s*;", code):
        v = int(m.group(2))
        if 0 < v <= 4096:
            out.setdefault(m.group(1), v)
    return out
