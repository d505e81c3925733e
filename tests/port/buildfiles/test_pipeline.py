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


def test_the_translate_service_builds_for_the_doctors_arch(tmp_path):
    from hipwizard.port import services
    from hipwizard.workspace import Workspace
    from tests.port.target import save_rocm61_gfx90a

    ws = Workspace(tmp_path)
    save_rocm61_gfx90a(ws)  # the doctor found gfx90a
    done = services.translate(ws, _project(tmp_path), tmp_path / "out", backend="builtin")
    make = next(f for f in done.report.files if f.path == "Makefile")
    assert "--offload-arch=gfx90a" in make.translated
    hunks = [h for h in done.review.hunks if h.file == "Makefile"]
    assert hunks and any(f.rule_id == "BUILD_NOT_DROP_IN" for h in hunks for f in h.flags)
    # a source changes: the refresh re-translates for the same arch, so the Makefile's hunks are the same ones
    (tmp_path / "proj" / "k.cu").write_text(KERNEL + "// edited\n")
    assert services.refresh(ws, done.review) is not None
    assert {h.hunk_id for h in done.review.hunks if h.file == "Makefile"} == {h.hunk_id for h in hunks}
