"""Rules on settings held in strings: allocator options (``PYTORCH_CUDA_ALLOC_CONF``), Inductor's GEMM
backends, and commands that run ``nvidia-smi``. Each takes the string and says what is wrong with it and,
where the fix is mechanical, the string's corrected source text."""

from __future__ import annotations

import re

ALLOC_VARS = frozenset({"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", "PYTORCH_ALLOC_CONF"})
# key -> its hipified spelling, the only one older ROCm builds of torch know (c10/cuda/CUDAAllocatorConfig.h
# keeps both "to keep BC for ROCm")
HIP_SPELLING = {"pinned_use_cuda_host_register": "pinned_use_hip_host_register",
                "release_lock_on_cudamalloc": "release_lock_on_hipmalloc"}
_ON = re.compile(r"^\s*(?:true|1)\s*$", re.I)


def alloc_conf_problems(value: str) -> list[str]:
    """What ROCm builds of torch reject or treat differently in an allocator setting string ('k:v,k:v')."""
    out = []
    for part in value.split(","):
        key, _, val = part.partition(":")
        key = key.strip()
        if key == "expandable_segments" and _ON.match(val):
            out.append("expandable_segments:True")
        elif key == "backend" and val.strip() == "cudaMallocAsync":
            out.append("backend:cudaMallocAsync")
        elif key in HIP_SPELLING:
            out.append(key)
    return out


def hip_spelled(literal: str) -> str:
    """A string literal's source text with the CUDA key spellings replaced by the HIP ones."""
    for cuda, hip in HIP_SPELLING.items():
        literal = literal.replace(cuda, hip)
    return literal


_CUTLASS = re.compile(r"\s*,?\s*\bCUTLASS\b\s*,?", re.I)


def without_cutlass(literal: str) -> str | None:
    """The source text of a ``max_autotune_gemm_backends`` literal without CUTLASS (None when it has none)."""
    quote = re.match(r"^[rRbBuU]*(['\"]{1,3})", literal)
    if not quote or not re.search(r"\bCUTLASS\b", literal, re.I):
        return None
    q = quote.group(1)
    head, body = literal[:quote.end()], literal[quote.end():len(literal) - len(q)]
    kept = [b.strip() for b in body.split(",") if b.strip() and b.strip().upper() != "CUTLASS"]
    return head + (",".join(kept) or "ATEN,TRITON") + q


_SMI_START = re.compile(r"^\s*(?:\S*/)?nvidia-smi(?:\.exe)?(?:\s|$)")
_SMI_ANY = re.compile(r"(?<![\w-])nvidia-smi\b")


def runs_nvidia_smi(value: str, in_exec_call: bool) -> bool:
    """A command (or program name) that is nvidia-smi, or mentions it inside a call that runs programs."""
    return bool(_SMI_START.match(value)) or (in_exec_call and bool(_SMI_ANY.search(value)))


EXEC_CALLS = ("subprocess.", "os.system", "os.popen", "os.exec", "os.spawn", "shutil.which", "commands.getoutput",
              "asyncio.create_subprocess")
