"""A tree's build files found and made review files, with the scan's rules for what is read."""

from __future__ import annotations

import os

from hipwizard.port.buildfiles import BuildTarget
from hipwizard.port.buildfiles.walk import build_files, build_review_files


def _tree(tmp_path):
    (tmp_path / "Makefile").write_text("NVCC = nvcc\nNVCC_FLAGS = -arch=sm_80\n")
    (tmp_path / "CMakeLists.txt").write_text("project(x LANGUAGES CXX CUDA)\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "build.sh").write_text("nvcc -O2 a.cu -o a\n")
    (tmp_path / "tools" / "run.sh").write_text("echo no compiler here\n")
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='plain')\n")  # no CUDA
    (tmp_path / "build").mkdir()  # skipped folder, as the scan skips it
    (tmp_path / "build" / "Makefile").write_text("NVCC = nvcc\n")
    (tmp_path / "kernel.cu").write_text("__global__ void k() {}\n")
    return tmp_path


def test_build_files_are_found_by_name(tmp_path):
    root = _tree(tmp_path)
    assert [p.relative_to(root).as_posix() for p in build_files(root)] == [
        "CMakeLists.txt", "Makefile", "setup.py", "tools/build.sh", "tools/run.sh"]


def test_review_files_only_for_cuda_build_files(tmp_path):
    root = _tree(tmp_path)
    files, skipped = build_review_files(root, BuildTarget(arch="gfx90a"))
    assert [f.path for f in files] == ["CMakeLists.txt", "Makefile", "tools/build.sh"]
    make = files[1]
    assert make.translated == "NVCC = hipcc\nNVCC_FLAGS = --offload-arch=gfx90a\n" and make.hunks
    assert skipped == []


def test_a_fifo_named_like_a_build_file_is_skipped_with_its_reason(tmp_path):
    os.mkfifo(tmp_path / "Makefile")
    files, skipped = build_review_files(tmp_path)
    assert files == [] and [s.path for s in skipped] == ["Makefile"] and "FIFO" in skipped[0].reason
