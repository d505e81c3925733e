"""Makefiles and shell scripts from nvcc to hipcc: each rule, on real-shaped lines (llm.c's Makefile)."""

from __future__ import annotations

import pytest

from hipwizard.port.buildfiles.makefile import translate_makefile, translate_script
from hipwizard.port.buildfiles.model import BuildTarget

LLMC = """\
CC ?= clang
NVCC_FLAGS = -O3 -t=0 --use_fast_math -std=c++17
NVCC_LDFLAGS = -lcublas -lcublasLt
ifneq ($(CI),true)
  ifndef GPU_COMPUTE_CAPABILITY
    GPU_COMPUTE_CAPABILITY = $(shell __nvcc_device_query)
  endif
endif
ifneq ($(GPU_COMPUTE_CAPABILITY),)
  NVCC_FLAGS += --generate-code arch=compute_$(GPU_COMPUTE_CAPABILITY),code=[compute_$(GPU_COMPUTE_CAPABILITY),sm_$(GPU_COMPUTE_CAPABILITY)]
endif
NVCC := $(shell which nvcc 2>/dev/null)
NVCC_LDFLAGS += -lnvidia-ml
NVCC_FLAGS += -Xcompiler -fopenmp -DOMP
NVCC_LDLIBS += -lnccl
train_gpt2cu: train_gpt2.cu
\t$(NVCC) $(NVCC_FLAGS) -lineinfo $^ $(NVCC_LDFLAGS) $(NVCC_LDLIBS) -o $@
"""


def _line(text: str, start: str) -> str:
    found = [line for line in text.split("\n") if line.lstrip().startswith(start)]
    assert found, f"no line starts with {start!r}"
    return found[0]


def test_llmc_makefile_translated_line_for_line():
    r = translate_makefile(LLMC, BuildTarget(arch="gfx90a"))
    out = r.text.split("\n")
    assert len(out) == len(LLMC.split("\n"))  # no ROCm path used: nothing inserted
    assert _line(r.text, "NVCC_FLAGS = ") == "NVCC_FLAGS = -O3 -ffast-math -std=c++17"  # -t=0 dropped
    assert _line(r.text, "NVCC_LDFLAGS = ") == "NVCC_LDFLAGS = -lhipblas -lhipblaslt"
    assert out[9] == "  NVCC_FLAGS += --offload-arch=gfx90a"
    assert _line(r.text, "NVCC :=") == "NVCC := $(shell which hipcc 2>/dev/null)"
    assert out[13] == "NVCC_FLAGS += -fopenmp -DOMP"
    assert _line(r.text, "NVCC_LDLIBS") == "NVCC_LDLIBS += -lrccl"
    assert "-gline-tables-only" in out[16] and "-lineinfo" not in out[16]
    assert out[0] == "CC ?= clang" and out[5] == LLMC.split("\n")[5]  # untouched lines stay as they were


def test_llmc_makefile_flags_what_cannot_be_rewritten():
    r = translate_makefile(LLMC)
    kinds = {(f.line, f.kind) for f in r.flags}
    assert (6, "arch-detect") in kinds  # __nvcc_device_query finds nothing on ROCm
    assert (10, "arch-var") in kinds  # the arch flag hangs on that probe
    assert (13, "not-drop-in") in kinds  # NVML: amdsmi is not a drop-in
    nvml = next(f for f in r.flags if f.kind == "not-drop-in")
    assert "amd_smi" in nvml.fix and nvml.source.startswith("https://rocm.docs.amd.com/")
    assert "-lnvidia-ml" in r.text  # left for the human, not silently dropped
    assert r.flags and all(f.severity in ("high", "med", "low") and f.reason and f.fix for f in r.flags)


@pytest.mark.parametrize("line, expected", [
    ("NVCC_FLAGS = -gencode arch=compute_70,code=sm_70 -gencode arch=compute_80,code=sm_80 -O2",
     "NVCC_FLAGS = --offload-arch=gfx942 -O2"),
    ("NVCC_FLAGS = -arch=sm_80", "NVCC_FLAGS = --offload-arch=gfx942"),
    ("NVCC_FLAGS = --expt-relaxed-constexpr --expt-extended-lambda -O3", "NVCC_FLAGS = -O3"),
    ("NVCC_FLAGS = -rdc=true -Xptxas -v", "NVCC_FLAGS = -fgpu-rdc -Rpass-analysis=kernel-resource-usage"),
    ("NVCC_FLAGS = -Xcompiler \"-Wall,-fPIC\" --std c++17", "NVCC_FLAGS = -Wall -fPIC -std=c++17"),
    ("NVCC_FLAGS = --default-stream per-thread -x cu", "NVCC_FLAGS = -fgpu-default-stream=per-thread -x hip"),
    ("LDFLAGS = -lcudart -lcufft -lcurand -lcusparse -lcusolver",
     "LDFLAGS = -lamdhip64 -lhipfft -lhiprand -lhipsparse -lhipsolver"),
    ("CC = nvcc", "CC = hipcc"),
])
def test_nvcc_flag_rules(line, expected):
    assert translate_makefile(line).text == expected


def test_flags_of_dropped_or_approximate_options():
    r = translate_makefile("NVCC_FLAGS = -maxrregcount=64 -ccbin g++ -Xptxas -O3 --use_fast_math")
    assert r.text == "NVCC_FLAGS = -ffast-math"
    assert {f.kind for f in r.flags} == {"maxrregcount", "ccbin", "ptxas-option", "fast-math"}


def test_ambiguous_flags_only_on_nvcc_lines():
    assert translate_makefile("CFLAGS = -G -t 4").text == "CFLAGS = -G -t 4"  # not an nvcc line
    assert translate_makefile("NVCC_FLAGS = -G -t 4").text == "NVCC_FLAGS = -g"
    assert translate_makefile("CFLAGS = -arch x86_64").text == "CFLAGS = -arch x86_64"  # macOS, not CUDA


def test_cuda_paths_become_an_overridable_rocm_path():
    text = "CXX = g++\nCXXFLAGS = -I/usr/local/cuda/include\nLDFLAGS = -L/usr/local/cuda-12.2/lib64 -lcuda\n"
    r = translate_makefile(text)
    # a host compiler reading the HIP headers needs the platform defined (hipcc defines it itself)
    assert r.text.split("\n")[1:4] == ["ROCM_PATH ?= /opt/rocm", "CXXFLAGS = -I$(ROCM_PATH)/include -D__HIP_PLATFORM_AMD__",
                                       "LDFLAGS = -L$(ROCM_PATH)/lib -lamdhip64"]


def test_cuda_root_variable_is_renamed_and_keeps_one_line():
    text = "CUDA_PATH ?= /usr/local/cuda\nNVCC = $(CUDA_PATH)/bin/nvcc\n"
    assert translate_makefile(text).text == "ROCM_PATH ?= /opt/rocm\nNVCC = $(ROCM_PATH)/bin/hipcc\n"


def test_root_default_goes_above_recipes_not_into_them():
    text = "all:\n\tg++ -I/usr/local/cuda/include x.cpp\n"
    assert translate_makefile(text).text.split("\n")[:2] == ["ROCM_PATH ?= /opt/rocm", "all:"]


def test_continuation_lines_keep_their_command_context():
    text = "NVCC_FLAGS = -O3 \\\n\t-G\n"
    assert translate_makefile(text).text == "NVCC_FLAGS = -O3 \\\n\t-g\n"


def test_comments_and_crlf_are_kept():
    text = "# nvcc -arch=sm_80\r\nNVCC = nvcc\r\nNVCC_INC = -I/usr/local/cuda/include\r\n"
    out = translate_makefile(text).text
    assert out.startswith("# nvcc -arch=sm_80\r\nNVCC = hipcc\r\nROCM_PATH ?= /opt/rocm\r\n")


def test_unknown_cuda_library_is_flagged():
    r = translate_makefile("LDLIBS = -lnppc -lm")
    assert r.text == "LDLIBS = -lnppc -lm" and [f.kind for f in r.flags] == ["unknown-library"]


def test_shell_script_nvcc_lines():
    text = ("#!/bin/sh\nexport CUDA_HOME=/usr/local/cuda\n"
            "$CUDA_HOME/bin/nvcc -O3 -arch=sm_90 -lcublas kernel.cu -o k\nnvidia-smi --query-gpu=name\n")
    r = translate_script(text, BuildTarget(arch="gfx90a"))
    assert r.text.split("\n")[1:3] == [
        "export ROCM_PATH=${ROCM_PATH:-/opt/rocm}",
        "${ROCM_PATH:-/opt/rocm}/bin/hipcc -O3 --offload-arch=gfx90a -lhipblas kernel.cu -o k"]
    assert [(f.line, f.kind) for f in r.flags] == [(4, "nvidia-smi")]


def test_a_variable_holding_the_cuda_arch_holds_the_gfx_name():
    text = "ARCH ?= sm_80\nNVCC ?= nvcc\nall:\n\t$(NVCC) -arch=$(ARCH) -O3 k.cu\n"
    r = translate_makefile(text, BuildTarget(arch="gfx90a"))
    assert r.text == "ARCH ?= gfx90a\nNVCC ?= hipcc\nall:\n\t$(NVCC) --offload-arch=$(ARCH) -O3 k.cu\n"
    assert r.flags == ()  # `make ARCH=gfx942` still works: nothing for a human to do
    assert translate_script("SM=sm_90\nnvcc -arch=$SM a.cu\n").text == "SM=gfx942\nhipcc --offload-arch=$SM a.cu\n"


def test_c_rules_built_by_nvcc_get_x_hip_and_others_keep_their_compiler():
    text = ("NVCC ?= /usr/local/cuda/bin/nvcc\nCC = gcc\n%.o: %.c\n\t$(NVCC) -O2 -c $< -o $@\n"
            "host.o: host.c\n\t$(CC) -c host.c\n.c.o:\n\t@nvcc -c $<\napp: main.o host.o\n\t$(NVCC) main.o host.o -o app\n"
            "k.o: k.c\n\t$(NVCC) -x cu -c k.c\n")
    out = translate_makefile(text).text.split("\n")
    assert "\t$(NVCC) -x hip -O2 -c $< -o $@" in out  # a pattern rule from .c, with the compiler that was nvcc
    assert "\t$(CC) -c host.c" in out  # gcc builds it: untouched
    assert "\t@hipcc -x hip -c $<" in out  # a suffix rule, nvcc by name
    assert "\t$(NVCC) main.o host.o -o app" in out  # a link line: -x would make its objects sources
    assert "\t$(NVCC) -x hip -c k.c" in out  # nvcc's own -x cu, mapped; not doubled
    assert sum(line.count("-x ") for line in out) == 3
