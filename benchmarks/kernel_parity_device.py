"""Issue 30's device proof (run on the NVIDIA GPU machine): real kernels end to end, planted port bugs, a timed sweep.

For each source file named in ``FILES`` (under ``--original``; the port's file of the same path under ``--port``):
three drivers are built with nvcc (the original, the float64 twin, the port through the reverse-mapping headers
generated from HIPIFY's tables), and each kernel's sweep runs (``SHAPES`` x 7 distributions; the timed kernel the
full sweep). Then each plant of ``PLANTS`` (a text edit of the port file inside one kernel or helper) is built as
another port and swept: the kernel must fail with the planted kind's detector. A JSON summary goes to ``--json``.

Usage: ``python3 benchmarks/kernel_parity_device.py --original DIR --port DIR [--demo DIR --demo-port DIR]
--json OUT.json``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hipwizard.parity.kernels.find import find_kernels  # noqa: E402
from hipwizard.parity.kernels.inputs import DISTRIBUTIONS, shapes  # noqa: E402
from hipwizard.parity.kernels.project import draft_tree  # noqa: E402
from hipwizard.parity.kernels.run import Toolchain, build, minimal_failure, sweep  # noqa: E402
from hipwizard.parity.kernels.sanitize import sanitizer_path, uses_shared_memory  # noqa: E402
from hipwizard.parity.kernels.twin import reverse_headers  # noqa: E402

FILES = ["gelu_forward.cu", "residual_forward.cu", "layernorm_forward.cu", "softmax_forward.cu",
         "encoder_forward.cu", "crossentropy_forward.cu", "adamw.cu"]
DEMO_FILES = ["kernels/scale.cu", "kernels/layernorm.cu", "kernels/softmax.cu"]
INNER_SMALL = (1, 31, 33, 63, 65, 129)
PLANTS = [  # (tree, file, kernel, old, new, kind, expected detector)
    ("llm.c", "gelu_forward.cu", "gelu_forward_kernel1", "if (i < N)", "if (i < N - 1)", "tail off-by-one",
     "unwritten"),
    ("demo", "kernels/layernorm.cu", "layernorm_kernel", "blockDim.x / WARP_SIZE", "blockDim.x / 64",
     "wave-64 assumption in a reduction", "triangle"),
    ("llm.c", "softmax_forward.cu", "softmax_forward_kernel2",
     "for (int stride = block_size / 2; stride >= 1; stride /= 2) {\n        __syncthreads();",
     "for (int stride = block_size / 2; stride >= 1; stride /= 2) {", "missing barrier", "race"),
    ("llm.c", "layernorm_forward.cu", "layernorm_forward_kernel1", "m += x[i];",
     "m = __half2float(__float2half(m + x[i]));", "narrower accumulator", "triangle"),
    ("llm.c", "residual_forward.cu", "residual_forward_kernel1", "(floatX)((float)inp1[idx] + (float)inp2[idx])",
     "inp1[idx]", "output is an input", "identity"),
    ("llm.c", "softmax_forward.cu", "softmax_forward_kernel1", "expf(inp_row[j] - maxval)", "expf(inp_row[j])",
     "overflow (no max subtraction)", "non-finite"),
]


def plant(text: str, kernel_start: int, old: str, new: str) -> str:
    pos = text.find(old, kernel_start)
    if pos == -1:
        raise SystemExit(f"plant text not found: {old!r}")
    return text[:pos] + new + text[pos + len(old):]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--original", type=Path, required=True)
    ap.add_argument("--port", type=Path, required=True)
    ap.add_argument("--demo", type=Path)
    ap.add_argument("--demo-port", type=Path)
    ap.add_argument("--work", type=Path, default=Path("/tmp/kp-work"))
    ap.add_argument("--json", type=Path, required=True)
    ap.add_argument("--timed", default="gelu_forward_kernel1")
    ap.add_argument("--dry", action="store_true", help="stop after drafting and planting (no builds)")
    ap.add_argument("--parallel", type=int, default=8, help="sweeps at a time (one GPU, separate processes)")
    ap.add_argument("--build-jobs", type=int, default=16, help="driver builds at a time")
    ap.add_argument("--budget-s", type=float, default=1e9, help="start no sweep after this many seconds")
    args = ap.parse_args()
    from hipwizard.port.translation.tables import load_tables

    tables = load_tables()
    pairs = [(c, tables.get(c).hip) for c in tables if tables.get(c) and tables.get(c).hip]
    rev = args.work / "reverse"
    reverse_headers(rev, pairs)
    tc = Toolchain(port_platform="nvidia", reverse_include=str(rev), cuda_arch="sm_90", timeout_s=400)
    trees = {"llm.c": (args.original, args.port, FILES)}
    if args.demo:
        trees["demo"] = (args.demo, args.demo_port, DEMO_FILES)
    jobs = []  # (tree, rel, file specs, orig path, port path, port text override, tag)
    for tree, (orig, port, files) in trees.items():
        drafted = {f.rel: f for f in draft_tree(orig)}
        for rel in files:
            if rel in drafted:
                unit = drafted[rel].unit_rel
                jobs.append((tree, rel, drafted[rel], orig / unit, port / unit, None, "clean"))
    for tree, rel, kernel, old, new, kind, detector in PLANTS:
        base = next(j for j in jobs if j[0] == tree and j[1] == rel)
        text = base[4].read_text(encoding="utf-8")
        k = next(k for k in find_kernels(text, rel) if k.name == kernel)
        planted = args.work / "planted" / kind.replace(" ", "_") / Path(rel).name
        planted.parent.mkdir(parents=True, exist_ok=True)
        planted.write_text(plant(text, k.start if old not in ("blockDim.x / WARP_SIZE",) else k.start, old, new))
        jobs.append((tree, rel, base[2], base[3], planted, kernel, f"plant:{kind}:{detector}"))
    if args.dry:
        print(f"{len(jobs)} jobs: " + ", ".join(f"{j[1]}[{j[6]}]" for j in jobs))
        return
    start = time.perf_counter()

    def build_job(i_job):
        i, (tree, rel, fs, opath, ppath, only, tag) = i_job
        specs = [s for s in fs.specs if not s.unsupported and (only is None or s.kernel == only)]
        d = args.work / f"b{i}"
        roots = [trees[tree][0]]
        out = {}
        for variant, src in (("original", opath), ("twin", opath), ("port", ppath)):
            out[variant] = build(specs, src, variant, d, tc, roots + ([ppath.parent, trees[tree][1]]
                                                                      if variant == "port" else []))
        return i, specs, out

    with ThreadPoolExecutor(args.build_jobs) as pool:
        built = list(pool.map(build_job, enumerate(jobs)))
    build_s = time.perf_counter() - start
    san = sanitizer_path()
    print(f"builds {build_s:.1f} s; compute-sanitizer: {san or 'not found'}", flush=True)
    bodies = {}
    for tree, (orig, _port, files) in trees.items():
        for rel in files:
            path = orig / rel
            if path.is_file():
                bodies.update({(tree, k.name): k.body for k in find_kernels(path.read_text(encoding="utf-8"), rel)})
    rows = []
    todo = []  # (job index, k, spec, binaries, timed)
    for i, specs, out in built:
        tree, rel, _fs, _o, _p, only, tag = jobs[i]
        fails = {v: b.log[-800:] for v, b in out.items() if not b.ok}
        if not out["original"].ok or not out["port"].ok:
            rows.append({"tree": tree, "file": rel, "tag": tag, "built": False, "errors": fails})
            print(f"[build failed] {tree}/{rel} {tag}: {list(fails)}", flush=True)
            continue
        binaries = {v: b.path for v, b in out.items() if b.ok}
        for k, spec in enumerate(specs):
            todo.append((i, k, spec, binaries, out, spec.kernel == args.timed and tag == "clean"))
    todo.sort(key=lambda t: not t[5])  # the timed sweep first, alone

    def one(item):
        i, k, spec, binaries, out, full = item
        tree, rel, _fs, _o, _p, only, tag = jobs[i]
        if time.perf_counter() - start > args.budget_s:
            return {"tree": tree, "file": rel, "kernel": spec.kernel, "tag": tag, "error": "not run (time budget)"}
        dims = shapes(spec) if full else [d for d in shapes(spec)
                                          if not spec.swept or d[spec.swept[-1]] in INNER_SMALL]
        shared = bool(san) and uses_shared_memory(bodies.get((tree, spec.kernel), ""), spec.shared_bytes)
        t0 = time.perf_counter()
        try:
            res = sweep(spec, k, binaries, args.work / f"s{i}_{k}", dims_list=dims,
                        sanitizer=san if shared and not full else "", tools=("racecheck",) if shared else ())
        except Exception as exc:  # a driver that cannot answer: report it, go on
            print(f"[error] {spec.kernel} {tag}: {exc}", flush=True)
            return {"tree": tree, "file": rel, "kernel": spec.kernel, "tag": tag, "error": str(exc)[:300]}
        took = time.perf_counter() - t0
        return _row(tree, rel, spec, tag, res, took, full, dims, out)

    rows += [one(todo[0])] if todo and todo[0][5] else []
    with ThreadPoolExecutor(args.parallel) as pool:
        for row in pool.map(one, todo[1:] if rows and todo[0][5] else todo):
            rows.append(row)
            args.json.write_text(json.dumps({"build_seconds": round(build_s, 1), "rows": rows}, indent=1))
    args.json.write_text(json.dumps({"build_seconds": round(build_s, 1), "rows": rows,
                                     "wall_seconds": round(time.perf_counter() - start, 1)}, indent=1))


def _row(tree, rel, spec, tag, res, took, full, dims, out) -> dict:
    """One kernel's sweep as a JSON row (and a printed line)."""
    first = res.first_failure
    mini = minimal_failure(res)
    row = {"tree": tree, "file": rel, "kernel": spec.kernel, "tag": tag, "status": res.status,
           "counts": res.counts, "cases": len(res.cases), "seconds": round(took, 2),
           "twin_built": out["twin"].ok,
           "first_failure": None if not first else {
               "dims": first.dims, "distribution": first.distribution,
               "detector": first.verdict.detector, "buffer": first.verdict.buffer,
               "detail": first.verdict.detail},
           "minimal": None if not mini else {"dims": mini.dims, "distribution": mini.distribution,
                                             "worst": mini.verdict.worst[:3]},
           "broken": [c.verdict.detail for c in res.cases if c.verdict and
                      c.verdict.status == "original broken"][:2]}
    row["checks"] = res.checks
    if full:
        row["timed_sweep"] = {"shapes": len(dims), "distributions": len(DISTRIBUTIONS),
                              "seconds_excluding_builds": round(took, 2)}
    print(f"{tag:60.60s} {spec.kernel:40s} {res.status:16s} {res.counts} {took:.2f}s {res.checks}"
          + (f" first: {first.dims} {first.distribution} {first.verdict.detector}: {first.verdict.detail}"
             if first else ""), flush=True)
    return row


if __name__ == "__main__":
    main()
