"""Version-aware diagnostics (issue 15): the target ROCm/HIP version, and names HIPIFY's tables call unsupported
that ROCm has under the CUDA name (warp sync builtins since 6.2, opt-in before 7.0; hip_bf16.h since 6.0)."""

from __future__ import annotations

from hipwizard.port.translation.builtin import TranslateOptions, translate_text
from hipwizard.port.translation.compat import newest_known, target_version
from hipwizard.port.translation.tables import parse_version

SHFL = "__global__ void k(float* v){ *v = __shfl_xor_sync(0xffffffffffffffffull, *v, 1); }\n"
BF16 = "#include <cuda_bf16.h>\n__global__ void k(float* o, __nv_bfloat16* b){ *o = __bfloat162float(*b); }\n"


def _diag(text: str, version: str | None, name: str):
    t = translate_text(text, TranslateOptions(hip_version=version))
    return next(((d.kind, d.message) for d in t.diagnostics if d.name == name), None)


def test_the_default_target_is_the_newest_rocm_the_tables_know():
    default = target_version()
    assert default.version == newest_known() and "default" in default.source
    assert parse_version(default.version) >= (6, 3, 0)
    assert target_version("6.1", "6.4").source == "--hip-version"
    assert target_version(None, "6.4").to_dict() == {"hip_version": "6.4", "source": "doctor"}


def test_sync_warp_builtins_need_62_are_opt_in_before_70_and_plain_from_70():
    kind, message = _diag(SHFL, "6.1", "__shfl_xor_sync")
    assert kind == "too_new" and "needs ROCm >= 6.2 (you target 6.1)" in message
    kind, message = _diag(SHFL, "6.2", "__shfl_xor_sync")
    assert kind == "opt_in" and "HIP_ENABLE_WARP_SYNC_BUILTINS" in message and "before ROCm 7.0" in message
    assert _diag(SHFL, "7.0", "__shfl_xor_sync") is None
    # no version given: the default target, never "unsupported"
    assert _diag(SHFL, None, "__shfl_xor_sync")[0] == "opt_in"


def test_bf16_intrinsics_are_supported_from_rocm_6():
    assert _diag(BF16, None, "__bfloat162float") is None
    kind, message = _diag(BF16, "5.7", "__bfloat162float")
    assert kind == "too_new" and "needs ROCm >= 6.0 (you target 5.7)" in message


def test_unsupported_too_new_and_opt_in_are_different_messages():
    src = SHFL + "void f(size_t* w){ cudaDeviceGetTexture1DLinearMaxWidth(w, 0, 1, 0); cudaDeviceSetLimit(cudaLimitStackSize, 1); }\n"
    t = translate_text(src, TranslateOptions(hip_version="6.2"))
    kinds = {d.name: (d.kind, d.message) for d in t.diagnostics}
    assert kinds["cudaDeviceGetTexture1DLinearMaxWidth"][0] == "unsupported"
    assert kinds["__shfl_xor_sync"][0] == "opt_in"
    old = translate_text(src, TranslateOptions(hip_version="5.2"))
    msg = {d.name: d.message for d in old.diagnostics}["cudaDeviceSetLimit"]
    assert "ROCm >= 5.3" in msg and "you target 5.2" in msg
