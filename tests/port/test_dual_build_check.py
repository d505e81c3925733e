"""The dual-target check asks the project's build which units it compiles and with which flags (issue 31), as
the fork mode's check does: ``make -Bn`` for the NVIDIA side, ``make -Bn USE_ROCM=1`` for the AMD side; a unit
the build never compiles is skipped with the reason. The real-shaped tree goes through the CLI with the real nvcc
and Debian's hipcc; the fake runners show each side's command and the fallback when no build can be asked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hipwizard.cli import main
from hipwizard.port.dual.check import check_both, rerooted
from hipwizard.runner import RunResult

# N_ITEMS comes from a make variable (-DN_ITEMS=$(N)): only the build's own command has it; legacy.c is CUDA
# compiled as such by `-x cu`; main_omp.c is an OpenMP version the Makefile never builds (and not valid C).
MAKEFILE = """\
CC = nvcc
ARCH = sm_80
N = 256
CFLAGS := -std=c++17 -arch=$(ARCH) -DN_ITEMS=$(N)

program = main
obj = main.o scale.o legacy.o

$(program): $(obj)
\t$(CC) $(CFLAGS) $(obj) -o $@

%.o: %.cu
\t$(CC) $(CFLAGS) -c $< -o $@

legacy.o: legacy.c
\t$(CC) $(CFLAGS) -x cu -c $< -o $@

run: $(program)
\t./$(program)
"""
MAIN = """\
#include <cstdio>
#include <cuda_runtime.h>

void scale(float* d, int n);
int legacy_sum(int n);

int main() {
    float* d = nullptr;
    cudaMalloc(&d, N_ITEMS * sizeof(float));
    scale(d, N_ITEMS);
    cudaError_t err = cudaDeviceSynchronize();
    printf("%s %d\\n", err == cudaSuccess ? "ok" : "failed", legacy_sum(N_ITEMS));
    cudaFree(d);
    return 0;
}
"""
SCALE = """\
#include <cuda_runtime.h>

__global__ void scale_kernel(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}

void scale(float* d, int n) { scale_kernel<<<(n + 255) / 256, 256>>>(d, n); }
"""
LEGACY = """\
#include <cuda_runtime.h>

__global__ void sum_kernel(int* out, int n) { atomicAdd(out, n); }

int legacy_sum(int n) {
    int* d = nullptr;
    int h = 0;
    cudaMalloc(&d, sizeof(int));
    cudaMemset(d, 0, sizeof(int));
    sum_kernel<<<1, 1>>>(d, n);
    cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(d);
    return h;
}
"""
OMP = """\
#include <stdio.h>
#include <cuda.h>
#include <omp.h>

int main(void) {
    float x[N_ITEMS];
    #pragma omp target teams distribute parallel for map(tofrom: x)
    for (int i = 0; i < N_ITEMS; i++) x[i] = 2.0f * i;
    auto total = 0;
    printf("%d\\n", total);
    return 0;
}
"""


def _tree(root: Path) -> Path:
    root.mkdir()
    for name, text in (("Makefile", MAKEFILE), ("main.cu", MAIN), ("scale.cu", SCALE), ("legacy.c", LEGACY),
                       ("main_omp.c", OMP)):
        (root / name).write_text(text)
    return root


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("hipcc") and shutil.which("make")),
                    reason="needs nvcc, hipcc and make")
def test_a_unit_the_makefile_never_builds_is_skipped_and_the_built_ones_compile_both_ways(tmp_path, capsys):
    src = _tree(tmp_path / "src")
    out = tmp_path / "out"
    assert main(["hipify", str(src), "--out", str(out), "--workspace", str(tmp_path), "--backend", "builtin",
                 "--accept-all", "--mode", "dual", "--no-check"]) == 0
    capsys.readouterr()
    assert main(["check", str(out), "--arch", "gfx90a", "--json"]) == 0
    rows = {r["path"]: r for r in json.loads(capsys.readouterr().out)}
    omp = rows["main_omp.c"]
    assert omp["status"] == "skipped"
    assert "the project's build does not compile it" in omp["nvidia"]["note"]
    assert "make -Bn USE_ROCM=1" in omp["amd"]["note"] and "does not name it" in omp["amd"]["note"]
    built = [rows[u] for u in ("main.cu", "scale.cu", "legacy.c")]
    assert built and all(r["nvidia"]["status"] == "ok" and r["amd"]["status"] == "ok" for r in built)


class _Compilers:
    """nvcc and hipcc that accept everything and record their commands."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def which(self, name: str) -> str | None:
        return {"nvcc": "/opt/cuda/bin/nvcc", "hipcc": "/opt/rocm/bin/hipcc"}.get(name)

    def run(self, argv, *, timeout=30.0, env=None, cwd=None) -> RunResult:
        self.calls.append(tuple(argv))
        return RunResult(tuple(argv), "ok", 0)


class _Make:
    """A make whose dry run prints the Makefile's NVIDIA commands, or its AMD ones with USE_ROCM=1."""

    def __init__(self, has_make: bool = True) -> None:
        self.has_make = has_make
        self.calls: list[tuple[str, ...]] = []

    def which(self, name: str) -> str | None:
        return "/usr/bin/make" if name == "make" and self.has_make else None

    def run(self, argv, *, timeout=30.0, env=None, cwd=None) -> RunResult:
        self.calls.append(tuple(argv))
        amd = "USE_ROCM=1" in argv
        cc, side, lang = ("hipcc", "HIP_SIDE", "hip") if amd else ("nvcc", "CUDA_SIDE", "cu")
        lines = [f"{cc} -std=c++17 -D{side} -DN_ITEMS=256 -c main.cu -o main.o",
                 f"{cc} -std=c++17 -D{side} -DN_ITEMS=256 -x {lang} -c legacy.c -o legacy.o"]
        return RunResult(tuple(argv), "ok", 0, stdout="\n".join(lines) + "\n")


def _argv_of(calls: list[tuple[str, ...]], compiler: str, unit: str) -> list[str]:
    found = [list(c) for c in calls if c[0].endswith(compiler) and any(a.endswith("/" + unit) for a in c)]
    assert len(found) == 1, found
    return found[0]


def test_each_side_compiles_with_its_own_builds_command_and_skips_what_the_build_leaves_out(tmp_path):
    root = _tree(tmp_path / "t")
    (root / "old_scale.cu").write_text(SCALE)  # a GPU unit the Makefile does not build
    compilers, make = _Compilers(), _Make()
    checks = {c.path: c for c in check_both(root, ["main.cu", "legacy.c", "old_scale.cu"], arch="gfx90a",
                                             runner=compilers, build_runner=make)}
    assert ("make", "-Bn", "-w") in make.calls and ("make", "-Bn", "-w", "USE_ROCM=1") in make.calls
    assert checks["old_scale.cu"].nvidia.status == checks["old_scale.cu"].amd.status == "skipped"
    assert "does not compile it" in checks["old_scale.cu"].amd.note
    assert not any(a.endswith("old_scale.cu") for c in compilers.calls for a in c)
    nv, amd = _argv_of(compilers.calls, "nvcc", "main.cu"), _argv_of(compilers.calls, "hipcc", "main.cu")
    assert "-DCUDA_SIDE" in nv and "-DHIP_SIDE" not in nv and "-DN_ITEMS=256" in nv
    assert "-DHIP_SIDE" in amd and "-DCUDA_SIDE" not in amd and "-DUSE_ROCM" in amd
    # the language flag goes before the file (a compiler reads -x only for the files after it), in each spelling
    nv, amd = _argv_of(compilers.calls, "nvcc", "legacy.c"), _argv_of(compilers.calls, "hipcc", "legacy.c")
    assert nv.index("-x") < nv.index(str(root.resolve() / "legacy.c")) and nv[nv.index("-x") + 1] == "cu"
    assert amd.index("-xhip") < amd.index(str(root.resolve() / "legacy.c"))


def test_without_a_build_to_ask_the_build_files_literal_flags_are_used(tmp_path):
    root = _tree(tmp_path / "t")
    (root / "old_scale.cu").write_text(SCALE)
    compilers = _Compilers()
    checks = {c.path: c for c in check_both(root, ["main.cu", "old_scale.cu"], arch="gfx90a", runner=compilers,
                                             build_runner=_Make(has_make=False))}
    assert checks["old_scale.cu"].nvidia.status == "ok"  # nothing says the build leaves it out
    nv = _argv_of(compilers.calls, "nvcc", "main.cu")
    assert f"-I{root.resolve()}" in nv and "-std=c++17" in nv and "-DN_ITEMS=256" not in nv  # a make variable: not read here


def test_the_originals_flags_are_the_dual_trees_moved_to_the_original():
    flags = ["-I/w/out", "-I/w/out/inc", "-I/w/outer", "-DX=/w/out", "-std=c++17", "-isystem/usr/include"]
    assert rerooted(flags, Path("/w/out"), Path("/w/src")) == [
        "-I/w/src", "-I/w/src/inc", "-I/w/outer", "-DX=/w/src", "-std=c++17", "-isystem/usr/include"]
