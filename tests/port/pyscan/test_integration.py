"""The translate pipeline lists Python files with findings as review files and runs the C/C++ NVML rules."""

from __future__ import annotations

from hipwizard.port.translation.engine import port_tree

SETUP = ("import torch\nfrom torch.utils.cpp_extension import CUDA_HOME\n"
         "use_cuda = torch.cuda.is_available() and CUDA_HOME is not None\n")
MFU = '#include <nvml.h>\n#include <stdio.h>\nint util() {\n  nvmlInit();\n  return 0;\n}\n'
POLL = 'int busy(void) {\n  FILE* p = popen("nvidia-smi --query-gpu=utilization.gpu --format=csv", "r");\n  return p != 0;\n}\n'


def test_python_files_are_review_files_with_fixes_as_hunks(tmp_path):
    (tmp_path / "kernels.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "gate.py").write_text(SETUP)
    (tmp_path / "tools" / "clean.py").write_text("x = 1\n")
    report = port_tree(tmp_path, backend="builtin")
    by_path = {f.path: f for f in report.files}
    assert "tools/clean.py" not in by_path
    gate = by_path["tools/gate.py"]
    assert gate.backend == "pyscan" and "(CUDA_HOME or ROCM_HOME) is not None" in gate.translated
    assert any(f.rule_id == "PY_CUDA_HOME" for h in gate.hunks for f in h.flags)
    assert report.summary()["flags_by_rule"].get("PY_CUDA_HOME")


def test_nvml_and_nvidia_smi_in_c_sources_are_flagged(tmp_path):
    (tmp_path / "mfu.h").write_text(MFU)  # no CUDA in it: before, skipped as "no CUDA content"
    (tmp_path / "poll.c").write_text(POLL)
    report = port_tree(tmp_path, backend="builtin")
    flags = {(f.path, fl.rule_id, fl.line) for f in report.files
             for fl in [*f.untouched_flags, *(x for h in f.hunks for x in h.flags)]}
    assert {("mfu.h", "NVML", 1), ("mfu.h", "NVML", 4), ("poll.c", "NVIDIA_SMI", 2)} <= flags
