"""Every Python rule: a snippet it must flag (so the test fails without the rule) and a close one it must not."""

from __future__ import annotations

import pytest

from hipwizard.port.pyscan import PY_RULES, PY_RULES_BY_ID, scan_python
from hipwizard.port.pyscan.fallback import scan_lines

# rule id -> (code that must be flagged, similar code that must not be)
CASES: dict[str, tuple[str, str]] = {
    "PY_CUDA_VERSION_GATE": ("import torch\nif torch.version.cuda is not None:\n    x = 1\n",
                             "import torch\nif torch.version.hip is not None:\n    x = 1\n"),
    "PY_CUDA_HOME": ("from torch.utils.cpp_extension import CUDA_HOME\nuse_cuda = CUDA_HOME is not None\n",
                     "from torch.utils.cpp_extension import ROCM_HOME\nuse_rocm = ROCM_HOME is not None\n"),
    "PY_DEVICE_CAPABILITY": ("import torch\nif torch.cuda.get_device_capability()[0] >= 8:\n    x = 1\n",
                             "import torch\nif torch.cuda.is_bf16_supported():\n    x = 1\n"),
    "PY_CUDNN_VERSION": ("import torch\nnew = torch.backends.cudnn.version() >= 8700\n",
                         "import torch\nnew = torch.backends.cudnn.is_available()\n"),
    "PY_NVML": ("import pynvml\npynvml.nvmlInit()\n", "import amdsmi\namdsmi.amdsmi_init()\n"),
    "PY_NVIDIA_SMI": ("import subprocess\nout = subprocess.check_output(['nvidia-smi', '-L'])\n",
                      '"""Tip: nvidia-smi shows the GPUs."""\nimport subprocess\nout = subprocess.check_output(["amd-smi", "list"])\n'),
    "PY_COMPILE_MAX_AUTOTUNE": ("import torch\nm = torch.compile(m, mode='max-autotune')\n",
                                "import torch\nm = torch.compile(m, mode='default')\n"),
    "PY_INDUCTOR_CUDA_ONLY": ("import torch._inductor.config\ntorch._inductor.config.max_autotune_gemm_backends = 'ATEN,CUTLASS'\n",
                              "import torch._inductor.config\ntorch._inductor.config.max_autotune_gemm_backends = 'ATEN,TRITON'\n"),
    "PY_ALLOC_CONF": ("import os\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'expandable_segments:True'\n",
                      "import os\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'max_split_size_mb:128'\n"),
    "PY_TF32": ("import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n",
                "import torch\ntorch.backends.cuda.matmul.allow_tf32 = False\n"),
    "PY_FLASH_ATTN": ("from flash_attn import flash_attn_func\n", "from torch.nn.functional import scaled_dot_product_attention\n"),
    "PY_BITSANDBYTES": ("import bitsandbytes as bnb\n", "import torch.ao.quantization as q\n"),
    "PY_APEX": ("from apex import amp\n", "from torch import amp\n"),
    "PY_XFORMERS": ("import xformers.ops as xops\n", "import torch.nn.functional as F\n"),
    "PY_TRITON": ("import triton\nimport triton.language as tl\n", "import torch\n"),
    "PY_NVTX": ("import torch\ntorch.cuda.nvtx.range_push('fwd')\n", "import torch\ntorch.cuda.synchronize()\n"),
}


def _ids(text: str) -> set[str]:
    return {f.rule.rule_id for f in scan_python(text)}


def test_every_rule_has_a_case():
    assert set(CASES) == {r.rule_id for r in PY_RULES}


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_flags_its_case(rule_id):
    assert rule_id in _ids(CASES[rule_id][0])


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_stays_quiet_on_the_clean_case(rule_id):
    assert _ids(CASES[rule_id][1]) == set()


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_every_rule_has_a_source_url_and_a_fix_hint(rule_id):
    rule = PY_RULES_BY_ID[rule_id]
    assert "https://" in rule.source and rule.hint and rule.reason


def test_comments_and_docstrings_never_fire():
    text = '"""Uses torch.version.cuda and pynvml."""\n# import pynvml\n# if torch.version.cuda: pass\nx = 1\n'
    assert _ids(text) == set()


def test_aliases_are_followed():
    text = "import torch as th\nfrom torch.cuda import get_device_capability as cap\nok = th.version.cuda is None\nbig = cap()[0] >= 9\n"
    assert _ids(text) == {"PY_CUDA_VERSION_GATE", "PY_DEVICE_CAPABILITY"}


def test_capability_unpacked_then_compared():
    text = "import torch\nmajor, minor = torch.cuda.get_device_capability()\nhopper = major >= 9\n"
    found = scan_python(text)
    assert [(f.line, f.rule.rule_id) for f in found] == [(3, "PY_DEVICE_CAPABILITY")]


def test_properties_major_compared():
    assert _ids("import torch\nampere = torch.cuda.get_device_properties(0).major >= 8\n") == {"PY_DEVICE_CAPABILITY"}


def test_allocator_settings_through_setdefault_and_the_hip_spelling_quiet():
    assert _ids("import os\nos.environ.setdefault('PYTORCH_CUDA_ALLOC_CONF', 'backend:cudaMallocAsync')\n") == {"PY_ALLOC_CONF"}
    assert _ids("import os\nos.environ['PYTORCH_HIP_ALLOC_CONF'] = 'pinned_use_hip_host_register:True'\n") == set()


def test_inductor_cuda_options_and_compile_options():
    assert _ids("import torch._inductor.config as cfg\ncfg.cuda.cutlass_dir = '/opt/cutlass'\n") == {"PY_INDUCTOR_CUDA_ONLY"}
    assert _ids("import torch\nf = torch.compile(f, options={'max_autotune': True})\n") == {"PY_COMPILE_MAX_AUTOTUNE"}


def test_shell_command_with_nvidia_smi():
    assert _ids("import os\nos.system('sleep 1; nvidia-smi --query-gpu=memory.used --format=csv')\n") == {"PY_NVIDIA_SMI"}
    assert _ids("import shutil\nhave = shutil.which('nvidia-smi') is not None\n") == {"PY_NVIDIA_SMI"}


def test_a_file_that_does_not_parse_is_read_by_line():
    py2 = "import pynvml\nprint 'gpus'\nif torch.version.cuda: pass  # old\n# import apex\n"
    assert {(f.line, f.rule.rule_id) for f in scan_python(py2)} == {(1, "PY_NVML"), (3, "PY_CUDA_VERSION_GATE")}
    found = scan_lines(py2)
    assert found and all(not f.fix for f in found)
