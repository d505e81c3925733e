"""Build files as review files: which files are build files, hunks small, flags on hunks or untouched lines."""

from __future__ import annotations

import pytest

from hipwizard.port.buildfiles import BuildTarget, build_kind
from hipwizard.port.buildfiles.review import build_file_translation, merge_build_files

MAKEFILE = ("CC ?= clang\nCFLAGS = -O2\nNVCC_FLAGS = -O3 --use_fast_math\nNVCC_LDFLAGS = -lcublas -lnvidia-ml\n"
            "GPU_CC = $(shell __nvcc_device_query)\nall: a\n\techo done\n")


@pytest.mark.parametrize("path, text, kind", [
    ("Makefile", "NVCC = nvcc", "make"), ("sub/rules.mk", "X = -lcudart", "make"),
    ("Makefile.cuda", "NVCC = nvcc", "make"), ("CMakeLists.txt", "project(x CUDA)", "cmake"),
    ("cmake/deps.cmake", "find_package(CUDAToolkit)", "cmake"), ("setup.py", "CUDAExtension", "setup"),
    ("pyproject.toml", "nvidia-cublas-cu12", "pyproject"), ("build.sh", "nvcc -c a.cu", "shell"),
    ("build.sh", "echo cuda", None), ("Makefile", "CC = gcc", None), ("main.cu", "nvcc", None),
])
def test_build_kind(path, text, kind):
    assert build_kind(path, text) == kind


def test_review_file_has_small_hunks_and_flags_where_they_belong():
    ft = build_file_translation("Makefile", MAKEFILE, BuildTarget(arch="gfx942"))
    assert ft is not None and ft.backend == "buildfiles"
    assert [(h.old_start, len(h.old_lines), len(h.new_lines)) for h in ft.hunks] == [(3, 2, 2)]
    assert [f.rule_id for f in ft.hunks[0].flags] == ["BUILD_FAST_MATH", "BUILD_NOT_DROP_IN"]
    assert [(f.rule_id, f.line, f.severity) for f in ft.untouched_flags] == [("BUILD_ARCH_DETECT", 5, "high")]
    assert ft.translated.split("\n")[3] == "NVCC_LDFLAGS = -lhipblas -lnvidia-ml"


def test_nothing_to_review_gives_none():
    assert build_file_translation("Makefile", "CC = gcc\n") is None
    assert build_file_translation("CMakeLists.txt", "# CUDA comes later\nproject(x CXX)\n") is None


def test_a_build_file_already_reviewed_is_not_listed_twice():
    from hipwizard.port.model import FileTranslation

    text = ("from torch.utils.cpp_extension import CUDAExtension, CUDA_HOME\n"
            "ext = CUDAExtension('x', ['k.cu'], extra_compile_args={'nvcc': ['--use_fast_math']})\n")
    scanned = FileTranslation(path="setup.py", original=text, translated=text, backend="pyscan")
    builds = [build_file_translation("setup.py", text), build_file_translation("Makefile", "NVCC = nvcc\n")]
    files = [scanned]
    merge_build_files(files, builds)
    assert [f.path for f in files] == ["setup.py", "Makefile"]
    assert [(f.rule_id, f.line) for f in scanned.untouched_flags] == [("BUILD_BUILD_HIPIFY", 2), ("BUILD_NVCC_ARGS", 2)]
