"""rocminfo / rocm-smi parsers on the real outputs in tests/fixtures/rocm."""

from __future__ import annotations

from hipwizard.doctor.read.versions import parse_version_line
from hipwizard.gpu.parsers.rocm_smi import parse_rocm_smi_json, parse_rocm_smi_text
from hipwizard.gpu.parsers.rocminfo import parse_rocminfo
from hipwizard.gpu.parsers.text import driver_down_note
from tests.doctor.conftest import fixture_result, fixture_section


def test_rocminfo_8x_mi300x_lists_eight_gfx942_gpus_and_skips_cpus():
    parsed = parse_rocminfo(fixture_result("rocminfo-8xMI300X-ROCm-ROCm-4021.txt").output)
    view = parsed.value
    assert parsed.problems == []
    assert len(view.gpus) == 8
    assert {g.gfx for g in view.gpus} == {"gfx942"}
    assert view.gpus[0].gfx_full == "gfx942:sramecc+:xnack-"
    assert view.gpus[0].name == "AMD Instinct MI300X"
    assert view.gpus[0].vram_bytes == 201310208 * 1024  # the coarse-grained pool, in KB
    assert len({g.uuid for g in view.gpus}) == 8
    assert view.driver_loaded is True and view.versions["kfd"] == "6.8.5"


def test_rocminfo_without_driver_says_so_and_lists_nothing():
    res = fixture_result("rocminfo-debian523-nogpu.txt")
    assert res.status == "failed" and res.returncode == 1
    parsed = parse_rocminfo(res.output)
    assert parsed.value.gpus == []
    assert parsed.value.driver_loaded is False
    assert "ROCk module is NOT loaded" in parsed.value.driver_note
    assert "\x1b" not in parsed.value.driver_note  # ANSI colour stripped


def test_newer_not_live_wording_and_rocm_smi_driver_errors_are_recognised():
    text = fixture_section("rocminfo-rocm-smi-driver-errors-ROCm-issues.txt", "## (a) /opt/rocm/bin/rocminfo --support", "##")
    assert "NOT live" in driver_down_note(text)
    assert "Driver not initialized" in driver_down_note(fixture_section(
        "rocminfo-rocm-smi-driver-errors-ROCm-issues.txt", "## (b) rocm-smi", "##"))


def test_truncated_rocminfo_keeps_what_it_read_and_says_what_it_could_not():
    text = fixture_result("rocminfo-8xMI300X-ROCm-ROCm-4021.txt").output
    cut = text[: text.index("Agent 4") + 200]  # agent 4 cut before its Device Type
    parsed = parse_rocminfo(cut)
    assert len(parsed.value.gpus) == 2
    assert any("agent 4" in p for p in parsed.problems)


def test_rocm_smi_exit_0_with_empty_stdout_is_no_gpu_not_an_error():
    res = fixture_result("rocm-smi-json-productname-meminfo-debian523-nogpu.txt")
    assert res.status == "ok" and res.stdout.strip() == ""
    parsed = parse_rocm_smi_json(res.stdout, res.stderr)
    assert parsed.value.gpus == [] and parsed.problems == []
    assert parsed.value.driver_loaded is False


def test_rocm_smi_json_reads_cards_by_key_names():
    text = fixture_section("rocm-smi-json-csv-productname-use-vram-RX7900XT-marimo-9237.txt", "## same with --json")
    gpu = parse_rocm_smi_json(text).value.gpus[0]
    assert (gpu.name, gpu.gfx, gpu.vram_bytes) == ("Radeon RX 7900 XT", "gfx1100", 21458059264)


def test_rocm_smi_no_json_data_warning_is_a_problem_not_a_crash():
    text = fixture_section("rocminfo-rocm-smi-driver-errors-ROCm-issues.txt", "## (c)")
    parsed = parse_rocm_smi_json(text)
    assert parsed.value.gpus == [] and parsed.problems


def test_partitioned_mi300x_qpx_reports_full_vram_per_partition_never_summed():
    qpx = fixture_section("rocm-smi-partitioned-MI300X-MI300A-ROCm-ROCm-4750.txt", "## MI300X QPX mode")
    gpus = parse_rocm_smi_text(qpx).value.gpus
    assert len(gpus) == 4
    assert gpus and all(g.compute_partition == "QPX" and g.memory_partition == "NPS1" and g.is_partition for g in gpus)
    assert {g.vram_bytes for g in gpus} == {206141652992}
    spx = fixture_section("rocm-smi-partitioned-MI300X-MI300A-ROCm-ROCm-4750.txt", "## MI300X SPX mode", "## MI300X QPX")
    one = parse_rocm_smi_text(spx).value.gpus
    assert len(one) == 1 and one[0].name == "AMD Instinct MI300X OAM" and not one[0].is_partition


def test_rocm_smi_concise_8x_table_gives_partition_modes():
    gpus = parse_rocm_smi_text(fixture_result("rocm-smi-concise-8xMI300X-ROCm-ROCm-4021.txt").output).value.gpus
    assert [g.index for g in gpus] == list(range(8))
    assert {(g.memory_partition, g.compute_partition) for g in gpus} == {("NPS1", "SPX")}


def test_version_lines():
    assert parse_version_line("5.2.21153-0\n", "hipconfig").value == "5.2.21153-0"
    assert parse_version_line("6.2.3-3", "file").value == "6.2.3-3"
    bad = parse_version_line("\x00\x01garbage", "file")
    assert bad.value == "" and bad.problems


# Unseen forms (rocm-smi --csv, a rocminfo agent without its header, hipconfig's full view after prose).
_CSV = """device,Driver version
cardsystem,4.18.0-348.12.2.el8_5.x86_64
device,Card series,Card model,Card vendor,Card SKU
card0,Arcturus GL-XL [AMD Instinct MI100],0x0c34,Advanced Micro Devices Inc. [AMD/ATI],D34316
card1,Arcturus GL-XL [AMD Instinct MI100],0x0c34,Advanced Micro Devices Inc. [AMD/ATI],D34316
"""


def test_rocm_smi_csv_tables_list_one_gpu_per_card_row_and_none_for_cardsystem():
    from hipwizard.gpu.parsers.rocm_smi import is_csv, parse_rocm_smi_text

    assert is_csv(_CSV) and not is_csv("GPU[0]\t\t: Card series: \t\t0x738c\n")
    parsed = parse_rocm_smi_text(_CSV)
    assert [g.name for g in parsed.value.gpus] == ["Arcturus GL-XL [AMD Instinct MI100]"] * 2
    assert parse_rocm_smi_text("device,Driver version\ncardsystem,6.8.5\n").problems == ["rocm-smi: CSV lists no cardN rows"]


def test_a_rocm_smi_csv_paste_gives_the_doctor_its_gpus():
    from hipwizard.doctor.judge.matrix import load_matrix
    from hipwizard.doctor.read.environment import build_env
    from hipwizard.runner import RunResult

    env = build_env({"rocm-smi concise": RunResult(("rocm-smi",), "ok", 0, _CSV, "", 0.0)}, load_matrix())
    assert [(g.gfx, g.name) for g in env.gpus] == [("gfx908", "Arcturus GL-XL [AMD Instinct MI100]")] * 2


_AGENT_BODY = """  Name:                    gfx1100                            
  Marketing Name:          Radeon RX 7900 XTX                 
  Device Type:             GPU                                
  Chip ID:                 29772(0x744c)                      
"""  # noqa: W291 (rocminfo pads its values with spaces: the parser must cope)


def test_a_rocminfo_agent_excerpt_without_its_header_is_read_as_one_agent():
    from hipwizard.gpu.parsers.rocminfo import is_agent_excerpt

    gpus = parse_rocminfo(_AGENT_BODY).value.gpus
    assert [(g.gfx, g.name, g.device_id) for g in gpus] == [("gfx1100", "Radeon RX 7900 XTX", "0x744c")]
    whole = "Agent 1\n" + _AGENT_BODY
    assert is_agent_excerpt(_AGENT_BODY) and not is_agent_excerpt(whole) and not is_agent_excerpt("no agent here\n")
    assert [g.gfx for g in parse_rocminfo(whole).value.gpus] == ["gfx1100"]
    assert parse_rocminfo("no agent here\n").problems == ["rocminfo: no 'Agent N' blocks found"]


def test_hipconfig_full_view_after_prose_gives_the_hip_version():
    from hipwizard.doctor.read.versions import hip_version

    text = "Again my hipconfig lookes like:\nHIP version: 6.2.41133-dd7f95766\n\n==hipconfig\nHIP_PATH :/opt/rocm-6.2.0\n"
    assert hip_version(text, "hipconfig").value == "6.2.41133-dd7f95766"
    assert hip_version("6.2.41133-dd7f95766\n", "hipconfig --version").value == "6.2.41133-dd7f95766"
