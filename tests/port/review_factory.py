"""Test data for the review: FileTranslations of any original/translated pair, hunks made by the engine's
``split_hunks`` (lines keep their endings), flags added by hand so each test controls them.
"""

from __future__ import annotations

from pathlib import Path

from hipwizard.port.model import FileTranslation, Hunk, RiskFlag
from hipwizard.port.review.state import ReviewState
from hipwizard.port.translation.hunks import split_hunks


def make_hunks(path: str, original: str, translated: str, flags: dict[int, RiskFlag] | None = None) -> list[Hunk]:
    """The engine's hunks (``split_hunks``); ``flags`` maps a hunk's index to a flag it carries."""
    hunks = split_hunks(path, original, translated)
    for n, f in (flags or {}).items():
        if n < len(hunks):
            hunks[n].flags.append(RiskFlag(f.rule_id, f.severity, f.reason, f.hint, f.source, hunks[n].new_start))
    return hunks


def translation(path: str, original: str, translated: str, flags=None) -> FileTranslation:
    return FileTranslation(path, original, translated, "test", make_hunks(path, original, translated, flags))


WARP = RiskFlag("WARP32_LITERAL", "high", "warp size hard-coded to 32", "use warpSize", "HIP porting guide")

KERNEL = """#include <cuda_runtime.h>
#include <cstdio>

#define WARP_SIZE 32

__global__ void scale(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

int main() {
  float* d;
  cudaMalloc(&d, 1024 * sizeof(float));
  scale<<<4, 256>>>(d, 1024);
  cudaDeviceSynchronize();
  cudaFree(d);
  return 0;
}
"""


def hipify_like(text: str) -> str:
    """A tiny stand-in for a translation (the review does not care how the text was made)."""
    out = text.replace("cuda_runtime.h", "hip/hip_runtime.h").replace("cudaMalloc", "hipMalloc")
    out = out.replace("cudaDeviceSynchronize", "hipDeviceSynchronize").replace("cudaFree", "hipFree")
    return out.replace("#define WARP_SIZE 32", "#define WARP_SIZE 32  // wave64 on gfx942")


def write_project(src: Path, files: dict[str, str]) -> list[FileTranslation]:
    """Write ``files`` under ``src`` and return their translations (hunk 0 of each flagged WARP32)."""
    out = []
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
        out.append(translation(rel, text, hipify_like(text), {1: WARP}))
    return out


def new_review(tmp_path: Path, files: dict[str, str] | None = None) -> ReviewState:
    files = files or {"kernels/scale.cu": KERNEL, "main.cu": KERNEL.replace("scale", "twice")}
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    state = ReviewState.create(src, tmp_path / "out", write_project(src, files))
    state.save()
    return state


HEADER = """#pragma once
#include <cstdio>

#define WARP_SIZE 32
#define FULL_MASK 0xffffffff
"""


def risky_project(tmp_path: Path) -> ReviewState:
    """A review made by the real engine (built-in backend, real risk rules) of a tree where
    ``include/common.cuh`` is not changed by the translation at all but holds 32-lane risks, and
    ``main.cu`` has hunks and no risk."""
    from hipwizard.port.translation.engine import translate_tree

    src = tmp_path / "src"
    (src / "include").mkdir(parents=True, exist_ok=True)
    (src / "include" / "common.cuh").write_text(HEADER)
    (src / "main.cu").write_text("#include <cuda_runtime.h>\nvoid f(float* d) {\n  cudaFree(d);\n}\n")
    state = ReviewState.create(src, tmp_path / "out", translate_tree(src, backend="builtin"))
    state.save()
    return state
