"""Issue 30's proof: parity for the user's own kernels (specs, generated drivers, sweeps, detectors).

``compile`` (this machine): for each tree (``--tree NAME=PATH``; ``--hecbench DIR`` adds the held-out split of
``realworld_metrics.held_out``, its ``-cuda`` folders), the tree is ported with hipwizard (``hipwizard hipify --accept-all
--no-check``, the real CLI), every ``__global__`` kernel is found and its spec drafted (timed), and two drivers
are generated per source file and compiled: the original with nvcc (``-c``, ``--cuda-arch``), the port with
Debian's hipcc (``HIP_PLATFORM=amd --offload-arch=gfx90a -c``). A file whose driver fails is retried kernel by
kernel. Reported: kernels found, with a supported spec, original driver compiling, port driver compiling, both
(the share, goal >= 70%), spec drafting seconds per tree.

``device`` (the NVIDIA GPU machine): ``--kernels FILE:KERNEL,...`` from ``--tree``'s first tree end to end
(original as reference, float64 twin as oracle, the port as candidate through the reverse-mapping headers), then
the planted port bugs of ``PLANTS`` (each a text edit of the port file) and one kernel's sweep timed.

Usage: ``python benchmarks/kernel_parity.py compile --tree llm.c=PATH/dev/cuda --hecbench DIR [--limit N]
[--nvcc-include DIR] [--json FILE]`` / ``python benchmarks/kernel_parity.py device --tree llm.c=PATH --port PATH
--kernels ... [--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from realworld_metrics import held_out  # noqa: E402

from hipwizard.parity.kernels.project import draft_tree  # noqa: E402
from hipwizard.parity.kernels.run import Toolchain, build  # noqa: E402
from hipwizard.parity.kernels.twin import reverse_headers  # noqa: E402
from hipwizard.port import load_tables  # noqa: E402


def hipify(src: Path, out: Path, ws: Path) -> None:
    ws.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "hipwizard", "hipify", str(src), "--out", str(out), "--accept-all", "--no-check",
            "--json", "--workspace", str(ws)]
    run = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=ROOT)
    if not out.is_dir():
        raise SystemExit(f"hipify failed on {src}: {run.stderr[-400:]}")


def hecbench_tree(hecb: Path, dest: Path, limit: int | None) -> Path:
    src = hecb / "src"
    names = sorted(p.name[:-5] for p in src.glob("*-cuda") if (src / f"{p.name[:-5]}-hip").is_dir())
    chosen = sorted(held_out(names))[:limit] if limit else sorted(held_out(names))
    tree = dest / "hecbench-held-out"
    for name in chosen:
        shutil.copytree(src / f"{name}-cuda", tree / f"{name}-cuda",
                        ignore=lambda d, fs: [f for f in fs if (Path(d) / f).is_file() and
                                              Path(f).suffix not in (".cu", ".cuh", ".h", ".hpp", ".cpp", ".c")
                                              and not f.startswith("Makefile")])
    print(f"HeCBench held-out split: {len(chosen)} of {len(names)} paired benchmarks"
          + (f" (first {limit} by name)" if limit else ""))
    return tree


def compile_tree(name: str, src: Path, work: Path, tc_cuda: Toolchain, tc_hip: Toolchain, jobs: int,
                 tc_rev: Toolchain) -> dict:
    port = work / f"{name}-port"
    hipify(src, port, work / f"{name}-ws")
    start = time.perf_counter()
    drafted = draft_tree(src)
    draft_s = time.perf_counter() - start
    kernels = sum(len(f.specs) for f in drafted)
    supported = sum(1 for f in drafted for s in f.specs if not s.unsupported)

    def alone(source: Path, variant: str, tc: Toolchain, d: Path) -> bool:
        """Does the user's file itself compile here (no driver)? Attributes a driver failure."""
        d.mkdir(parents=True, exist_ok=True)
        if variant == "original":
            argv = [tc.nvcc, "-std=c++17", f"-arch={tc.cuda_arch}", "-w", "-x", "cu", "-c", str(source),
                    f"-I{source.parent}", f"-I{src}", *[f"-I{i}" for i in tc.include_dirs], "-o", str(d / "alone.o")]
            env = None
        else:
            argv = [tc.hipcc, "-std=c++17", f"--offload-arch={tc.hip_arch}", "-w", "-x", "hip", "-c", str(source),
                    f"-I{source.parent}", f"-I{port}", "-o", str(d / "alone.o")]
            env = {**os.environ, "HIP_PLATFORM": "amd"}
        try:
            return subprocess.run(argv, capture_output=True, timeout=300, env=env, check=False).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    def one_file(i_f):
        i, f = i_f
        specs = [s for s in f.specs if not s.unsupported]
        if not specs:
            return f, {}
        d = work / "drivers" / f"{i}"
        psrc = port / f.unit_rel
        res: dict = {"alone": {}}
        for variant, tc, source in (("original", tc_cuda, src / f.unit_rel), ("port", tc_hip, psrc),
                                    ("port_nv", tc_rev, psrc)):
            if not source.is_file():
                res[variant] = {}
                res["alone"][variant] = False
                continue
            kind = "port" if variant == "port_nv" else variant
            b = build(specs, source, kind, d / variant, tc, [src] if variant == "original" else [port, src],
                      name="all")
            if b.ok:
                res[variant] = {s.kernel: True for s in specs}
                continue
            res[variant] = {}
            res.setdefault("log", {})[variant] = b.log
            in_driver = any(("all." in ln or "instantiat" in ln) and "error" in ln for ln in b.log.splitlines())
            if variant == "port_nv":
                continue  # counted per file only (the reverse-header build of the port, a check of the generator)
            res["alone"][variant] = alone(source, variant, tc, d / variant)
            if not in_driver and not res["alone"][variant]:
                continue  # the user's file itself does not compile here: no driver can
            for j, s in enumerate(specs):
                bk = build([s], source, kind, d / variant, tc, [src] if variant == "original" else [port, src],
                           name=f"k{j}")
                res[variant][s.kernel] = bk.ok
                if not bk.ok:
                    res.setdefault("klog", {})[(variant, s.kernel)] = bk.log
        return f, res

    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(one_file, enumerate(drafted)))
    port_nv = sum(1 for f, res in results for s in f.specs if res.get("port_nv", {}).get(s.kernel))
    orig = port_ok = both = 0
    src_ok = {"original": 0, "port": 0}
    both_src = both_of_src = 0
    failures = []
    for f, res in results:
        for s in f.specs:
            o = res.get("original", {}).get(s.kernel, False)
            p = res.get("port", {}).get(s.kernel, False)
            o_src = o or res.get("alone", {}).get("original", False)
            p_src = p or res.get("alone", {}).get("port", False)
            orig += o
            port_ok += p
            both += o and p
            src_ok["original"] += o_src
            src_ok["port"] += p_src
            if o_src and p_src:
                both_src += 1
                both_of_src += o and p
            if not (o and p) and not s.unsupported:
                logs = [res.get("klog", {}).get((v, s.kernel)) or res.get("log", {}).get(v) or ""
                        for v in ("original", "port") if not (o if v == "original" else p)]
                err = next((ln.strip() for lg in logs for ln in lg.splitlines() if "error" in ln), "")
                failures.append({"file": f.rel, "kernel": s.kernel, "original": o, "port": p,
                                 "original_source_compiles": o_src, "port_source_compiles": p_src, "error": err[:300]})
    row = {"tree": name, "kernels": kernels, "spec_supported": supported, "original_compiles": orig,
           "port_compiles": port_ok, "both": both, "share_both": round(both / kernels, 3) if kernels else 0,
           "sources_compile": src_ok, "both_sources_compile": both_src, "both_of_those": both_of_src,
           "share_where_sources_compile": round(both_of_src / both_src, 3) if both_src else 0,
           "port_driver_nvcc_reverse_headers": port_nv,
           "draft_seconds": round(draft_s, 2), "files": len(drafted), "failures": failures}
    print(f"{name}: {kernels} kernels in {len(drafted)} files; spec supported {supported}; original driver compiles "
          f"{orig}; port driver compiles {port_ok}; both {both} ({row['share_both']:.0%}); drafting {draft_s:.2f} s")
    print(f"  kernels whose own source compiles here: original {src_ok['original']}, port {src_ok['port']}, both "
          f"{both_src}; of those, both drivers compile: {both_of_src} ({row['share_where_sources_compile']:.0%})")
    print(f"  port driver built with nvcc through the reverse-mapping headers (whole file only): {port_nv}")
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=("compile",))
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--hecbench", type=Path)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--nvcc-include", action="append", default=[])
    ap.add_argument("--cuda-arch", default="sm_90")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    tc_cuda = Toolchain(include_dirs=args.nvcc_include, compile_only=True, cuda_arch=args.cuda_arch)
    tc_hip = Toolchain(compile_only=True, port_platform="amd")
    tables = load_tables()
    rev = Path(tempfile.mkdtemp(prefix="kernel-parity-reverse-"))
    reverse_headers(rev, [(c, m.hip) for c in tables if (m := tables.get(c)) is not None and m.hip])
    tc_rev = Toolchain(include_dirs=args.nvcc_include, compile_only=True, cuda_arch=args.cuda_arch,
                       port_platform="nvidia", reverse_include=str(rev))
    rows = []
    with tempfile.TemporaryDirectory(prefix="kernel-parity-") as tmp:
        work = Path(tmp)
        todo = [(n, Path(p).expanduser().resolve()) for n, p in (t.split("=", 1) for t in args.tree)]
        if args.hecbench:
            todo.append(("hecbench-held-out", hecbench_tree(args.hecbench.expanduser().resolve(), work, args.limit)))
        for name, src in todo:
            rows.append(compile_tree(name, src, work, tc_cuda, tc_hip, args.jobs, tc_rev))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
