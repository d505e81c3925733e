"""Parsers of GPU tool outputs, on recorded real outputs."""

from __future__ import annotations

import json

from hipwizard.gpu.parse import (
    parse_amd_smi_metric,
    parse_amd_smi_processes,
    parse_nvidia_smi_csv,
    parse_rocm_smi_json,
    parse_rocm_smi_text,
)
from hipwizard.gpu.sample import GpuReading

from .recorded import section, sections


def test_rocm_smi_json_card_keys_string_values():
    text = section("rocm-smi-json-csv-productname-use-vram-RX7900XT-marimo-9237.txt", "same with --json")
    [s] = parse_rocm_smi_json(text)
    assert (s.index, s.name) == (0, "Radeon RX 7900 XT")
    assert s.vram_total == 21458059264 and s.vram_used == 27856896
    assert s.util_pct == 0.0


def test_rocm_smi_without_gpu_prints_nothing_on_stdout():
    out, err = sections("rocm-smi-json-productname-meminfo-debian523-nogpu.txt")
    assert parse_rocm_smi_json(out) == [] and parse_rocm_smi_text(out) == []
    assert "Driver not initialized" in err


def test_partitioned_mi300x_reports_full_vram_per_partition_and_is_never_summed():
    text = section("rocm-smi-partitioned-MI300X-MI300A-ROCm-ROCm-4750.txt", "MI300X QPX mode")
    samples = parse_rocm_smi_text(text)
    assert [s.index for s in samples] == [0, 1, 2, 3]
    assert all(s.vram_total == 206141652992 for s in samples)
    assert GpuReading("rocm-smi", tuple(samples)).largest_vram_total == 206141652992


def test_amd_smi_list_shape_with_value_unit_leaves():
    # Excerpt (b) stops inside "vcn_activity"; close its open brackets to make it a document.
    text = section("amd-smi-json-shape-samples-partial.txt", "(b)").rstrip()
    text = text[: text.rindex('"vcn_activity"')].rstrip().rstrip(",") + "}}]"
    [s] = parse_amd_smi_metric(text)
    assert s.index == 0 and s.util_pct == 42.0
    assert s.vram_used is None  # not in this output: unknown, not zero


def test_amd_smi_gpu_data_wrapper_and_mem_units():
    doc = {"gpu_data": [{"gpu": 3, "usage": {"gfx_activity": {"value": 97, "unit": "%"}},
                         "mem_usage": {"total_vram": {"value": 196288, "unit": "MB"},
                                       "used_vram": {"value": 285, "unit": "MB"}}}]}
    [s] = parse_amd_smi_metric("'CTRL' + 'C' to stop watching output:\n" + json.dumps(doc))
    assert (s.index, s.util_pct) == (3, 97.0)
    assert s.vram_total == 196288 * 1024 * 1024 and s.vram_used == 285 * 1024 * 1024


def test_amd_smi_watch_mode_na_usage():
    text = section("amd-smi-json-shape-samples-partial.txt", "(c)")
    text = text[: text.index('"power"')].rstrip().rstrip(",") + "}]"
    [s] = parse_amd_smi_metric(text)
    assert s.util_pct is None and s.index == 0


def test_amd_smi_process_list():
    text = section("amd-smi-json-shape-samples-partial.txt", "(d)")
    procs = parse_amd_smi_processes(text)[0]
    assert [(p.pid, p.name, p.vram_bytes) for p in procs] == [(420157, "TransferBench", 0), (420315, "rvs", 0)]


def test_nvidia_smi_csv_joins_processes_by_uuid():
    gpus = "0, GPU-aaa, NVIDIA H200, 20480, 143771, 87\n1, GPU-bbb, NVIDIA H200, 1, 143771, 0\n"
    apps = "GPU-aaa, 4242, python, 20000\n"
    s0, s1 = parse_nvidia_smi_csv(gpus, apps)
    assert s0.vram_used == 20480 * 1024 * 1024 and s0.util_pct == 87.0
    assert s0.vram_of({4242}) == 20000 * 1024 * 1024
    assert s1.processes == () and s1.vram_of({4242}) is None
