"""The source chain: each tried once, in order; the one that answered is kept and shown."""

from __future__ import annotations

from hipwizard.gpu.sources import GpuTelemetry, detect_platform, read_amdsmi_lib

from .recorded import DictRunner, ok, section, sections


def _nogpu_rocm_smi():
    out, err = sections("rocm-smi-json-productname-meminfo-debian523-nogpu.txt")
    return ok("rocm-smi", out, err)  # exit code 0 with empty stdout


def test_no_gpu_anywhere_reports_none_with_reasons(tmp_path):
    runner = DictRunner({"rocm-smi": _nogpu_rocm_smi()})
    tel = GpuTelemetry(runner, drm_root=tmp_path, order=("amd-smi", "rocm-smi", "sysfs", "nvidia-smi"))
    reading = tel.sample()
    assert reading.source == "none" and reading.samples == ()
    assert any("rocm-smi reported no GPU" in n and "Driver not initialized" in n for n in reading.notes)
    assert any(n.startswith("amd-smi:") and "not installed" in n for n in reading.notes)
    # tried once: a second sample runs nothing
    calls = len(runner.calls)
    assert tel.sample().source == "none" and len(runner.calls) == calls


def test_amd_smi_failing_falls_back_to_rocm_smi_and_sticks(tmp_path):
    out, err = sections("amd-smi-noGPU-driver-not-loaded-ROCm-amdsmi-172.txt")
    rocm = ok("rocm-smi", section("rocm-smi-json-csv-productname-use-vram-RX7900XT-marimo-9237.txt", "same with --json"))
    runner = DictRunner({"amd-smi": ok("amd-smi", out, err, rc=1), "rocm-smi": rocm})
    tel = GpuTelemetry(runner, drm_root=tmp_path, order=("amd-smi", "rocm-smi", "sysfs"))
    first = tel.sample()
    assert first.source == "rocm-smi" and first.samples[0].name == "Radeon RX 7900 XT"
    assert tel.sample().source == "rocm-smi"
    assert [c[0] for c in runner.calls] == ["amd-smi", "rocm-smi", "rocm-smi"]


def test_source_that_stops_answering_gives_empty_reading_not_exception(tmp_path):
    good = ok("rocm-smi", section("rocm-smi-json-csv-productname-use-vram-RX7900XT-marimo-9237.txt", "same with --json"))
    runner = DictRunner({"rocm-smi": [good, _nogpu_rocm_smi()]})
    tel = GpuTelemetry(runner, drm_root=tmp_path, order=("rocm-smi",))
    assert len(tel.sample().samples) == 1
    later = tel.sample()
    assert later.source == "rocm-smi" and later.samples == () and "stopped answering" in later.notes[-1]


def _card(root, n, vendor="0x1002", used="1048576", total="206141652992", busy="37"):
    dev = root / f"card{n}" / "device"
    dev.mkdir(parents=True)
    for name, value in (("vendor", vendor), ("mem_info_vram_used", used), ("mem_info_vram_total", total),
                        ("gpu_busy_percent", busy)):
        (dev / name).write_text(value + "\n")
    (root / f"card{n}-DP-1").mkdir()  # a connector, not a device


def test_sysfs_reads_amdgpu_counters_and_skips_other_vendors(tmp_path):
    _card(tmp_path, 0)
    _card(tmp_path, 1, vendor="0x8086")
    tel = GpuTelemetry(DictRunner({}), drm_root=tmp_path, order=("amd-smi", "rocm-smi", "sysfs"))
    reading = tel.sample()
    assert reading.source == "sysfs"
    [s] = reading.samples
    assert (s.vram_used, s.vram_total, s.util_pct) == (1048576, 206141652992, 37)


def test_amdsmi_library_absent_is_a_reason_not_a_crash():
    # Without ROCm, importing amdsmi raises KeyError('libamd_smi.so') (recorded); either way: unavailable.
    import pytest

    from hipwizard.gpu.sources import SourceUnavailable

    with pytest.raises(SourceUnavailable, match="amdsmi library not usable"):
        read_amdsmi_lib()


def test_nvml_without_driver_falls_through(tmp_path):
    tel = GpuTelemetry(DictRunner({}), drm_root=tmp_path, order=("nvml", "nvidia-smi"))
    reading = tel.sample()
    assert reading.source == "none"
    assert reading.notes[0].startswith("nvml: NVML not usable")


def test_detect_platform_from_device_nodes(tmp_path):
    assert detect_platform(tmp_path) in ("cpu", "cuda")
    (tmp_path / "kfd").touch()
    assert detect_platform(tmp_path) == "rocm"


def test_amdsmi_keyerror_on_import_is_caught(tmp_path, monkeypatch):
    # The recorded PyPI amdsmi 7.0.2 without ROCm raises KeyError('libamd_smi.so') at import time.
    import sys

    import pytest

    from hipwizard.gpu.sources import SourceUnavailable

    pkg = tmp_path / "amdsmi"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("_libraries = {}\nx = _libraries['libamd_smi.so']\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "amdsmi", raising=False)
    with pytest.raises(SourceUnavailable, match="KeyError"):
        read_amdsmi_lib()
    tel = GpuTelemetry(DictRunner({}), drm_root=tmp_path, order=("amdsmi",))
    assert tel.sample().source == "none"
