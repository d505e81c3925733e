"""A translated Makefile builds with Debian's hipcc (gfx90a): the build file is part of the port."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from hipwizard.port.buildfiles import BuildTarget, translate_build_file

HIPCC = Path("/usr/bin/hipcc")
MAKEFILE = """\
CUDA_PATH ?= /usr/local/cuda
NVCC = $(CUDA_PATH)/bin/nvcc
NVCC_FLAGS = -O3 -arch=sm_80 --use_fast_math -lineinfo --expt-relaxed-constexpr -Xcompiler -Wall -t=0
INCLUDES = -I$(CUDA_PATH)/include
LDFLAGS = -L$(CUDA_PATH)/lib64 -lcudart

all: app probe

app: kernel.cu
\t$(NVCC) $(NVCC_FLAGS) $(INCLUDES) $^ $(LDFLAGS) -o $@

probe: probe.cpp
\tg++ $(INCLUDES) $^ $(LDFLAGS) -o $@
"""
# host code built by g++ against the runtime headers (another Makefile of issue 29 did this with CUDA's)
PROBE = """\
#include <hip/hip_runtime.h>
int main() { int n = 0; (void)hipGetDeviceCount(&n); return 0; }
"""
# the kernel as the port's source translation leaves it (this test is about the build file)
KERNEL = """\
#include <hip/hip_runtime.h>
__global__ void add_one(float *x) { x[threadIdx.x] += 1.0f; }
int main() {
  float *d = nullptr;
  if (hipMalloc(&d, 64 * sizeof(float)) != hipSuccess) return 1;
  add_one<<<1, 64>>>(d);
  hipDeviceSynchronize();
  hipFree(d);
  return 0;
}
"""


@pytest.mark.skipif(not HIPCC.exists() or shutil.which("make") is None, reason="needs Debian's hipcc and make")
def test_translated_makefile_builds_with_hipcc(tmp_path):
    result = translate_build_file("Makefile", MAKEFILE, BuildTarget(arch="gfx90a"))
    assert result is not None and "nvcc" not in result.text
    (tmp_path / "Makefile").write_text(result.text)
    (tmp_path / "kernel.cu").write_text(KERNEL)
    (tmp_path / "probe.cpp").write_text(PROBE)
    # Debian installs ROCm under /usr: the translated file's ROCM_PATH is overridden on the command line
    env = {**os.environ, "HIP_PLATFORM": "amd"}
    done = subprocess.run(["make", "ROCM_PATH=/usr"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "--offload-arch=gfx90a" in done.stdout and "/usr/bin/hipcc" in done.stdout
    assert (tmp_path / "app").is_file() and (tmp_path / "probe").is_file()
