"""CMake from the CUDA language to HIP: each rule on a real-shaped project."""

from __future__ import annotations

import pytest

from hipwizard.port.buildfiles.cmake import translate_cmake
from hipwizard.port.buildfiles.model import BuildTarget

PROJECT = """\
cmake_minimum_required(VERSION 3.18)
project(demo LANGUAGES CXX CUDA)
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_ARCHITECTURES 70 80)
find_package(CUDAToolkit 11.0 REQUIRED)
add_executable(demo
    main.cpp
    kernels/gemm.cu)
target_link_libraries(demo PRIVATE CUDA::cudart CUDA::cublas CUDA::cublasLt CUDA::nvml)
target_compile_options(demo PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--use_fast_math -lineinfo --expt-relaxed-constexpr>)
"""


def test_project_translated():
    r = translate_cmake(PROJECT, BuildTarget(arch="gfx90a"))
    assert r.text.split("\n") == [
        "cmake_minimum_required(VERSION 3.21)",  # HIP is a language from CMake 3.21 on
        "project(demo LANGUAGES CXX HIP)",
        "set(CMAKE_HIP_STANDARD 17)",
        "set(CMAKE_HIP_ARCHITECTURES gfx90a)",
        "find_package(hip REQUIRED)",
        "find_package(hipblas REQUIRED)",
        "find_package(hipblaslt REQUIRED)",
        "add_executable(demo",
        "    main.cpp",
        "    kernels/gemm.cu)",
        "set_source_files_properties(kernels/gemm.cu PROPERTIES LANGUAGE HIP)",
        "target_link_libraries(demo PRIVATE hip::host roc::hipblas roc::hipblaslt CUDA::nvml)",
        "target_compile_options(demo PRIVATE $<$<COMPILE_LANGUAGE:HIP>:-ffast-math -gline-tables-only>)",
        "",
    ]


def test_project_flags_nvml_with_its_fix():
    r = translate_cmake(PROJECT)
    nvml = [f for f in r.flags if f.kind == "not-drop-in"]
    assert len(nvml) == 1 and nvml[0].line == 12 and "amd_smi" in nvml[0].fix and nvml[0].severity == "high"


@pytest.mark.parametrize("line, expected", [
    ("enable_language(CUDA)", "enable_language(HIP)"),
    ("project(x CXX CUDA)", "project(x CXX HIP)"),
    ("set_source_files_properties(a.cpp PROPERTIES LANGUAGE CUDA)", "set_source_files_properties(a.cpp PROPERTIES LANGUAGE HIP)"),
    ('set(CMAKE_CUDA_ARCHITECTURES "70;80;86")', "set(CMAKE_HIP_ARCHITECTURES gfx942)"),
    ("set(CMAKE_CUDA_ARCHITECTURES native CACHE STRING \"\")", "set(CMAKE_HIP_ARCHITECTURES gfx942 CACHE STRING \"\")"),
    ("set_target_properties(t PROPERTIES CUDA_ARCHITECTURES 80 CUDA_STANDARD 17)",
     "set_target_properties(t PROPERTIES HIP_ARCHITECTURES gfx942 HIP_STANDARD 17)"),
    ('set(CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS} -Xcompiler -fPIC --expt-extended-lambda")',
     'set(CMAKE_HIP_FLAGS "${CMAKE_HIP_FLAGS} -fPIC")'),
    ("target_link_libraries(t CUDA::curand CUDA::cufft CUDA::cusparse CUDA::cusolver)",
     "target_link_libraries(t hip::hiprand hip::hipfft roc::hipsparse roc::hipsolver)"),
    ("cuda_add_executable(app main.cu)", "add_executable(app main.cu)"),
])
def test_cmake_rules(line, expected):
    assert translate_cmake(line).text.split("\n")[0] == expected


def test_findcuda_project():
    text = ("find_package(CUDA REQUIRED)\ncuda_add_library(k STATIC k.cu)\n"
            "target_link_libraries(k ${CUDA_LIBRARIES} ${CUDA_CUBLAS_LIBRARIES})\n")
    r = translate_cmake(text)
    assert r.text.split("\n")[:5] == ["find_package(hip REQUIRED)", "find_package(hipblas REQUIRED)",
                                      "add_library(k STATIC k.cu)",
                                      "set_source_files_properties(k.cu PROPERTIES LANGUAGE HIP)",
                                      "target_link_libraries(k hip::host roc::hipblas)"]
    assert [f.kind for f in r.flags] == ["findcuda"]


def test_arch_from_a_variable_is_kept_and_flagged():
    r = translate_cmake("set(CMAKE_CUDA_ARCHITECTURES ${MY_ARCHS})")
    assert r.text == "set(CMAKE_HIP_ARCHITECTURES ${MY_ARCHS})"
    assert [f.kind for f in r.flags] == ["arch-var"]


def test_sources_through_a_variable_are_flagged():
    r = translate_cmake("enable_language(CUDA)\nfile(GLOB SRC *.cu)\nadd_library(k ${SRC})\n")
    assert [(f.line, f.kind) for f in r.flags] == [(3, "hip-sources")]


def test_separable_compilation_and_nvcc_list_flagged():
    r = translate_cmake("set_property(TARGET k PROPERTY CUDA_SEPARABLE_COMPILATION ON)\n"
                        "list(APPEND CUDA_NVCC_FLAGS -O3)\n")
    assert [(f.line, f.kind) for f in r.flags] == [(1, "separable"), (2, "findcuda-flags")]


def test_a_cmake_file_without_cuda_is_unchanged():
    text = "cmake_minimum_required(VERSION 3.10)\nproject(plain CXX)\nadd_executable(a a.cpp)\n"
    r = translate_cmake(text)
    assert r.text == text and r.flags == ()
