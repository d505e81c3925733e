"""Build files go through the port like sources: translated by port_tree, reviewed as hunks with their flags,
written by the review's write."""

from __future__ import annotations

from hipwizard.port.translation.engine import port_tree

KERNEL = "#include <cuda_runtime.h>\n__global__ void k(float *x) { x[threadIdx.x] = 0; }\n"
MAKEFILE = ("NVCC = nvcc\nNVCC_FLAGS = -O3 -arch=sm_80\nNVCC_LDFLAGS = -lcublas -lnvidia-ml\n"
            "app: k.cu\n\t$(NVCC) $(NVCC_FLAGS) $^ $(NVCC_LDFLAGS) -o $@\n")


def _project(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "k.cu").write_text(KERNEL)
    (src / "Makefile").write_text(MAKEFILE)
    (src / "README.md").write_text("build with nvcc\n")
    return src


def test_port_tree_translates_the_makefile_for_the_callers_arch(tmp_path):
    report = port_tree(_project(tmp_path), backend="builtin", arch="gfx90a")
    by_path = {f.path: f for f in report.files}
    assert set(by_path) == {"k.cu", "Makefile"}
    make = by_path["Makefile"]
    assert make.backend == "buildfiles"
    assert make.translated.split("\n")[:3] == ["NVCC = hipcc", "NVCC_FLAGS = -O3 --offload-arch=gfx90a",
                                               "NVCC_LDFLAGS = -lhipblas -lnvidia-ml"]
    flags = [f for h in make.hunks for f in h.flags] + make.untouched_flags
    assert [f.rule_id for f in flags] == ["BUILD_NOT_DROP_IN"] and flags[0].line == 3
    summary = report.summary()
    assert summary["build_files"] == 1 and summary["flags_by_rule"]["BUILD_NOT_DROP_IN"] == 1


def test_default_arch_without_a_caller_arch(tmp_path):
    report = port_tree(_project(tmp_path), backend="builtin")
    make = next(f for f in report.files if f.path == "Makefile")
    assert "--offload-arch=gfx942" in make.translated
