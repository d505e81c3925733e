"""Names the project defines itself are never "unsupported in HIP" (issue 29 item 5: llm.c's cudaCheck)."""

from __future__ import annotations

from hipwizard.port.translation.engine import port_tree
from hipwizard.port.translation.own_names import defined_names

COMMON = """#include <cuda_runtime.h>
#define cudaCheck(err) (cudaCheck_(err, __FILE__, __LINE__))
inline void cudaCheck_(cudaError_t error, const char *file, int line) {
  if (error != cudaSuccess) { printf("%s", cudaGetErrorString(error)); exit(1); }
}
template<class T>
inline void cudaFreeCheck(T** ptr, const char *file, int line) { cudaCheck_(cudaFree(*ptr), file, line); }
"""
MAIN = """#include "llmc/common.h"
int main() {
  float* p;
  cudaError_t cudaStatus = cudaMalloc(&p, 4);
  cudaCheck(cudaStatus);
  cudaFreeCheck(&p, __FILE__, __LINE__);
  cudaNotARealApi(p);
  return 0;
}
"""


def test_defined_names_macros_functions_variables_not_calls():
    names = defined_names(COMMON + MAIN)
    assert {"cudaCheck", "cudaCheck_", "cudaFreeCheck", "cudaStatus"} <= names
    assert "cudaNotARealApi" not in names  # only called
    assert "cudaMalloc" not in names and "cudaGetErrorString" not in names
    assert "cudaX" not in defined_names("int f() { return cudaX(1); }\n")  # 'return' is not a type
    assert "cudaY" not in defined_names("#define CALL(x) run cudaY(x)\n")  # a macro body declares nothing
    assert "cudaZ" not in defined_names("// void cudaZ(int);\n")  # comments are not code


def test_project_helpers_across_files_are_not_unsupported(tmp_path):
    (tmp_path / "llmc").mkdir()
    (tmp_path / "llmc" / "common.h").write_text(COMMON)
    (tmp_path / "train.cu").write_text(MAIN)
    report = port_tree(tmp_path, backend="builtin")
    unsupported = report.summary()["unsupported"]
    assert unsupported == {"cudaNotARealApi": 1}  # the project's helpers and variable are gone, the real miss stays
    train = next(f for f in report.files if f.path == "train.cu")
    assert train.stats["unsupported"] == 1
