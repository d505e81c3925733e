"""The rules for a ``.py`` file that does not parse (Python 2, a template, a syntax error): line patterns over
the code with its comments removed (``tokenize``; when even that fails, the raw lines). Flags only: without
a tree no fix can be sure of its context."""

from __future__ import annotations

import io
import re
import tokenize

from hipwizard.port.pyscan.catalogue import PY_RULES_BY_ID as R
from hipwizard.port.pyscan.model import PyFinding

_IMPORT = r"^\s*(?:import|from)\s+"
PATTERNS: tuple[tuple[str, re.Pattern], ...] = tuple((rule_id, re.compile(p)) for rule_id, p in (
    ("PY_CUDA_VERSION_GATE", r"\btorch\.version\.cuda\b"),
    ("PY_CUDA_HOME", r"\bCUDA_HOME\b"),
    ("PY_DEVICE_CAPABILITY", r"\bget_device_capability\s*\("),
    ("PY_CUDNN_VERSION", r"\bcudnn\.version\s*\(\s*\)\s*[<>=!]"),
    ("PY_NVML", _IMPORT + r"(?:pynvml|nvidia_smi|py3nvml)\b"),
    ("PY_NVIDIA_SMI", r"[\"']\s*(?:\S*/)?nvidia-smi\b"),
    ("PY_COMPILE_MAX_AUTOTUNE", r"\bmode\s*=\s*[\"']max-autotune"),
    ("PY_INDUCTOR_CUDA_ONLY", r"\bmax_autotune_gemm_backends\b.*\bCUTLASS\b|\b_inductor\.config\.cuda\."),
    ("PY_ALLOC_CONF", r"expandable_segments\s*:\s*True|cudaMallocAsync|pinned_use_cuda_host_register|release_lock_on_cudamalloc"),
    ("PY_TF32", r"\ballow_tf32\s*=\s*True|set_float32_matmul_precision\s*\(\s*[\"'](?:high|medium)"),
    ("PY_FLASH_ATTN", _IMPORT + r"flash_attn"),
    ("PY_BITSANDBYTES", _IMPORT + r"bitsandbytes\b"),
    ("PY_APEX", _IMPORT + r"apex\b"),
    ("PY_XFORMERS", _IMPORT + r"xformers\b"),
    ("PY_TRITON", _IMPORT + r"triton\b"),
    ("PY_NVTX", _IMPORT + r"nvtx\b|\btorch\.cuda\.nvtx\b"),
))


def code_lines(text: str) -> list[str]:
    """``text``'s lines with comments blanked (by the tokenizer; the raw lines when it gives up)."""
    lines = text.splitlines()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                row, col = tok.start
                lines[row - 1] = lines[row - 1][:col]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return lines


def scan_lines(text: str) -> list[PyFinding]:
    """Findings by line pattern, ordered by line then rule."""
    out = [PyFinding(R[rule_id], i + 1) for i, line in enumerate(code_lines(text))
           for rule_id, rx in PATTERNS if rx.search(line)]
    return sorted(out, key=lambda f: (f.line, f.rule.rule_id))
