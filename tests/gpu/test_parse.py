"""The shared GPU tool parsers as telemetry reads them (``ToolView.samples``), on recorded real outputs."""

from __future__ import annotations

import json

from hipwizard.gpu.parsers.amd_smi import parse_amdsmi
from hipwizard.gpu.parsers.nvidia_smi import TELEMETRY_QUERY, parse_nvidia_smi_csv
from hipwizard.gpu.parsers.rocm_smi import parse_rocm_smi_json, parse_rocm_smi_text
from hipwizard.gpu.sample import GpuReading

from .recorded import section, sections


def test_rocm_smi_json_card_keys_string_values():
    text = section("rocm-smi-json-csv-productname-use-vram-RX7900XT-marimo-9237.txt", "same with --json")
    [s] = parse_rocm_smi_json(text).value.samples
    assert (s.index, s.name) == (0, "Radeon RX 7900 XT")
    assert s.vram_total == 21458059264 and s.vram_used == 27856896
    assert s.util_pct == 0.0


def test_rocm_smi_without_gpu_prints_nothing_on_stdout():
    out, err = sections("rocm-smi-json-productname-meminfo-debian523-nogpu.txt")
    assert parse_rocm_smi_json(out, err).value.samples == [] and parse_rocm_smi_text(out).value.samples == []
    assert "Driver not initialized" in err


def test_partitioned_mi300x_reports_full_vram_per_partition_and_is_never_summed():
    text = section("rocm-smi-partitioned-MI300X-MI300A-ROCm-ROCm-4750.txt", "MI300X QPX mode")
    samples = parse_rocm_smi_text(text).value.samples
    assert [s.index for s in samples] == [0, 1, 2, 3]
    assert samples and all(s.vram_total == 206141652992 for s in samples)
    assert GpuReading("rocm-smi", tuple(samples)).largest_vram_total == 206141652992


def test_amd_smi_list_shape_with_value_unit_leaves():
    # Excerpt (b) stops inside "vcn_activity"; close its open brackets to make it a document.
    text = section("amd-smi-json-shape-samples-partial.txt", "(b)").rstrip()
    text = text[: text.rindex('"vcn_activity"')].rstrip().rstrip(",") + "}}]"
    [s] = parse_amdsmi(text).value.samples
    assert s.index == 0 and s.util_pct == 42.0
    assert s.vram_used is None  # not in this output: unknown, not zero


def test_amd_smi_gpu_data_wrapper_and_mem_units():
    doc = {"gpu_data": [{"gpu": 3, "usage": {"gfx_activity": {"value": 97, "unit": "%"}},
                         "mem_usage": {"total_vram": {"value": 196288, "unit": "MB"},
                                       "used_vram": {"value": 285, "unit": "MB"}}}]}
    [s] = parse_amdsmi("'CTRL' + 'C' to stop watching output:\n" + json.dumps(doc)).value.samples
    assert (s.index, s.util_pct) == (3, 97.0)
    assert s.vram_total == 196288 * 1024 * 1024 and s.vram_used == 285 * 1024 * 1024


def test_amd_smi_watch_mode_na_usage():
    text = section("amd-smi-json-shape-samples-partial.txt", "(c)")
    text = text[: text.index('"power"')].rstrip().rstrip(",") + "}]"
    [s] = parse_amdsmi(text).value.samples
    assert s.util_pct is None and s.index == 0


def test_amd_smi_process_list():
    text = section("amd-smi-json-shape-samples-partial.txt", "(d)")
    procs = parse_amdsmi(text).value.samples[0].processes
    assert [(p.pid, p.name, p.vram_bytes) for p in procs] == [(420157, "TransferBench", 0), (420315, "rvs", 0)]


def test_nvidia_smi_csv_joins_processes_by_uuid():
    gpus = "0, GPU-aaa, NVIDIA H200, 20480, 143771, 87\n1, GPU-bbb, NVIDIA H200, 1, 143771, 0\n"
    apps = "GPU-aaa, 4242, python, 20000\n"
    s0, s1 = parse_nvidia_smi_csv(gpus, TELEMETRY_QUERY, apps).value.samples
    assert s0.vram_used == 20480 * 1024 * 1024 and s0.util_pct == 87.0
    assert s0.vram_of({4242}) == 20000 * 1024 * 1024
    assert s1.processes == () and s1.vram_of({4242}) is None


def test_one_parse_serves_doctor_and_telemetry():
    # The same rocm-smi JSON gives the doctor its GPU (gfx, total) and telemetry its sample (used, util).
    view = parse_rocm_smi_json(section("rocm-smi-json-csv-productname-use-vram-RX7900XT-marimo-9237.txt",
                                       "same with --json")).value
    [gpu], [s] = view.gpus, view.samples
    assert (gpu.gfx, gpu.vram_bytes) == ("gfx1100", s.vram_total)
    assert (s.name, s.vram_used, s.util_pct) == (gpu.name, 27856896, 0.0)


def test_amd_smi_default_view_carries_usage_too():
    out, _ = sections("amd-smi-default-view-MI300X-VF-ROCm724-msp.txt")
    [s] = parse_amdsmi(out).value.samples
    assert (s.vram_used, s.vram_total, s.util_pct) == (285 * 2**20, 196288 * 2**20, 0.0)


def test_nvidia_smi_header_and_noheader_forms_read_the_same():
    with_header = ("index, uuid, name, memory.used [MiB], memory.total [MiB], utilization.gpu [%]\n"
                   "0, GPU-a, H200, 1, 2, 3\n")
    [a] = parse_nvidia_smi_csv(with_header).value.samples
    [b] = parse_nvidia_smi_csv(with_header.splitlines()[1], TELEMETRY_QUERY).value.samples
    assert a == b and (a.vram_used, a.vram_total, a.util_pct) == (2**20, 2 * 2**20, 3.0)
    stray = parse_nvidia_smi_csv("see a, b, c, d, e, f\n", TELEMETRY_QUERY)
    assert stray.value.samples == [] and stray.problems
