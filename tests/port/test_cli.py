"""``hipwizard hipify`` and ``hipwizard check`` headless, through the real entry point."""

from __future__ import annotations

import json
import shutil

from hipwizard.cli import main
from hipwizard.port.demo import DEMO_PROJECT
from hipwizard.port.review_state import ReviewState, state_path_for


def test_hipify_writes_a_pending_review_and_a_summary(tmp_path, capsys):
    out = tmp_path / "hip"
    rc = main(["hipify", str(DEMO_PROJECT), "--out", str(out), "--workspace", str(tmp_path), "--backend", "builtin",
               "--hip-version", "5.2", "--json"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["files"] == 5 and summary["hunks"] > 0
    assert summary["flags_by_severity"]["med"] >= 1 and summary["untouched_flags_by_severity"]["high"] >= 1
    review = ReviewState.load(state_path_for(out))
    assert review.counts()["pending"] == summary["hunks"]
    assert not out.exists()  # nothing written until hunks are accepted
    port = json.loads((tmp_path / ".hipwizard" / "port.json").read_text())
    assert port["out"] == str(out.resolve())


def test_hipify_accepts_perl_option_names_and_accept_unflagged(tmp_path, capsys):
    src = tmp_path / "src"
    shutil.copytree(DEMO_PROJECT, src)
    out = tmp_path / "out"
    rc = main(["hipify", str(src), "-o", str(out), "-hip-kernel-execution-syntax", "--accept-unflagged",
               "--no-check", "--workspace", str(tmp_path)])
    text = capsys.readouterr().out
    assert rc == 0, text
    scale = (out / "kernels" / "scale.cu").read_text()
    assert "hipLaunchKernelGGL(scale_bias_kernel, dim3(grid), dim3(block), 0, stream," in scale
    review = ReviewState.load(state_path_for(out))
    flagged = [h for h in review.hunks if h.flags]
    assert flagged and all(review.decision(h.hunk_id).state == "pending" for h in flagged)
    assert "wrote 5 file(s)" in text


def test_hipify_bad_input_exits_2(tmp_path, capsys):
    assert main(["hipify", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    (tmp_path / "empty").mkdir()
    assert main(["hipify", str(tmp_path / "empty"), "--out", str(tmp_path / "o"), "--workspace", str(tmp_path)]) == 2
    assert "no CUDA sources" in capsys.readouterr().err
    assert main(["hipify", str(tmp_path), "--out", str(tmp_path)]) == 2


def test_check_reports_per_file(tmp_path, capsys):
    (tmp_path / "a.cu").write_text("#include <hip/hip_runtime.h>\nint f(){ return missing_name; }\n")
    rc = main(["check", str(tmp_path), "--json"])
    results = json.loads(capsys.readouterr().out)
    if results[0]["status"] == "not available":  # no hipcc on this machine: exit 2, told why
        assert rc == 2 and "install" in results[0]["note"]
    else:
        assert rc == 1 and results[0]["status"] == "failed"
        assert results[0]["errors"][0]["line"] == 2
    assert main(["check", str(tmp_path / "nothing")]) == 2
