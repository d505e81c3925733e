"""Backends: choosing one, and hipify-perl / hipify-clang output parsing on recorded real outputs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hipwizard.errors import UserError
from hipwizard.port.demo import DEMO_PROJECT
from hipwizard.port.translation.backends import BuiltinBackend, HipifyPerlBackend, choose_backend
from hipwizard.port.translation.backends.hipify_output import parse_clang_warnings, parse_perl_warnings, parse_stats
from hipwizard.port.translation.scan import scan_tree
from hipwizard.runner import RunResult

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "port" / "hipify-perl"


class ReplayRunner:
    """Answers like hipify-perl did on the demo files (outputs recorded from AMD's hipify-perl, HIPIFY 6.3)."""

    def __init__(self, installed=("hipify-perl",)):
        self.installed = set(installed)
        self.calls = []

    def which(self, name):
        return f"/opt/rocm/bin/{name}" if name in self.installed else None

    def run(self, argv, *, timeout=30.0, env=None, cwd=None):
        self.calls.append(list(argv))
        stderr = (FIX / "inplace-quiet-stats.stderr.txt").read_text()
        for arg in argv:
            p = Path(arg)
            if p.name == "layernorm.cu" and p.exists():
                p.write_text((FIX / "layernorm.cu.hipify-perl-out").read_text())  # what -inplace wrote
            # the recorded stats name files as given on the command line
            stderr = stderr.replace(f"file '{p.name}'", f"file '{arg}'")
        return RunResult(tuple(argv), "ok", 0, "", stderr)


def test_stats_parsing_on_recorded_output():
    stats = parse_stats((FIX / "print-stats-warnings.stderr.txt").read_text())
    assert stats["common.cuh"] == {"converted": 4, "lines": 37, "warnings": 2}
    assert stats["matmul.cu"]["converted"] == 10


def test_perl_warning_parsing_on_recorded_output():
    warnings = parse_perl_warnings((FIX / "print-stats-warnings.stderr.txt").read_text())
    (first, second) = warnings["common.cuh"]
    assert (first.kind, first.name, first.line) == ("unsupported", "__shfl_xor_sync", 24)
    assert second.line == 31


def test_clang_warning_parsing():
    # format from HIPIFY src/HipifyAction.cpp ("'%0' is unsupported in '%1'.") as clang prints diagnostics
    text = ("k.cu:12:5: warning: 'cudaThreadGetLimit' is unsupported in 'HIP'.\n"
            "k.cu:14:3: warning: 'cudaGraphExecGetFlags' is experimental in 'HIP'; to hipify it, use the "
            "'--experimental' option.\n"
            "k.cu:20:1: warning: 'cudaThreadExit' is deprecated in CUDA.\n")
    got = [(d.kind, d.name, d.line) for d in parse_clang_warnings(text)["k.cu"]]
    assert got == [("unsupported", "cudaThreadGetLimit", 12), ("warning", "cudaGraphExecGetFlags", 14),
                   ("deprecated", "cudaThreadExit", 20)]


def test_perl_backend_runs_on_copies_with_quiet_warnings():
    files = [f for f in scan_tree(DEMO_PROJECT).files if f.path == "kernels/layernorm.cu"]
    runner = ReplayRunner()
    (result,) = HipifyPerlBackend(runner=runner).translate(files)
    (argv,) = runner.calls
    assert argv[:4] == ["hipify-perl", "-inplace", "-quiet-warnings", "-print-stats"]
    assert not any(str(DEMO_PROJECT) in a for a in argv)  # copies, never the user's files
    assert result.text == (FIX / "layernorm.cu.hipify-perl-out").read_text()
    assert result.stats == {"converted": 5, "lines": 49, "warnings": 0}
    assert not result.error


def test_choose_backend():
    none = ReplayRunner(installed=())
    assert isinstance(choose_backend("auto", runner=none), BuiltinBackend)
    assert choose_backend("auto", runner=ReplayRunner()).name == "hipify-perl"
    assert choose_backend("auto", runner=ReplayRunner(("hipify-perl", "hipify-clang"))).name == "hipify-clang"
    with pytest.raises(UserError, match="not installed"):
        choose_backend("hipify-clang", runner=none)
    with pytest.raises(UserError, match="unknown backend"):
        choose_backend("nvcc", runner=none)


def _real_hipify_perl() -> str | None:
    return shutil.which("hipify-perl") or shutil.which("hipify-perl", path="/opt/rocm/bin")


@pytest.mark.skipif(_real_hipify_perl() is None, reason="AMD's hipify-perl is not installed")
def test_real_hipify_perl_output_gives_exact_hunks_with_progress(tmp_path):
    # the external-tool path: hunks from the line diff rebuild hipify-perl's output exactly, and progress
    # counts files in both stages
    from hipwizard.port.translation.engine import port_tree
    from hipwizard.port.translation.hunks import apply_hunks
    from hipwizard.runner import SubprocessRunner

    shutil.copytree(DEMO_PROJECT, tmp_path / "src")
    seen = []
    report = port_tree(tmp_path / "src", backend="hipify-perl", runner=SubprocessRunner(), progress=seen.append)
    assert report.backend == "hipify-perl" and not report.failed and report.files
    for ft in report.files:
        assert apply_hunks(ft.original, ft.hunks, [h.hunk_id for h in ft.hunks]) == ft.translated
    assert sum(len(ft.hunks) for ft in report.files) > 10
    assert {p.stage for p in seen} == {"translating", "checking"}
    assert seen[-1].done == seen[-1].total == len(report.files)
