"""setup.py / pyproject.toml of torch CUDA extensions: the gates widened, the build's CUDA-isms flagged."""

from __future__ import annotations

from hipwizard.port.buildfiles.python_build import translate_pyproject, translate_setup

SETUP = """\
import torch
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension, CppExtension, CUDA_HOME

use_cuda = torch.cuda.is_available() and CUDA_HOME is not None
ext = CUDAExtension if use_cuda else CppExtension
extra = {"cxx": ["-O3"], "nvcc": ["-O3", "--use_fast_math", "-gencode", "arch=compute_80,code=sm_80"]}
setup(name="ext", ext_modules=[ext("ext._C", ["csrc/ext.cpp", "csrc/k.cu"], extra_compile_args=extra,
                                   libraries=["cublas"])],
      cmdclass={"build_ext": BuildExtension})
"""


def test_cuda_home_gate_accepts_rocm():
    r = translate_setup(SETUP)
    out = r.text.split("\n")
    assert out[2].endswith("CppExtension, CUDA_HOME, ROCM_HOME")
    assert out[4] == "use_cuda = torch.cuda.is_available() and (CUDA_HOME is not None or ROCM_HOME is not None)"
    assert len(out) == len(SETUP.split("\n"))


def test_setup_flags():
    r = translate_setup(SETUP)
    kinds = {(f.line, f.kind) for f in r.flags}
    assert {(6, "build-hipify"), (7, "nvcc-args"), (9, "link-library")} <= kinds
    nvcc = next(f for f in r.flags if f.kind == "nvcc-args")
    assert "-ffast-math --offload-arch=gfx942" in nvcc.fix and "-gencode" not in nvcc.fix
    blas = next(f for f in r.flags if f.kind == "link-library")
    assert "hipblas" in blas.fix


def test_other_gates():
    text = ("if torch.version.cuda is not None and CUDA_HOME is None:\n    pass\n"
            "if torch.version.cuda:\n    pass\n"
            "from torch.utils import cpp_extension\nok = cpp_extension.CUDA_HOME is not None\n")
    out = translate_setup(text).text.split("\n")
    assert out[0] == ("if (torch.version.cuda is not None or torch.version.hip is not None) and "
                      "(CUDA_HOME is None and ROCM_HOME is None):")
    assert out[2] == "if (torch.version.cuda or torch.version.hip):"
    assert out[5] == "ok = (cpp_extension.CUDA_HOME is not None or cpp_extension.ROCM_HOME is not None)"


def test_cuda_home_as_a_path_is_flagged():
    r = translate_setup('inc = os.path.join(CUDA_HOME, "include")\n')
    assert [f.kind for f in r.flags] == ["cuda-home-path"] and r.flags[0].severity == "high"


def test_flags_only_mode_keeps_the_text():
    r = translate_setup(SETUP, fix_gates=False)
    assert r.text == SETUP and {f.kind for f in r.flags} >= {"build-hipify", "nvcc-args", "link-library"}


def test_torch_arch_list_flagged():
    r = translate_setup('os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0"\n')
    assert [f.kind for f in r.flags] == ["torch-arch-list"] and "PYTORCH_ROCM_ARCH" in r.flags[0].fix


def test_pyproject_flags_cuda_wheels_and_indexes():
    text = ('[project]\ndependencies = ["torch", "nvidia-cublas-cu12", "cupy-cuda12x"]\n'
            '[[tool.uv.index]]\nurl = "https://download.pytorch.org/whl/cu121"\n')
    r = translate_pyproject(text)
    assert r.text == text
    assert [(f.line, f.kind) for f in r.flags] == [(2, "cuda-wheel"), (4, "cuda-index")]
    assert "nvidia-cublas-cu12, cupy-cuda12x" in r.flags[0].reason
