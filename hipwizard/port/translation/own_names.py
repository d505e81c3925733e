"""Names a project defines itself that look like the CUDA API (llm.c's ``cudaCheck``, ``cudaFreeCheck``, a local
``cudaStatus``): never "unsupported in HIP".

A name counts as the project's own when some file of the tree defines it: a ``#define``, or a declaration —
the name right after a type (an identifier, ``*``, ``&`` or ``>``) and before ``(``, ``=``, ``;``, ``,``, ``[``,
``{`` or ``)`` — outside comments and strings, and it is not in HIPIFY's tables (a name of CUDA's API stays
CUDA's even where a project wraps it). On llm.c (karpathy/llm.c) 491 of the 532 "unsupported" lines were
``cudaCheck``/``cudaCheck_``/``cudaFreeCheck``/``cudaMallocConditionallyManaged``, all defined in
llmc/cuda_common.h and llmc/cuda_utils.cuh.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hipwizard.port.model import FileTranslation
from hipwizard.port.translation.lexer import mask_non_code
from hipwizard.port.translation.tables import load_tables

CANDIDATE = r"(?:cuda[A-Z_]\w*|cu[A-Z][a-z]\w*|CU_[A-Z]\w*|CUDA_\w+|cublas\w*|cudnn\w*|nccl\w*|curand\w*)"
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(" + CANDIDATE + r")\b", re.MULTILINE)
# a type word (or * & >) then the name then what follows a declared name
_DECLARED = re.compile(r"([A-Za-z_]\w*|[*&>])[ \t*&]*[ \t*&]\s*(" + CANDIDATE + r")\s*[(=;,\[{)]")
_PP_LINE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.MULTILINE)  # a directive, continuation lines included
_NOT_TYPES = frozenset({"return", "else", "case", "throw", "new", "delete", "goto", "sizeof", "co_return",
                        "co_yield", "do", "typeid", "decltype", "alignof", "not", "and", "or"})


def defined_names(text: str, masked: str | None = None) -> set[str]:
    """The CUDA-looking names ``text`` defines (see the module doc), whether or not HIPIFY knows them."""
    if "cu" not in text and "CU" not in text and "nccl" not in text:
        return set()
    masked = masked if masked is not None else mask_non_code(text)
    names = set(_DEFINE.findall(masked))
    for m in _DECLARED.finditer(_PP_LINE.sub("", masked)):  # a macro's body is no declaration
        if m.group(1) not in _NOT_TYPES:
            names.add(m.group(2))
    return names


def project_names(texts: Iterable[str]) -> set[str]:
    """The names the project's files define that are not CUDA's own API (not in HIPIFY's tables)."""
    tables = load_tables()
    out: set[str] = set()
    for text in texts:
        out |= defined_names(text)
    return {n for n in out if n not in tables}


def drop_own_unsupported(files: list[FileTranslation], names: set[str]) -> int:
    """Remove the "unsupported" diagnostics for ``names`` from ``files`` (their counts too); how many went."""
    dropped = 0
    if not names:
        return 0
    for ft in files:
        kept = [d for d in ft.diagnostics if not (d.kind == "unsupported" and d.name in names)]
        gone = len(ft.diagnostics) - len(kept)
        if gone:
            ft.diagnostics = kept
            ft.stats["unsupported"] = max(0, ft.stats.get("unsupported", 0) - gone)
            dropped += gone
    return dropped
