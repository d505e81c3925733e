"""Mechanical fixes become hunks with their flags; C/C++ NVML / nvidia-smi findings; a tree's Python files."""

from __future__ import annotations

from hipwizard.port.pyscan import find_native, python_review_files, python_translation, scan_python
from hipwizard.port.pyscan.translation import apply_fixes

SETUP = """import torch
from torch.utils.cpp_extension import BuildExtension, CUDAExtension, CUDA_HOME

use_cuda = torch.cuda.is_available() and CUDA_HOME is not None
if torch.version.cuda is not None and use_cuda:
    ext = CUDAExtension("k", ["k.cu"])
print(float(torch.version.cuda))
"""


def test_the_setup_gate_is_fixed_mechanically():
    out = apply_fixes(SETUP, scan_python(SETUP))
    assert "import BuildExtension, CUDAExtension, CUDA_HOME, ROCM_HOME\n" in out
    assert "torch.cuda.is_available() and (CUDA_HOME or ROCM_HOME) is not None" in out
    assert "if (torch.version.cuda or torch.version.hip) is not None and use_cuda:" in out
    assert "print(float(torch.version.cuda))" in out  # a value, not a test: flagged, left to a human


def test_fixes_are_hunks_and_every_finding_a_flag():
    ft = python_translation("setup.py", SETUP)
    assert ft is not None and ft.backend == "pyscan"
    changed = {line for h in ft.hunks for line in h.new_lines}
    assert any("ROCM_HOME" in line for line in changed)
    hunk_flags = [(f.rule_id, f.line) for h in ft.hunks for f in h.flags]
    assert ("PY_CUDA_HOME", 4) in hunk_flags and ("PY_CUDA_VERSION_GATE", 5) in hunk_flags
    assert [(f.rule_id, f.line) for f in ft.untouched_flags] == [("PY_CUDA_VERSION_GATE", 7)]
    assert ft.untouched_flags and all(f.source.startswith("https://") for f in ft.untouched_flags)


def test_an_alias_import_gets_rocm_home_only_when_a_fix_uses_it():
    text = "from torch.utils.cpp_extension import CUDA_HOME\ninc = CUDA_HOME + '/include'\n"
    assert apply_fixes(text, scan_python(text)) == text  # flagged, nothing mechanical
    assert {f.rule.rule_id for f in scan_python(text)} == {"PY_CUDA_HOME"}


def test_allocator_and_inductor_strings_are_rewritten():
    text = ("import os, torch._inductor.config as c\n"
            "os.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'pinned_use_cuda_host_register:True,release_lock_on_cudamalloc:True'\n"
            "c.max_autotune_gemm_backends = 'ATEN,TRITON,CUTLASS'\n")
    out = apply_fixes(text, scan_python(text))
    assert "'pinned_use_hip_host_register:True,release_lock_on_hipmalloc:True'" in out
    assert "c.max_autotune_gemm_backends = 'ATEN,TRITON'" in out


def test_a_clean_file_is_no_review_file():
    assert python_translation("ok.py", "import torch\nx = torch.ones(2, device='cuda')\n") is None


def test_non_ascii_columns_land_on_the_right_characters():
    text = "import torch\nok = ('é', torch.version.cuda is None)\n"
    assert apply_fixes(text, scan_python(text)) == "import torch\nok = ('é', (torch.version.cuda or torch.version.hip) is None)\n"


def test_native_nvml_and_nvidia_smi_in_c():
    text = ('#include <nvml.h>\n// nvidia-smi -L in a comment\nint main() {\n  nvmlInit();\n'
            '  FILE* p = popen("nvidia-smi --query-gpu=utilization.gpu --format=csv", "r");\n}\n')
    assert [(f.line, f.rule.rule_id) for f in find_native(text)] == [(1, "NVML"), (4, "NVML"), (5, "NVIDIA_SMI")]
    assert find_native('#include <stdio.h>\nint nvml = 0; // nvmlInit()\nputs("amd-smi");\n') == []


def test_a_trees_python_files(tmp_path):
    (tmp_path / "setup.py").write_text(SETUP)
    (tmp_path / "clean.py").write_text("x = 1\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "gen.py").write_text("import pynvml\n")  # build output: not the project's source
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "mon.py").write_text("import pynvml\n")
    files, skipped = python_review_files(tmp_path)
    assert [f.path for f in files] == ["setup.py", "tools/mon.py"] and skipped == []


def test_code_already_ported_stays_quiet():
    text = ("import torch\nfrom torch.utils.cpp_extension import CUDA_HOME, ROCM_HOME\n"
            "ok = (CUDA_HOME or ROCM_HOME) is not None\nif (torch.version.cuda or torch.version.hip) is not None:\n    pass\n")
    assert scan_python(text) == []
    assert apply_fixes(text, scan_python(text)) == text


def test_a_file_another_room_claimed_gets_flags_not_a_second_review_file(tmp_path):
    from hipwizard.port.model import FileTranslation

    (tmp_path / "setup.py").write_text("import pynvml\n")
    claimed = FileTranslation("setup.py", "import pynvml\n", "import pynvml\n", "buildfile")
    files, _ = python_review_files(tmp_path, claimed={"setup.py": claimed})
    assert files == [] and [f.rule_id for f in claimed.untouched_flags] == ["PY_NVML"]


def test_a_gate_whose_body_uses_the_value_is_flagged_not_fixed():
    text = ("from torch.utils.cpp_extension import CUDA_HOME\n"
            "if CUDA_HOME is not None:\n    nvcc = CUDA_HOME + '/bin/nvcc'\n")
    found = scan_python(text)
    assert [(f.line, f.rule.rule_id) for f in found] == [(2, "PY_CUDA_HOME"), (3, "PY_CUDA_HOME")]
    assert apply_fixes(text, found) == text
