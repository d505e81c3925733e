"""Translation speed: files per second of the built-in backend on a generated tree of CUDA files,
and of hipify-perl in the same run when it is installed (or given with ``--hipify-perl PATH``); then one
big file end to end.

The tree is made from the demo project's files with the kernel names varied, ``--files`` of them (default 600).
hipify-perl runs the way hipwizard runs it (batches of 64 files, ``-inplace -quiet-warnings`` on copies).
The big file (``--big-mb``, default 7.6; 0 skips it) is the demo project's and the test corpus's files
concatenated with varied names, under the 8 MiB cap: timed through ``port_tree`` (scan, translate, hunks from
the edit log, risk rules), and the same pair through ``split_hunks`` (the line diff an external tool's
output goes through). Then (``--hipify-out-mb``, default 7.4; 0 skips it) a file of that size the same way made,
through the real command a user runs, ``hipwizard hipify SRC --out DIR`` in a fresh process: start-up, scan,
translation, hunks, risks, the review state built and saved (issue 27: > 120 s before, target < 25 s).

Usage: ``python benchmarks/translate.py [--files N] [--hipify-perl PATH] [--big-mb MB] [--hipify-out-mb MB]``
(``--files 0`` skips the tree and its peer ratio)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hipwizard.port.demo import DEMO_PROJECT  # noqa: E402
from hipwizard.port.translation.backends import BuiltinBackend, HipifyPerlBackend  # noqa: E402
from hipwizard.port.translation.engine import port_tree  # noqa: E402
from hipwizard.port.translation.hunks import split_hunks  # noqa: E402
from hipwizard.port.translation.scan import scan_tree  # noqa: E402
from hipwizard.runner import SubprocessRunner  # noqa: E402


def make_tree(root: Path, n: int) -> None:
    seeds = sorted(p for p in DEMO_PROJECT.rglob("*") if p.suffix in (".cu", ".cuh"))
    for i in range(n):
        seed = seeds[i % len(seeds)]
        text = seed.read_text().replace("_kernel", f"_kernel_{i}")
        dest = root / f"mod{i // 50:02d}" / f"{seed.stem}_{i}{seed.suffix}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)
    (root / "include").mkdir(exist_ok=True)
    (root / "include" / "common.cuh").write_text((DEMO_PROJECT / "include" / "common.cuh").read_text())


CORPUS = ROOT / "tests" / "fixtures" / "port" / "corpus"


def make_big_file(path: Path, mb: float) -> None:
    seeds = sorted(p for p in DEMO_PROJECT.rglob("*") if p.suffix in (".cu", ".cuh"))
    seeds += sorted(p for p in CORPUS.iterdir() if p.suffix in (".cu", ".cpp"))
    texts = [p.read_text() for p in seeds]
    parts, size, i = [], 0, 0
    while size < mb * 1e6:
        part = texts[i % len(texts)].replace("_kernel", f"_kernel_{i}")
        parts.append(part)
        size += len(part)
        i += 1
    path.write_text("".join(parts))


def big_file(mb: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_big_file(root / "big.cu", mb)
        size = (root / "big.cu").stat().st_size
        t0 = time.perf_counter()
        report = port_tree(root, backend="builtin")
        full_s = time.perf_counter() - t0
        (ft,) = report.files
        print(f"big file: {size / 1e6:.1f} MB, {ft.original.count(chr(10))} lines: full engine {full_s:.1f} s "
              f"({len(ft.hunks)} hunks, {sum(len(h.flags) for h in ft.hunks) + len(ft.untouched_flags)} flags)")
        t0 = time.perf_counter()
        diffed = split_hunks(ft.path, ft.original, ft.translated)
        diff_s = time.perf_counter() - t0
        same = [h.hunk_id for h in diffed] == [h.hunk_id for h in ft.hunks]
        print(f"big file: hunks by line diff (the external-tool path) {diff_s:.1f} s, "
              f"{'same hunks as the edit log' if same else 'hunks DIFFER from the edit log'}")


def hipify_out(mb: float) -> float:
    """``hipwizard hipify SRC --out DIR`` on one generated file of ``mb`` MB, in a fresh process; its seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "src").mkdir()
        make_big_file(root / "src" / "big.cu", mb)
        size = (root / "src" / "big.cu").stat().st_size
        argv = [sys.executable, "-m", "hipwizard", "hipify", str(root / "src"), "--out", str(root / "out"),
                "--backend", "builtin", "--workspace", str(root), "--json"]
        t0 = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=ROOT)
        seconds = time.perf_counter() - t0
        if done.returncode != 0:
            print(f"hipify --out: exit {done.returncode}: {done.stderr.strip()[-500:]}")
            return seconds
        summary = json.loads(done.stdout)
        state = root / "out.review.json"
        print(f"hipify --out (fresh process, review state included): {size / 1e6:.1f} MB, {summary['hunks']} hunks, "
              f"{summary['flagged_hunks']} flagged: {seconds:.1f} s (state file {state.stat().st_size / 1e6:.1f} MB)")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=600)
    parser.add_argument("--hipify-perl", help="path to hipify-perl (default: PATH and /opt/rocm/bin)")
    parser.add_argument("--big-mb", type=float, default=7.6, help="size of the big file in MB (0: skip it)")
    parser.add_argument("--hipify-out-mb", type=float, default=7.4,
                        help="size of the file timed through `hipwizard hipify --out` in MB (0: skip it)")
    args = parser.parse_args(argv)
    if args.files > 0:
        tree(args)
    if args.big_mb > 0:
        big_file(args.big_mb)
    if args.hipify_out_mb > 0:
        hipify_out(args.hipify_out_mb)
    return 0


def tree(args) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_tree(root, args.files)
        files = scan_tree(root).files
        lines = sum(f.text.count("\n") for f in files)
        print(f"tree: {len(files)} files, {lines} lines")

        t0 = time.perf_counter()
        BuiltinBackend().translate(files)
        builtin_s = time.perf_counter() - t0
        print(f"builtin translate only:        {len(files) / builtin_s:8.1f} files/s ({1000 * builtin_s / len(files):.2f} ms/file)")

        t0 = time.perf_counter()
        report = port_tree(root, backend="builtin")
        full_s = time.perf_counter() - t0
        print(f"builtin full engine (scan+translate+hunks+risks): {len(report.files) / full_s:8.1f} files/s, "
              f"{sum(len(f.hunks) for f in report.files)} hunks")

        perl = args.hipify_perl or SubprocessRunner().which("hipify-perl")
        if perl:
            t0 = time.perf_counter()
            HipifyPerlBackend(runner=SubprocessRunner(), executable=perl).translate(files)
            perl_s = time.perf_counter() - t0
            print(f"hipify-perl (batches, quiet): {len(files) / perl_s:8.1f} files/s ({1000 * perl_s / len(files):.2f} ms/file)")
            print(f"ratio: builtin translate {perl_s / builtin_s:.0f}x, full engine {perl_s / full_s:.0f}x hipify-perl's files/s")
        else:
            print("hipify-perl: not installed (pass --hipify-perl PATH to compare)")


if __name__ == "__main__":
    raise SystemExit(main())
