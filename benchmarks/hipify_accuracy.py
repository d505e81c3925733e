"""Accuracy of the built-in CUDA->HIP translator on hipwizard's corpus (and hipify-perl's, when present).

Each corpus file holds ``// CHECK: <line>`` comments (HIPIFY's unit-test convention) naming the lines the
translation must contain, in order. The CHECK comments are removed, the rest is translated, and a CHECK
counts as passed when a line of the output equals it (whitespace-normalised) after the previous match.
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
from hipwizard.runner import SubprocessRunner  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "port" / "corpus"
CHECK = re.compile(r"^\s*//\s*CHECK:\s*(.*?)\s*$")
OPTIONS = re.compile(r"^\s*//\s*OPTIONS:(.*)$")


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
    for path in sorted(folder.iterdir()):
        if path.suffix not in (".cu", ".cpp", ".cuh"):
            continue
        checks, kept, flags = [], [], ""
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
            m = CHECK.match(line)
            o = OPTIONS.match(line)
            if m:
                checks.append(_norm(m.group(1)))
            elif o:
                flags = o.group(1)
            else:
                kept.append(line)
        opts = TranslateOptions(hip_kernel_execution_syntax="--hip-kernel-execution-syntax" in flags,
                                roc="--roc" in flags, experimental="--experimental" in flags)
        cases.append(CorpusCase(path.name, "".join(kept), checks, opts))
    return cases


def score(output: str, checks: list[str]) -> list[bool]:
    """For each CHECK, whether it matched a later output line than the previous matched CHECK."""
    lines = [_norm(x) for x in output.splitlines()]
    pos, out = 0, []
    for want in checks:
        try:
            idx = lines.index(want, pos)
            out.append(True)
            pos = idx + 1
        except ValueError:
            out.append(False)
    return out


def run_builtin(cases: list[CorpusCase], repeat: int = 20) -> tuple[int, int, float, list[str]]:
    passed = total = 0
    misses: list[str] = []
    start = time.perf_counter()
    for _ in range(repeat):
        results = [(c, BuiltinTranslator(c.options).translate(c.source).text) for c in cases]
    ms = (time.perf_counter() - start) * 1000 / (repeat * len(cases))
    for case, text in results:
        ok = score(text, case.checks)
        passed += sum(ok)
        total += len(ok)
        misses += [f"{case.name}: {want}" for want, hit in zip(case.checks, ok) if not hit]
    return passed, total, ms, misses


def run_perl(cases: list[CorpusCase], perl: str) -> tuple[int, int, float]:
    passed = total = 0
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            src = Path(tmp) / case.name
            src.write_text(case.source, encoding="utf-8")
            flags = [f for f, on in (("-hip-kernel-execution-syntax", case.options.hip_kernel_execution_syntax),
                                     ("-roc", case.options.roc), ("-experimental", case.options.experimental)) if on]
            out = subprocess.run([perl, "-quiet-warnings", *flags, str(src)], capture_output=True, text=True).stdout
            ok = score(out, case.checks)
            passed += sum(ok)
            total += len(ok)
    return passed, total, (time.perf_counter() - start) * 1000 / len(cases)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=CORPUS)
    parser.add_argument("--hipify-perl", help="path to hipify-perl (default: look on PATH and /opt/rocm/bin)")
    parser.add_argument("--show-misses", action="store_true")
    args = parser.parse_args(argv)
    cases = load_corpus(args.corpus)
    p, t, ms, misses = run_builtin(cases)
    print(f"corpus: {len(cases)} files, {t} CHECK lines")
    print(f"builtin      accuracy {100 * p / t:6.2f}% ({p}/{t})  {ms:8.2f} ms/file")
    if args.show_misses:
        for m in misses:
            print(f"  miss {m}")
    perl = args.hipify_perl or SubprocessRunner().which("hipify-perl")
    if perl:
        pp, pt, pms = run_perl(cases, perl)
        print(f"hipify-perl  accuracy {100 * pp / pt:6.2f}% ({pp}/{pt})  {pms:8.2f} ms/file")
        print(f"ratio: builtin/hipify-perl accuracy {p / max(pp, 1):.2f}x, speed {pms / ms:.0f}x")
    else:
        print("hipify-perl: not installed (pass --hipify-perl PATH to compare)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
