"""Issue 31's proof: the dual-target mode (one source for NVIDIA and AMD) on llm.c and HeCBench's held-out split.

Everything goes through the port's services (``port.translate(..., mode="dual", accept="all")``: the translation,
the dual-target review files, the write with the compat header and the patch, and the check of both builds:
nvcc -c for NVIDIA, Debian's hipcc ``HIP_PLATFORM=amd --offload-arch=gfx90a -DUSE_ROCM`` for AMD).

llm.c (``--llmc-fork DIR`` the fork point of the humans' AMD port, ``--llmc-amd DIR`` that port): its
train_gpt2.cu, llmc/ and Makefile ported in dual mode; reported: the patch's size (+/-) against the humans' diff on
the same files (and on their whole port), both builds of train_gpt2.cu (nvcc against the untouched original), and
where the guarded branches sit against the humans' ``#ifdef BUILD_AMD`` / ``#ifndef BUILD_AMD`` lines (each human
guard mapped to the fork's line by a line diff; a branch of ours within ``NEAR`` lines in the same file meets it).

HeCBench (``--hecbench DIR``): every held-out ``-cuda`` benchmark (``realworld_metrics.held_out``; ``--limit N``
the first N) ported twice from a copy of its folder: fork mode (``accept all``, hipcc check) and dual mode.
For each benchmark whose fork-mode port compiles (every GPU unit ``ok``): do both builds of the dual tree compile
with no hand edit (nvcc ``ok``, or failing with exactly the original's errors: ``same``; hipcc ``ok``)? Does
``make -n`` pick nvcc, and ``make -n USE_ROCM=1`` hipcc? Does the compat header hold only names the benchmark's
sources use (every ``#define`` name a token of its sources)? ``--export-gpu DIR`` writes, for the first
``--gpu-count`` benchmarks whose dual NVIDIA build compiled and that have a ``run`` target, the original and the
dual tree plus ``run_gpu.sh`` (build both with ``make ARCH=sm_90``, run ``make run`` on each, compare outputs
with timing lines left out) for the device run.

``--cpath DIR`` adds a folder of CUDA library headers to nvcc's search (``CPATH``; this machine's CUDA 13 lacks
cuBLAS's headers, torch's wheel has them). Usage: ``python benchmarks/dual_target.py --llmc-fork P --llmc-amd P
--hecbench P [--limit N] [--cpath DIR] [--export-gpu DIR] [--json FILE]``
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from port_projects import BUILD_FILE  # noqa: E402
from realworld_metrics import SOURCE_SUFFIXES, held_out  # noqa: E402

from hipwizard import port  # noqa: E402
from hipwizard.errors import UserError  # noqa: E402

NEAR = 5
ARCH = "gfx90a"
HUMAN_GUARD = re.compile(r"^\s*#\s*(?:ifdef|ifndef)\s+BUILD_AMD\b|^\s*#\s*if\s+.*\bBUILD_AMD\b")
DEFINE = re.compile(r"^#define (\w+)", re.M)
TOKEN = re.compile(r"[A-Za-z_]\w*")
TIMING = re.compile(r"time|elapsed|\bms\b|\bus\b|sec|throughput|GB/s|GFLOP|bandwidth|perf", re.I)


def git_commit(path: Path) -> str:
    r = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or "unknown (not a checkout)"


def patch_size(text: str) -> tuple[int, int]:
    plus = sum(1 for x in text.splitlines() if x.startswith("+") and not x.startswith("+++"))
    minus = sum(1 for x in text.splitlines() if x.startswith("-") and not x.startswith("---"))
    return plus, minus


def tree_diff_size(a: Path, b: Path, rels: list[str]) -> tuple[int, int]:
    plus = minus = 0
    for rel in rels:
        x = (a / rel).read_text(errors="replace").splitlines() if (a / rel).is_file() else []
        y = (b / rel).read_text(errors="replace").splitlines() if (b / rel).is_file() else []
        for line in difflib.unified_diff(x, y, lineterm="", n=0):
            if line.startswith("+") and not line.startswith("+++"):
                plus += 1
            elif line.startswith("-") and not line.startswith("---"):
                minus += 1
    return plus, minus


def files_under(root: Path, rels: list[str]) -> list[str]:
    out = []
    for rel in rels:
        p = root / rel
        if p.is_file():
            out.append(rel)
        elif p.is_dir():
            out += [q.relative_to(root).as_posix() for q in p.rglob("*") if q.is_file()]
    return sorted(out)


def dual_port(src: Path, out: Path, *, check: bool = True):
    return port.translate(None, src, out, mode="dual", accept="all", check=check, arch=ARCH)


LINE_VALUE = re.compile(r'"([^"]*\.(?:cuh|h|hpp|cu|cpp))", [0-9]+')


def nvcc_same_tokens(src: Path, out: Path, unit: str) -> str:
    """Whether nvcc's preprocessed ``unit`` (line markers and blank lines dropped, ``__LINE__`` values in
    file/line pairs masked: the branches move lines) is the same in the dual tree as in the original."""
    texts = []
    for tree in (src, out):
        r = subprocess.run(["nvcc", "-E", "-x", "cu", unit, "-I."], cwd=tree, capture_output=True, text=True,
                           timeout=600)
        if r.returncode != 0:
            return "nvcc -E failed: " + (r.stderr.strip().splitlines() or ["?"])[-1][:120]
        lines = [LINE_VALUE.sub(r'"\1", N', x) for x in r.stdout.splitlines() if x.strip() and not x.startswith("#")]
        texts.append(lines)
    if texts[0] == texts[1]:
        return f"identical ({len(texts[0])} lines)"
    return f"{sum(a != b for a, b in zip(*texts, strict=False))} line(s) differ"


def human_guards(fork: Path, amd: Path, rels: list[str]) -> list[tuple[str, int, str]]:
    """(file, line in the fork's file, the guard line) for each BUILD_AMD guard in the humans' port."""
    found = []
    for rel in rels:
        if not (amd / rel).is_file():
            continue
        b = (amd / rel).read_text(errors="replace").splitlines()
        a = (fork / rel).read_text(errors="replace").splitlines() if (fork / rel).is_file() else []
        to_a: dict[int, int] = {}
        for i, j, n in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks():
            for k in range(n):
                to_a[j + k] = i + k
        for j, line in enumerate(b):
            if HUMAN_GUARD.match(line):
                near = [to_a[k] for k in range(j, len(b)) if k in to_a][:1] or [len(a)]
                found.append((rel, near[0] + 1, line.strip()))
    return found


def measure_llmc(fork: Path, amd: Path, work: Path) -> dict:
    rels = ["train_gpt2.cu", "llmc", "Makefile"]
    src = work / "llmc-src"
    src.mkdir(parents=True)
    for rel in rels:
        if (fork / rel).is_dir():
            shutil.copytree(fork / rel, src / rel)
        else:
            shutil.copyfile(fork / rel, src / rel)
    t = time.time()
    done = dual_port(src, work / "llmc-out")
    took = time.time() - t
    written = done.written
    patch = written.dual.patch.read_text(errors="replace")
    ours_plus, ours_minus = patch_size(patch)
    subset = sorted(set(files_under(fork, rels)) | set(files_under(amd, rels)))
    human_subset = tree_diff_size(fork, amd, subset)
    everything = sorted(set(files_under(fork, ["."])) | set(files_under(amd, ["."])))
    human_all = tree_diff_size(fork, amd, [r for r in everything if not r.startswith(".git/")])
    ours = [(h.file, h.old_start, "".join(h.new_lines[:1]).strip()) for h in done.review.hunks
            if not h.file.endswith("Makefile")]
    guards = human_guards(fork, amd, subset)
    met = [(g, min((abs(o[1] - g[1]) for o in ours if o[0] == g[0]), default=None)) for g in guards]
    same = nvcc_same_tokens(src, work / "llmc-out", "train_gpt2.cu")
    checks = {c.path: {"nvidia": c.nvidia.status, "nvidia_note": c.nvidia.note, "amd": c.amd.status,
                       "amd_note": c.amd.note} for c in written.dual.checks}
    return {
        "commit_fork": git_commit(fork), "commit_amd": git_commit(amd), "seconds": round(took, 1),
        "dual": dict(done.dual or {}), "patch": {"plus": ours_plus, "minus": ours_minus, "files": patch.count("diff --git")},
        "human_same_files": {"plus": human_subset[0], "minus": human_subset[1]},
        "human_whole_port": {"plus": human_all[0], "minus": human_all[1]},
        "checks": checks, "nvcc_preprocessed_train_gpt2": same,
        "human_guards": [{"file": g[0], "fork_line": g[1], "line": g[2], "nearest_branch": d,
                          "met": d is not None and d <= NEAR} for g, d in met],
        "our_branches": [{"file": f, "line": n, "first": first} for f, n, first in ours],
    }


def copy_bench(src: Path, dest: Path) -> None:
    for p in src.rglob("*"):
        if p.is_file() and (p.suffix in SOURCE_SUFFIXES or BUILD_FILE.search(p.name)):
            target = dest / p.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, target)


def make_dry(folder: Path, rocm: bool) -> str:
    """Which compiler ``make -n`` runs (``nvcc``, ``hipcc``, ``none``), or ``error``."""
    argv = ["make", "-n", "-C", str(folder)] + (["USE_ROCM=1"] if rocm else [])
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return "error"
    text = r.stdout
    return "hipcc" if "hipcc" in text else "nvcc" if "nvcc" in text else "none"


def header_extra(header: str, src: Path) -> list[str]:
    """``#define`` names of the compat header that no source of the benchmark holds as a token."""
    tokens: set[str] = set()
    for p in src.rglob("*"):
        if p.is_file() and p.suffix in SOURCE_SUFFIXES:
            tokens.update(TOKEN.findall(p.read_text(errors="replace")))
    return [n for n in DEFINE.findall(header) if n not in tokens]


def measure_bench(name: str, hecb: Path, work: Path) -> dict:
    src = work / name / "src"
    copy_bench(hecb / f"{name}-cuda", src)
    row: dict = {"name": name}
    try:
        fork = port.translate(None, src, work / name / "fork", accept="all", check=True, arch=ARCH)
        written = fork.written.files if fork.written is not None else []
        statuses = [f.check for f in written if f.check and f.check != "skipped"]
        row["fork"] = "ok" if statuses and all(s == "ok" for s in statuses) else \
            "none" if not statuses else "failed"
        t = time.time()
        dual = dual_port(src, work / name / "dual")
        row["seconds"] = round(time.time() - t, 1)
    except UserError as exc:
        row["error"] = str(exc)
        return row
    except Exception as exc:  # a crash is a finding: named in the row, the run goes on
        row["error"] = f"CRASH {type(exc).__name__}: {exc}"
        return row
    # units neither side compiles on their own (#included by another, CPU-only) are not counted
    checks = [c for c in dual.written.dual.checks if not (c.nvidia.status == c.amd.status == "skipped")]
    row["nvidia"] = "ok" if checks and all(c.nvidia.status == "ok" for c in checks) else \
        "same" if checks and all(c.nvidia.status in ("ok", "skipped") for c in checks) else "broken"
    row["amd"] = "ok" if checks and all(c.amd.status == "ok" for c in checks) else \
        "missing-header" if checks and all(c.amd.status in ("ok", "missing-header") for c in checks) else "failed"
    row["errors"] = [f"{c.path} [{side}]: {(fc.errors[0].message if fc.errors else fc.note)[:160]}"
                     for c in checks for side, fc in (("nvcc", c.nvidia), ("hipcc", c.amd))
                     if fc.status in ("failed", "error")][:4]
    row["dual"] = dict(dual.dual or {})
    header = (work / name / "dual" / "hipwizard_compat.h").read_text(errors="replace")
    row["header_names"] = len(DEFINE.findall(header))
    row["header_extra"] = header_extra(header, src)
    if (work / name / "dual" / "Makefile").is_file():
        row["make_nvidia"] = make_dry(work / name / "dual", False)
        row["make_amd"] = make_dry(work / name / "dual", True)
    row["patch"] = dict(zip(("plus", "minus"), patch_size(dual.written.dual.patch.read_text(errors="replace")), strict=True))
    return row


GPU_SCRIPT = r"""#!/bin/bash
# Build each benchmark's original and dual-target tree with nvcc (make ARCH=sm_90, all builds in parallel), then
# run both (make run) one after another and compare their outputs with timing lines left out.
cd "$(dirname "$0")"
for b in */; do b=${b%/}; [ -d "$b/original" ] || continue
  for side in original dual; do ( cd "$b/$side" && make -s ARCH=sm_90 >build.log 2>&1; echo "build rc=$?" >>build.log ) & done
done; wait
for b in */; do b=${b%/}; [ -d "$b/original" ] || continue
  for side in original dual; do
    ( cd "$b/$side" && timeout 60 make -s ARCH=sm_90 run >run.log 2>&1; echo "rc=$?" >>run.log )
  done
  grep -v -i -E '__TIMING__' "$b/original/run.log" > "$b/a.txt"; grep -v -i -E '__TIMING__' "$b/dual/run.log" > "$b/b.txt"
  echo "== $b: $(tail -1 $b/original/build.log) / $(tail -1 $b/dual/build.log); original $(wc -l <$b/a.txt) lines, $(tail -1 $b/original/run.log)"
  if cmp -s "$b/a.txt" "$b/b.txt"; then echo "SAME $b"; else echo "DIFFERENT $b"; diff "$b/a.txt" "$b/b.txt" | head -5; fi
  grep -i -E "pass|fail|error|ok" "$b/original/run.log" | head -2
done
"""


def export_gpu(rows: list[dict], hecb: Path, work: Path, dest: Path, count: int) -> list[str]:
    chosen: list[str] = []
    for row in rows:
        if len(chosen) >= count or row.get("nvidia") != "ok":
            continue
        make = work / row["name"] / "src" / "Makefile"
        if not make.is_file() or not re.search(r"^run\s*:", make.read_text(errors="replace"), re.M):
            continue
        chosen.append(row["name"])
        for side, tree in (("original", work / row["name"] / "src"), ("dual", work / row["name"] / "dual")):
            target = dest / row["name"] / side
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(tree, target)
            for extra in (hecb / f"{row['name']}-cuda").rglob("*"):  # data files the run reads
                rel = extra.relative_to(hecb / f"{row['name']}-cuda")
                if extra.is_file() and not (target / rel).exists() and extra.stat().st_size < 2 << 20:
                    (target / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(extra, target / rel)
    (dest / "run_gpu.sh").write_text(GPU_SCRIPT.replace("__TIMING__", TIMING.pattern))
    return chosen


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llmc-fork", type=Path)
    ap.add_argument("--llmc-amd", type=Path)
    ap.add_argument("--hecbench", type=Path)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--start", type=int, default=0, help="skip the first N held-out benchmarks (resume a run)")
    ap.add_argument("--cpath", help="extra CUDA library headers for nvcc (CPATH)")
    ap.add_argument("--export-gpu", type=Path)
    ap.add_argument("--gpu-count", type=int, default=6)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.cpath:
        os.environ["CPATH"] = args.cpath + (os.pathsep + os.environ["CPATH"] if os.environ.get("CPATH") else "")
    result: dict = {}
    with tempfile.TemporaryDirectory(prefix="dual-target-") as tmp:
        work = Path(tmp)
        if args.llmc_fork and args.llmc_amd:
            r = result["llm.c"] = measure_llmc(args.llmc_fork, args.llmc_amd, work)
            print(f"llm.c (fork point {r['commit_fork'][:10]}, AMD port {r['commit_amd'][:10]}) in {r['seconds']} s: "
                  f"patch +{r['patch']['plus']}/-{r['patch']['minus']} in {r['patch']['files']} files; the humans "
                  f"+{r['human_same_files']['plus']}/-{r['human_same_files']['minus']} on the same files, "
                  f"+{r['human_whole_port']['plus']}/-{r['human_whole_port']['minus']} in all")
            print(f"  dual: {r['dual']}")
            for path, c in r["checks"].items():
                print(f"  {path}: NVIDIA {c['nvidia']} ({c['nvidia_note'][:110]}); AMD {c['amd']} ({c['amd_note'][:90]})")
            print(f"  train_gpt2.cu as nvcc sees it (nvcc -E, __LINE__ values masked) vs the original: "
                  f"{r['nvcc_preprocessed_train_gpt2']}")
            met = sum(g["met"] for g in r["human_guards"])
            print(f"  humans' BUILD_AMD guards met by a branch within {NEAR} lines: {met}/{len(r['human_guards'])}")
            for g in r["human_guards"]:
                print(f"    {'✔' if g['met'] else '✗'} {g['file']}:{g['fork_line']} {g['line']} "
                      f"(nearest branch {g['nearest_branch']} lines away)")
            print("  our branches (file:line of the original): " +
                  ", ".join(f"{b['file']}:{b['line']}" for b in r["our_branches"]))
        if args.hecbench:
            src = args.hecbench / "src" if (args.hecbench / "src").is_dir() else args.hecbench
            names = sorted(p.name[:-5] for p in src.glob("*-cuda") if (src / f"{p.name[:-5]}-hip").is_dir())
            chosen = sorted(held_out(names))[args.start:][:args.limit]
            print(f"HeCBench {git_commit(args.hecbench)[:10]}: held-out split, {len(chosen)} benchmarks")
            rows = []
            for name in chosen:
                row = measure_bench(name, src, work)
                rows.append(row)
                print(f"  {name:<24} fork {row.get('fork', '-'):<6} dual: nvcc {row.get('nvidia', '-'):<6} "
                      f"hipcc {row.get('amd', '-'):<14} make {row.get('make_nvidia', '-')}/{row.get('make_amd', '-')} "
                      f"header {row.get('header_names', '-')} names, {len(row.get('header_extra', []))} unused; "
                      f"branches {row.get('dual', {}).get('branches_by_kind', {})} {row.get('error', '')}", flush=True)
                for e in row.get("errors", []):
                    print(f"      {e}")
            fork_ok = [r for r in rows if r.get("fork") == "ok"]
            both = [r for r in fork_ok if r.get("nvidia") in ("ok", "same") and r.get("amd") == "ok"]
            broken = [r["name"] for r in rows if r.get("nvidia") == "broken"]
            extra = [r["name"] for r in rows if r.get("header_extra")]
            makes = [r for r in rows if "make_nvidia" in r]
            make_ok = [r for r in makes if r["make_nvidia"] in ("nvcc", "none") and r["make_amd"] == "hipcc"]
            summary = {"benchmarks": len(rows), "fork_compiles": len(fork_ok), "dual_both_compile": len(both),
                       "dual_both_compile_names": [r["name"] for r in both],
                       "fork_ok_dual_not": [r["name"] for r in fork_ok if r not in both],
                       "nvidia_broken": broken, "header_unused_names": extra,
                       "makefiles": len(makes), "make_picks_both": len(make_ok),
                       "nvidia_ok_all": sum(r.get("nvidia") == "ok" for r in rows),
                       "amd_ok_all": sum(r.get("amd") == "ok" for r in rows)}
            print(f"  fork-mode port compiles: {len(fork_ok)}/{len(rows)}; of those, dual-target compiles both ways "
                  f"with no hand edit: {len(both)}/{len(fork_ok)}; NVIDIA build broken: {len(broken)} {broken}; "
                  f"compat headers with a name the benchmark does not use: {len(extra)}; Makefiles picking nvcc / "
                  f"hipcc by USE_ROCM: {len(make_ok)}/{len(makes)}")
            print(f"  fork ok but dual not: {summary['fork_ok_dual_not']}")
            result["hecbench"] = {"commit": git_commit(args.hecbench), "rows": rows, "summary": summary}
            if args.export_gpu:
                args.export_gpu.mkdir(parents=True, exist_ok=True)
                result["gpu_export"] = export_gpu(rows, src, work, args.export_gpu, args.gpu_count)
                print(f"  exported for the device run: {result['gpu_export']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
