"""The port's Python room: CUDA-only assumptions in a project's ``.py`` files (gates on torch.version.cuda /
CUDA_HOME / compute capability, NVML and nvidia-smi, torch.compile and Inductor options, allocator settings,
TF32 switches, GPU-library imports, NVTX), read with ``ast`` (never imported), each a ``RiskFlag`` with a
sourced reason and, where mechanical, a fix that becomes a hunk; and NVML / nvidia-smi in C/C++ sources.

Door: ``scan_python(text)`` -> findings; ``python_translation(path, text)`` -> a review file or None;
``python_review_files(root)`` -> the review files of a tree's Python files; ``find_native(text)`` -> C/C++
findings of the same ``Finding`` type as the other risk rules (``NATIVE_RULES`` run with them).
"""

from hipwizard.port.pyscan.catalogue import PY_RULES, PY_RULES_BY_ID
from hipwizard.port.pyscan.model import PyFinding, PyRule, Replacement
from hipwizard.port.pyscan.native import NATIVE_RULES, NVIDIA_SMI_RULE, find_native, nvidia_smi_findings
from hipwizard.port.pyscan.translation import BACKEND, apply_fixes, python_translation, scan_python
from hipwizard.port.pyscan.walk import python_files, python_review_files

__all__ = ["BACKEND", "NATIVE_RULES", "NVIDIA_SMI_RULE", "PY_RULES", "PY_RULES_BY_ID", "PyFinding", "PyRule",
           "Replacement", "apply_fixes", "find_native", "nvidia_smi_findings", "python_files",
           "python_review_files", "python_translation", "scan_python"]
