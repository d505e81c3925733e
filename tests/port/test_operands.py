"""File names reach external programs as operands, never as options or response files.

A source file named ``@opts.cu`` made hipcc read ``opts.cu`` as more options (``-MD -MF /abs/victim`` wrote a
file outside the tree); ``-o.cu`` gave a false compile failure. Checked at the argv level for every program the
port step runs (hipcc, hipify-perl, hipify-clang, git merge-file), and end to end with the real hipcc.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hipwizard.cli import main
from hipwizard.port.output.compile_check import check_files
from hipwizard.port.output.worktree import WorkTree
from hipwizard.port.translation.backends.hipify_tools import HipifyClangBackend, HipifyPerlBackend
from hipwizard.port.translation.scan import SourceFile
from hipwizard.runner import RunResult, SubprocessRunner, path_operand

HOSTILE = ("@opts.cu", "-o.cu", "sub/-MF.cpp", "--help.cu")
KERNEL = "__global__ void k(float *x) { x[threadIdx.x] = 1; }\n"
needs_hipcc = pytest.mark.skipif(SubprocessRunner().which("hipcc") is None, reason="hipcc not installed")


class Recorder:
    """Answers every program with success and keeps each argv."""

    def __init__(self):
        self.calls: list[list[str]] = []
        self.cwds: list[str | None] = []

    def which(self, name):
        return f"/usr/bin/{name}"

    def run(self, argv, *, timeout=30.0, env=None, cwd=None):
        self.calls.append([str(a) for a in argv])
        self.cwds.append(None if cwd is None else str(cwd))
        return RunResult(tuple(argv), "ok", 0)


def _from_paths(argv: list[str], names=HOSTILE) -> list[str]:
    """The elements of ``argv`` that carry one of ``names`` (a path, whatever its spelling)."""
    return [a for a in argv[1:] if any(Path(n).name in a for n in names)]


def _assert_operands(argv: list[str], options: set[str]) -> None:
    assert not any(a.startswith("@") for a in argv), argv
    flags = [a for a in argv[1:] if a.startswith("-")]
    assert flags and all(f in options or f.startswith(("--offload-arch=", "-o=")) for f in flags), flags
    for a in _from_paths(argv):
        assert a.startswith(("/", "./", "-o=/")), a


@pytest.mark.parametrize("name, expected", [
    ("@opts.cu", "./@opts.cu"), ("-o.cu", "./-o.cu"), ("sub/-x.cu", "./sub/-x.cu"), ("/abs/@a.cu", "/abs/@a.cu"),
    ("./a.cu", "./a.cu"), ("../a.cu", "../a.cu"), (Path("-MD"), "./-MD")])
def test_path_operand_never_starts_with_an_option_or_response_file_sign(name, expected):
    got = path_operand(name)
    assert got == expected and not got.startswith(("-", "@"))


def test_hipcc_gets_file_names_as_operands(tmp_path):
    runner = Recorder()
    checks = check_files(tmp_path, list(HOSTILE), runner=runner, jobs=1)
    assert [c.status for c in checks] == ["ok"] * len(HOSTILE)
    compiles = [a for a in runner.calls if any(Path(n).name in " ".join(a) for n in HOSTILE)]
    assert len(compiles) == len(HOSTILE)
    for argv in runner.calls:  # the arch probe too
        _assert_operands(argv, {"-c", "-I", "-o"})
    assert {c for argv in compiles for c in _from_paths(argv)} == {str(tmp_path.resolve() / n) for n in HOSTILE}
    # clang's driver hands cc1 "-main-file-name @opts.cu", read as a response file from the working folder:
    # hipcc runs in a folder of hipwizard's own, never in the user's tree
    assert runner.cwds and all(cwd is not None and Path(cwd).resolve() != tmp_path.resolve() for cwd in runner.cwds)


def _sources(tmp_path: Path) -> list[SourceFile]:
    return [SourceFile(n, tmp_path / n, KERNEL) for n in HOSTILE]


def test_hipify_perl_gets_file_names_as_operands(tmp_path):
    runner = Recorder()
    HipifyPerlBackend(runner=runner).translate(_sources(tmp_path))
    (argv,) = runner.calls
    _assert_operands(argv, {"-inplace", "-quiet-warnings", "-print-stats"})
    assert len(_from_paths(argv)) == len(HOSTILE)


def test_hipify_clang_gets_file_names_as_operands(tmp_path):
    runner = Recorder()
    HipifyClangBackend(runner=runner).translate(_sources(tmp_path))
    assert len(runner.calls) == len(HOSTILE)
    for argv in runner.calls:
        _assert_operands(argv, {"--print-stats", "--", "-x"})
        assert argv[1].startswith("/")


def test_git_merge_file_ends_options_before_its_operands(tmp_path):
    runner = Recorder()
    WorkTree(tmp_path / "out", runner=runner).merge(b"a\n", b"b\n", b"c\n")
    (argv,) = runner.calls
    end = argv.index("--")
    assert argv[:2] == ["git", "merge-file"] and len(argv[end + 1:]) == 3
    assert argv[end + 1:] and all(a.startswith("/") for a in argv[end + 1:])


def _hostile_tree(tmp_path: Path) -> Path:
    """``src/@opts.cu`` and ``src/-o.cu`` (kernels), and ``src/opts.cu`` holding options that, read as a
    response file, compile ``-o.cu`` with its dependencies written over ``victim`` (outside the tree)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "@opts.cu").write_text(KERNEL)
    (src / "-o.cu").write_text(KERNEL.replace("k(", "k2("))
    (src / "opts.cu").write_text(f"-MD -MF {tmp_path / 'victim'} ./-o.cu\n")
    (tmp_path / "victim").write_text("the user's file\n")
    return src


@pytest.mark.slow
@needs_hipcc
def test_real_hipify_accept_all_and_check_with_hostile_names(tmp_path, monkeypatch, capsys):
    _hostile_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    code = main(["hipify", "src", "--out", "o", "--backend", "builtin", "--accept-all", "--json"])
    out = capsys.readouterr().out
    assert code == 1  # opts.cu is not code: its compile fails, and only its
    assert (tmp_path / "victim").read_text() == "the user's file\n"
    import json

    summary = json.loads(out)
    assert summary["check"] == {"-o.cu": "ok", "@opts.cu": "ok", "opts.cu": "failed"}, summary["check"]
    code = main(["check", "o", "--json"])
    checks = {c["path"]: c["status"] for c in json.loads(capsys.readouterr().out)["files"]}
    assert checks == {"-o.cu": "ok", "@opts.cu": "ok", "opts.cu": "failed"}
    assert (tmp_path / "victim").read_text() == "the user's file\n"
