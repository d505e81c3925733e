"""The compatibility data and the PCI id table: every row names a source; arch-aware answers; evidence fusion;
replay honesty (unknown only in replay, live keeps its verdicts)."""

from __future__ import annotations

import shutil

import yaml

from hipwizard.doctor.judge.checklist import run_checks
from hipwizard.doctor.judge.matrix import load_matrix
from hipwizard.doctor.pipeline import diagnose
from hipwizard.doctor.probe.replay import ReplayRunner
from hipwizard.gpu.parsers.pci_ids import lookup, normalize_id
from hipwizard.paths import assets_dir
from tests.doctor.conftest import ENVS


def _rows(data: dict):
    for section in ("rocm", "gfx", "torch_rocm", "libraries", "devices"):
        for key, row in (data.get(section) or {}).items():
            yield section, key, row


def test_every_row_of_the_compat_data_and_the_pci_table_has_a_known_source():
    for name in ("compat_matrix.yaml", "pci_ids.yaml"):
        data = yaml.safe_load((assets_dir() / name).read_text())
        sources = data["sources"]
        rows = list(_rows(data))
        assert rows
        for section, key, row in rows:
            assert isinstance(row, dict) and row.get("source") in sources, (name, section, key)
            if row.get("drivers"):
                assert row.get("drivers_source") in sources, (name, key)
        assert sources.values() and all(str(url).startswith("https://") for url in sources.values()), name


def test_rocm_7_lines_and_their_wheels():
    m = load_matrix()
    assert m.rocm_supports("7.0.1", "gfx950") and not m.rocm_supports("6.4.1", "gfx950")
    assert m.torch_for_rocm("7.2") == "2.13" and m.torch_wheel_rocm("2.10.0+rocm7.1") == ["7.1", "7.0"]
    assert m.gfx_facts("gfx950").min_rocm == "7.0" and m.gfx_facts("gfx942").min_rocm == "6.0"
    assert "MI350X" in m.gfx_facts("gfx950").needs() and "7.0" in m.gfx_facts("gfx950").needs()
    assert "FP8 (OCP" in m.gfx_facts("gfx950").precision() and "no FP8" in m.gfx_facts("gfx90a").precision()
    assert "Triton" in m.gfx_facts("gfx1100").precision()


def test_pci_ids_name_products_and_targets():
    assert normalize_id("29857(0x74a1)") == normalize_id("[1002:74a1]") == normalize_id("0x74A1") == "0x74a1"
    assert (lookup("0x74a1").product, lookup("0x74a1").gfx) == ("AMD Instinct MI300X", "gfx942")
    assert lookup("74b5").product.endswith("MI300X VF") and lookup("0x75a3").gfx == "gfx950"
    assert lookup("0x740c").gfx == "gfx90a" and lookup("0x744c").gfx == "gfx1100" and lookup("0x7550").gfx == "gfx1201"
    assert lookup("0x1234") is None and normalize_id("nothing") == ""


def test_gfx950_is_told_its_own_needs(tmp_path):
    d = tmp_path / "mi350"
    shutil.copytree(ENVS / "mi300x-8x-rocm62", d)
    (d / "rocminfo.txt").write_text((d / "rocminfo.txt").read_text().replace("gfx942", "gfx950"))
    c = {x.id: x for x in diagnose(ReplayRunner(d)).checks}
    assert c["arch"].status == "fail" and "needs ROCm 7.0 or newer" in c["arch"].found
    assert "gfx950" in c["rocm"].why and "7.0" in c["rocm"].why and "MI300X (gfx942) needs" not in c["rocm"].why
    assert "ROCm 7.0 or newer" in c["arch"].fix


def test_disagreeing_sources_are_a_finding(tmp_path):
    d = tmp_path / "mixed"
    shutil.copytree(ENVS / "mi300x-8x-rocm62", d)
    rows = (d / "rocm-smi.txt").read_text().splitlines(keepends=True)
    (d / "rocm-smi.txt").write_text("".join(r for r in rows if not r.startswith(("6 ", "7 "))))  # 6 GPUs listed
    report = diagnose(ReplayRunner(d))
    c = {x.id: x for x in report.checks}
    assert c["evidence"].status == "warn" and "rocminfo says 8" in c["evidence"].found
    assert "rocm-smi concise says 6" in c["evidence"].found
    count = next(f for f in report.env.facts if f.key == "gpu_count")
    assert not count.agree


def test_unknown_only_in_replay_live_keeps_its_verdicts():
    report = diagnose(ReplayRunner(ENVS / "mi300x-vf-rocm7"))
    assert {c.id: c.status for c in report.checks}["torch"] == "unknown"
    live = run_checks(report.env, load_matrix(), replay=False)  # the same facts, judged as a live run
    statuses = {c.id: c.status for c in live}
    assert "unknown" not in statuses.values()
    assert statuses["torch"] == "warn" and statuses["toolchain"] == "warn"  # the verdicts before issue 16
