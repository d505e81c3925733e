"""Compile check: parsing recorded hipcc output, arch fallback, and real hipcc on the translated demo."""

from __future__ import annotations

from pathlib import Path

import pytest

from hipwizard.port.demo import DEMO_PROJECT
from hipwizard.port.output.compile_check import check_files, find_toolchain, parse_diagnostics
from hipwizard.port.translation.engine import translate_tree
from hipwizard.port.translation.hunks import apply_hunks
from hipwizard.runner import RunResult, SubprocessRunner

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "port" / "hipcc"
needs_hipcc = pytest.mark.skipif(SubprocessRunner().which("hipcc") is None, reason="hipcc not installed")


class ArchRunner:
    """A hipcc that rejects gfx942 the way Debian's HIP 5.2 hipcc does (recorded output)."""

    def __init__(self, supported=("gfx940", "gfx90a"), installed=True):
        self.supported, self.installed, self.calls = supported, installed, []

    def which(self, name):
        return "/usr/bin/hipcc" if self.installed else None

    def run(self, argv, *, timeout=30.0, env=None, cwd=None):
        self.calls.append((list(argv), env))
        arch = next(a.split("=", 1)[1] for a in argv if a.startswith("--offload-arch="))
        if arch in self.supported:
            return RunResult(tuple(argv), "ok", 0)
        return RunResult(tuple(argv), "failed", 1, "", (FIX / "invalid-target-gfx942.stderr.txt").read_text())


def test_parse_recorded_errors():
    (ptx,) = parse_diagnostics((FIX / "inline-ptx-gfx940.stderr.txt").read_text())
    assert (ptx.file, ptx.line, ptx.severity, ptx.message) == ("ptx.cu", 4, "error", "invalid instruction")
    (hdr,) = parse_diagnostics((FIX / "missing-hipcub.stderr.txt").read_text())
    assert (hdr.severity, hdr.missing_header) == ("fatal", "hipcub/hipcub.hpp")
    (code,) = parse_diagnostics((FIX / "undeclared-identifier.stderr.txt").read_text())
    assert code.missing_header == "" and "undefined_x" in code.message


def test_arch_falls_back_and_says_so():
    runner = ArchRunner()
    tool = find_toolchain(runner)
    assert tool.arch == "gfx940" and "does not support gfx942" in tool.note
    assert runner.calls and all(env == {"HIP_PLATFORM": "amd"} for _, env in runner.calls)
    assert find_toolchain(ArchRunner(supported=("gfx942",))).note == ""


def test_without_hipcc_every_unit_is_not_available(tmp_path):
    checks = check_files(tmp_path, ["a.cu", "b.cuh"], runner=ArchRunner(installed=False))
    assert [c.status for c in checks] == ["not available", "skipped"]
    assert "install" in checks[0].note


@needs_hipcc
def test_real_hipcc_tells_code_errors_from_missing_headers(tmp_path):
    (tmp_path / "ok.cu").write_text("#include <hip/hip_runtime.h>\n__global__ void k(float* x){ x[threadIdx.x] = 1.f; }\n")
    (tmp_path / "ptx.cu").write_text('#include <hip/hip_runtime.h>\n__global__ void k(unsigned* o){\n'
                                     '  unsigned l; asm volatile("mov.u32 %0, %%laneid;" : "=r"(l)); o[0] = l; }\n')
    (tmp_path / "lib.cpp").write_text("#include <hip/hip_runtime.h>\n#include <hipcub/hipcub.hpp>\n")
    seen = []
    checks = check_files(tmp_path, ["ok.cu", "ptx.cu", "lib.cpp"], jobs=2, progress=lambda p: seen.append((p.done, p.total)))
    assert [c.status for c in checks] == ["ok", "failed", "missing-header"]
    assert [(e.file, e.line, e.message) for e in checks[1].errors] == [("ptx.cu", 3, "invalid instruction")]
    assert checks[2].missing_headers == ["hipcub/hipcub.hpp"]
    assert seen[-1] == (3, 3)


@pytest.mark.slow
@needs_hipcc
def test_translated_demo_with_accept_reject_mixes(tmp_path):
    translations = {t.path: t for t in translate_tree(DEMO_PROJECT, backend="builtin")}

    def write(out: Path, reject) -> None:
        for t in translations.values():
            accepted = [h.hunk_id for h in t.hunks if not reject(t.path, h)]
            target = out / t.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(apply_hunks(t.original, t.hunks, accepted))

    units = ["kernels/layernorm.cu", "matmul.cu"]
    all_in = tmp_path / "all"
    write(all_in, lambda path, h: False)
    layernorm, matmul = check_files(all_in, units)
    # the warp code hipify left alone breaks the build on HIP 5.2, in the shared header
    assert layernorm.status == "failed"
    assert ("include/common.cuh", 24) in {(e.file, e.line) for e in layernorm.errors}
    assert matmul.status == "missing-header" and matmul.missing_headers == ["hipblas/hipblas.h"]  # ROCm >= 6 layout (the default target)

    # rejecting the include hunk keeps <cublas_v2.h>: now it is the user's code, not a ROCm library, that fails
    mixed = tmp_path / "mixed"
    write(mixed, lambda path, h: path == "matmul.cu" and any("cublas_v2.h" in ln for ln in h.old_lines))
    (matmul_mixed,) = check_files(mixed, ["matmul.cu"])
    assert matmul_mixed.status == "failed"
    assert any("cublas_v2.h" in e.message for e in matmul_mixed.errors)
