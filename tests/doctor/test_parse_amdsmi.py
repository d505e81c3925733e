"""amd-smi parsers: both JSON shapes, indented text, list, version line, ROCm 7 table, failures."""

from __future__ import annotations

import json

from hipwizard.gpu.parsers.amd_smi import parse_amdsmi, parse_versions
from tests.doctor.conftest import fixture_result, fixture_section

STATIC_JSON_GPU = {
    "gpu": 0,
    "asic": {"market_name": "AMD Instinct MI300X", "target_graphics_version": "gfx942"},
    "vram": {"type": "HBM", "size": {"value": 196592, "unit": "MB"}},
    "partition": {"compute_partition": "CPX", "memory_partition": "NPS1"},
    "driver": {"name": "amdgpu", "version": "6.8.5"},
}


def test_static_text_mi300a_four_gpus_skipping_cpu_blocks():
    parsed = parse_amdsmi(fixture_result("amd-smi-static-text-MI300Ax4-amdsmi-docs.txt").output, what="amd-smi static")
    gpus = parsed.value.gpus
    assert parsed.problems == []
    assert [g.index for g in gpus] == [0, 1, 2, 3]
    assert gpus[0].name == "MI300A" and gpus[0].vram_bytes == 64289 * 2**20
    assert (gpus[0].compute_partition, gpus[0].memory_partition) == ("SPX", "NPS1")
    assert gpus[3].bdf == "0003:01:00.0" and gpus[0].driver_version == "6.9.0-rc5+"


def test_json_list_shape_and_gpu_data_shape_read_the_same():
    as_list = parse_amdsmi(json.dumps([STATIC_JSON_GPU])).value.gpus
    as_wrapped = parse_amdsmi(json.dumps({"gpu_data": [STATIC_JSON_GPU]})).value.gpus
    assert as_list == as_wrapped
    gpu = as_list[0]
    assert (gpu.gfx, gpu.vram_bytes, gpu.compute_partition) == ("gfx942", 196592 * 2**20, "CPX")
    assert gpu.is_partition


def test_real_json_samples_value_unit_leaves_and_truncation():
    sample_b = fixture_section("amd-smi-json-shape-samples-partial.txt", "> amd-smi metric -u --json", "## (c)")
    parsed = parse_amdsmi(sample_b)
    assert parsed.value.gpus == [] and "not complete JSON" in parsed.problems[0]  # the excerpt is cut mid-object
    procs = parse_amdsmi(fixture_section("amd-smi-json-shape-samples-partial.txt", "## (d)"))
    assert [g.index for g in procs.value.gpus] == [0]
    assert procs.value.gpus[0].name == ""  # process names are not GPU names


def test_list_text_reads_bdf_and_uuid():
    gpus = parse_amdsmi(fixture_section("amd-smi-list-samples-various.txt", "## (a)", "## (b)")).value.gpus
    assert [(g.index, g.bdf) for g in gpus] == [(0, "0000:23:00.0"), (1, "0000:26:00.0")]
    vf = parse_amdsmi(fixture_section("amd-smi-list-samples-various.txt", "## (b)")).value.gpus
    assert vf[0].uuid.startswith("690074b5")


def test_rocm7_default_view_mi300x_vf():
    view = parse_amdsmi(fixture_result("amd-smi-default-view-MI300X-VF-ROCm724-msp.txt").output).value
    assert view.versions == {"rocm": "7.2.4", "amdgpu": "6.16.13", "tool": "26.2.2+97f5574fe2"}
    (gpu,) = view.gpus
    assert gpu.name == "AMD Instinct MI300X VF" and gpu.bdf == "0000:83:00.0"
    assert gpu.vram_bytes == 196288 * 2**20 and gpu.compute_partition == "SPX"


def test_driver_not_loaded_and_library_missing():
    down = parse_amdsmi(fixture_result("amd-smi-noGPU-driver-not-loaded-ROCm-amdsmi-172.txt").output).value
    assert down.driver_loaded is False and "driver not initialized" in down.driver_note
    assert "rocm" not in down.versions  # "ROCm version: N/A" is not a version
    res = fixture_result("amdsmi-pypi702-import-noROCm.txt")
    parsed = parse_amdsmi(res.stdout, res.stderr)
    assert parsed.value.gpus == [] and "libamd_smi.so" in parsed.problems[0]


def test_version_lines_of_several_releases():
    text = (fixture_section("version-strings-torch-hip-amdsmi-samples.txt", "## amd-smi version", "## pip"))
    first, second = [ln for ln in text.splitlines() if ln.startswith("AMDSMI")]
    assert parse_versions(first)["rocm"] == "6.4.0"
    assert parse_versions(first)["amdgpu"].startswith("6.8.0-79-generic")
    assert parse_versions(second) == {"rocm": "6.3.3", "tool": "24.7.1+8dc45db"}
    banner = parse_amdsmi(fixture_result("amd-smi-noargs-banner-amdsmi-docs.txt").output).value
    assert banner.versions["rocm"] == "6.2.2"
