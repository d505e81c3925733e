"""The summary counts every line that needs a hand edit, unsupported API lines included (issue 29 item 5)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hipwizard.port.review.state import ReviewState
from hipwizard.port.translation.engine import port_tree

HEADER = "#define WARP_SIZE 32\n__device__ int lane() { return threadIdx.x & 31; }\n"
MAIN = ("#include <cuda_runtime.h>\nvoid f(float* d) {\n  cudaFree(d);\n  cudaNotARealApi(d);\n"
        "  cudaDeviceGetTexture1DLinearMaxWidth(0, 0, 1, 0);\n}\n")


def _tree(tmp_path):
    src = tmp_path / "src"
    (src / "include").mkdir(parents=True)
    (src / "include" / "common.cuh").write_text(HEADER)
    (src / "main.cu").write_text(MAIN)
    return src


def test_engine_summary_counts_risk_and_api_lines_once_each(tmp_path):
    report = port_tree(_tree(tmp_path), backend="builtin")
    hand = report.summary()["hand_edit_lines"]
    risks = sum(len(f.untouched_flags) > 0 for f in report.files)
    assert risks == 1  # the header's risks are on unchanged lines
    assert hand["api"] == 2  # main.cu L4 and L5: no HIP counterpart
    assert hand["risks"] >= 1 and hand["total"] == hand["risks"] + hand["api"]


@pytest.mark.slow
def test_review_summary_says_the_api_lines_too(tmp_path):
    src = _tree(tmp_path)
    state = ReviewState.create(src, tmp_path / "out", port_tree(src, backend="builtin").files)
    state.save()
    run = [sys.executable, "-m", "hipwizard", "review", str(state.out), "--summary"]
    text = subprocess.run(run, capture_output=True, text=True, timeout=120).stdout
    data = json.loads(subprocess.run(run + ["--json"], capture_output=True, text=True, timeout=120).stdout)
    hand = data["hand_edit_lines"]
    assert hand["api"] == 2 and hand["total"] == hand["risks"] + 2
    assert f"⚑ {hand['total']} line(s) need a hand edit: {hand['risks']} with risks on unchanged lines" in text
    assert "2 with an API HIP lacks or the target is too old for" in text


def test_skips_are_counted_by_kind(tmp_path):
    src = _tree(tmp_path)
    (src / "plain.cpp").write_text("int main() { return 0; }\n")
    (src / "notes.h").write_text("// nothing for a GPU\n")
    (src / "big.cu").write_text(MAIN * 200)
    summary = port_tree(src, backend="builtin", max_bytes=4096).summary()
    assert summary["skipped_by_kind"] == {"no CUDA content": 2, "too large": 1}
