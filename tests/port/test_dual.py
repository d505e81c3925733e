"""The dual-target mode (issue 31) through ``hipwizard hipify --mode dual``, on real-shaped trees: a Makefile
project, a CMake project, a torch extension's setup.py. The compile tests use the real nvcc and hipcc."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess

import pytest

from hipwizard.cli import main
from hipwizard.port.dual.classify import classify
from hipwizard.port.review.state import ReviewState, state_path_for

GUARD = "#if defined(USE_ROCM) || defined(__HIP_PLATFORM_AMD__)"
KERNEL = """\
#include <cstdio>
#include <cuda_runtime.h>

#define WARP_SIZE 32

__global__ void scale(float* x, int n) {
    extern __shared__ float tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { tile[threadIdx.x] = x[i]; x[i] = tile[threadIdx.x] * 2.0f + WARP_SIZE * 0; }
}

int main() {
    float* d = nullptr;
    cudaMalloc(&d, 256 * sizeof(float));
    cudaMemset(d, 0, 256 * sizeof(float));
    cudaFuncSetAttribute(scale, cudaFuncAttributeMaxDynamicSharedMemorySize, 1024);
    scale<<<1, 256, 1024>>>(d, 256);
    cudaError_t err = cudaDeviceSynchronize();
    printf("%s\\n", err == cudaSuccess ? "ok" : "failed");
    cudaFree(d);
    return 0;
}
"""
MAKEFILE = """\
NVCC = nvcc
ARCH = sm_80
CFLAGS = -O3 -arch=$(ARCH) --use_fast_math

main: main.cu
\t$(NVCC) $(CFLAGS) main.cu -o main

run: main
\t./main
"""
CMAKE = """\
cmake_minimum_required(VERSION 3.21)
project(scale LANGUAGES CXX CUDA)
set(CMAKE_CUDA_ARCHITECTURES 80)
add_executable(scale main.cu)
"""
SETUP = """\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension, CUDA_HOME

ext = []
if CUDA_HOME is not None:
    ext.append(CUDAExtension("scale_ext", ["main.cu"], extra_compile_args={"cxx": ["-O3"], "nvcc": ["-O3"]}))
setup(name="scale_ext", ext_modules=ext, cmdclass={"build_ext": BuildExtension})
"""


def _tree(tmp_path, build: dict[str, str]):
    src = tmp_path / "src"
    src.mkdir()
    (src / "main.cu").write_text(KERNEL)
    for name, text in build.items():
        (src / name).write_text(text)
    return src


def _dual(tmp_path, src, *extra, rc=0):
    out = tmp_path / "out"
    code = main(["hipify", str(src), "--out", str(out), "--workspace", str(tmp_path), "--backend", "builtin",
                 "--accept-all", "--no-check", "--json", *extra])
    assert code == rc
    return out


def _branches(text: str) -> list[list[str]]:
    """The AMD side of each guarded branch."""
    out, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("#if defined(USE_ROCM)") or line.startswith("#if defined(BUILD_AMD)"):
            j = i + 1
            while lines[j] not in ("#else", "#endif"):
                j += 1
            out.append(lines[i + 1:j])
    return out


def test_makefile_project_dual_target(tmp_path, capsys):
    src = _tree(tmp_path, {"Makefile": MAKEFILE})
    out = _dual(tmp_path, src, "--mode", "dual")
    summary = json.loads(capsys.readouterr().out)
    assert summary["mode"] == "dual" and summary["dual"]["guard"] == "USE_ROCM"
    dual = (out / "main.cu").read_text()
    header = (out / "hipwizard_compat.h").read_text()
    # the compat header maps exactly the CUDA names the file uses, none it does not
    names = dict(re.findall(r"^#define (\w+) +(\w+)$", header, re.M))
    assert names["cudaMalloc"] == "hipMalloc" and names["cudaError_t"] == "hipError_t"
    assert names and all(re.search(rf"\b{n}\b", KERNEL) for n in names)
    assert "cudaMemcpy" not in names and "cudaStream_t" not in names
    # renames never appear as guarded branches: the cudaMalloc/cudaFree lines are the CUDA lines, unguarded
    amd = _branches(dual)
    assert amd and not any("hipMalloc" in x or "hipFree" in x for b in amd for x in b)
    assert "    cudaMalloc(&d, 256 * sizeof(float));" in dual.splitlines()
    # branches: the headers, the changed call, the 32-lane constant
    assert any("#include <hip/hip_runtime.h>" in b and '#include "hipwizard_compat.h"' in b for b in amd)
    assert any(any("reinterpret_cast<const void*>(scale)" in x for x in b) for b in amd)
    assert ["#define WARP_SIZE 64"] in amd
    assert dual.count("#if ") == dual.count("#endif")
    # the CUDA build is the original: removing the AMD sides gives the source back
    cuda_side = re.sub(r"#if defined\(USE_ROCM\) \|\| defined\(__HIP_PLATFORM_AMD__\)\n(?:.*\n)*?#else\n((?:.*\n)*?)#endif\n",
                       r"\1", dual)
    cuda_side = re.sub(r"#if defined\(USE_ROCM\) \|\| defined\(__HIP_PLATFORM_AMD__\)\n(?:.*\n)*?#endif\n", "", cuda_side)
    assert cuda_side == KERNEL
    # the patch applies to the CUDA tree and gives the written tree
    patch = tmp_path / "out.dual.patch"
    assert summary["dual"]["patch"] == str(patch)
    applied = tmp_path / "applied"
    shutil.copytree(src, applied)
    subprocess.run(["git", "init", "-q"], cwd=applied, check=True)
    subprocess.run(["git", "apply", str(patch)], cwd=applied, check=True)
    for rel in ("main.cu", "Makefile", "hipwizard_compat.h"):
        assert (applied / rel).read_text() == (out / rel).read_text()
    # the Makefile builds both ways: plain make with nvcc, make USE_ROCM=1 with hipcc and -DUSE_ROCM
    nv = subprocess.run(["make", "-n", "-C", str(out)], capture_output=True, text=True, check=True).stdout
    amd_make = subprocess.run(["make", "-n", "-C", str(out), "USE_ROCM=1"], capture_output=True, text=True,
                              check=True).stdout
    assert "nvcc -O3 -arch=sm_80 --use_fast_math" in nv and "hipcc" not in nv
    assert "hipcc" in amd_make and "nvcc" not in amd_make
    make = (out / "Makefile").read_text()
    assert "export HIPCC_COMPILE_FLAGS_APPEND += -DUSE_ROCM" in make


def test_mode_is_the_workspaces_choice_and_decisions_survive_a_rerun(tmp_path, capsys):
    src = _tree(tmp_path, {"Makefile": MAKEFILE})
    out = tmp_path / "out"
    assert main(["hipify", str(src), "--out", str(out), "--workspace", str(tmp_path), "--mode", "dual",
                 "--guard", "BUILD_AMD", "--json"]) == 0
    capsys.readouterr()
    port_json = json.loads((tmp_path / ".hipwizard" / "port.json").read_text())
    assert port_json["mode"] == "dual" and port_json["guard"] == "BUILD_AMD"
    review = ReviewState.load(state_path_for(out))
    first = review.hunks[0].hunk_id
    review.decide([first], "rejected")
    review.release()
    # no --mode: the workspace's choice (dual, BUILD_AMD); the decision is kept
    assert main(["hipify", str(src), "--out", str(out), "--workspace", str(tmp_path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["mode"] == "dual" and summary["dual"]["guard"] == "BUILD_AMD"
    assert summary["reconciled"]["kept"] >= 1
    assert ReviewState.load(state_path_for(out)).decision(first).state == "rejected"
    # a fork-mode run over the dual review is refused with one line
    assert main(["hipify", str(src), "--out", str(out), "--workspace", str(tmp_path), "--mode", "fork"]) == 2
    assert "dual-target (BUILD_AMD) mode" in capsys.readouterr().err


def test_custom_guard_reaches_sources_and_makefile(tmp_path, capsys):
    src = _tree(tmp_path, {"Makefile": MAKEFILE})
    out = _dual(tmp_path, src, "--mode", "dual", "--guard", "BUILD_AMD")
    capsys.readouterr()
    assert "#if defined(BUILD_AMD) || defined(__HIP_PLATFORM_AMD__)" in (out / "main.cu").read_text()
    assert "USE_ROCM" not in (out / "main.cu").read_text()
    assert "ifeq ($(BUILD_AMD),1)" in (out / "Makefile").read_text()
    assert main(["hipify", str(src), "--out", str(tmp_path / "o2"), "--mode", "dual", "--guard", "1BAD"]) == 2


def test_cmake_project_switches_the_language_by_an_option(tmp_path, capsys):
    src = _tree(tmp_path, {"CMakeLists.txt": CMAKE})
    out = _dual(tmp_path, src, "--mode", "dual")
    capsys.readouterr()
    cmake = (out / "CMakeLists.txt").read_text()
    lines = cmake.splitlines()
    assert lines[0] == "cmake_minimum_required(VERSION 3.21)"
    opt = lines.index('option(USE_ROCM "Build for AMD GPUs with HIP instead of CUDA (hipwizard dual-target)" OFF)')
    branch = lines.index("if(USE_ROCM)", opt + 1)
    assert lines[branch + 1] == "  add_compile_definitions(USE_ROCM)"
    proj = lines.index("project(scale LANGUAGES CXX HIP)")
    assert lines[proj - 1] == "if(USE_ROCM)" and lines[proj + 1] == "set(CMAKE_HIP_ARCHITECTURES gfx942)"
    assert lines[proj + 2:proj + 5] == ["else()", "project(scale LANGUAGES CXX CUDA)", "set(CMAKE_CUDA_ARCHITECTURES 80)"]
    assert "set_source_files_properties(main.cu PROPERTIES LANGUAGE HIP)" in cmake
    assert len(re.findall(r"^if\(", cmake, re.M)) == cmake.count("endif()") == 3
    # each branch is one hunk: accepting it never leaves an if() without its endif()
    review = ReviewState.load(state_path_for(out))
    for h in review.hunks:
        if h.file == "CMakeLists.txt":
            text = "".join(h.new_lines)
            assert len(re.findall(r"^if\(", text, re.M)) == text.count("endif()")


def test_setup_py_builds_on_either_torch(tmp_path, capsys):
    src = _tree(tmp_path, {"setup.py": SETUP})
    out = _dual(tmp_path, src, "--mode", "dual")
    capsys.readouterr()
    setup = (out / "setup.py").read_text()
    ast.parse(setup)
    assert "ROCM_HOME" in setup and "CUDA_HOME is not None" in setup  # the gate widened, never narrowed
    assert "CUDAExtension(" in setup  # a ROCm torch hipifies the extension itself


def test_classify_tells_renames_from_changes():
    assert classify("cudaMalloc(&p, n);", "hipMalloc(&p, n);", {}) == ("rename", [("cudaMalloc", "hipMalloc")])
    assert classify("cudaFuncSetAttribute(k, a, 1);", "hipFuncSetAttribute(reinterpret_cast<const void*>(k), a, 1);",
                    {})[0] == "code"
    assert classify("#ifdef __CUDACC__", "#ifdef __HIPCC__", {})[0] == "code"  # never #define __CUDACC__
    assert classify("x = cudaFree;", "x = hipFreeAsync;", {"cudaFree": "hipFree"})[0] == "code"  # one macro per name


def _compile(cmd: list[str], cwd) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HIP_PLATFORM": "amd", "HOME": "/tmp"})


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("hipcc")), reason="needs nvcc and hipcc")
def test_guards_and_compat_header_are_what_makes_both_builds_compile(tmp_path, capsys):
    src = _tree(tmp_path, {"Makefile": MAKEFILE})
    out = _dual(tmp_path, src, "--mode", "dual")
    capsys.readouterr()
    nvcc = ["nvcc", "-c", "main.cu", "-o", "/dev/null"]
    hipcc = ["hipcc", "--offload-arch=gfx90a", "-DUSE_ROCM", "-c", "main.cu", "-o", "/dev/null"]
    assert _compile(nvcc, out).returncode == 0
    assert _compile(hipcc, out).returncode == 0
    # the guard is needed: the AMD sides taken unconditionally break nvcc; the CUDA sides alone break hipcc
    dual = (out / "main.cu").read_text()
    (out / "amd_only.cu").write_text(dual.replace(GUARD, "#if 1"))
    (out / "cuda_only.cu").write_text(dual.replace(GUARD, "#if 0"))
    assert _compile(["nvcc", "-c", "amd_only.cu", "-o", "/dev/null"], out).returncode != 0
    assert _compile([*hipcc[:-4], "-c", "cuda_only.cu", "-o", "/dev/null"], out).returncode != 0
    # the compat header is needed: without its names hipcc rejects the CUDA names
    header = (out / "hipwizard_compat.h").read_text()
    (out / "hipwizard_compat.h").write_text(re.sub(r"^#define \w+ +\w+$", "", header, flags=re.M))
    failed = _compile(hipcc, out)
    assert failed.returncode != 0 and "cudaMalloc" in failed.stderr
    (out / "hipwizard_compat.h").write_text(header)
    # `hipwizard check` on the dual tree compiles both ways
    for extra in ("amd_only.cu", "cuda_only.cu"):
        (out / extra).unlink()
    assert main(["check", str(out), "--arch", "gfx90a", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(r["nvidia"]["status"] == "ok" and r["amd"]["status"] == "ok" for r in rows)


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc")
def test_check_calls_a_broken_nvidia_build_an_error(tmp_path, capsys):
    src = _tree(tmp_path, {"Makefile": MAKEFILE})
    out = _dual(tmp_path, src, "--mode", "dual")
    capsys.readouterr()
    text = (out / "main.cu").read_text().replace("#else\n#define WARP_SIZE 32", "#else\n#define WARP_SIZE 32 +")
    (out / "main.cu").write_text(text)
    assert main(["check", str(out), "--arch", "gfx90a", "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["nvidia"]["status"] == "failed"
    assert "breaks the NVIDIA build" in rows[0]["nvidia"]["note"]


def test_report_says_which_mode(tmp_path, capsys):
    from hipwizard.report.collect import collect
    from hipwizard.report.document import build
    from hipwizard.workspace import Workspace

    src = _tree(tmp_path, {"Makefile": MAKEFILE})
    assert main(["hipify", str(src), "--out", str(tmp_path / "out"), "--workspace", str(tmp_path), "--mode", "dual",
                 "--guard", "BUILD_AMD"]) == 0
    text = capsys.readouterr().out
    assert "mode: dual-target (one source; AMD builds define BUILD_AMD)" in text
    lines = [str(x[1]) for x in build(collect(Workspace(tmp_path))) if len(x) > 1]
    said = [x for x in lines if x.startswith("Output mode:")]
    assert said and said[0].startswith("Output mode: dual-target") and "define BUILD_AMD" in said[0]
    fork_ws = tmp_path / "fork"
    fork_ws.mkdir()
    assert main(["hipify", str(src), "--out", str(fork_ws / "out"), "--workspace", str(fork_ws)]) == 0
    assert "mode: fork" in capsys.readouterr().out
    lines = [str(x[1]) for x in build(collect(Workspace(fork_ws))) if len(x) > 1]
    assert "Output mode: fork — a HIP copy of the tree." in lines


NO_HIP_KERNEL = """\
#include <cuda_runtime.h>

__global__ void fill(float* x) { x[threadIdx.x] = 1.0f; }

int main() {
    float* d = nullptr;
    cudaMalloc(&d, 64 * sizeof(float));
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
    fill<<<1, 64>>>(d);
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
"""


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("hipcc"), reason="needs hipcc")
def test_a_call_with_no_hip_counterpart_is_left_out_on_amd_and_flagged(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    (src / "main.cu").write_text(NO_HIP_KERNEL)
    out = _dual(tmp_path, src, "--mode", "dual")
    capsys.readouterr()
    dual = (out / "main.cu").read_text()
    assert ("#if !(defined(USE_ROCM) || defined(__HIP_PLATFORM_AMD__))\n"
            "    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);\n#endif\n") in dual
    review = ReviewState.load(state_path_for(out))
    flagged = [h for h in review.hunks if any(f.rule_id == "DUAL_NO_HIP" for f in h.flags)]
    assert len(flagged) == 1 and "cudaLimitPersistingL2CacheSize" in "".join(flagged[0].new_lines)
    hipcc = ["hipcc", "--offload-arch=gfx90a", "-DUSE_ROCM", "-c", "main.cu", "-o", "/dev/null"]
    assert _compile(hipcc, out).returncode == 0
    # without the branch (the statement kept on AMD), hipcc rejects the name HIP lacks
    (out / "main.cu").write_text(dual.replace("#if !(defined(USE_ROCM) || defined(__HIP_PLATFORM_AMD__))\n", "#if 1\n"))
    failed = _compile(hipcc, out)
    assert failed.returncode != 0 and "cudaLimitPersistingL2CacheSize" in failed.stderr


def test_both_builds_skip_a_unit_another_file_includes(tmp_path):
    from hipwizard.port.dual.check import skip_reasons

    (tmp_path / "kernels.cu").write_text("__global__ void k(float* x) { x[0] = KEY_LENGTH; }\n")
    (tmp_path / "main.cu").write_text('#define KEY_LENGTH 4\n#include "kernels.cu"\nint main() { return 0; }\n')
    (tmp_path / "host.cpp").write_text("int add(int a, int b) { return a + b; }\n")
    why = skip_reasons(tmp_path, ["kernels.cu", "main.cu", "host.cpp"])
    assert why["kernels.cu"].startswith("#included by main.cu")
    assert why["host.cpp"].startswith("CPU-only") and "main.cu" not in why


def test_a_source_that_is_not_utf8_keeps_its_bytes_in_the_patch(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    (src / "main.cu").write_bytes(b"// caf\xe9 (latin-1)\n" + KERNEL.encode())
    _dual(tmp_path, src, "--mode", "dual")
    capsys.readouterr()
    patch = (tmp_path / "out.dual.patch").read_bytes()
    assert b"caf\xe9" in patch or b"#if defined(USE_ROCM)" in patch
    applied = tmp_path / "applied"
    shutil.copytree(src, applied)
    subprocess.run(["git", "init", "-q"], cwd=applied, check=True)
    subprocess.run(["git", "apply", str(tmp_path / "out.dual.patch")], cwd=applied, check=True)
    assert (applied / "main.cu").read_bytes() == (tmp_path / "out" / "main.cu").read_bytes()


def test_the_macro_takes_the_translators_usual_name_and_the_odd_line_is_a_branch(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    (src / "main.cu").write_text("""\
#include <cuda_runtime.h>
int main() {
    cudaEvent_t a, b, c;
    cudaEventCreate(&c, cudaEventDisableTiming);
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    return 0;
}
""")
    out = _dual(tmp_path, src, "--mode", "dual")
    capsys.readouterr()
    assert re.search(r"^#define cudaEventCreate +hipEventCreate$", (out / "hipwizard_compat.h").read_text(), re.M)
    amd = _branches((out / "main.cu").read_text())
    assert ["    hipEventCreateWithFlags(&c, hipEventDisableTiming);"] in amd
    assert not any("hipEventCreate(&a)" in x for b in amd for x in b)


def test_an_overloaded_name_never_gets_its_other_forms_macro_even_when_the_tree_calls_only_that_form(tmp_path, capsys):
    """Every call here passes flags: the majority would make ``cudaEventCreate`` a macro for
    hipEventCreateWithFlags, and a one-argument call (in a header, or the next one written) would then not compile
    on AMD. The flags calls are branches; no macro names the WithFlags form."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "main.cu").write_text("""\
#include <cuda_runtime.h>
int main() {
    cudaEvent_t a, b;
    cudaEventCreate(&a, cudaEventDisableTiming);
    cudaEventCreate(&b, cudaEventBlockingSync);
    return 0;
}
""")
    out = _dual(tmp_path, src, "--mode", "dual")
    capsys.readouterr()
    header = (out / "hipwizard_compat.h").read_text()
    assert "hipEventCreateWithFlags" not in header, header
    amd = _branches((out / "main.cu").read_text())
    assert ["    hipEventCreateWithFlags(&a, hipEventDisableTiming);",
            "    hipEventCreateWithFlags(&b, hipEventBlockingSync);"] in amd, amd


def test_a_rerun_without_a_workspace_keeps_the_reviews_mode(tmp_path):
    from hipwizard import port
    from hipwizard.port.dual.model import parse_backend

    src = _tree(tmp_path, {"Makefile": MAKEFILE})
    first = port.translate(None, src, tmp_path / "out", mode="dual", guard="BUILD_AMD", backend="builtin")
    first.review.release()
    again = port.translate(None, src, tmp_path / "out", backend="builtin")
    options, _ = parse_backend(again.review.backend)
    assert options is not None and options.guard == "BUILD_AMD" and again.dual is not None
    r = again.reconciled
    assert r is not None and r.new == 0 and r.dropped == 0 and r.changed == 0  # the same hunks, the same ids


def test_a_changed_if_under_an_added_include_stays_one_balanced_line(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    (src / "modP.h").write_text("#if (defined(__CUDACC__) || defined(__HIPCC__))\n  #define ESS __device__\n#else\n"
                                "  #define ESS inline\n#endif\n")
    (src / "main.cu").write_text('#include <cuda_runtime.h>\n#include "modP.h"\n__global__ void k(float* x) { x[0] = 1; }\n'
                                 "int main() { float* d; cudaMalloc(&d, 4); k<<<1, 1>>>(d); return 0; }\n")
    out = _dual(tmp_path, src, "--mode", "dual")
    capsys.readouterr()
    header = (out / "modP.h").read_text()
    assert header.splitlines()[0].startswith("#if (defined(USE_ROCM) || defined(__HIP_PLATFORM_AMD__)) ? (")
    assert header.count("#if") == header.count("#endif") == 1 and header.count("#else") == 1
