"""The port step's services, the functions both faces call: each one reads the doctor's facts itself."""

from __future__ import annotations

import pytest

from hipwizard.errors import UserError
from hipwizard.port import services
from hipwizard.port.review.state import ReviewState
from hipwizard.port.state import read_link
from hipwizard.progress import Progress
from hipwizard.workspace import Workspace
from tests.port.review_factory import KERNEL
from tests.port.target import HIP_61, NEW_API_KERNEL, NEW_APIS, RecordingHipcc, save_rocm61_gfx90a


def _project(tmp_path, files=None):
    src = tmp_path / "proj"
    src.mkdir()
    for rel, text in (files or {"k.cu": NEW_API_KERNEL, "main.cu": KERNEL}).items():
        (src / rel).write_text(text)
    return src


def test_translate_checks_apis_against_the_doctors_hip_version(tmp_path):
    ws = Workspace(tmp_path)
    save_rocm61_gfx90a(ws)
    src = _project(tmp_path)
    seen: list[Progress] = []
    done = services.translate(ws, "proj", "proj-hip", backend="builtin", progress=seen.append)
    assert list(done.too_new) == sorted(NEW_APIS)
    assert done.review.hip_version == HIP_61
    assert {d.name for d in done.review.diagnostics["k.cu"]} == set(NEW_APIS)
    assert any(p.stage == "translating" and p.finished for p in seen)
    again = ReviewState.load(done.review.path)  # kept with the review, for both faces to list
    assert again.api_counts("too_new") == done.too_new and again.hip_version == HIP_61
    link = read_link(ws)
    assert (link.src, link.out) == (src, tmp_path / "proj-hip")


def _no_hipcc(monkeypatch, tmp_path):
    """No hipcc on PATH: without a doctor report the target is the tables' newest ROCm (with one, its version)."""
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    monkeypatch.setattr("hipwizard.runner.EXTRA_TOOL_DIRS", ())


def test_an_explicit_hip_version_wins_and_no_doctor_means_no_too_new(tmp_path, monkeypatch):
    _no_hipcc(monkeypatch, tmp_path)
    ws = Workspace(tmp_path)
    save_rocm61_gfx90a(ws)
    _project(tmp_path)
    assert services.translate(ws, "proj", "a", backend="builtin", hip_version="6.2").too_new == {}
    assert services.translate(Workspace(tmp_path / "elsewhere"), tmp_path / "proj", tmp_path / "b",
                              backend="builtin").too_new == {}


def test_translate_again_reconciles_the_existing_review_unless_told_to_replace(tmp_path):
    ws = Workspace(tmp_path)
    _project(tmp_path)
    first = services.translate(ws, "proj", "out", backend="builtin")
    first.review.decide([first.review.hunks[0].hunk_id], "accepted")
    again = services.translate(ws, "proj", "out", backend="builtin")
    assert again.reconciled is not None and again.reconciled.kept == 1
    assert ReviewState.load(first.review.path).counts().accepted == 1
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x.cu").write_text("#include <cuda_runtime.h>\n")
    with pytest.raises(UserError, match="holds the review of"):  # another source: never mixed in
        services.translate(ws, "other", "out", backend="builtin")
    assert services.translate(ws, "proj", "out", backend="builtin", replace=True).review.counts().accepted == 0


@pytest.mark.parametrize("src, out, words", [("missing", "o", "does not exist"), ("proj", "proj", "must not be"),
                                             ("empty", "o", "no CUDA sources"), ("proj", "proj/hip", "inside the source"),
                                             ("proj", "proj/k.cu/o", "inside the source"),
                                             ("proj", "/proc/hipwizard-o", "cannot be written")])
def test_translate_bad_input_is_one_user_error(tmp_path, src, out, words):
    _project(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match=words):
        services.translate(Workspace(tmp_path), src, out, backend="builtin")


def test_write_compile_checks_for_the_doctors_arch_unless_told(tmp_path):
    ws = Workspace(tmp_path)
    save_rocm61_gfx90a(ws)
    _project(tmp_path)
    review = services.translate(ws, "proj", "out", backend="builtin", accept="all", check=False).review
    hipcc = RecordingHipcc()
    report = services.write(ws, review, runner=hipcc)
    assert report.arch == "gfx90a" and set(hipcc.archs) == {"gfx90a"}
    assert report.files and all(f.check == "ok" for f in report.files)
    hipcc = RecordingHipcc()
    assert services.write(ws, review, arch="gfx942", runner=hipcc).arch == "gfx942"
    assert set(hipcc.archs) == {"gfx942"}
    assert services.write(None, review, runner=RecordingHipcc()).arch == "gfx942"  # no doctor: the default


def test_translate_with_accept_writes_through_the_same_write(tmp_path, monkeypatch):
    ws = Workspace(tmp_path)
    save_rocm61_gfx90a(ws)
    _project(tmp_path)
    hipcc = RecordingHipcc()
    monkeypatch.setattr("hipwizard.port.output.compile_check.SubprocessRunner", lambda: hipcc)
    done = services.translate(ws, "proj", "out", backend="builtin", accept="unflagged")
    assert done.written is not None and done.written.arch == "gfx90a" and set(hipcc.archs) == {"gfx90a"}
    assert (tmp_path / "out" / "k.cu").exists()


def test_check_uses_the_doctors_arch(tmp_path):
    ws = Workspace(tmp_path)
    save_rocm61_gfx90a(ws)
    (tmp_path / "hip").mkdir()
    (tmp_path / "hip" / "a.hip").write_text("int x;\n")
    hipcc = RecordingHipcc()
    (check,) = services.check(ws, tmp_path / "hip", runner=hipcc).files
    assert check.status == "ok" and check.arch == "gfx90a" and set(hipcc.archs) == {"gfx90a"}
    with pytest.raises(UserError, match="no translation units"):
        services.check(ws, tmp_path / ".hipwizard")


def test_refresh_takes_the_doctors_new_findings_without_touching_decisions(tmp_path, monkeypatch):
    _no_hipcc(monkeypatch, tmp_path)
    ws = Workspace(tmp_path)
    _project(tmp_path)
    review = services.translate(ws, "proj", "out", backend="builtin").review
    assert review.api_counts("too_new") == {} and review.hip_version == ""
    review.decide([review.hunks[0].hunk_id], "rejected")
    save_rocm61_gfx90a(ws)  # the doctor ran since
    assert services.refresh(ws, review) is None  # sources unchanged: nothing reconciled
    assert list(review.api_counts("too_new")) == sorted(NEW_APIS) and review.hip_version == HIP_61
    again = ReviewState.load(review.path)
    assert again.api_counts("too_new") == review.api_counts("too_new")
    assert again.decision(review.hunks[0].hunk_id).state == "rejected" and again.counts().rejected == 1


def test_refresh_reconciles_changed_sources(tmp_path):
    ws = Workspace(tmp_path)
    src = _project(tmp_path)
    review = services.translate(ws, "proj", "out", backend="builtin").review
    review.decide([h.hunk_id for h in review.hunks], "accepted")
    (src / "main.cu").write_text(KERNEL.replace("cudaFree(d);", "cudaFree(d);\n  cudaDeviceReset();"))
    report = services.refresh(ws, review)
    assert report is not None and report.changed_files == ["main.cu"] and report.changed >= 1
    assert report.kept >= 1


def test_open_review_gives_the_link_before_any_translation(tmp_path):
    ws = Workspace(tmp_path)
    opened = services.open_review(ws)
    assert opened.review is None and opened.link.src is None
    _project(tmp_path)
    services.translate(ws, "proj", "out", backend="builtin")
    opened = services.open_review(ws)
    assert opened.review is not None and opened.reconciled is None
    assert opened.review.path == tmp_path / "out.review.json"
