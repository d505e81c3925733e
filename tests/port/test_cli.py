"""``hipwizard hipify`` and ``hipwizard check`` headless, through the real entry point."""

from __future__ import annotations

import json
import shutil

from hipwizard.cli import main
from hipwizard.port.demo import DEMO_PROJECT
from hipwizard.port.review.state import ReviewState, state_path_for
from hipwizard.port.state import read_link
from hipwizard.workspace import Workspace


def test_hipify_writes_a_pending_review_and_a_summary(tmp_path, capsys):
    out = tmp_path / "hip"
    rc = main(["hipify", str(DEMO_PROJECT), "--out", str(out), "--workspace", str(tmp_path), "--backend", "builtin",
               "--hip-version", "5.2", "--json"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["files"] == 6 and summary["build_files"] == 1 and summary["hunks"] > 0  # 5 sources + the Makefile
    assert summary["flags_by_severity"]["med"] >= 1 and summary["untouched_flags_by_severity"]["high"] >= 1
    review = ReviewState.load(state_path_for(out))
    assert review.counts().pending == summary["hunks"]
    assert not out.exists()  # nothing written until hunks are accepted
    port = json.loads((tmp_path / ".hipwizard" / "port.json").read_text())
    assert port["out"] == "hip"  # inside the workspace: stored relative to it
    assert read_link(Workspace(tmp_path)).out.resolve() == out.resolve()


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
    assert "wrote 6 file(s)" in text  # the 5 sources and the Makefile (build files are part of the port)
    assert "\t$(NVCC) --offload-arch=$(ARCH) -O3 -fPIC" in (out / "Makefile").read_text()


def test_hipify_bad_input_exits_2(tmp_path, capsys):
    assert main(["hipify", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    (tmp_path / "empty").mkdir()
    assert main(["hipify", str(tmp_path / "empty"), "--out", str(tmp_path / "o"), "--workspace", str(tmp_path)]) == 2
    assert "no CUDA sources" in capsys.readouterr().err
    assert main(["hipify", str(tmp_path), "--out", str(tmp_path)]) == 2


def test_check_reports_per_file(tmp_path, capsys):
    (tmp_path / "a.cu").write_text("#include <hip/hip_runtime.h>\nint f(){ return missing_name; }\n")
    rc = main(["check", str(tmp_path), "--json"])
    results = json.loads(capsys.readouterr().out)["files"]
    if results[0]["status"] == "not available":  # no hipcc on this machine: exit 2, told why
        assert rc == 2 and "install" in results[0]["note"]
    else:
        assert rc == 1 and results[0]["status"] == "failed"
        assert results[0]["errors"][0]["line"] == 2
    assert main(["check", str(tmp_path / "nothing")]) == 2


def test_hipify_lists_apis_newer_than_the_doctors_hip(tmp_path, capsys):
    from hipwizard.workspace import Workspace
    from tests.port.target import HIP_61, NEW_API_KERNEL, NEW_APIS, save_rocm61_gfx90a

    save_rocm61_gfx90a(Workspace(tmp_path))
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cu").write_text(NEW_API_KERNEL)
    assert main(["hipify", str(tmp_path / "src"), "--out", str(tmp_path / "out"), "--workspace", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert f"⚠ newer than the target ROCm/HIP {HIP_61}: " + ", ".join(NEW_APIS) in text
    assert f"target: ROCm/HIP {HIP_61} (doctor)" in text
    assert "k.cu:7: too_new: hipGetFuncBySymbol needs ROCm >= 6.2.0 (you target 6.1" in text
    assert main(["review", str(tmp_path / "out"), "--summary"]) == 0  # the review keeps the list
    assert f"newer than the target HIP {HIP_61}: " + ", ".join(NEW_APIS) in capsys.readouterr().out


def test_review_write_and_check_compile_for_the_doctors_arch(tmp_path, capsys, monkeypatch):
    from hipwizard.workspace import Workspace
    from tests.port.target import RecordingHipcc, save_rocm61_gfx90a

    save_rocm61_gfx90a(Workspace(tmp_path))
    hipcc = RecordingHipcc()
    monkeypatch.setattr("hipwizard.port.output.compile_check.SubprocessRunner", lambda: hipcc)
    src = tmp_path / "src"
    shutil.copytree(DEMO_PROJECT, src)
    out = tmp_path / "out"
    assert main(["hipify", str(src), "--out", str(out), "--workspace", str(tmp_path), "--json"]) == 0
    capsys.readouterr()
    assert main(["review", str(tmp_path), "--write", "--json", "--include-pending"]) == 0
    written = json.loads(capsys.readouterr().out)
    assert written["arch"] == "gfx90a" and set(hipcc.archs) == {"gfx90a"}
    monkeypatch.chdir(tmp_path)  # `hipwizard check` reads the doctor of the current folder
    hipcc.archs.clear()
    assert main(["check", str(out), "--json"]) == 0
    assert {c["arch"] for c in json.loads(capsys.readouterr().out)["files"] if c["status"] != "skipped"} \
        == {"gfx90a"} == set(hipcc.archs)
    assert main(["check", str(out), "--arch", "gfx942", "--json"]) == 0
    assert {c["arch"] for c in json.loads(capsys.readouterr().out)["files"] if c["status"] != "skipped"} == {"gfx942"}


def test_hipify_names_each_skipped_file_and_the_cap_is_overridable(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    (src / "k.cu").write_text("__global__ void k() {}\nint main() { cudaDeviceSynchronize(); }\n")
    (src / "table.cu").write_text("// generated\n" + "int x;\n" * 1000)  # 7 KiB
    out = tmp_path / "out"
    assert main(["hipify", str(src), "--out", str(out), "--workspace", str(tmp_path), "--max-file-size", "4k"]) == 0
    text = capsys.readouterr().out
    assert "1 file(s) skipped" in text and "table.cu: too large (6.85 KiB > the 4 KiB cap" in text
    out2 = tmp_path / "out2"
    assert main(["hipify", str(src), "--out", str(out2), "--workspace", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["skipped_count"] == 0 and data["max_file_bytes"] == 8 << 20 and data["files"] == 2


def test_hipify_bad_max_file_size_is_one_line_exit_2(tmp_path, capsys):
    # the CLI's one error path (not argparse's usage block): exactly one line, exit 2
    assert main(["hipify", str(tmp_path), "--out", str(tmp_path / "o"), "--max-file-size", "lots"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("hipwizard: error: ")
    assert "--max-file-size: 'lots' is not a size" in err
    assert not (tmp_path / "o").exists()


def test_hipify_states_the_default_target_in_text_and_json(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # no hipcc either: the tables' newest ROCm
    monkeypatch.setattr("hipwizard.runner.EXTRA_TOOL_DIRS", ())
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cu").write_text("__global__ void k(float* v){ *v = __shfl_xor_sync(~0ull, *v, 1); }\n")
    args = ["hipify", str(tmp_path / "src"), "--workspace", str(tmp_path)]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    text = capsys.readouterr().out
    assert "target: ROCm/HIP 6.3 (default (newest ROCm in HIPIFY's tables; no doctor report, no hipcc found))" in text
    assert "opt_in: __shfl_xor_sync is opt-in before ROCm 7.0" in text and "unsupported" not in text
    assert main([*args, "--out", str(tmp_path / "b"), "--json", "--hip-version", "7.0"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["target"] == {"hip_version": "7.0", "source": "--hip-version"} and s["opt_in"] == {} and s["unsupported"] == {}
