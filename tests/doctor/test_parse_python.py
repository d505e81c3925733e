"""collect_env, ds_report, the probe's JSON and nvidia-smi CSV."""

from __future__ import annotations

import json
import subprocess
import sys

from hipwizard.doctor.read.python import (
    parse_collect_env,
    parse_ds_report,
    parse_pyprobe,
)
from hipwizard.doctor.read.versions import major_minor, torch_rocm_tag
from hipwizard.gpu.parsers.nvidia_smi import parse_nvidia_smi_csv
from tests.doctor.conftest import fixture_result, fixture_section


def test_collect_env_three_layouts():
    mi250 = parse_collect_env(fixture_result("collect_env-MI250X-torch26dev-rocm62-vllm-10663-partial.txt").output)
    assert mi250.value.hip.startswith("6.2.41133") and mi250.value.devices[0]["gcnArchName"].startswith("gfx90a")
    mi300 = parse_collect_env(fixture_result("collect_env-MI300X-torch251-rocm62-vllm-14397-partial.txt").output)
    assert mi300.value.torch == "2.5.1+rocm6.2" and mi300.value.cuda == ""
    assert mi300.value.devices[0]["name"] == "AMD Instinct MI300X"
    new = parse_collect_env(fixture_result("collect_env-newformat-ROCm71-vllm-27307-partial.txt").output)
    assert new.value.hip == "7.1.25424-4179531dcd" and new.value.devices[0]["gcnArchName"] == "gfx1201"
    assert any("empty device name" in p for p in new.problems)
    assert parse_collect_env("garbage\x00").problems


def test_ds_report_ops_and_hip_version():
    text = (fixture_result("ds_report-ROCm-samples.txt").output)
    ops = parse_ds_report(text).value
    assert ops.ops["cpu_adam"] == (True, True) and ops.ops["fused_adam"] == (False, True)
    assert ops.ops["async_io"] == (False, False)
    assert ops.torch_hip == "5.1.20531-cacfa990" and ops.deepspeed.startswith("0.6.2")
    assert any("libaio-dev" in w for w in ops.warnings)


def test_version_strings():
    text = fixture_section("version-strings-torch-hip-amdsmi-samples.txt", "## collect_env triples", "## amd-smi")
    for line in text.strip().splitlines():
        torch_v, hip = [x.strip() for x in line.split("|")[:2]]
        if "+rocm" in torch_v:
            assert torch_rocm_tag(torch_v) == major_minor(hip)


def test_the_real_probe_runs_in_a_subprocess_and_parses():
    out = subprocess.run([sys.executable, "-m", "hipwizard.doctor.pyprobe"], capture_output=True, text=True, timeout=120)
    info = parse_pyprobe(out.stdout)
    assert info.problems == []
    assert info.value.torch and info.value.packages["torch"]
    assert isinstance(info.value.llamafactory_requires, list)


def test_probe_json_errors_are_values():
    assert parse_pyprobe("").problems == ["python probe: no JSON in its output"]
    assert parse_pyprobe("{not json").problems
    ok = parse_pyprobe("noise\n" + json.dumps({"torch": "2.5.1+rocm6.2", "hip": "6.2.1", "device_count": "x"}))
    assert ok.value.hip == "6.2.1" and ok.problems


def test_nvidia_smi_csv_by_header_names():
    text = ("index, name, memory.total [MiB], driver_version, compute_cap, pci.bus_id, uuid\n"
            "0, NVIDIA H200, 143771 MiB, 570.124.06, 9.0, 00000000:18:00.0, GPU-1\n")
    view = parse_nvidia_smi_csv(text).value
    assert view.gpus[0].name == "NVIDIA H200" and view.gpus[0].compute_capability == "9.0"
    assert view.gpus[0].vram_bytes == 143771 * 2**20 and view.versions["nvidia"] == "570.124.06"
    assert parse_nvidia_smi_csv("Field \"compute_cap\" is not a valid field to query.").problems


def test_collect_env_cut_before_its_gpu_line_says_it_looks_truncated():
    text = ("Collecting environment information...\nPyTorch version: 2.3.0a0+git2e4abc8\nIs debug build: False\n"
            "CUDA used to build PyTorch: N/A\nROCM used to build PyTorch: 6.1.40093\n")
    parsed = parse_collect_env(text)
    assert parsed.value.torch == "2.3.0a0+git2e4abc8" and not parsed.value.devices
    assert parsed.problems == ["collect_env: no 'GPU models and configuration' line (truncated?)"]
    full = text + "Is CUDA available: True\nGPU models and configuration: AMD Instinct MI300X (gfx942:sramecc+:xnack-)\n"
    assert parse_collect_env(full).problems == []
