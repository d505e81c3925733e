"""Checks on recorded full environments (replay directories of real outputs)."""

from __future__ import annotations

import shutil

import pytest

from hipwizard.doctor import render_text
from hipwizard.doctor.judge.matrix import load_matrix
from hipwizard.doctor.pipeline import diagnose
from hipwizard.doctor.probe.replay import ReplayRunner
from tests.doctor.conftest import ENVS


def _by_id(report):
    return {c.id: c for c in report.checks}


def test_8x_mi300x_rocm62_is_ready_except_what_was_not_recorded():
    report = diagnose(ReplayRunner(ENVS / "mi300x-8x-rocm62"))
    c = _by_id(report)
    assert len(report.env.amd_gpus) == 8
    for key in ("gpu", "driver", "rocm", "arch", "partitions", "bf16", "torch", "torch_rocm", "torch_devices"):
        assert c[key].status == "ok", (key, c[key].found)
    assert "8 × AMD Instinct MI300X (gfx942, 192.0 GiB each)" in c["gpu"].found
    assert "amdgpu 6.8.5" in c["driver"].found  # from "ROCk module version 6.8.5 is loaded"
    assert "collect_env shows GPU 0 only" in c["torch_devices"].found
    assert c["deepspeed"].status == "unknown" and "not recorded" in c["deepspeed"].found  # collect_env has no lib versions
    assert "not recorded" in c["probes"].found


def test_mi300x_vf_rocm7_gfx_from_product_name():
    report = diagnose(ReplayRunner(ENVS / "mi300x-vf-rocm7"))
    c = _by_id(report)
    (gpu,) = report.env.amd_gpus
    assert gpu.gfx == "gfx942" and "product name" in gpu.source
    assert report.env.rocm_version == "7.2.4" and report.env.amdgpu_driver == "6.16.13"
    assert c["arch"].status == "ok" and "ROCm 7.2.4" in c["arch"].found
    assert c["torch"].status == "unknown" and "not recorded" in c["torch"].found


def test_no_gpu_machine_recorded_live_says_what_it_lacks():
    report = diagnose(ReplayRunner(ENVS / "nogpu-debian"))
    c = _by_id(report)
    assert report.env.gpus == [] and report.failed
    assert c["gpu"].status == "fail" and "ROCk module is NOT loaded" in c["gpu"].found and c["gpu"].fix
    for key in ("driver", "arch", "partitions", "bf16", "torch_devices", "flash_attn"):
        assert c[key].status == "n/a" and c[key].found.startswith("skipped: no GPU"), key
    assert c["rocm"].status == "warn" and "older than 6.0" in c["rocm"].found  # Debian's ROCm 5.2
    assert c["torch"].status == "warn" and "whl/rocm" in c["torch"].fix
    assert c["llamafactory"].status == "ok"
    text = render_text(report)
    assert "✖ fail GPU" in text and "fix:" in text


H200 = ENVS / "h200"


@pytest.mark.skipif(not H200.is_dir(), reason="record it on the GPU box: hipwizard doctor --record tests/fixtures/doctor/h200 --no-save")
def test_nvidia_h200_is_the_source_side():
    report = diagnose(ReplayRunner(H200))
    c = _by_id(report)
    assert report.env.nvidia_gpus and not report.env.amd_gpus
    assert "H200" in report.env.nvidia_gpus[0].name
    assert c["gpu"].status == "warn" and "source side" in c["gpu"].found
    for key in ("driver", "arch", "partitions"):
        assert c[key].status == "n/a" and "NVIDIA" in c[key].found
    assert c["bf16"].status == "ok"
    assert c["torch"].status == "ok" and "CUDA" in c["torch"].found


def _copy(tmp_path, name):
    dst = tmp_path / name
    shutil.copytree(ENVS / name, dst)
    return dst


def test_qpx_partitions_warn_and_are_never_summed(tmp_path):
    d = _copy(tmp_path, "mi300x-8x-rocm62")
    rows = (d / "rocm-smi.txt").read_text().replace("NPS1, SPX, 0", "NPS1, QPX, 0")
    (d / "rocm-smi.txt").write_text(rows)
    c = _by_id(diagnose(ReplayRunner(d)))
    assert c["partitions"].status == "warn"
    assert "never add these up" in c["partitions"].found and "48.0 GiB per rank" in c["partitions"].found
    assert "1536" not in c["partitions"].found  # 8 x 192 is never shown


def test_unknown_gfx_name_is_a_clear_warning(tmp_path):
    d = _copy(tmp_path, "mi300x-8x-rocm62")
    (d / "rocminfo.txt").write_text((d / "rocminfo.txt").read_text().replace("gfx942", "gfx1234"))
    c = _by_id(diagnose(ReplayRunner(d)))
    assert c["gpu"].status == "warn" and "gfx1234 is not in hipwizard's compatibility matrix" in c["gpu"].found
    assert c["arch"].status == "warn" and "unknown gfx name" in c["arch"].found
    assert c["bf16"].status == "warn"


def test_rdna2_has_no_bf16_and_unsupported_arch_fails(tmp_path):
    d = _copy(tmp_path, "mi300x-8x-rocm62")
    (d / "rocminfo.txt").write_text((d / "rocminfo.txt").read_text().replace("gfx942", "gfx1030"))
    c = _by_id(diagnose(ReplayRunner(d)))
    assert c["bf16"].status == "fail" and "fp16: true" in c["bf16"].fix
    assert c["arch"].status == "fail"


def test_matrix_answers():
    m = load_matrix()
    assert m.rocm_supports("6.2.3", "gfx942") is True
    assert m.rocm_supports("6.4.1", "gfx950") is False and m.rocm_supports("7.0.2", "gfx950") is True
    assert m.rocm_line("7.9.0") == ("7.2", False)
    assert m.gfx_for_product("AMD Instinct MI300X VF") == "gfx942"
    assert m.gfx_for_product("AMD Instinct MI355X") == "gfx950"
    assert m.torch_wheel_rocm("2.5.1+rocm6.2")[0] == "6.2"
    assert m.gfx_facts("gfx1010").bf16 == "none"
