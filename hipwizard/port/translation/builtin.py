"""The built-in CUDA -> HIP translator: HIPIFY's name tables, include rewriting, launch syntax, argument rules.
cuDNN goes to MIOpen (as ``hipify --roc``): HIPIFY's default hipdnn* names are the obsolete hipDNN wrapper.

Used when neither hipify-clang nor hipify-perl is installed (the demo, CI, a laptop). Works on text, in
process (a few ms a file). Identifiers inside comments and string literals are left alone (hipify-perl
rewrites them). Names HIP lacks are kept, ``unsupported``; names are checked against a target HIP version (given,
else the newest the tables know): ``too_new`` ("needs ROCm >= X (you target Y)") or ``opt_in`` (``compat.fact``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hipwizard.errors import UserError
from hipwizard.port.model import Diagnostic, DiagnosticKind
from hipwizard.port.translation.compat import (
    FUNC_PTR_ARG,
    HEADER_PATHS,
    RENAMES,
    ROC_COMPLEX,
    ROC_HOST_TYPES,
    ROC_LIBRARY_USE,
    SOLVER_ENUMS,
    SYMBOL_ARG,
    VERSIONED_RENAMES,
    fact,
    newest_known,
    version_message,
)
from hipwizard.port.translation.edits import Edit, EditLog, Span, apply_edits, carry_mask
from hipwizard.port.translation.launches import launch_edits
from hipwizard.port.translation.lexer import (
    TOKEN,
    enclosing_call,
    line_of,
    line_starts,
    mask_non_code,
    matching,
)
from hipwizard.port.translation.overloads import MANUAL, RULES, overload_fix
from hipwizard.port.translation.tables import HipifyTables, load_tables, parse_version


@dataclass(frozen=True)
class TranslateOptions:
    """hipify-perl's options where they mean the same, plus the HIP runtime version to check against."""

    hip_kernel_execution_syntax: bool = False  # rewrite <<<>>> to hipLaunchKernelGGL
    roc: bool = False  # translate to rocBLAS/rocRAND/... instead of hipBLAS/hipRAND/...
    experimental: bool = False  # also translate names whose HIP counterpart is experimental
    hip_version: str | None = None  # e.g. "6.2": report HIP APIs newer than this runtime


@dataclass
class Translation:
    text: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)
    spans: list[Span] = field(default_factory=list)  # what changed, in the original's offsets (the edit log)
    masked_original: str | None = None  # mask_non_code(original), computed once for the risk rules too


INCLUDE = r"""(?P<include>^[ \t]*\#[ \t]*include[ \t]*(?P<open>[<"])(?P<header>[^>"\n]+)[>"](?P<rest>[^\n]*)(?:\n|\Z))"""
SCAN = re.compile(INCLUDE + "|" + TOKEN.pattern, re.DOTALL | re.MULTILINE)
# Names that look like the CUDA API but are not in the tables: still reported, never silently kept.
# (CUDA_* / CHECK_CUDA style names are left out: in real code they are the project's own macros.)
CUDA_LOOKING = re.compile(r"^(?:cuda[A-Z]\w*|cu[A-Z][a-z]\w*|CU_[A-Z]\w*)$")
DEFINED_NAME = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.MULTILINE)

RUNTIME_HEADER = "hip/hip_runtime.h"
# Headers whose HIP counterpart appeared later than HIP itself (measured: HIP 5.2 has no hip_bf16.h).
HEADER_MIN_HIP = {"hip/hip_bf16.h": "6.0", "hipblaslt.h": "5.5", "hip/hip_fp8.h": "6.0"}
KERNEL_MARKERS = re.compile(r"__global__|<<<")
_DEFINE_LINE = re.compile(r"^[ \t]*#[ \t]*define\b(?:[^\n]*\\\n)*[^\n]*", re.MULTILINE)
_HIP_API_NAME = re.compile(r"\bhip[A-Z]\w*")
_RUNTIME_INCLUDED = re.compile(r'#\s*include\s*[<"]hip/hip_runtime\.h[>"]')
_ANY_HIP_INCLUDE = re.compile(r'#\s*include\s*[<"](?:hip|roc|rccl|miopen)\w*[/.]')
DEVICE_MARKERS = re.compile(r"__global__|__device__|<<<|\bthreadIdx\b|\bblockIdx\b|__shared__|__syncthreads")


def _runtime_include(out: str, masked: _Masked, stats: dict[str, int], *, header: bool) -> str:
    """The runtime include a translated file needs at its top, or "".

    nvcc includes cuda_runtime.h in every .cu by itself; hipcc does not (threadIdx, __syncthreads and <<<>>> are
    undeclared without it): a file that defines or launches kernels needs it even when nothing was renamed. A header
    that names the runtime's API (cudaError_t, cudaSuccess) with no HIP include of its own relied on that too,
    through its includer. C-style projects include such headers inside ``extern "C" {`` (where HIP's C++ templates
    cannot go; nvcc's include came before the block), so a header of runtime API use with no device code of its
    own (macros that spell __device__ for includers do not count: prna's cu.h) gets it wrapped in ``extern "C++"``.
    ``masked`` (comments and strings blanked) is computed only when a marker is in ``out``."""
    needed = stats["converted"] + stats["launches"] or KERNEL_MARKERS.search(out) and KERNEL_MARKERS.search(masked.text)
    device = DEVICE_MARKERS.search(out) and DEVICE_MARKERS.search(masked.text)
    host_api = header and stats["converted"] and not _ANY_HIP_INCLUDE.search(out)
    if not needed or not (device or host_api) or _RUNTIME_INCLUDED.search(out):
        return ""
    eol = "\r\n" if "\r\n" in out[:4096] else "\n"
    include = f'#include "{RUNTIME_HEADER}"{eol}'
    if header and _HIP_API_NAME.search(out) and not DEVICE_MARKERS.search(_DEFINE_LINE.sub("", masked.text)):
        include = f"#ifdef __cplusplus{eol}extern \"C++\" {{{eol}#endif{eol}{include}#ifdef __cplusplus{eol}}}{eol}#endif{eol}"
    return include


class BuiltinTranslator:
    """Translate one file's text. Thread-safe; reuse one instance for a tree."""

    name = "builtin"

    def __init__(self, options: TranslateOptions | None = None, tables: HipifyTables | None = None):
        self.options = options or TranslateOptions()
        self.tables = tables or load_tables()
        self.target = self.options.hip_version or newest_known()
        hip_version = parse_version(self.target)
        if hip_version is None:
            raise UserError(f"{self.target!r} is not a HIP version (e.g. 6.2)", field="hip_version")
        self.hip_version: tuple[int, ...] = hip_version

    def translate(self, text: str, *, header: bool = False) -> Translation:
        """``header``: the file is a header (``.h``, ``.cuh``, ...): one with no device code gets the runtime include
        too when it uses the runtime's API with no HIP include, guarded for an includer's ``extern "C"`` block."""
        diags: dict[tuple, Diagnostic] = {}
        stats = {"converted": 0, "unsupported": 0, "headers": 0, "launches": 0, "arg_rules": 0, "overloads": 0}
        starts = line_starts(text)
        own_names = set(DEFINED_NAME.findall(text))  # the file's own macros are not CUDA APIs
        seen_groups: set[str] = set()
        opts = self.options
        roc_types = {}  # under --roc, in a file calling rocBLAS/rocSPARSE/rocSOLVER: their value types
        if opts.roc and ROC_LIBRARY_USE.search(text) is not None:
            roc_types = dict(ROC_COMPLEX)

        def report(kind: DiagnosticKind, name: str, offset: int, message: str) -> None:
            line = line_of(starts, offset)
            diags.setdefault((kind, name, line), Diagnostic(kind, name, line, message))

        # Every pass records its replacements; the log folds them onto the original's offsets for the hunks.
        edits: list[Edit] = []
        known = self.tables.__contains__
        masked_original = mask_non_code(text)  # for the renames' context; later the argument rules' and risks'
        if roc_types and not DEVICE_MARKERS.search(masked_original):
            roc_types.update(ROC_HOST_TYPES)
        later: list[Edit] = []  # an overload's added or dropped arguments, after its name
        for m in SCAN.finditer(text):
            kind = m.lastgroup  # the outermost group that matched (a nested group closes before it)
            if kind == "ident":
                name = m.group()
                # fast path: most identifiers are neither in the tables nor CUDA-looking
                if not known(name) and not name.startswith(("cu", "CU", "nv")) and name not in DROPPED \
                        and not name.startswith("__"):
                    continue
                fix = overload_fix(name, text, masked_original, m.end()) if name in OVERLOADED else None
                if fix is not None and fix.manual:
                    stats["unsupported"] += known(name)  # a name not in the tables is counted as unsupported below
                    report("unsupported", name, m.start(), fix.manual)
                if name in roc_types:
                    stats["converted"] += 1
                    edits.append(Edit(m.start(), m.end(), roc_types[name]))
                    continue
                new = self._identifier(m, masked_original, report, stats, own_names)
                if fix is not None and not fix.manual and new != name:
                    stats["overloads"] += 1
                    if fix.name:
                        new = fix.name
                        self._check_version(name, new, self.tables.get("cuda" + fix.name[3:]) or self.tables.get(name),
                                            m.start(), report)
                    later.extend(Edit(*e) for e in fix.edits)
            elif kind == "include":
                new = self._include(m, seen_groups, report, stats)
            else:
                continue
            if new != m.group(0):
                edits.append(Edit(m.start(), m.end(), new))
        if later:
            edits = sorted(edits + later, key=lambda e: (e.start, e.end))
        log = EditLog(text)
        log.then(edits)
        if opts.hip_kernel_execution_syntax:
            edits = launch_edits(log.text)
            log.then(edits)
            stats["launches"] = len(edits)
        # The original's masking, carried over the edits so far, serves the argument rules and the device-code
        # test (the argument rules only wrap arguments: no comment, string or device marker added).
        masked = _Masked(log.text, lambda: carry_mask(masked_original, log.text, log.spans))
        edits = argument_rule_edits(log.text, masked)
        log.then(edits)
        stats["arg_rules"] = len(edits)
        out = log.text
        include = _runtime_include(out, masked, stats, header=header)
        if include:
            log.then([Edit(0, 0, include)])
            stats["headers"] += 1
        return Translation(log.text, sorted(diags.values(), key=lambda d: (d.line or 0, d.name)), stats, log.spans,
                           masked_original)

    # -- pieces -------------------------------------------------------------------------------------

    def _identifier(self, m: re.Match, masked: str, report, stats, own_names: set[str]) -> str:
        name = m.group("ident")
        if name in DROPPED:  # keywords HIP-Clang rejects (C++17 'register') or lacks (__grid_constant__)
            return ""  # its neighbouring blanks stay: `register int x` -> ` int x`
        version = fact(name)
        if version is not None:
            said = version_message(version, self.target)
            if said:
                report(said[0], name, m.start(), said[1])
            return name
        renamed = VERSIONED_RENAMES.get(name)
        if renamed is not None and self.hip_version >= (parse_version(renamed[0]) or (0,)):
            stats["converted"] += 1
            return renamed[1]
        if name == "cub" and masked.startswith("::", m.end()):
            stats["converted"] += 1
            return "hipcub"
        mapping = self.tables.get(name)
        if mapping is None:
            if CUDA_LOOKING.match(name) and name not in own_names:
                stats["unsupported"] += 1
                report("unsupported", name, m.start(), f"{name} is not in HIPIFY's tables: no known HIP counterpart")
            return name
        if mapping.cuda_removed:
            report("removed", name, m.start(), f"{name} was removed in CUDA {mapping.cuda_removed}")
        elif mapping.cuda_deprecated:
            report("deprecated", name, m.start(), f"{name} is deprecated since CUDA {mapping.cuda_deprecated}")
        dnn = mapping.family == "dnn"  # cuDNN goes to MIOpen: hipDNN, HIPIFY's default for it, is not in ROCm
        target = (mapping.roc.strip("-") if dnn else
                  mapping.roc if self.options.roc and mapping.roc else RENAMES.get(name, mapping.hip))
        if name in SOLVER_ENUMS and not self.options.roc and enclosing_call(masked, m.start()).startswith("cusolver"):
            target = SOLVER_ENUMS[name]
        if not target:
            stats["unsupported"] += 1
            why = ("no MIOpen counterpart in HIPIFY's tables (its hipdnn* name is the obsolete hipDNN wrapper): "
                   "rewrite it with MIOpen's API") if dnn else "no HIP counterpart (HIPIFY marks it unsupported)"
            report("unsupported", name, m.start(), f"{name} has {why}")
            return name
        if mapping.experimental and not self.options.experimental:
            report("warning", name, m.start(),
                   f"{name} -> {target} is experimental in HIP; kept as is (translate with --experimental)")
            return name
        self._check_version(name, target, mapping, m.start(), report)
        if target != name:
            stats["converted"] += 1
        return target

    def _check_version(self, name, target, mapping, offset, report) -> None:
        added = parse_version(mapping.hip_added)
        removed = parse_version(mapping.hip_removed)
        if added and added > self.hip_version:
            report("too_new", name, offset,
                   f"{target} needs ROCm >= {mapping.hip_added} (you target {self.target})")
        elif removed and removed <= self.hip_version:
            report("removed", name, offset, f"{target} was removed in HIP {mapping.hip_removed}")
        elif mapping.hip_deprecated and (parse_version(mapping.hip_deprecated) or (99,)) <= self.hip_version:
            report("deprecated", name, offset, f"{target} is deprecated since HIP {mapping.hip_deprecated}")

    def _include(self, m: re.Match, seen_groups: set[str], report, stats) -> str:
        header = m.group("header").strip()
        mapping = self.tables.header(header)
        whole = m.group(0)
        if mapping is None and header in HEADER_PATHS:
            return self._header_path(m, header, whole, stats)
        if mapping is None:
            if header.startswith(("cub/", "thrust/")) or header.startswith("cuda/"):
                if header.startswith(("cub/", "cuda/")):
                    report("unsupported", header, m.start(), f"<{header}> has no HIP header mapping")
            elif header.startswith("cooperative_groups/"):  # reduce.h, scan.h, memcpy_async.h: hipcc stops here
                # (rocm.docs.amd.com HIP how-to/hip_runtime_api/cooperative_groups; assets/cuda_libraries.yaml)
                stats["unsupported"] += 1
                report("unsupported", header, m.start(),
                       f"<{header}> has no HIP counterpart: HIP's cooperative groups are all in "
                       "hip/hip_cooperative_groups.h, without cg::reduce / scan / memcpy_async (write the reduction "
                       "with shuffles, or hipCUB's WarpReduce/BlockReduce)")
            return whole
        roc = self.options.roc or mapping.group == "dnn"  # cuDNN -> MIOpen, as for names
        target = mapping.roc if roc and mapping.roc not in ("", "-") else mapping.hip
        if target == "-":
            stats["unsupported"] += 1
            report("unsupported", header, m.start(), f"<{header}> has no HIP counterpart")
            return whole
        group = mapping.group if mapping.group not in ("", "-") else ""
        stats["headers"] += 1
        need = HEADER_MIN_HIP.get(target)
        if need and (parse_version(need) or (0,)) > self.hip_version:
            report("too_new", header, m.start(), f"<{target}> needs ROCm >= {need} (you target {self.target})")
        if target in HEADER_PATHS and self.hip_version >= (6, 0, 0):
            target = HEADER_PATHS[target]
        key = f"{group}:{target}"  # under --roc one group's headers can go to several (curand_* -> rocrand_*)
        if not target or (group and key in seen_groups):
            return ""  # dropped: HIP needs no such include, or one of its group is already there
        if group:
            seen_groups.add(key)
        close = ">" if m.group("open") == "<" else '"'
        prefix = whole[: m.start("header") - m.start()]
        return f"{prefix}{target}{close}{m.group('rest')}" + ("\n" if whole.endswith("\n") else "")

    def _header_path(self, m: re.Match, header: str, whole: str, stats) -> str:  # where today's ROCm installs it
        if self.hip_version < (6, 0, 0) and header != "nccl.h":
            return whole
        stats["headers"] += 1
        start, end = m.start("header") - m.start(), m.end("header") - m.start()
        return whole[:start] + HEADER_PATHS[header] + whole[end:]


DROPPED = {"register", "__grid_constant__"}
OVERLOADED = frozenset(RULES) | frozenset(MANUAL)


# -- argument rules ---------------------------------------------------------------------------------


_ARG_RULES_RX = re.compile(r"\b(" + "|".join(sorted({**SYMBOL_ARG, **FUNC_PTR_ARG}, key=len, reverse=True)) + r")\s*\(")


def apply_argument_rules(text: str) -> tuple[str, int]:
    """Wrap symbol arguments in HIP_SYMBOL() and kernel pointers in reinterpret_cast<const void*>()."""
    edits = argument_rule_edits(text)
    return apply_edits(text, edits), len(edits)


class _Masked:
    """``mask_non_code(source)`` (or what ``compute`` gives), computed on first use."""

    def __init__(self, source: str, compute=None):
        self.source = source
        self._compute = compute
        self._text: str | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = self._compute() if self._compute else mask_non_code(self.source)
        return self._text


def argument_rule_edits(text: str, masked: _Masked | None = None) -> list[Edit]:
    """The wrappings ``apply_argument_rules`` makes, in order (a call nested in an argument already
    wrapped is left to the outer one). ``masked``: the text's masking, when already at hand."""
    rules = {**{f: (i, "HIP_SYMBOL({})") for f, i in SYMBOL_ARG.items()},
             **{f: (i, "reinterpret_cast<const void*>({})") for f, i in FUNC_PTR_ARG.items()}}
    pattern = _ARG_RULES_RX
    if not pattern.search(text):
        return []
    masked_text = (masked or _Masked(text)).text
    edits: list[Edit] = []
    for m in pattern.finditer(masked_text):
        index, wrapper = rules[m.group(1)]
        open_pos = m.end() - 1
        close = matching(masked_text, open_pos, "(", ")")
        if close == -1:
            continue
        inner_start = open_pos + 1
        offsets, depth = [inner_start], 0
        for i in range(inner_start, close):
            ch = masked_text[i]
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            elif ch == "," and depth == 0:
                offsets.append(i + 1)
        if index >= len(offsets):
            continue
        a_start = offsets[index]
        a_end = offsets[index + 1] - 1 if index + 1 < len(offsets) else close
        arg = text[a_start:a_end]
        core = arg.strip()
        head = wrapper.split("{")[0]
        if not core or core.startswith(head):
            continue
        lead = arg[: len(arg) - len(arg.lstrip())]
        trail = arg[len(arg.rstrip()):]
        edits.append(Edit(a_start, a_end, lead + wrapper.format(core) + trail))
    kept: list[Edit] = []
    for e in sorted(edits, key=lambda e: (e.start, -e.end)):
        if not kept or e.start >= kept[-1].end:
            kept.append(e)
    return kept


def translate_text(text: str, options: TranslateOptions | None = None) -> Translation:
    """Convenience: translate one text with the shipped tables."""
    return BuiltinTranslator(options).translate(text)
