"""Guards on CUDA toolkit and library version macros go dead under HIP (issue 29 item 5): flagged with the fix."""

from __future__ import annotations

import pytest

from hipwizard.port.risk.flags import find_risks
from hipwizard.port.risk.rules import RULES_BY_ID


def _guard_lines(text: str) -> list[int]:
    return [f.line for f in find_risks(text) if f.rule.rule_id == "CUDA_VERSION_GUARD"]


@pytest.mark.parametrize("line", [
    "#if CUBLAS_VER_MAJOR >= 12", "#if CUDART_VERSION >= 11000", "#elif CUDA_VERSION < 12000",
    "#if defined(__CUDACC_VER_MAJOR__) && __CUDACC_VER_MAJOR__ >= 11", "#ifdef CUDNN_VERSION",
    "#if CUDNN_MAJOR >= 8", "#if CUSPARSE_VER_MAJOR > 11", "#ifndef CUB_VERSION", "#if CUFFT_VERSION >= 10000",
])
def test_version_macro_guards_are_flagged(line):
    assert _guard_lines(f"{line}\nint a;\n#endif\n") == [1]


@pytest.mark.parametrize("line", [
    "#if HIP_VERSION_MAJOR >= 6", "#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)",  # RCCL defines these
    "#if MY_CUDA_VERSION_CHECK", "#if hipblasVersionMajor >= 2", "x = CUDA_VERSION;",
])
def test_other_guards_are_not(line):
    assert _guard_lines(f"{line}\nint a;\n#endif\n") == []


def test_the_fix_names_hips_own_version_macros():
    rule = RULES_BY_ID["CUDA_VERSION_GUARD"]
    assert "HIP_VERSION" in rule.hint and "hipblasVersionMajor" in rule.hint and "6.10.1" in rule.source
