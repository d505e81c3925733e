"""Issue 29's proof: step 2 on whole projects (sources, build files, Python), judged by hipcc and human ports.

Per project, in one run: ``hipwizard hipify SRC --out OUT --accept-all --no-check --json`` (the real CLI, as a user
runs it; the written tree is self-contained: untouched files are copied), then ``hipwizard check OUT --json --arch
gfx90a`` (``--build``: ``check --build``), the product's own check, and
- files translated (CUDA sources, Python files, build files with a hunk out of those in the tree),
- GPU translation units as the check counts them (CPU-only units, another platform's, units #included by another
  file and units the project's build does not compile are skipped with the reason) that compile with Debian's
  hipcc (``HIP_PLATFORM=amd``), each with the flags the written tree's build gives it (``make -Bn``, a CMake
  export, else the build file's ``-I/-D/-std``),
- every hipcc error, classified: *missing ROCm library* (a ROCm library header Debian's HIP 5.2 lacks), *missing
  third-party library* (torch's, pybind11), *not in the written tree* (a project header only the source tree
  has), *predicted* (within 2 lines of a hipwizard flag or an unsupported / too-new / opt-in diagnostic in that
  file), else **unpredicted** (goal 0), with examples,
- where a human HIP port exists (``--human NAME=PATH``, same relative paths): hipwizard's flags in the ported files
  per substantive human edit (``realworld_metrics.human_edits``) and the share of edits with a flag within 3 lines.

HeCBench (``--hecbench DIR``): the fixed held-out split of ``realworld_metrics.held_out`` (every 5th paired benchmark
by sorted name), its ``-cuda`` folders copied (sources, build files and Python files, no data) into one tree and ported in one run,
the ``-hip`` folders as the human port. Corpora are never vendored: pass checkouts (``fetch github:owner/name`` then
``git clone``); each commit is printed (``git -C PATH rev-parse HEAD``).

Usage: ``python benchmarks/port_projects.py --project llm.c=PATH [--human llm.c=PATH] [--hecbench DIR]
[--hecbench-limit N] [--hipcc /usr/bin/hipcc] [--arch gfx90a] [--jobs N] [--build] [--examples N] [--json FILE]``
"""

from __future__ import annotations

import argparse
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

from realworld_metrics import SOURCE_SUFFIXES, held_out, human_edits  # noqa: E402

from hipwizard.port.translation.tables import load_tables  # noqa: E402

UNIT_SUFFIXES = (".cu", ".hip", ".cpp", ".cc", ".cxx")
BUILD_FILE = re.compile(r"(?:^|/)(?:[Mm]akefile[^/]*|GNUmakefile|CMakeLists\.txt|[^/]+\.cmake|[^/]+\.mk|setup\.py|"
                        r"pyproject\.toml|(?:build|install|compile)[^/]*\.sh)$")
ERROR = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):\d+: (?:fatal )?error: (?P<msg>.*)$")
NOT_FOUND = re.compile(r"'(?P<header>[^']+)' file not found")
ROCM_LIBRARY = re.compile(r"^(?:hip(?:blas|blaslt|cub|rand|fft|sparse|solver|tensor)\w*|roc\w+|rccl|miopen|thrust|"
                          r"amd_smi|rocwmma|ck)/|^(?:hipblas|hipblaslt|hipcub|hiprand|rocrand|hipfft|hipsparse|"
                          r"hipsolver|rocblas|rccl|roctx|roctracer\w*|rocprim|miopen)\w*\.h|^hip/hip_(?:bf16|fp8)\.h$")
CUDA_HEADER = re.compile(r"^(?:cuda\w*|cu[a-z]+\w*|nv\w*|crt|cub|cooperative_groups|device_\w+|sm_\d+\w*|vector_\w+|"
                         r"mma|library_types|driver_types|math_constants|texture_\w+|surface_\w+)(?:[/.]|$)")
HIP_VERSION: list[str] = []  # --hip-version: the ROCm the APIs are checked against (default: hipwizard's choice)
SLACK = 2  # an error this near a flagged line counts as predicted
NEAR = 3  # a flag this near a human edit counts as seeing it


def commit_of(path: Path) -> str:
    rev = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    return rev.stdout.strip() if rev.returncode == 0 else "unknown (not a git checkout)"


def hipify(src: Path, out: Path, work: Path) -> tuple[dict, dict, float]:
    """(the CLI's JSON summary, the review file, seconds) of one ``hipwizard hipify`` run."""
    ws = work / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "hipwizard", "hipify", str(src), "--out", str(out), "--accept-all", "--no-check",
            "--json", "--workspace", str(ws)] + (["--hip-version", HIP_VERSION[0]] if HIP_VERSION else [])
    start = time.perf_counter()
    run = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=ROOT)
    took = time.perf_counter() - start
    if not run.stdout.strip().startswith("{"):
        raise SystemExit(f"hipify failed on {src} (exit {run.returncode}): {run.stderr.strip()[-400:]}")
    summary = json.loads(run.stdout)
    review = json.loads(Path(summary["review"]).read_text(encoding="utf-8"))
    return summary, review, took


def check(out: Path, args) -> tuple[dict, float]:
    """``hipwizard check OUT --json`` (the product's own check: GPU units only, each with the flags the written
    tree's build gives it): its JSON and seconds."""
    argv = [sys.executable, "-m", "hipwizard", "check", str(out), "--json", "--arch", args.arch, "--jobs", str(args.jobs)]
    if args.build:
        argv.append("--build")
    start = time.perf_counter()
    run = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=ROOT,
                         env=dict(os.environ, PATH=f"{Path(args.hipcc).parent}{os.pathsep}{os.environ.get('PATH', '')}"))
    if not run.stdout.strip().startswith("{"):
        raise SystemExit(f"check failed on {out} (exit {run.returncode}): {run.stderr.strip()[-400:]}")
    return json.loads(run.stdout), time.perf_counter() - start


_FOLDED = re.compile(r"\(also lines? ([\d, ]+)(?: and \d+ more)? in this file\)")


def _folded(flag: dict) -> list[int]:
    """The other lines of its file a flag stands for (the review's budget folds a kind's places into its first
    shown flag: "... (also lines 120, 340 in this file)"); translated line numbers, like the flag's own."""
    m = _FOLDED.search(flag.get("reason", ""))
    return [int(x) for x in m.group(1).replace(" ", "").split(",") if x] if m else []


def flagged_lines(review: dict) -> dict[str, dict[int, list[str]]]:
    """{file: {translated line: [what hipwizard said there]}}: hunk flags, untouched risks and diagnostics."""
    out: dict[str, dict[int, list[str]]] = {}

    def put(path: str, line: int | None, what: str) -> None:
        if line:
            out.setdefault(path, {}).setdefault(int(line), []).append(what)

    for h in review.get("hunks", []):
        for f in h.get("flags", []):
            put(h["file"], f.get("line"), f["rule_id"])
            for n in _folded(f):
                put(h["file"], n, f["rule_id"])
    for path, risks in review.get("untouched", {}).items():
        for r in risks:
            put(path, r.get("line"), r["rule_id"])
            for n in _folded(r):
                put(path, n, r["rule_id"])
    for path, diags in review.get("diagnostics", {}).items():
        for d in diags:
            if d.get("kind") in ("unsupported", "too_new", "opt_in", "removed", "deprecated"):
                put(path, d.get("line"), f"{d['kind']}:{d['name']}")
    return out


def original_flag_lines(review: dict) -> dict[str, list[int]]:
    """{file: CUDA lines hipwizard flagged} (a hunk's flag placed back on its old side; an untouched risk's old_line)."""
    out: dict[str, list[int]] = {}
    for h in review.get("hunks", []):
        for f in h.get("flags", []):
            if f.get("line"):
                out.setdefault(h["file"], []).append(f["line"] - h["new_start"] + h["old_start"])
    for path, risks in review.get("untouched", {}).items():
        out.setdefault(path, []).extend(r.get("old_line") or r.get("line") or 0 for r in risks)
    return out


def classify(error: tuple[str, int, str], out: Path, src: Path, flags: dict[str, dict[int, list[str]]]) -> str:
    path, line, msg = error
    try:
        rel = Path(path).resolve().relative_to(out.resolve()).as_posix()
    except ValueError:
        rel = None  # an error in a file hipwizard did not write (the source tree, a system header)
    header = NOT_FOUND.search(msg)
    if header and ROCM_LIBRARY.search(header["header"]):
        return "missing ROCm library"
    if header:
        name = header["header"]
        here = src / rel if rel else src
        if any((d / name).is_file() for d in (*here.parents, src / "include") if d.is_relative_to(src)):
            return "not in the written tree"
        if not CUDA_HEADER.search(name):
            return "missing third-party library"  # torch's c10/ATen, pybind11, Python.h: not a ROCm question
    if rel is None:
        return "unpredicted"
    near = flags.get(rel, {})
    if any(near.get(n) for n in range(line - SLACK, line + SLACK + 1)):
        return "predicted"
    # an ambiguous operator on a vector type is reported at each use; the flag is on the project's operator
    # definitions (HIP_VECTOR_OPERATOR), usually in another file (helper_math.h): predicted when the tree has one
    if AMBIGUOUS_VECTOR_OP.search(msg) and any("HIP_VECTOR_OPERATOR" in ids for lines in flags.values()
                                               for ids in lines.values()):
        return "predicted"
    return "unpredicted"


NO_MATCH = re.compile(r"no matching function for call to '(?P<name>\w+)'")


def follows_predicted(error: tuple[str, int, str], earlier: list[tuple[tuple[str, int, str], str]]) -> bool:
    """A call that no longer matches because the function it calls failed to compile: ``no matching function for
    call to 'f'`` where a predicted error of the same file lies inside f's definition (from the line that
    defines f to the next line that defines a function)."""
    m = NO_MATCH.search(error[2])
    if m is None:
        return False
    try:
        lines = Path(error[0]).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return False
    defines = re.compile(rf"\b{re.escape(m['name'])}\s*\((?![^;]*;\s*$)")
    start = next((i + 1 for i, line in enumerate(lines) if defines.search(line) and i + 1 < error[1]), None)
    if start is None:
        return False
    end = next((i + 1 for i in range(start, len(lines)) if lines[i].startswith("}")), len(lines))
    return any(p[0] == error[0] and start <= p[1] <= end and label.startswith("predicted") for p, label in earlier)


AMBIGUOUS_VECTOR_OP = re.compile(r"use of overloaded operator '[^']+' is ambiguous \(with operand types '\w+[1-4]'")


def human_stats(out_review: dict, project: Path, human: Path, tables) -> dict:
    """Flags in the human-ported files per substantive human edit, and the edits with a flag within NEAR lines:
    for the CUDA sources, and for the build and Python files apart (their edits are read by the same token diff)."""
    flags = original_flag_lines(out_review)
    sides = {"sources": [0, 0, 0, 0], "build_and_python": [0, 0, 0, 0]}  # files, edits, edits seen, flags
    for cpath in sorted(project.rglob("*")):
        rel = cpath.relative_to(project).as_posix() if cpath.is_file() else ""
        side = ("sources" if cpath.suffix in SOURCE_SUFFIXES else
                "build_and_python" if rel.endswith(".py") or BUILD_FILE.search(rel) else None)
        if not rel or side is None or ".git" in cpath.relative_to(project).parts:
            continue
        hpath = human / rel
        if not hpath.is_file():
            continue
        cuda = cpath.read_text(encoding="utf-8", errors="surrogateescape")
        hip = hpath.read_text(encoding="utf-8", errors="surrogateescape")
        found = human_edits(cuda, hip, tables) if cuda != hip else []
        if not found:
            continue
        lines = flags.get(rel, [])
        row = sides[side]
        row[0] += 1
        row[1] += len(found)
        row[2] += sum(1 for e in found if any(e.near(n, NEAR) for n in lines))
        row[3] += len(lines)
    out = {}
    for side, (files, edits, seen, nflags) in sides.items():
        out[side] = {"ported_files": files, "human_edits": edits, "flags": nflags,
                     "flags_per_edit": round(nflags / edits, 2) if edits else None,
                     "edits_flagged": f"{seen}/{edits}" if edits else None}
    return out


def hecbench_trees(hecb: Path, dest: Path, limit: int | None) -> tuple[Path, Path, list[str]]:
    """(a tree of the held-out -cuda folders, a tree of their -hip folders under the -cuda names, the names)."""
    src = hecb / "src" if (hecb / "src").is_dir() else hecb
    names = sorted(p.name[:-5] for p in src.glob("*-cuda") if (src / f"{p.name[:-5]}-hip").is_dir())
    chosen = sorted(held_out(names))[:limit]
    cuda_tree, hip_tree = dest / "hecbench-held-out", dest / "hecbench-held-out-hip"
    for name in chosen:
        for side, tree in (("cuda", cuda_tree), ("hip", hip_tree)):
            for p in (src / f"{name}-{side}").rglob("*"):
                rel = p.relative_to(src / f"{name}-{side}")
                if p.is_file() and (p.suffix in (*SOURCE_SUFFIXES, ".py") or BUILD_FILE.search(p.name)):
                    target = tree / f"{name}-cuda" / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(p, target)
    return cuda_tree, hip_tree, chosen


def measure(name: str, src: Path, human: Path | None, args, work: Path, tables) -> dict:
    out = work / f"{name}-out"
    summary, review, took = hipify(src, out, work / name)
    files = review.get("files", {})
    build_present = sorted(p.relative_to(src).as_posix() for p in src.rglob("*")
                           if p.is_file() and BUILD_FILE.search(p.relative_to(src).as_posix())
                           and not any(part in (".git", "build") for part in p.relative_to(src).parts))
    build_done = sorted(f for f, v in files.items() if BUILD_FILE.search(f) and v.get("hunks"))
    py_files = sorted(f for f in files if f.endswith(".py"))
    flags = flagged_lines(review)
    checked, took_check = check(out, args)
    gpu = [f for f in checked["files"] if f["status"] != "skipped"]
    kinds: dict[str, int] = {}
    examples: list[str] = []
    stopped = sum(f["status"] == "missing-header" for f in gpu)
    for f in gpu:
        errors = [(str(out / e["file"]) if not os.path.isabs(e["file"]) else e["file"], e["line"], e["message"])
                  for e in f["errors"]]
        if f["status"] == "not built" or (f["status"] in ("failed", "error") and not errors):
            errors = [(str(out / f["path"]), 0, f["note"] or f["status"])]
        labels: list[tuple[tuple[str, int, str], str]] = []
        for e in errors:
            # the check said the unit was checked without flags its build computes (a torch extension's f-strings)
            label = "flags the build computes (said)" if f["note"].startswith("checked without") else \
                classify(e, out, src, flags)
            if label == "unpredicted" and follows_predicted(e, labels):
                label = "predicted (follow-on)"
            labels.append((e, label))
            kinds[label] = kinds.get(label, 0) + 1
            if label == "unpredicted" and len(examples) < args.examples:
                shown = Path(e[0]).resolve()
                shown_rel = shown.relative_to(out.resolve()).as_posix() if shown.is_relative_to(out.resolve()) else shown.name
                example = f"{shown_rel}:{e[1]}: {e[2][:160]}"
                if example not in examples:
                    examples.append(example)
    row = {
        "project": name, "path": str(src), "commit": commit_of(src), "hipify_seconds": round(took, 1),
        "files_translated": summary["files"], "files_changed": summary["files_changed"],
        "python_files_flagged": len(py_files), "build_files": {"translated": len(build_done), "present": len(build_present)},
        "flags": sum(summary["flags_by_severity"].values()) + sum(summary["untouched_flags_by_severity"].values()),
        "gpu_units": len(gpu), "compile_ok": sum(f["status"] == "ok" for f in gpu),
        "units_skipped": sum(f["status"] == "skipped" and f["path"].endswith(UNIT_SUFFIXES + (".c",))
                             for f in checked["files"]),
        "check_flags_from": checked["how"] or "default -I", "check_seconds": round(took_check, 1),
        "units_stopped_at_missing_library": stopped, "errors_by_kind": dict(sorted(kinds.items())),
        "unpredicted_errors": kinds.get("unpredicted", 0), "unpredicted_examples": examples,
    }
    if human is not None:
        row["human"] = {"path": str(human), "commit": commit_of(human), **human_stats(review, src, human, tables)}
    return row


def _named(values: list[str], what: str) -> dict[str, Path]:
    out = {}
    for v in values:
        name, sep, path = v.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"{what} {v!r}: expected NAME=PATH")
        p = Path(path).expanduser()
        if not p.is_dir():
            raise SystemExit(f"{what} {v!r}: {p} is not a folder")
        out[name] = p.resolve()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--project", action="append", default=[], metavar="NAME=PATH", help="a CUDA project checkout")
    ap.add_argument("--human", action="append", default=[], metavar="NAME=PATH", help="that project's human HIP port")
    ap.add_argument("--hecbench", type=Path, help="a HeCBench checkout (its held-out split is ported)")
    ap.add_argument("--hecbench-limit", type=int, help="only the first N held-out benchmarks (by name)")
    ap.add_argument("--hipcc", default="/usr/bin/hipcc")
    ap.add_argument("--arch", default="gfx90a")
    ap.add_argument("--hip-version", help="check the APIs against this ROCm (default: hipwizard's choice, with no "
                    "doctor report the hipcc found); pin it to compare runs on boxes with other hipccs")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--build", action="store_true", help="judge with `check --build` (the written tree's own build)")
    ap.add_argument("--examples", type=int, default=8, help="unpredicted errors to show per project")
    ap.add_argument("--json", type=Path, help="also write the rows to FILE")
    args = ap.parse_args()
    if args.hip_version:
        HIP_VERSION.append(args.hip_version)
    projects, humans = _named(args.project, "--project"), _named(args.human, "--human")
    if not projects and not args.hecbench:
        print("nothing to measure: pass --project NAME=PATH and/or --hecbench DIR (fetch the corpora; never vendored)")
        return 0
    if not Path(args.hipcc).is_file():
        raise SystemExit(f"--hipcc {args.hipcc}: not found")
    tables = load_tables()
    rows = []
    with tempfile.TemporaryDirectory(prefix="port-projects-") as tmp:
        work = Path(tmp)
        todo = [(name, path, humans.get(name)) for name, path in projects.items()]
        if args.hecbench:
            cuda_tree, hip_tree, chosen = hecbench_trees(args.hecbench.expanduser().resolve(), work, args.hecbench_limit)
            print(f"HeCBench {commit_of(args.hecbench)}: held-out split, {len(chosen)} benchmarks")
            todo.append(("hecbench-held-out", cuda_tree, hip_tree))
        for name, path, human in todo:
            row = measure(name, path, human, args, work, tables)
            if name == "hecbench-held-out":  # the copies are no checkout: both sides are HeCBench's commit
                row["commit"] = row["human"]["commit"] = commit_of(args.hecbench)
            rows.append(row)
            _print(row)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


def _print(row: dict) -> None:
    print(f"\n== {row['project']} @ {row['commit'][:12]}  (hipify {row['hipify_seconds']} s)")
    b = row["build_files"]
    print(f"  files translated: {row['files_translated']} ({row['files_changed']} changed); Python files flagged: "
          f"{row['python_files_flagged']}; build files translated: {b['translated']}/{b['present']}; flags: {row['flags']}")
    print(f"  GPU units compiling with hipcc: {row['compile_ok']}/{row['gpu_units']} "
          f"({row['units_stopped_at_missing_library']} stopped at a missing library; {row['units_skipped']} CPU-only or "
          f"other-platform units skipped); flags from {row['check_flags_from']} (check {row['check_seconds']} s)")
    print(f"  errors by kind: {row['errors_by_kind'] or 'none'}")
    print(f"  unpredicted compile errors: {row['unpredicted_errors']}")
    for e in row["unpredicted_examples"]:
        print(f"    {e}")
    if "human" in row:
        h = row["human"]
        print(f"  human port @ {h['commit'][:12]}:")
        for side in ("sources", "build_and_python"):
            x = h[side]
            print(f"    {side}: {x['human_edits']} edits in {x['ported_files']} files; flags per edit "
                  f"{x['flags_per_edit']}; edits with a flag within {NEAR} lines {x['edits_flagged']}")


if __name__ == "__main__":
    sys.exit(main())
