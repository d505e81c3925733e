"""CUDA's C++ overloads and default arguments that HIP's API spells differently, by argument count.

``cuda_runtime.h`` adds C++ overloads and templates over the C API (and ``cuda_runtime_api.h`` gives defaults
in C++); HIPIFY's tables map names only, so ``cudaEventCreate(&e, flags)`` became ``hipEventCreate(&e, flags)``,
which does not compile (HIP has ``hipEventCreate(hipEvent_t*)`` only). Each rule here says, for a CUDA name
called with a given number of arguments, which HIP call to make instead, which arguments to add or drop, or
that it has to be rewritten by hand (a diagnostic, nothing changed).

The audit of cuda_runtime.h's C++ wrappers (CUDA 12) against HIP's hip_runtime_api.h (ROCm 6.x); those not
listed in ``RULES`` translate by name alone:
- cudaEventCreate(event, flags) -> hipEventCreateWithFlags (rule). HIPIFY's unit test
  tests/unit_tests/synthetic/runtime_functions.cu L341-344; the human AMD port of llm.c (anthonix/llm.c
  llmc/zero.cuh L457) made the same edit.
- cudaMallocHost(ptr, size, flags) -> hipHostMalloc(ptr, size, flags) (the tables' name; HIP's takes flags);
  cudaHostAlloc -> hipHostMalloc (compat.RENAMES); cudaMallocHost<T>/cudaHostAlloc<T>/cudaMalloc<T>/
  cudaMallocPitch<T>/cudaMallocManaged<T>(ptr, size, flags = cudaMemAttachGlobal): HIP has the same templates and
  defaults (hipMallocManaged flags __dparm(hipMemAttachGlobal)).
- cudaMallocAsync<T>(ptr, size, memPool, stream) -> hipMallocFromPoolAsync (rule; the 3-argument one is
  hipMallocAsync).
- cudaGraphInstantiate: CUDA 12's (exec, graph, flags = 0) vs HIP's (exec, graph, errorNode, logBuffer,
  bufferSize): 3 arguments -> hipGraphInstantiateWithFlags, 2 -> the 5-argument HIP call (rule); the CUDA 11
  5-argument call is HIP's. The driver's cuGraphInstantiate (a macro for cuGraphInstantiateWithFlags since
  CUDA 12) likewise.
- cudaMemcpyToSymbolAsync/cudaMemcpyFromSymbolAsync<T>(symbol, src, count, offset = 0, kind = ..., stream = 0):
  HIP's hipMemcpyTo/FromSymbolAsync take offset and kind without defaults (hip_runtime_api.h): the defaults are
  written out (rule). cudaMemcpyToSymbol/FromSymbol's defaults exist in HIP too.
- cudaFuncGetAttributes<T>, cudaFuncSetAttribute<T>, cudaFuncSetCacheConfig<T>, cudaFuncSetSharedMemConfig<T>,
  cudaLaunchKernel<T>, cudaLaunchCooperativeKernel<T>: the kernel goes as ``reinterpret_cast<const void*>``
  (compat.FUNC_PTR_ARG), which HIP's C calls take.
- cudaOccupancyMaxActiveBlocksPerMultiprocessor[WithFlags]<T>, cudaOccupancyMaxPotentialBlockSize[WithFlags]<T>,
  cudaOccupancyMaxPotentialBlockSizeVariableSMem[WithFlags]<UnaryFunction, T>: HIP has the same templates with
  the same defaults (HIPIFY's runtime_functions.cu L409-417, L823-828).
- cudaStreamAttachMemAsync<T>(stream, ptr, length = 0, flags = cudaMemAttachSingle): HIP has the defaults.
- cudaCreateChannelDesc<T>(): HIP has the template.
- cudaGetSymbolAddress<T>/cudaGetSymbolSize<T>/cudaMemcpyToSymbol<T>...: symbols wrapped in HIP_SYMBOL
  (compat.SYMBOL_ARG).
- cudaBindTexture<T, dim, mode>(...), cudaBindTexture2D, cudaBindTextureToArray, cudaUnbindTexture: texture
  references, removed in CUDA 12 and deprecated in HIP since 3.8: the tables' removed/deprecated diagnostics say
  so; rewrite with texture objects.
- cudaLaunchKernelEx<ExpTypes..., ActTypes...>(config, kernel, args...): not in HIPIFY's ROCm 6.3 tables (rule:
  a diagnostic with the rewrite).
- cudaOccupancyAvailableDynamicSMemPerBlock<T>, cudaOccupancyMaxPotentialClusterSize<T>,
  cudaOccupancyMaxActiveClusters<T>: no HIP counterpart in the tables (reported unsupported by name).
- cuOccupancyMaxPotentialBlockSize[WithFlags](.., func, blockSizeToDynamicSMemSize, dynamicSMemSize, ..): HIP's
  hipModuleOccupancyMaxPotentialBlockSize[WithFlags] has no callback argument: dropped when it is 0/NULL/nullptr,
  else reported (rule).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hipwizard.port.translation.lexer import matching

NULLS = {"0", "NULL", "nullptr", "0L", "(void*)0"}


@dataclass(frozen=True)
class Overload:
    """For a call with ``argc`` arguments: call ``hip`` (None: the tables' name), add ``append`` arguments,
    drop the argument at ``drop`` when it is a null constant, or (``manual``) only report ``manual``."""

    argc: int
    hip: str | None = None
    append: tuple[str, ...] = ()
    drop: int | None = None
    manual: str = ""


_TO_SYMBOL = "hipMemcpyHostToDevice"
_FROM_SYMBOL = "hipMemcpyDeviceToHost"
_GRAPH = (Overload(2, append=("nullptr", "nullptr", "0")), Overload(3, hip="hipGraphInstantiateWithFlags"))
_OCC_DROP = (Overload(6, drop=3), Overload(7, drop=3))
RULES: dict[str, tuple[Overload, ...]] = {
    "cudaEventCreate": (Overload(2, hip="hipEventCreateWithFlags"),),
    "cudaMallocAsync": (Overload(4, hip="hipMallocFromPoolAsync"),),
    "cudaGraphInstantiate": _GRAPH,
    "cuGraphInstantiate": _GRAPH,
    "cudaMemcpyToSymbolAsync": (Overload(3, append=("0", _TO_SYMBOL)), Overload(4, append=(_TO_SYMBOL,))),
    "cudaMemcpyFromSymbolAsync": (Overload(3, append=("0", _FROM_SYMBOL)), Overload(4, append=(_FROM_SYMBOL,))),
    "cuOccupancyMaxPotentialBlockSize": _OCC_DROP[:1],
    "cuOccupancyMaxPotentialBlockSizeWithFlags": _OCC_DROP[1:],
}
# Any argument count: CUDA's C++-only names with no HIP call of that name (reported, kept).
MANUAL = {
    "cudaLaunchKernelEx": ("cudaLaunchKernelEx is CUDA's C++ template over cudaLaunchKernelExC; HIPIFY's ROCm 6.3 "
                           "tables have no HIP counterpart: launch with hipLaunchKernelGGL (attributes set on the "
                           "kernel or stream), or hipLaunchKernelExC(&config, (const void*)kernel, args) where your "
                           "ROCm's hip_runtime_api.h declares it"),
}


@dataclass(frozen=True)
class CallSite:
    """The call after a name: ``open``/``close`` are the parentheses' offsets, ``args`` the top-level
    argument spans (start, end) in the text."""

    open: int
    close: int
    args: tuple[tuple[int, int], ...]


_OPEN = re.compile(r"\s*\(")


def call_site(masked: str, name_end: int) -> CallSite | None:
    """The call's argument spans when ``masked[name_end:]`` opens one (comments/strings blanked)."""
    m = _OPEN.match(masked, name_end)
    if m is None:
        return None
    open_pos = m.end() - 1
    close = matching(masked, open_pos, "(", ")")
    if close == -1:
        return None
    spans, start, depth = [], open_pos + 1, 0
    for i in range(open_pos + 1, close):
        ch = masked[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            spans.append((start, i))
            start = i + 1
    if spans or masked[start:close].strip():
        spans.append((start, close))
    return CallSite(open_pos, close, tuple(spans))


@dataclass(frozen=True)
class OverloadFix:
    """What to do at one call: the name to write, edits (start, end, new) after the name, or a message."""

    name: str | None
    edits: tuple[tuple[int, int, str], ...] = ()
    manual: str = ""


def overload_fix(name: str, text: str, masked: str, name_end: int) -> OverloadFix | None:
    """The fix for the CUDA call ``name`` ending at ``name_end`` (None: translate by name alone)."""
    if name in MANUAL:
        return OverloadFix(None, manual=MANUAL[name])
    rules = RULES.get(name)
    if not rules:
        return None
    site = call_site(masked, name_end)
    if site is None:
        return None
    rule = next((r for r in rules if r.argc == len(site.args)), None)
    if rule is None:
        return None
    edits: list[tuple[int, int, str]] = []
    if rule.append:
        edits.append((site.close, site.close, "".join(f", {a}" for a in rule.append)))
    if rule.drop is not None:
        a_start, a_end = site.args[rule.drop]
        arg = text[a_start:a_end].strip()
        if arg not in NULLS:
            return OverloadFix(None, manual=(
                f"{name}'s argument {rule.drop + 1} ({arg}, the per-block-size dynamic shared memory callback) has "
                f"no HIP counterpart: hipModuleOccupancyMaxPotentialBlockSize takes one dynamic shared memory size; "
                f"compute it for your block size and pass it instead"))
        prev_end = site.args[rule.drop - 1][1]
        edits.append((prev_end, a_end, ""))  # the comma before it and the argument
    return OverloadFix(rule.hip, tuple(edits))
