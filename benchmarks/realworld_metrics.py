"""Measures for ``port_realworld.py``: pair HeCBench's ``-cuda``/``-hip`` files, find the human edits beyond
renaming, map them to CUDA lines, and score translations and risk flags against them.

Method (also in docs/benchmarks.md):

- **Pairs**: ``src/<bench>-cuda/<path>`` and ``src/<bench>-hip/<path>`` with the same relative path, C/C++/CUDA
  sources only; identical pairs are counted, not scored. The **held-out split** is every 5th benchmark by sorted
  name (``sorted(names)[4::5]``), fixed before any rule was written; rules are written from the in-sample split.
- **Normalising away renaming and cosmetics**: each line is masked (comments, strings and char literals blanked),
  tokenised, each identifier mapped through HIPIFY's tables (the renaming any hipify does) and then folded
  (lower case, ``cuda`` -> ``hip``: a project's own ``CHECK_CUDA`` -> ``CHECK_HIP`` rename is cosmetic);
  ``#include`` lines keep their header (mapped through the header table); the runtime headers
  (``cuda_runtime.h``, ``hip/hip_runtime.h``, ...) and lines left empty are dropped. Whitespace never counts.
- **Edits**: ``difflib`` aligns the normalised CUDA lines with the normalised HIP lines; every non-equal block is
  one edit, placed on the CUDA lines it replaces or deletes (an insertion: on the two CUDA lines around it). A
  block whose two sides hold the same tokens once the launch spelling is set aside (``hipLaunchKernelGGL``,
  ``dim3``, ``HIP_KERNEL_NAME``, brackets, commas, ``0`` defaults) is cosmetic (a launch rewrite or a reflowed
  line) and dropped. What is left is a **substantive edit**.
- **Recall**: edits with a flagged CUDA line within +-``NEAR`` lines of their range. **Precision**: flagged places
  (distinct CUDA lines holding at least one flag) within +-``NEAR`` lines of an edit. **Density**: flagged places
  per 1,000 CUDA lines.
- **Similarity** to the human HIP: lines (whitespace-normalised, blank lines and comments out) aligned with
  ``difflib``: 2*matched/total; tokens: the same over tokens, matched lines count whole and each replaced
  block is aligned token by token.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import lru_cache
from pathlib import Path

from hipwizard.port.translation.lexer import mask_non_code
from hipwizard.port.translation.tables import HipifyTables

SOURCE_SUFFIXES = {".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc", ".c", ".inc"}
NEAR = 3
RUNTIME_HEADERS = {"cuda_runtime.h", "cuda.h", "cuda_runtime_api.h", "hip/hip_runtime.h", "hip/hip_runtime_api.h",
                   "device_launch_parameters.h", "hip_runtime.h"}
_TOK = re.compile(r"[A-Za-z_]\w*|\.?\d(?:[\w.']|[eEpP][+-])*|<<<|>>>|::|->|<<=|>>=|<<|>>|[-+*/%&|^!=<>]=|&&|\|\||\+\+|--|\S")
_INCLUDE = re.compile(r"^\s*#\s*include\s*[<\"]([^>\"]+)[>\"]")
# hipify's own spelling: launch syntax and its argument rules (HIP_SYMBOL, the kernel pointer cast)
_LAUNCH_NOISE = {"hiplaunchkernelggl", "dim3", "hip_kernel_name", "(", ")", ",", "0", "<<<", ">>>", ";", "hip_symbol",
                 "reinterpret_cast", "<", ">", "const", "void", "*"}


def held_out(names: list[str]) -> set[str]:
    """The fixed held-out split: every 5th benchmark by sorted name."""
    return set(sorted(names)[4::5])


@dataclass
class Pair:
    bench: str
    rel: str
    cuda: str
    hip: str
    held_out: bool = False


def find_pairs(src: Path) -> tuple[list[Pair], int, list[str]]:
    """(differing pairs, identical pairs, benchmark names having both folders) under a HeCBench ``src``."""
    names = sorted(p.name[:-5] for p in src.glob("*-cuda") if (src / f"{p.name[:-5]}-hip").is_dir())
    held = held_out(names)
    pairs, same = [], 0
    for name in names:
        cdir, hdir = src / f"{name}-cuda", src / f"{name}-hip"
        for cpath in sorted(cdir.rglob("*")):
            if cpath.suffix not in SOURCE_SUFFIXES or not cpath.is_file():
                continue
            rel = cpath.relative_to(cdir).as_posix()
            hpath = hdir / rel
            if not hpath.is_file():
                continue
            c = cpath.read_text(encoding="utf-8", errors="surrogateescape")
            h = hpath.read_text(encoding="utf-8", errors="surrogateescape")
            if c == h:
                same += 1
            else:
                pairs.append(Pair(name, rel, c, h, name in held))
    return pairs, same, names


def normalise(text: str, tables: HipifyTables) -> list[tuple[int, tuple[str, ...]]]:
    """(1-based line, folded tokens) for each line that still says something after renaming and cosmetics."""
    raw = text.split("\n")
    out = []
    for i, line in enumerate(mask_non_code(text).split("\n")):
        m = _INCLUDE.match(raw[i]) if "#" in line else None
        if m:
            header = m.group(1).strip()
            mapped = tables.header(header)
            header = mapped.hip if mapped and mapped.hip not in ("", "-") else header
            if header in RUNTIME_HEADERS:
                continue
            out.append((i + 1, ("#include", fold(header))))
            continue
        if FINDER != "v1" and "dim3" in line:
            line = _DIM3_ONES.sub(r"dim3(\1)", _DIM3_ONES.sub(r"dim3(\1)", line))
        toks = tuple(_fold_token(t, tables) for t in _TOK.findall(line))
        if toks:
            out.append((i + 1, toks))
    return out


# Edit finder v2 (issue 15, second pass): which spellings count as renaming. v1 folded ``cuda`` -> ``hip`` only.
# v2 also folds a project's own names built on a CUDA library's prefix (``check_cusparse`` -> ``check_hipsparse``,
# ``cublasHandle`` -> ``hipblasHandle``, ``#ifdef CURAND`` -> ``#ifdef HIPRAND``: in-sample bicgstab, ising, qkv,
# blas-gemmEx) and HIP's deprecated aliases of one function (/usr/include/hip/hip_runtime_api.h, HIP 5.2:
# hipMallocHost and hipHostAlloc "use hipHostMalloc instead", hipFreeHost "use hipHostFree instead"; in-sample
# mf-sgd, mallocFree, base64e). Both are renames a human makes by taste, not changes a port needs.
FINDER = "v2"
_LIB_PREFIXES = (("cublas", "hipblas"), ("cusparse", "hipsparse"), ("curand", "hiprand"), ("cufft", "hipfft"),
                 ("cusolver", "hipsolver"))
# dim3's y and z default to 1: dim3(x, y, 1) is dim3(x, y) (in-sample prna: the human's hipLaunchKernelGGL drops
# the 1 the CUDA launch spelt out)
_DIM3_ONES = re.compile(r"dim3\s*\(([^(),]+(?:,[^(),]+)?),\s*1\s*\)")
_ALIASES = {"hipmallochost": "hiphostmalloc", "hiphostalloc": "hiphostmalloc", "hipfreehost": "hiphostfree"}


def fold(name: str, tables: HipifyTables | None = None) -> str:
    out = name.lower().replace("cuda", "hip")
    if FINDER == "v1":
        return out
    if "cu" in out:
        lib = out
        for a, b in _LIB_PREFIXES:
            lib = lib.replace(a, b)
        # a library name HIPIFY cannot translate that the human wrote as the HIP API is an edit, not a rename
        if lib != out and (tables is None or lib not in _hip_api_names(tables)):
            out = lib
    return _ALIASES.get(out, out)


@lru_cache(maxsize=2)
def _hip_api_names(tables: HipifyTables) -> frozenset[str]:
    return frozenset(row[0].lower() for row in tables._rows.values() if row[0])


def _fold_token(tok: str, tables: HipifyTables) -> str:
    if tok == "cub":  # cub:: -> hipcub:: is hipify's renaming too
        return "hipcub"
    if tok[0].isalpha() or tok[0] == "_":
        mapping = tables.get(tok)
        if mapping is not None and mapping.hip:
            return fold(mapping.hip)
        return fold(tok, tables)
    return tok


@dataclass
class Edit:
    lo: int  # CUDA lines the edit covers (1-based, inclusive)
    hi: int
    old: list[str]
    new: list[str]
    kind: str = ""

    def near(self, line: int, slack: int = NEAR) -> bool:
        return self.lo - slack <= line <= self.hi + slack


def cosmetic(old: list[tuple[str, ...]], new: list[tuple[str, ...]]) -> bool:
    """Same tokens on both sides once the launch spelling is set aside (a launch rewrite, a reflowed line)."""
    a = Counter(t for toks in old for t in toks if t not in _LAUNCH_NOISE)
    b = Counter(t for toks in new for t in toks if t not in _LAUNCH_NOISE)
    return a == b


def human_edits(cuda: str, hip: str, tables: HipifyTables) -> list[Edit]:
    """The substantive edits a human made, placed on CUDA lines."""
    a, b = normalise(cuda, tables), normalise(hip, tables)
    sm = SequenceMatcher(None, [t for _, t in a], [t for _, t in b], autojunk=False)
    edits = []
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            continue
        old, new = [t for _, t in a[i1:i2]], [t for _, t in b[j1:j2]]
        if cosmetic(old, new):
            continue
        if i2 > i1:
            lo, hi = a[i1][0], a[i2 - 1][0]
        else:  # an insertion: between the CUDA lines around it
            lo = a[i1 - 1][0] if i1 > 0 else 1
            hi = a[i1][0] if i1 < len(a) else lo
        edit = Edit(lo, hi, [" ".join(t) for t in old], [" ".join(t) for t in new])
        edit.kind = edit_kind(old, new)
        edits.append(edit)
    return edits


# the kind of an edit, from the tokens it adds or removes (first match wins)
_KINDS = (
    ("asm", re.compile(r"^(?:asm|__asm__|__asm|volatile)$")),
    ("warp-size", re.compile(r"^(?:warpsize|\w*warp\w*|\w*lane\w*|32|64|31|63|0x1f|0x3f|5|6|32u|64u)$")),
    ("mask/shuffle", re.compile(r"^(?:__shfl\w*|__ballot\w*|__activemask|__any\w*|__all\w*|__popc\w*|__ffs\w*|"
                                r"0xffffffff\w*|\w*mask\w*)$")),
    ("types bf16/half/fp8", re.compile(r"^\w*(?:bf16|bfloat|half|fp8|e4m3|e5m2)\w*$")),
    ("arch/version gate", re.compile(r"^(?:__hip_arch__|__cuda_arch__|hip_version|__hipcc\w*|__hip_platform\w*|"
                                     r"major|minor|__hip_device_compile__|__gfx\w*|__grid_constant__)$")),
    ("headers", re.compile(r"^#include$")),
    ("library API", re.compile(r"^(?:hipblas\w*|rocblas\w*|hipsparse\w*|hipsolver\w*|hipfft\w*|hiprand\w*|"
                               r"rocrand\w*|hipcub|rocprim|thrust|nccl\w*|rccl\w*)$")),
    ("atomics", re.compile(r"^\w*atomic\w*$")),
    ("timing/clock", re.compile(r"^(?:clock\w*|\w*elapsed\w*|chrono|hipevent\w*|\w*clockrate\w*|__nanosleep)$")),
    ("shared memory", re.compile(r"^(?:__shared__|hip_dynamic_shared\w*|extern)$")),
    ("launch config", re.compile(r"^(?:dim3|<<<|>>>|hiplaunchkernelggl|__launch_bounds__|\w*block\w*|\w*grid\w*|"
                                 r"\w*thread\w*)$")),
)


def edit_kind(old: list[tuple[str, ...]], new: list[tuple[str, ...]]) -> str:
    a = Counter(t for toks in old for t in toks)
    b = Counter(t for toks in new for t in toks)
    changed = set((a - b) | (b - a))
    if FINDER != "v1" and any(toks[:1] == ("#include",) for toks in (*old, *new)):
        changed.add("#include")  # a header moved (v1 missed these: '#include' is on both sides)
    for kind, rx in _KINDS:
        if any(rx.match(t) for t in changed):
            return kind
    return "other"


@dataclass
class Score:
    edits: int = 0
    caught: int = 0
    translated: int = 0  # edits the built-in translation already makes
    handled: int = 0  # flagged or already translated
    places: int = 0
    places_near: int = 0
    lines: int = 0
    by_kind: dict[str, list[int]] = field(default_factory=dict)  # kind -> [edits, caught]
    by_rule: dict[str, list[int]] = field(default_factory=dict)  # rule -> [places, near an edit]
    missed: list[tuple[str, Edit]] = field(default_factory=list)
    far: list[tuple[str, int, str]] = field(default_factory=list)  # (file, CUDA line, rule) of places near no edit

    def add(self, name: str, edits: list[Edit], flags: dict[int, set[str]], lines: int,
            translated: str | None = None, tables: HipifyTables | None = None) -> None:
        """Fold one file in: its edits, its flags ({CUDA line: rule ids}) and its CUDA line count; given the
        built-in's ``translated`` text, also count the edits the translation already made."""
        self.lines += lines
        self.edits += len(edits)
        have = {" ".join(t) for _, t in normalise(translated, tables)} if translated is not None and tables else set()
        for e in edits:
            hit = any(e.near(line) for line in flags)
            self.caught += hit
            if have and e.new and all(x in have for x in e.new) and not any(x in have for x in e.old if x not in e.new):
                self.translated += 1
                self.handled += 1
            else:
                self.handled += hit
            k = self.by_kind.setdefault(e.kind, [0, 0])
            k[0] += 1
            k[1] += hit
            if not hit:
                self.missed.append((name, e))
        for line, rules in flags.items():
            near = any(e.near(line) for e in edits)
            self.places += 1
            self.places_near += near
            if not near:
                self.far.extend((name, line, r) for r in sorted(rules))
            for r in rules:
                slot = self.by_rule.setdefault(r, [0, 0])
                slot[0] += 1
                slot[1] += near

    @property
    def recall(self) -> float:
        return self.caught / self.edits if self.edits else 0.0

    @property
    def precision(self) -> float:
        return self.places_near / self.places if self.places else 0.0

    @property
    def per_kloc(self) -> float:
        return 1000 * self.places / self.lines if self.lines else 0.0


# -- similarity ---------------------------------------------------------------------------------------

def _code_lines(text: str) -> list[str]:
    return [" ".join(x.split()) for x in mask_non_code(text).split("\n") if x.strip()]


def similarity(candidate: str, reference: str) -> tuple[float, float]:
    """(token similarity, line similarity) of ``candidate`` to ``reference``: 2*matched/total."""
    a, b = _code_lines(candidate), _code_lines(reference)
    sm = SequenceMatcher(None, a, b, autojunk=False)
    ta = [_TOK.findall(x) for x in a]
    tb = [_TOK.findall(x) for x in b]
    lines_matched = tok_matched = 0
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            lines_matched += i2 - i1
            tok_matched += sum(len(t) for t in ta[i1:i2])
        elif op == "replace":
            x = [t for toks in ta[i1:i2] for t in toks]
            y = [t for toks in tb[j1:j2] for t in toks]
            if len(x) * len(y) <= 4_000_000:
                tok_matched += sum(blk.size for blk in SequenceMatcher(None, x, y, autojunk=False).get_matching_blocks())
    n_tok = sum(map(len, ta)) + sum(map(len, tb))
    line_sim = 2 * lines_matched / (len(a) + len(b)) if a or b else 1.0
    return (2 * tok_matched / n_tok if n_tok else 1.0), line_sim
