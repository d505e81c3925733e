"""Accuracy of the built-in CUDA->HIP translator on hipwizard's corpus (and hipify-perl's, when present).

Each corpus file holds ``// CHECK: <line>`` comments (HIPIFY's unit-test convention) naming the lines the
translation must contain, in order. The CHECK comments are removed, the rest is translated, and a CHECK
counts as passed when a line of the output after the previous match contains it (whitespace-normalised), as
FileCheck does. Folders are read recursively; options come from ``// OPTIONS:`` or a lit ``// RUN:`` line
(``--roc``, ``--experimental``, ``--hip-kernel-execution-syntax``), so HIPIFY's ``tests/unit_tests`` runs as is.
Prints per-backend accuracy and ms/file; hipify-perl is looked up on PATH / /opt/rocm/bin or given with
``--hipify-perl PATH``.

Usage: ``python benchmarks/hipify_accuracy.py [CORPUS_DIR] [--hipify-perl PATH]``
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hipwizard.port.translation.builtin import BuiltinTranslator, TranslateOptions  # noqa: E402
from hipwizard.port.translation.compat import HEADER_PATHS  # noqa: E402
from hipwizard.runner import SubprocessRunner  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "port" / "corpus"
CHECK = re.compile(r"^\s*//\s*CHECK:\s*(.*?)\s*$")
# hipwizard's corpus says ``// OPTIONS: ...``; HIPIFY's unit tests give them on the lit ``// RUN:`` line
OPTIONS = re.compile(r"^\s*//\s*(?:OPTIONS|RUN):(.*)$")
SUFFIXES = (".cu", ".cpp", ".cuh", ".h", ".hpp")


@dataclass
class CorpusCase:
    name: str
    source: str  # CHECK lines removed
    checks: list[str]
    options: TranslateOptions


def _norm(line: str) -> str:
    return " ".join(line.split())


def load_corpus(folder: Path = CORPUS) -> list[CorpusCase]:
    cases = []
    for path in sorted(folder.rglob("*")):  # HIPIFY's tests/unit_tests has one folder per theme
        if path.suffix not in SUFFIXES or not path.is_file():
            continue
        checks, kept, flags = [], [], ""
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True):
            m = CHECK.match(line)
            o = OPTIONS.match(line)
            if m:
                checks.append(_norm(m.group(1)))
            elif o:
                flags += " " + o.group(1)
            else:
                kept.append(line)
        opts = TranslateOptions(hip_kernel_execution_syntax="--hip-kernel-execution-syntax" in flags,
                                roc=bool(re.search(r"(?:^|\s)--?roc\b", flags)), experimental="--experimental" in flags)
        if checks:
            cases.append(CorpusCase(str(path.relative_to(folder)), "".join(kept), checks, opts))
    return cases


_FLAT = re.compile(r"(#\s*include\s*[<\"])([\w.]+)([>\"])")


def _folder_form(want: str) -> str:
    """``#include "hipblas.h"`` -> ``#include "hipblas/hipblas.h"`` where ROCm >= 6 puts the header in a folder
    (compat.HEADER_PATHS); any other CHECK unchanged."""
    return _FLAT.sub(lambda m: m.group(1) + HEADER_PATHS.get(m.group(2), m.group(2)) + m.group(3), want)


def score(output: str, checks: list[str], folder_headers: bool = False) -> list[bool]:
    """For each CHECK, whether it matched a later output line than the previous matched CHECK. A line matches
    when it holds the CHECK text (whitespace runs collapsed), as LLVM FileCheck's ``CHECK:`` does: HIPIFY's tests
    are FileCheck tests (``CHECK: HIPBLAS_OP_T,`` passes on ``HIPBLAS_OP_T, /* transa */``). ``folder_headers``:
    a flat library include also passes as its ROCm 6 folder path (the same header; the flat one is a deprecated
    forwarder)."""
    lines = [_norm(x) for x in output.splitlines()]
    pos, out = 0, []
    for want in checks:
        alt = _folder_form(want) if folder_headers else want
        idx = next((i for i in range(pos, len(lines)) if want in lines[i] or alt in lines[i]), -1)
        out.append(idx != -1)
        if idx != -1:
            pos = idx + 1
    return out


@dataclass
class Result:
    strict: int = 0
    folder: int = 0  # with ROCm 6 folder-style library headers counted for their flat CHECK
    total: int = 0
    ms: float = 0.0

    def add(self, output: str, checks: list[str]) -> list[bool]:
        ok = score(output, checks)
        self.strict += sum(ok)
        self.folder += sum(score(output, checks, folder_headers=True))
        self.total += len(ok)
        return ok

    def line(self, name: str) -> str:
        t = max(self.total, 1)
        return (f"{name:12} accuracy {100 * self.strict / t:6.2f}% ({self.strict}/{self.total}); "
                f"folder headers as flat {100 * self.folder / t:6.2f}% ({self.folder})  {self.ms:8.2f} ms/file")


def run_builtin(cases: list[CorpusCase], repeat: int = 20) -> tuple[Result, list[str]]:
    result, misses = Result(), []
    start = time.perf_counter()
    for _ in range(repeat):
        results = [(c, BuiltinTranslator(c.options).translate(c.source).text) for c in cases]
    result.ms = (time.perf_counter() - start) * 1000 / (repeat * len(cases))
    for case, text in results:
        ok = result.add(text, case.checks)
        misses += [f"{case.name}: {want}" for want, hit in zip(case.checks, ok, strict=True) if not hit]
    return result, misses


def run_perl(cases: list[CorpusCase], perl: str) -> Result:
    result = Result()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            src = Path(tmp) / case.name.replace("/", "__")
            src.write_text(case.source, encoding="utf-8")
            flags = [f for f, on in (("-hip-kernel-execution-syntax", case.options.hip_kernel_execution_syntax),
                                     ("-roc", case.options.roc), ("-experimental", case.options.experimental)) if on]
            out = subprocess.run([perl, "-quiet-warnings", *flags, str(src)], capture_output=True, text=True).stdout
            result.add(out, case.checks)
    result.ms = (time.perf_counter() - start) * 1000 / len(cases)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=CORPUS)
    parser.add_argument("--hipify-perl", help="path to hipify-perl (default: look on PATH and /opt/rocm/bin)")
    parser.add_argument("--show-misses", action="store_true")
    args = parser.parse_args(argv)
    cases = load_corpus(args.corpus)
    built, misses = run_builtin(cases)
    print(f"corpus: {len(cases)} files, {built.total} CHECK lines")
    print(built.line("builtin"))
    if args.show_misses:
        for m in misses:
            print(f"  miss {m}")
    perl = args.hipify_perl or SubprocessRunner().which("hipify-perl")
    if perl:
        theirs = run_perl(cases, perl)
        print(theirs.line("hipify-perl"))
        print(f"ratio: builtin/hipify-perl accuracy {built.strict / max(theirs.strict, 1):.3f}x strict, "
              f"{built.folder / max(theirs.folder, 1):.3f}x folder headers as flat; speed {theirs.ms / built.ms:.0f}x")
    else:
        print("hipify-perl: not installed (pass --hipify-perl PATH to compare)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
