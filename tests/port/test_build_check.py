"""check builds the way the project builds (issue 29 items 2 and 4), driven through the real CLI with Debian's hipcc.

Three small real-shaped projects (a Makefile one, a CMake one, a setup.py CUDAExtension one) go through
``hipify --accept-all`` (the tree written self-contained), ``check`` and ``check --build``.
"""

from __future__ import annotations

import json
import shutil

import pytest

from hipwizard.cli import main
from hipwizard.port.build.ahead import cuda_header_note, library_for, lines_ahead
from hipwizard.port.build.commands import parse_make_dry_run
from hipwizard.port.build.flags import check_flags
from hipwizard.port.build.units import unit_skip

needs_hipcc = pytest.mark.skipif(shutil.which("hipcc") is None, reason="hipcc not installed (apt install hipcc)")
ARCH = ["--arch", "gfx90a"]

UTIL_H = "#pragma once\ninline __host__ __device__ int ceil_div(int a, int b) { return (a + b - 1) / b; }\n"
KERNEL = """#include <cuda_runtime.h>
#include <util.h>
__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }
void run(float* d, int n) { twice<<<ceil_div(n, BLOCK), BLOCK>>>(d); cudaDeviceSynchronize(); }
"""
HOST = '#include <cstdio>\n#include "cpu.h"\nvoid run(float*, int);\nint main() { std::printf("%d\\n", twice(5)); }\n'


def _make_project(root):
    (root / "include").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "include" / "util.h").write_text(UTIL_H)
    (root / "include" / "cpu.h").write_text("#pragma once\ninline int twice(int a) { return 2 * a; }\n")
    (root / "src" / "main.cu").write_text(KERNEL)
    (root / "src" / "host.cpp").write_text(HOST)
    (root / "src" / "old_main.cu").write_text("__global__ void stale(int* x) { *x = UNDEFINED; }\n")  # not built
    (root / "src" / "kernels.cpp").write_text("__global__ void k2(float* x) { x[0] = BLOCK; }\n")  # #included
    (root / "src" / "main.cu").write_text(KERNEL + '#include "kernels.cpp"\n')
    (root / "src" / "timer_win.cpp").write_text("#include <windows.h>\nint t() { return GetTickCount(); }\n")
    (root / "Makefile").write_text(
        "NVCC ?= nvcc\nCFLAGS = -O2 -std=c++17 -Iinclude -DBLOCK=128\nall: app\n"
        "app: src/main.cu src/host.cpp\n"
        "\t$(NVCC) $(CFLAGS) -arch=sm_80 -c src/main.cu -o main.o\n"
        "\tg++ -O2 -Iinclude -c src/host.cpp -o host.o\n"
        "\t$(NVCC) -arch=sm_80 main.o host.o -o app -lcudart\n")


def _hipify(tmp_path, src, out, *extra):
    return main(["hipify", str(src), "--out", str(out), "--workspace", str(tmp_path), "--accept-all", *ARCH, *extra])


def test_units_cpu_only_and_windows_only_are_skipped_with_the_reason():
    assert unit_skip("src/host.cpp", HOST).startswith("CPU-only")
    assert unit_skip("src/timer.cpp", "#include <windows.h>\nint t();\n").startswith("Windows-only")
    assert unit_skip("windows/dllmain.cu", "__global__ void k() {}\n").startswith("Windows-only")
    assert unit_skip("src/winograd.cu", "__global__ void k() {}\n") == ""  # a name is not a platform
    guarded = "#ifdef _WIN32\n#include <windows.h>\n#endif\n__global__ void k() {}\n"
    assert unit_skip("src/timer.cu", guarded) == ""  # a guarded include builds on Linux too
    assert unit_skip("src/host.cpp", HOST, included_gpu=True) == ""  # includes the kernels: a GPU unit
    assert unit_skip("src/k.cpp", "#include <hip/hip_runtime.h>\nint f() { hipDeviceSynchronize(); }\n") == ""


def test_make_dry_run_and_nvcc_flags_give_each_unit_its_flags(tmp_path):
    (tmp_path / "src").mkdir()
    text = ("make: Entering directory '%s'\nnvcc -O2 --std c++17 -I include -DBLOCK=128 -Xcompiler -fopenmp "
            "-arch=sm_80 -c src/main.cu -o main.o\ng++ -c src/host.cpp\necho done\n" % tmp_path)
    found = parse_make_dry_run(text, tmp_path, tmp_path)
    assert sorted(found) == ["src/host.cpp", "src/main.cu"]
    flags = check_flags(found["src/main.cu"].args, found["src/main.cu"].directory)
    assert flags == ["-std=c++17", f"-I{tmp_path / 'include'}", "-DBLOCK=128"]


def test_a_missing_rocm_header_names_its_package_and_the_lines_ahead(tmp_path):
    assert "roctx" in cuda_header_note("nvtx3/nvToolsExt.h")  # a CUDA header the translation left: its counterpart
    assert "cooperative groups" in cuda_header_note("cooperative_groups/reduce.h") and not cuda_header_note("x/y.h")
    assert "hipblas" in library_for("hipblas/hipblas.h")[1].lower() or "hipblas" in library_for("hipblas.h")[1].lower()
    (tmp_path / "a.h").write_text("#pragma once\nint late();\n")
    (tmp_path / "early.h").write_text("#pragma once\nint early();\n")
    (tmp_path / "u.cu").write_text('#include "early.h"\n#include <hipblas.h>\n#include "a.h"\nint x;\n')
    flags = {"u.cu": {1: ["R_BEFORE"], 4: ["unsupported: cudaFoo"]}, "a.h": {2: ["WARP32_LITERAL"]},
             "early.h": {2: ["R_EARLY"]}}
    ahead = lines_ahead(tmp_path, "u.cu", "u.cu", 2, flags, lambda rel: (tmp_path / rel).read_text())
    assert [str(a) for a in ahead] == ["a.h:2: WARP32_LITERAL", "u.cu:4: unsupported: cudaFoo"]


@needs_hipcc
@pytest.mark.slow
def test_makefile_project_hipify_check_and_build(tmp_path, capsys):
    src, out = tmp_path / "proj", tmp_path / "out"
    _make_project(src)
    assert _hipify(tmp_path, src, out) == 0
    said = capsys.readouterr().out
    assert "untouched file(s) copied" in said and (out / "include" / "util.h").is_file()  # self-contained
    assert "files with compile errors for gfx90a: 0" in said and "make -Bn" in said
    assert main(["check", str(out), "--json", *ARCH]) == 0
    checked = json.loads(capsys.readouterr().out)
    status = {f["path"]: f["status"] for f in checked["files"]}
    # main.cu needs the Makefile's -Iinclude and -DBLOCK=128: the default -I <dir> would fail it
    assert status == {"src/main.cu": "ok", "src/host.cpp": "skipped", "src/timer_win.cpp": "skipped",
                      "src/old_main.cu": "skipped", "src/kernels.cpp": "skipped"}
    notes = {f["path"]: f["note"] for f in checked["files"]}
    assert "does not compile it" in notes["src/old_main.cu"] and "#included by src/main.cu" in notes["src/kernels.cpp"]
    assert checked["gpu_units"] == 1 and "make -Bn" in checked["how"]
    assert main(["check", str(out), "--build", *ARCH]) == 0
    said = capsys.readouterr().out
    assert "✔ ok             src/main.cu" in said and "own build (make)" in said
    assert "○ skipped        src/old_main.cu" in said
    assert (out / "app").is_file()  # the translated build ran in the written tree
    # --no-check says so, never "compile errors: 0"
    assert main(["hipify", str(src), "--out", str(tmp_path / "out2"), "--workspace", str(tmp_path),
                 "--accept-all", "--no-check"]) == 0
    said = capsys.readouterr().out
    assert "compile check not run (--no-check)" in said and "compile errors" not in said


@needs_hipcc
@pytest.mark.slow
def test_opt_out_of_copying_and_never_overwrite_a_foreign_file(tmp_path, capsys):
    src, out = tmp_path / "proj", tmp_path / "out"
    _make_project(src)
    assert _hipify(tmp_path, src, out, "--no-copy-untouched", "--no-check") == 0
    assert not (out / "include" / "cpu.h").exists()
    (out / "include" / "cpu.h").write_text("// the user's own file\n")
    capsys.readouterr()
    assert _hipify(tmp_path, src, out, "--no-check") == 1  # the copy is refused, said as a conflict
    assert (out / "include" / "cpu.h").read_text() == "// the user's own file\n"
    assert "conflict include/cpu.h" in capsys.readouterr().out


@needs_hipcc
@pytest.mark.slow
def test_cmake_project_takes_its_include_dirs_and_definitions(tmp_path, capsys):
    src, out = tmp_path / "proj", tmp_path / "out"
    (src / "inc").mkdir(parents=True)
    (src / "inc" / "util.h").write_text(UTIL_H)
    (src / "kernels.cu").write_text(KERNEL.replace("BLOCK", "TILE"))
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(demo LANGUAGES CXX CUDA)\n"
        "set(CMAKE_CUDA_ARCHITECTURES 80)\nset(CMAKE_CUDA_STANDARD 17)\n"
        "add_library(demo kernels.cu)\ntarget_include_directories(demo PRIVATE inc)\n"
        "target_compile_definitions(demo PRIVATE TILE=64)\n")
    assert _hipify(tmp_path, src, out) == 0
    assert "LANGUAGES CXX HIP" in (out / "CMakeLists.txt").read_text()
    capsys.readouterr()
    assert main(["check", str(out), "--json", *ARCH]) == 0
    checked = json.loads(capsys.readouterr().out)
    (unit,) = checked["files"]
    assert unit["status"] == "ok" and unit["flags_from"] in (checked["how"], "the flags CMakeLists.txt writes")
    code = main(["check", str(out), "--build", *ARCH])
    said = capsys.readouterr().out
    # a CMake that can configure HIP builds it; Debian's lacks amd_comgr's CMake files: then said, units checked
    assert code == 0 and "kernels.cu" in said
    assert "own build (cmake)" in said or "the build compiled no unit" in said


@needs_hipcc
@pytest.mark.slow
def test_setup_py_extension_unit_is_checked_with_its_include_dirs(tmp_path, capsys):
    src, out = tmp_path / "proj", tmp_path / "out"
    (src / "csrc" / "inc").mkdir(parents=True)
    (src / "csrc" / "inc" / "util.h").write_text(UTIL_H)  # found only through setup.py's include_dirs
    (src / "csrc" / "ops.cu").write_text(KERNEL.replace("<util.h>", "<util.h>\n#define BLOCK 32"))
    (src / "setup.py").write_text(
        "from setuptools import setup\nfrom torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
        "setup(name='ops', ext_modules=[CUDAExtension('ops', ['csrc/ops.cu'], include_dirs=['csrc/inc'],\n"
        "      extra_compile_args={'nvcc': ['-O3', '--use_fast_math']})], cmdclass={'build_ext': BuildExtension})\n")
    assert _hipify(tmp_path, src, out) == 0
    capsys.readouterr()
    assert main(["check", str(out), "--json", *ARCH]) == 0
    (unit,) = json.loads(capsys.readouterr().out)["files"]
    assert unit["status"] == "ok" and unit["flags_from"] == "the torch extension call in setup.py"
    assert main(["check", str(out), "--build", *ARCH]) == 0
    said = capsys.readouterr().out
    assert "pip install ." in said and "✔ ok             csrc/ops.cu" in said


def test_a_torch_extension_call_gives_its_literal_flags_and_names_the_computed_ones(tmp_path):
    from hipwizard.port.build.commands import buildfile_flags

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "run.py").write_text(
        "from torch.utils.cpp_extension import load\nT = 8\n"
        "m = load(name='k', sources=['src/k.cu'], extra_cuda_cflags=['-O3', '-DA=1', f'-DTmax={T}'])\n")
    flags, where = buildfile_flags(tmp_path, "src/k.cu")
    assert "-DA=1" in flags and not any(f.startswith("-DTmax") for f in flags)
    assert "run.py" in where and "not known here: -DTmax" in where


def test_a_language_flag_is_kept_and_goes_before_the_file():
    from hipwizard.port.build.flags import language_first

    flags = check_flags(("hipcc", "-x", "hip", "-DFLOAT", "-std=c++17", "-O3", "-c", "base.c"), "/p")
    assert "-xhip" in flags and "-O3" not in flags
    lang, rest = language_first(flags)
    assert lang == ["-xhip"] and rest == ["-DFLOAT", "-std=c++17"]
    assert language_first(check_flags(("gcc", "-std=c99", "-c", "a.c"), "/p")) == ([], ["-std=c99"])
    assert check_flags(("hipcc", "-x", "@opts", "-xnone;x", "-c", "a.c"), "/p") == []  # not a language: dropped


# prna's shape (HeCBench): nvcc builds the .c files, as C++; one includes <vector>, the other a host-only header of
# CUDA error helpers inside `extern "C"`, as C-style projects do.
C_MAKEFILE = """CC = nvcc
CFLAGS := -DFLOAT -std=c++17 -arch=sm_60
obj = main.o util.o
app: $(obj)
\t$(CC) $(CFLAGS) $(obj) -o $@
%.o: %.c
\t$(CC) $(CFLAGS) -c $< -o $@
"""
CHECK_H = "#pragma once\n#define CU(x) if ((x) != cudaSuccess) { return 1; }\ninline const char* why(cudaError_t e) " \
          "{ return cudaGetErrorString(e); }\n"


@needs_hipcc
@pytest.mark.slow
def test_c_files_nvcc_built_as_cpp_build_with_x_hip_and_a_host_header_gets_the_runtime(tmp_path, capsys):
    src, out = tmp_path / "proj", tmp_path / "out"
    src.mkdir()
    (src / "Makefile").write_text(C_MAKEFILE)
    (src / "check.h").write_text(CHECK_H)
    (src / "main.c").write_text('#include <vector>\n#ifdef __cplusplus\nextern "C" {\n#endif\n#include "check.h"\n'
                                "#ifdef __cplusplus\n}\n#endif\nint main() { std::vector<int> v(2); float* d;\n"
                                "  CU(cudaMalloc(&d, 8)); return (int)v.size(); }\n")
    (src / "util.c").write_text('#include "check.h"\nint util(void) { CU(cudaDeviceSynchronize()); return 0; }\n')
    assert _hipify(tmp_path, src, out) == 0
    capsys.readouterr()
    makefile = (out / "Makefile").read_text()
    assert "\t$(CC) -x hip $(CFLAGS) -c $< -o $@" in makefile  # the .c rule
    assert "\t$(CC) $(CFLAGS) $(obj) -o $@" in makefile  # the link line keeps its objects' types
    assert 'extern "C++" {' in (out / "check.h").read_text()
    assert main(["check", str(out), "--json", *ARCH]) == 0, capsys.readouterr().out
    checked = json.loads(capsys.readouterr().out)
    assert {f["path"]: f["status"] for f in checked["files"] if f["path"].endswith(".c")} == \
        {"main.c": "ok", "util.c": "ok"}
