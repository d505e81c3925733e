"""The corpus of real public outputs (tests/fixtures/doctor/corpus/, SOURCES.md): each file alone in a replay
folder, as a user would attach it, through the same seam as --replay. For each file: the facts a human reads
from it, and no 'fail' verdict that the output does not show."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hipwizard.doctor import services
from hipwizard.doctor.read.evidence import product_key
from hipwizard.doctor.read.versions import major_minor
from tests.doctor.conftest import ENVS

CORPUS = ENVS / "corpus"

# file -> facts a reader takes from it (gfx, product, gpus, vram_gib, rocm, driver, torch, partition, hip, ds_ops:
# the ops in a ds_report table) and the checks that truly fail on it. A truncated paste that shows no GPU is
# gpus=0 with no 'fail' (it says nothing of the GPUs).
EXPECTED: dict[str, dict] = {
    "mi300x-8x-rocminfo-rocm-4021.txt": dict(gfx="gfx942", product="MI300X", gpus=8, vram_gib=192, driver="6.8.5"),
    "mi300x-8x-rocm-smi-concise-rocm-4021.txt": dict(gfx="gfx942", product="MI300X", gpus=8, partition="SPX/NPS1"),
    "mi300x-4x-rocminfo-thamada.txt": dict(gfx="gfx942", product="MI300X", gpus=4, vram_gib=192),
    "mi300x-4x-rocm-smi-thamada.txt": dict(gfx="gfx942", product="MI300X", gpus=4, partition="SPX/NPS1"),
    "mi300x-collect_env-torch251-rocm62-vllm-14397.txt": dict(gfx="gfx942", product="MI300X", torch="2.5.1+rocm6.2"),
    "mi300x-vf-amd-smi-default-rocm724-msp.txt": dict(gfx="gfx942", product="MI300X VF", gpus=1, vram_gib=192,
                                                      rocm="7.2", driver="6.16.13", partition="SPX/NPS1"),
    "mi300x-partitioned-amd-smi-version-mixed-k8s-157.txt": dict(rocm="6.4"),
    "mi300x-pip-freeze-hip-attention-45.txt": dict(bitsandbytes="0.45.3"),
    "mi300a-4x-amd-smi-static-text-amdsmi-docs.txt": dict(gfx="gfx942", product="MI300A", gpus=4, partition="SPX/NPS1"),
    "mi350x-amd-smi-static-rocm-systems-2987.txt": dict(gfx="gfx950", product="MI350X", gpus=1, driver="6.18.3"),
    "mi250x-rocminfo-aiter-179.txt": dict(gfx="gfx90a", product="MI250X", gpus=1, driver="6.10.5"),
    "mi250x-collect_env-vllm-10663.txt": dict(gfx="gfx90a", product="MI250X", torch="2.6.0.dev20240918+rocm6.2"),
    "rx7900xt-rocm-smi-csv-json-marimo-9237.txt": dict(gfx="gfx1100", product="RX 7900 XT", gpus=1, vram_gib=20),
    "rx7900xtx-rocminfo-rocm-3380.txt": dict(gfx="gfx1100", product="RX 7900 XTX", gpus=1),
    "gfx1201-collect_env-rocm71-vllm-27307.txt": dict(gfx="gfx1201", torch="2.9.0a0+git1c57644"),
    "rx590-gfx803-mixed-terminal-13.txt": dict(gfx="gfx803", product="radeon rx 590 series", gpus=1),
    "h100-8x-nvidia-smi-thamada.txt": dict(product="H100", gpus=8, vram_gib=80, driver="565.57.01"),
    "h200-nvidia-smi-ollama-9031.txt": dict(product="H200", gpus=1, vram_gib=140, driver="570.86.15"),
    "h100-collect_env-feral-18.txt": dict(product="H100", torch="2.9.1+cu126"),
    "a800-llamafactory-env-llamafactory-5738.txt": dict(product="A800", torch="2.4.0+cu121", transformers="4.45.2"),
    "nogpu-debian-rocminfo.txt": dict(gpus=0, fails={"gpu"}),
    # unseen outputs, added 2026-12-03
    "mi300x-rocm-smi-concise-prompt-nvtop-341.txt": dict(gfx="gfx942", product="MI300X", gpus=5, partition="SPX/NPS1"),
    "mi300x-amd-smi-version-rocm-smi-i-rocm-4759.txt": dict(gfx="gfx942", product="MI300X", gpus=6, rocm="6.4",
                                                           driver="6.10.5"),
    "mi100-2x-rocm-smi-csv-easybuild-3978.txt": dict(gfx="gfx908", product="MI100", gpus=2),
    "mi100-rocm-smi-showproductname-prompt-rocm-1351.txt": dict(gfx="gfx908", product="MI100", gpus=1),
    "mi300x-8x-ds_report-deepspeed-6725.txt": dict(ds_ops=4, gpus=0, fails=set()),
    "mi200-ds_report-unfenced-deepspeed-5100.txt": dict(ds_ops=3, gpus=0),
    "hipconfig-full-rocm62-hip-3521.txt": dict(rocm="6.2", hip="6.2.41133-dd7f95766"),
    "mi300x-4x-amd-smi-partition-rocm-4477.txt": dict(gpus=4, partition="NPS1"),
    "mi300x-collect_env-prompt-padded-rocm-vllm-397.txt": dict(torch="2.3.0a0+git2e4abc8", gpus=0),
    "mi300a-rocminfo-truncated-apptainer-3261.txt": dict(gpus=0, driver="6.12.12"),
    "rx7900xtx-rocminfo-no-agent-header-docker-rocm-2122.txt": dict(gfx="gfx1100", product="RX 7900 XTX", gpus=1),
}


def _report(tmp_path: Path, name: str):
    folder = tmp_path / name.removesuffix(".txt")
    folder.mkdir()
    shutil.copy(CORPUS / name, folder / name)
    return services.diagnose(None, services.open_source(replay=folder)).report


def _facts(report) -> dict:
    env = report.env
    gpus = env.gpus
    out = {"gpus": len(gpus), "torch": env.torch.torch,
           "driver": env.amdgpu_driver or env.nvidia_driver,
           "rocm": "%d.%d" % major_minor(env.rocm_version) if env.rocm_version else "",
           "transformers": env.torch.packages.get("transformers", ""),
           "bitsandbytes": env.torch.packages.get("bitsandbytes", ""),
           "ds_ops": len(env.deepspeed_ops.ops) if env.deepspeed_ops else 0, "hip": env.hip_version}
    if gpus:
        out["gfx"] = "+".join(sorted({g.gfx for g in gpus if g.gfx}))
        out["product"] = product_key(gpus[0].name)
        out["vram_gib"] = round(max(g.vram_bytes or 0 for g in gpus) / 2**30)
        out["partition"] = "/".join(x for x in (gpus[0].compute_partition, gpus[0].memory_partition) if x)
    return out


def test_corpus_is_big_enough_and_every_file_names_its_source():
    files = sorted(p.name for p in CORPUS.glob("*.txt"))
    assert len(files) >= 15 and set(files) == set(EXPECTED)
    sources = (CORPUS / "SOURCES.md").read_text()
    for name in files:
        first = (CORPUS / name).read_text().splitlines()[0]
        assert first.startswith("# source: http") or name.startswith("nogpu-debian"), name  # ours: Debian box
        assert name in sources, name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_doctor_recovers_what_a_reader_sees(tmp_path, name):
    expected = dict(EXPECTED[name])
    fails = expected.pop("fails", set())
    report = _report(tmp_path, name)
    got = _facts(report)
    missed = {k: (v, got.get(k)) for k, v in expected.items() if got.get(k) != v}
    assert not missed, missed
    assert {c.id for c in report.checks if c.status == "fail"} == fails, [
        (c.id, c.found) for c in report.checks if c.status == "fail"]


def test_recovery_score_over_the_corpus(tmp_path, capsys):
    total = hit = 0
    for name, expected in EXPECTED.items():
        got = _facts(_report(tmp_path, name))
        for key, value in expected.items():
            if key != "fails":
                total += 1
                hit += got.get(key) == value
    with capsys.disabled():
        print(f"\ncorpus: {hit}/{total} facts recovered over {len(EXPECTED)} files")
    assert total >= 60 and hit == total


def test_a_memory_partition_alone_is_shown_in_the_partitions_check(tmp_path):
    """`amd-smi partition` nests the mode (MEMORY_PARTITION: {CAPS: N/A, CURRENT: NPS1}) and says nothing of the
    compute partition: the check shows what is known instead of 'not reported'."""
    report = _report(tmp_path, "mi300x-4x-amd-smi-partition-rocm-4477.txt")
    check = next(c for c in report.checks if c.id == "partitions")
    assert check.status == "ok" and "(NPS1)" in check.found and "not reported" not in check.found


def test_a_driver_read_from_a_paste_cut_before_any_gpu_is_reported_as_loaded(tmp_path):
    report = _report(tmp_path, "mi300a-rocminfo-truncated-apptainer-3261.txt")
    check = next(c for c in report.checks if c.id == "driver")
    assert check.status == "ok" and "6.12.12" in check.found
    assert next(c for c in report.checks if c.id == "gpu").status == "unknown"  # the GPU itself stays unknown
