"""Test data for the doctor's facts as the port step reads them: a saved doctor report of a ROCm 6.1 machine
with an MI250X (gfx90a), CUDA code that uses APIs HIP added after 6.1, and a hipcc that records its arch."""

from __future__ import annotations

from hipwizard.doctor.models import DoctorReport, EnvReport, GpuInfo
from hipwizard.doctor.state import save_report
from hipwizard.runner import RunResult
from hipwizard.workspace import Workspace

HIP_61 = "6.1.40093-bd86f1708"  # hipconfig --version of ROCm 6.1.0
# HIPIFY's tables: hipGetFuncBySymbol and hipSetValidDevices arrived in HIP 6.2.0.
NEW_APIS = ("cudaGetFuncBySymbol", "cudaSetValidDevices")
NEW_API_KERNEL = """#include <cuda_runtime.h>

__global__ void fill(float* x) { x[threadIdx.x] = 1.0f; }

int pick(int* devices, int n) {
  cudaFunction_t fn;
  cudaGetFuncBySymbol(&fn, (const void*)fill);
  return cudaSetValidDevices(devices, n);
}
"""


def save_rocm61_gfx90a(ws: Workspace) -> None:
    """The doctor's report of a ROCm 6.1 host with one MI250X GCD, saved in ``ws``."""
    env = EnvReport(gpus=[GpuInfo(0, "amd", "AMD Instinct MI250X", gfx="gfx90a", gfx_full="gfx90a:sramecc+:xnack-")],
                    gpu_source="rocminfo", rocm_version="6.1.0", hip_version=HIP_61)
    save_report(ws, DoctorReport(env, [], origin="live"))


class RecordingHipcc:
    """A hipcc that accepts every arch and compiles everything, remembering each ``--offload-arch``."""

    def __init__(self) -> None:
        self.archs: list[str] = []

    def which(self, name):
        return "/usr/bin/hipcc" if name == "hipcc" else None

    def run(self, argv, *, timeout=30.0, env=None, cwd=None):
        self.archs += [a.split("=", 1)[1] for a in argv if a.startswith("--offload-arch=")]
        return RunResult(tuple(argv), "ok", 0)
