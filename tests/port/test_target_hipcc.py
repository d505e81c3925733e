"""With no doctor report, the target ROCm is the hipcc found (the one `check` compiles with), said as such."""

from __future__ import annotations

import stat

from hipwizard.port import services
from hipwizard.port.translation.compat import hipcc_version, target_version
from hipwizard.runner import RunResult


class _Runner:
    def __init__(self, path, out):
        self.path, self.out = path, out

    def which(self, name):
        return self.path if name == "hipcc" else None

    def run(self, argv, timeout=30.0, **_):
        return RunResult(tuple(argv), "ok", 0, self.out)


def test_hipcc_version_reads_the_hip_version_line():
    assert hipcc_version(_Runner("/usr/bin/hipcc", "HIP version: 5.2.21153-0\nnvcc: ...\n")) == ("5.2", "/usr/bin/hipcc")
    assert hipcc_version(_Runner("/usr/bin/hipcc", "clang version 17\n")) is None
    assert hipcc_version(_Runner(None, "")) is None


def test_target_order_given_doctor_hipcc_default():
    found = ("5.2", "/usr/bin/hipcc")
    assert target_version("6.1", "6.2", found=found).version == "6.1"
    assert target_version(None, "6.2", found=found).source == "doctor"
    t = target_version(None, None, found=found)
    assert (t.version, t.source) == ("5.2", "the hipcc found at /usr/bin/hipcc; no doctor report")
    assert "no hipcc found" in target_version().source


def _fake_hipcc(folder, version):
    folder.mkdir()
    exe = folder / "hipcc"
    exe.write_text(f"#!/bin/sh\necho 'HIP version: {version}-0'\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)


def test_translate_without_doctor_targets_the_hipcc_on_path(tmp_path, monkeypatch):
    src = tmp_path / "src"
    src.mkdir()
    (src / "k.cu").write_text("#include <cuda_bf16.h>\n__global__ void k(__nv_bfloat16* v) {}\n")
    _fake_hipcc(tmp_path / "bin", "5.2.21153")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr("hipwizard.runner.EXTRA_TOOL_DIRS", ())
    done = services.translate(None, src, tmp_path / "out")
    target = done.report.summary()["target"]
    assert target == {"hip_version": "5.2", "source": f"the hipcc found at {tmp_path / 'bin' / 'hipcc'}; no doctor report"}
    assert done.review.hip_version == "5.2"
    assert "cuda_bf16.h" in done.report.summary()["too_new"]  # hip_bf16.h is ROCm >= 6.0: too new for that hipcc
    # the same without any hipcc: the tables' newest, and it says why
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    bare = services.translate(None, src, tmp_path / "out2")
    assert "no hipcc found" in bare.report.summary()["target"]["source"] and not bare.review.hip_version
