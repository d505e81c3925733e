"""What a kernel does with each pointer: its role (in, out, in-out) and how far it reaches (an extent).

Roles come from ``const`` and writes in the body (``p[i] = ``, ``p[i] += ``, ``*p = ``, ``atomicAdd(&p[i], ..)``,
through aliases such as ``T* row = p + off`` or ``reinterpret_cast<float4*>(p)``; a pointer handed to another
function may be written there, so it counts as in-out).

An extent is a C++ expression over the spec's dimensions: an upper bound of every index the body uses,
plus one. It is built from the index expressions: a thread or block index is bounded by the launch geometry, a
local by its guard (``i < n`` in a ``for`` or ``if``) or else by its definition, products and sums by their
parts' bounds, ``a % b`` by ``b``, ``a / b`` by ``a``'s bound over ``b``. Over-estimates are harmless (the
driver allocates, fills and compares only what the reference wrote); an index that cannot be bounded leaves the
extent to a fallback the user may edit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from hipwizard.parity.kernels.find import Kernel
from hipwizard.parity.kernels.source import matching

_NUM = re.compile(r"(?:0[xX][0-9a-fA-F]+|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)[uUlLfF]*")
_TOKEN = re.compile(r"\s*(?:(?P<num>" + _NUM.pattern + r")|(?P<id>[A-Za-z_]\w*(?:\s*(?:\.|->)\s*[A-Za-z_]\w*)*"
                    r"(?:\s*::\s*[A-Za-z_]\w*)*)|(?P<op><<|>>|<=|>=|==|!=|&&|\|\||[-+*/%()?:<>,!~&|^\[\]]))")
_CASTS = {"int", "unsigned", "long", "size_t", "float", "double", "int64_t", "uint64_t", "int32_t", "uint32_t",
          "unsigned int", "long long", "unsigned long long", "short", "char"}
_WRITE_AFTER = re.compile(r"\s*(?:\.\s*[A-Za-z_]\w*\s*)?(?:=(?!=)|[-+*/%|&^]=|<<=|>>=|\+\+|--)")
_INDEX_TYPES = {"int", "unsigned", "long", "size_t", "int64_t", "uint64_t", "int32_t", "uint32_t", "unsigned int",
                "long long", "short", "char", "unsigned char", "int8_t", "uint8_t", "int16_t", "uint16_t"}
INDEX_RANGE = 8  # an int input buffer holds values in [0, INDEX_RANGE): indices stay inside what is allocated
_ATOMIC = re.compile(r"\batomic\w*\s*\(\s*&?\s*\(?\s*([A-Za-z_]\w*)")


@dataclass
class Geometry:
    """The launch geometry as C++ expressions (the spec's dimensions and the kernel's own scalar names)."""

    grid: tuple[str, str, str]
    block: tuple[str, str, str]


class _Unbounded(Exception):
    pass


def _tokens(expr: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    expr = expr.strip()
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            raise _Unbounded(expr[pos:pos + 20])
        kind = m.lastgroup or "op"
        out.append((kind, re.sub(r"\s+", "", m.group(kind))))
        pos = m.end()
        while pos < len(expr) and expr[pos].isspace():
            pos += 1
    return out


class _Bounder:
    """sup(expr): a C++ expression bounding the value of ``expr`` from above (for non-negative indices)."""

    def __init__(self, kernel: Kernel, geometry: Geometry, dims: set[str], template: dict[str, str]):
        self.body = kernel.body
        self.template = template
        self.geometry = geometry
        self.dims = dims
        self.scalars = {p.name for p in kernel.params if not p.pointer}
        self.int_buffers = {p.name for p in kernel.params if p.pointer and p.base in _INDEX_TYPES}
        self.depth = 0

    def sup(self, expr: str) -> str:
        self.depth += 1
        try:
            if self.depth > 12:
                raise _Unbounded(expr)
            toks = _tokens(expr)
            value, rest = self._ternary(toks, 0)
            if rest != len(toks):
                raise _Unbounded(expr)
            return value
        finally:
            self.depth -= 1

    # a little precedence climbing: ?: , || && (ignored as bounds), comparisons -> unbounded, + -, * / %, unary
    def _ternary(self, t, i):
        cond, i = self._sum(t, i)
        if i < len(t) and t[i][1] == "?":
            a, i = self._ternary(t, i + 1)
            if i >= len(t) or t[i][1] != ":":
                raise _Unbounded("?:")
            b, i = self._ternary(t, i + 1)
            return f"hw_max({a}, {b})", i
        return cond, i

    def _sum(self, t, i):
        left, i = self._product(t, i)
        while i < len(t) and t[i][1] in ("+", "-"):
            op = t[i][1]
            right, i = self._product(t, i + 1)
            left = f"{left} + {right}" if op == "+" else left  # a - b <= a for non-negative b
        return left, i

    def _product(self, t, i):
        left, i = self._unary(t, i)
        while i < len(t) and t[i][1] in ("*", "/", "%", "<<", ">>", "&"):
            op = t[i][1]
            if op in ("/", "%", ">>", "&"):
                value, i = self._unary(t, i + 1, value=True)
                left = {"/": f"hw_cdiv({left}, {value})", "%": value, ">>": f"({left} >> {value})",
                        "&": value}[op]
            else:
                right, i = self._unary(t, i + 1)
                left = f"({left}) * ({right})" if op == "*" else f"({left} << {right})"
        return left, i

    def _unary(self, t, i, value=False):
        if i >= len(t):
            raise _Unbounded("end")
        kind, tok = t[i]
        if tok in ("+",):
            return self._unary(t, i + 1, value)
        if tok == "(":
            # a cast "(int)" or a parenthesised expression
            j = i + 1
            words = []
            while j < len(t) and t[j][0] == "id":
                words.append(t[j][1])
                j += 1
            if words and j < len(t) and t[j][1] == ")" and " ".join(words) in _CASTS:
                return self._unary(t, j + 1, value)
            inner, j = self._ternary(t, i + 1)
            if j >= len(t) or t[j][1] != ")":
                raise _Unbounded("(")
            return f"({inner})", j + 1
        if kind == "num":
            return re.sub(r"[uUlLfF]+$", "", tok) if "." not in tok else str(int(float(tok.rstrip("fF")))), i + 1
        if kind == "id":
            if i + 1 < len(t) and t[i + 1][1] == "(":
                return self._call(tok, t, i + 1)
            return self._name(tok, value), i + 1
        raise _Unbounded(tok)

    def _call(self, name, t, i):
        depth, j, args, cur = 0, i, [], []
        while j < len(t):
            if t[j][1] == "(":
                depth += 1
                if depth == 1:
                    j += 1
                    continue
            elif t[j][1] == ")":
                depth -= 1
                if depth == 0:
                    break
            if t[j][1] == "," and depth == 1:
                args.append(cur)
                cur = []
            else:
                cur.append(t[j])
            j += 1
        args.append(cur)
        texts = [" ".join(tok for _, tok in a) for a in args if a]
        short = name.split("::")[-1]
        if name.endswith((".thread_rank", ".size", ".num_threads")):
            return self._name(name, False), j + 1
        if name.endswith((".meta_group_rank", ".meta_group_size")):
            return self._name(name, False), j + 1
        if short in ("min", "fminf", "umin", "MIN") and len(texts) == 2:
            return f"hw_min({self.sup(texts[0])}, {self.sup(texts[1])})", j + 1
        if short in ("max", "fmaxf", "umax", "MAX") and len(texts) == 2:
            return f"hw_max({self.sup(texts[0])}, {self.sup(texts[1])})", j + 1
        if short in ("int", "size_t", "static_cast") or short.startswith("__float2int") and len(texts) == 1:
            return self.sup(texts[0]), j + 1
        if short.lower() in ("ceil_div", "cdiv", "div_up", "divup", "ceildiv") and len(texts) == 2:
            return f"hw_cdiv({self.sup(texts[0])}, {self.sup(texts[1])})", j + 1
        raise _Unbounded(name)

    def _name(self, name: str, value: bool) -> str:
        axis = {"x": 0, "y": 1, "z": 2}
        if name.startswith(("threadIdx.", "blockDim.")):
            return f"({self.geometry.block[axis.get(name[-1], 0)]})"
        if name.startswith(("blockIdx.", "gridDim.")):
            return f"({self.geometry.grid[axis.get(name[-1], 0)]})"
        if name in ("warpSize",):
            return "32"
        if name in self.template:
            return f"({self.template[name]})"
        if name.endswith((".thread_rank", ".size", ".num_threads")):
            b = self.geometry.block
            return f"({b[0]}) * ({b[1]}) * ({b[2]})"
        if name.endswith((".meta_group_rank", ".meta_group_size")):
            b = self.geometry.block
            return f"hw_cdiv(({b[0]}) * ({b[1]}) * ({b[2]}), 32)"
        if "::" in name:
            return name  # a constant of a type or namespace of the source: the driver sees it
        if name in self.scalars or name in self.dims:
            return name
        guard = _guard(self.body, name)
        if guard is not None:
            return self.sup(guard)
        definition = _definition(self.body, name)
        if definition is not None:
            if any(re.search(rf"(?<![\w.]){re.escape(p)}\s*\[", definition) for p in self.int_buffers):
                return "HW_INDEX_RANGE"  # an index read from an int buffer: its values are drawn below this
            return self.sup(definition)
        if re.fullmatch(r"[A-Z_][A-Z0-9_]*", name):
            return name  # a macro or constant of the source: the driver sees it
        raise _Unbounded(name)


def _until(code: str, start: int, stops: str) -> str:
    """Text from ``start`` to the first of ``stops`` at bracket depth 0."""
    depth = 0
    for i in range(start, len(code)):
        c = code[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return code[start:i]
            depth -= 1
        elif depth == 0 and c in stops:
            if c == "&" and code.startswith("&&", i) or c == "|" and code.startswith("||", i) or c not in "&|":
                return code[start:i]
    return code[start:]


@lru_cache(maxsize=4096)
def _guard(body: str, name: str) -> str | None:
    m = re.search(rf"\b{re.escape(name)}\s*<(?![<=])\s*", body)
    if m:
        return _until(body, m.end(), ";?&|,").strip() or None
    m = re.search(rf"\b{re.escape(name)}\s*<=\s*", body)
    if m:
        return f"{_until(body, m.end(), ';?&|,').strip()} + 1"
    m = re.search(rf"\bif\s*\(\s*{re.escape(name)}\s*>=\s*", body)
    if m:
        return _until(body, m.end(), ";?&|,").strip() or None
    for m in re.finditer(rf"(?<![->])>\s*{re.escape(name)}\b", body):
        before = re.search(r"([A-Za-z_][\w.]*)\s*$", body[max(0, m.start() - 80):m.start()])
        if before:
            return before.group(1)
    return None


@lru_cache(maxsize=4096)
def _definition(body: str, name: str) -> str | None:
    m = re.search(rf"(?<![\w.>])(?:[A-Za-z_][\w:<>]*\s+(?:const\s+)?){re.escape(name)}\s*=(?!=)\s*", body)
    if not m:
        m = re.search(rf"\b(?:int|unsigned|long|size_t|auto|int64_t|uint64_t)\b[^;]*?,\s*{re.escape(name)}\s*=(?!=)\s*",
                      body)
    if not m:
        return None
    text = _until(body, m.end(), ";,").strip()
    return text or None


# --- roles and index expressions ---------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def aliases(body: str, name: str) -> dict[str, str]:
    """Local pointers derived from ``name``: alias -> the offset added to it ("0" for a cast)."""
    found: dict[str, str] = {}
    todo = [(name, "0")]
    while todo:
        base, base_off = todo.pop()
        pat = re.compile(rf"([A-Za-z_]\w*)\s*=\s*(?:\(\s*[\w\s:<>]*\*\s*\)\s*|reinterpret_cast\s*<[^>]*>\s*\(\s*|"
                         rf"\(\s*)?(?:&\s*{re.escape(base)}\s*\[([^\]]*)\]|{re.escape(base)}\b(\s*\+\s*[^;)]+)?)")
        for m in pat.finditer(body):
            alias = m.group(1)
            if alias in found or alias == name:
                continue
            before = body[max(0, m.start() - 80):m.start()]
            if "*" not in before.split(";")[-1] and "auto" not in before.split(";")[-1]:
                continue
            off = (m.group(2) or (m.group(3) or "").strip().lstrip("+").strip() or "0").strip()
            total = off if base_off == "0" else f"{base_off} + {off}"
            found[alias] = total
            todo.append((alias, total))
    return found


@lru_cache(maxsize=4096)
def index_expressions(body: str, name: str) -> tuple[str, ...]:
    """Every ``name[expr]`` index and every ``name + expr`` offset in ``body``."""
    out = []
    for m in re.finditer(rf"(?<![\w.])\b{re.escape(name)}\s*\[", body):
        close = matching(body, m.end() - 1)
        if close != -1:
            out.append(body[m.end():close])
    for m in re.finditer(rf"(?<![\w.])\b{re.escape(name)}\s*\+(?!\+)=?\s*", body):
        out.append(_until(body, m.end(), ";,?"))
    return tuple(e.strip() for e in out if e.strip())


def written(body: str, name: str) -> tuple[bool, bool, bool]:
    """(written, read, handed to a call) for pointer ``name`` and its aliases."""
    names = [name, *aliases(body, name)]
    wrote = read = handed = False
    for n in names:
        for m in re.finditer(rf"(?<![\w.])\b{re.escape(n)}\s*\[", body):
            close = matching(body, m.end() - 1)
            after = body[close + 1:close + 40] if close != -1 else ""
            w = _WRITE_AFTER.match(after)
            if w:
                wrote = True
                if w.group(0).strip().lstrip(".").strip() != "=" and "=" in w.group(0) and "==" not in w.group(0):
                    read = read or not re.fullmatch(r"\s*(?:\.\s*\w+\s*)?=", w.group(0))
            else:
                read = True
        if re.search(rf"\*\s*\(?\s*{re.escape(n)}\b[^;=]*\)?\s*=(?!=)", body) and re.search(
                rf"(?:^|[;{{}}]\s*)\*\s*\(?\s*{re.escape(n)}\b", body):
            wrote = True
        for m in _ATOMIC.finditer(body):
            if m.group(1) == n:
                wrote = read = True
        for m in re.finditer(rf"(?<![\w.]){re.escape(n)}\b(?!\s*\[)", body):
            before = body[max(0, m.start() - 160):m.start()]
            call = re.search(r"([A-Za-z_]\w*)\s*(?:<[^<>;()]*>)?\s*\(([^();{}]*)$", before)
            if not call:
                continue
            callee = call.group(1)
            if callee in ("if", "for", "while", "switch", "return", "sizeof", "reinterpret_cast", "static_cast",
                          "__ldg", "min", "max") or callee.startswith("atomic"):
                continue
            handed = True
    return wrote, read, handed


def extent(kernel: Kernel, name: str, geometry: Geometry, dims: set[str],
           template: dict[str, str] | None = None) -> str | None:
    """A C++ expression bounding the elements of pointer ``name`` the body reaches, or None."""
    bounder = _Bounder(kernel, geometry, dims, template or {})
    terms: list[str] = []
    exprs = [(e, "0") for e in index_expressions(kernel.body, name)]
    for alias, off in dict(aliases(kernel.body, name)).items():
        exprs += [(e, off) for e in index_expressions(kernel.body, alias)]
        if not index_expressions(kernel.body, alias):
            exprs.append(("0", off))
    if not exprs:
        return None
    try:
        for expr, off in exprs:
            s = bounder.sup(expr)
            if off != "0":
                s = f"{bounder.sup(off)} + {s}"
            if s not in terms:
                terms.append(s)
    except _Unbounded:
        return None
    if len(terms) == 1:
        return f"{terms[0]} + 1"
    body = terms[0]
    for term in terms[1:]:
        body = f"hw_max({body}, {term})"
    return f"{body} + 1"
