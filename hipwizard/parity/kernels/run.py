"""Build the drivers and run a kernel's sweep: original (reference), twin (float64 oracle), port (candidate).

Compilers run as subprocesses (never in the UI process). On an NVIDIA machine the port is built with nvcc
through the reverse-mapping headers (``twin.reverse_headers``: HIP names back to CUDA, from HIPIFY's tables); on
the AMD machine with hipcc. ``compile_only`` stops at an object file (what this machine can check: the HIP side has
no AMD GPU to run on here).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hipwizard import port as port_step
from hipwizard.parity.kernels.driver import driver_source, uses_library
from hipwizard.parity.kernels.inputs import (
    DISTRIBUTIONS,
    OFFSET_KEY,
    decode,
    encode,
    is_sentinel,
    kind_of,
    sentinel,
    shapes,
    values,
)
from hipwizard.parity.kernels.reference import evaluate
from hipwizard.parity.kernels.sanitize import SanitizerCheck, check_case
from hipwizard.parity.kernels.spec import INT_TYPES, KernelSpec
from hipwizard.parity.kernels.twin import twin_source
from hipwizard.parity.kernels.verdict import BufferRuns, CaseVerdict, judge
from hipwizard.parity.tensorfile import write_tensor_file


@dataclass
class Toolchain:
    nvcc: str = "nvcc"
    hipcc: str = "hipcc"
    cuda_arch: str = "sm_90"
    hip_arch: str = "gfx90a"
    include_dirs: list[str] = field(default_factory=list)
    lib_dirs: list[str] = field(default_factory=list)
    port_platform: str = "amd"  # "amd": hipcc; "nvidia": nvcc with the reverse-mapping headers
    reverse_include: str = ""  # the folder of the reverse-mapping headers (port_platform "nvidia")
    compile_only: bool = False
    timeout_s: int = 300


@dataclass
class Build:
    variant: str
    ok: bool
    path: Path
    log: str = ""
    seconds: float = 0.0


def build(specs: list[KernelSpec], source: Path, variant: str, work: Path, tc: Toolchain,
          roots: list[Path] | None = None, name: str = "driver") -> Build:
    """Generate and compile ``variant``'s driver for ``specs`` (kernels of ``source``) under ``work``."""
    work.mkdir(parents=True, exist_ok=True)
    roots = roots or [source.parent]
    included = source
    if variant == "twin":
        included = work / f"{name}.twin_source.cu"
        included.write_text(twin_source(source, roots), encoding="utf-8", errors="surrogateescape")
    cuda_side = variant != "port" or tc.port_platform == "nvidia"
    suffix = ".cu" if cuda_side else ".hip.cpp"
    drv = work / f"{name}.{variant}{suffix}"
    drv.write_text(driver_source(specs, str(included.resolve()), variant), encoding="utf-8")
    out = work / f"{name}.{variant}{'.o' if tc.compile_only else ''}"
    dirs = [source.parent, *roots]
    dirs += [r / "include" for r in roots if (r / "include").is_dir()]  # the usual -Iinclude of a project
    project = project_flags(source, roots[0])
    includes = [f"-I{d}" for d in [*map(str, dirs), *tc.include_dirs]] + project
    std = [] if any(f.startswith("-std=") for f in project) else ["-std=c++17"]
    text = _with_headers(source, dirs)
    if cuda_side:
        if variant == "port":
            includes = [f"-I{tc.reverse_include}", *includes]
        argv = [tc.nvcc, *std, "-O2", f"-arch={tc.cuda_arch}", "-w", "--expt-relaxed-constexpr",
                "-diag-suppress", "177,550,20012", *includes]
        env = None
    else:
        argv = [tc.hipcc, *std, "-O2", f"--offload-arch={tc.hip_arch}", "-w", *includes]
        env = {**os.environ, "HIP_PLATFORM": "amd"}
    if tc.compile_only:
        argv += ["-c", str(drv), "-o", str(out)]
    else:
        argv += [str(drv), "-o", str(out), *[f"-L{d}" for d in tc.lib_dirs], *(uses_library(text) if cuda_side else [])]
    start = time.perf_counter()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=tc.timeout_s, env=env, check=False)
        ok, log = proc.returncode == 0 and out.exists(), (proc.stdout + proc.stderr)[-4000:]
    except (OSError, subprocess.TimeoutExpired) as exc:
        ok, log = False, str(exc)
    return Build(variant, ok, out, log, time.perf_counter() - start)


def project_flags(source: Path, root: Path) -> list[str]:
    """The -I/-D/-std flags the project's own build file gives ``source`` (the port step's reader: the nearest
    Makefile / CMakeLists.txt / setup.py above it in ``root``); [] outside ``root`` or without one. A C++ standard
    older than 17 is raised to 17 (the driver needs it)."""
    try:
        rel = source.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return []
    flags, _where = port_step.buildfile_flags(root, rel)
    out = []
    for f in flags:
        if f.startswith("-std="):
            m = re.fullmatch(r"-std=(?:c|gnu)\+\+(\d+)", f)
            if not m or int(m.group(1)) < 17:
                continue  # c++11/14 (or a C standard): the driver's own c++17 stays
        out.append(f)
    return out


def _with_headers(source: Path, dirs: list[Path], depth: int = 2) -> str:
    """The source's text and that of the project headers it includes with quotes (found in ``dirs``)."""
    text = source.read_text(encoding="utf-8", errors="surrogateescape")
    if depth == 0:
        return text
    parts = [text]
    for name in re.findall(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', text, re.M):
        found = next((d / name for d in dirs if (d / name).is_file()), None)
        if found is not None:
            parts.append(_with_headers(found, dirs, depth - 1))
    return "\n".join(parts)


@dataclass
class Sizes:
    ext: list[int]
    geo: list[int]
    scalars: list[float]
    bytes: list[int]


def sizes(binary: Path, k: int, dims: list[list[int]], env: dict | None = None) -> list[Sizes]:
    """Ask a built driver for the extents, geometry and scalars of each dimension vector."""
    text = "\n".join(" ".join(str(v) for v in d) for d in dims) + "\n"
    proc = subprocess.run([str(binary), "sizes", str(k)], input=text, capture_output=True, text=True, timeout=60,
                          env=env, check=False)
    out = []
    for line in proc.stdout.splitlines():
        parts = [p.split()[1:] for p in line.split("|")]
        out.append(Sizes([int(x) for x in parts[0]], [int(x) for x in parts[1]], [float(x) for x in parts[2]],
                         [int(x) for x in parts[3]]))
    if len(out) != len(dims):
        raise RuntimeError(f"the driver answered {len(out)} of {len(dims)} size queries: {proc.stderr[-300:]}")
    return out


@dataclass
class Case:
    index: int
    dims: dict[str, int]
    distribution: str
    verdict: CaseVerdict | None = None


@dataclass
class KernelResult:
    kernel: str
    cases: list[Case]
    seconds: float
    status: str = ""  # pass, fail, original broken, not run
    first_failure: Case | None = None
    counts: dict[str, int] = field(default_factory=dict)
    checks: list[str] = field(default_factory=list)  # the sanitizer tools' one-line summaries


def _run_driver(binary: Path, k: int, manifest: list[str], work: Path, env: dict | None) -> dict[int, str]:
    """Run the manifest; resume after a crash. Case index -> "ok" or the failure text."""
    done: dict[int, str] = {}
    start = 0
    while start < len(manifest):
        man = work / f"manifest.{binary.name}.{start}.txt"
        man.write_text("\n".join(manifest[start:]) + "\n", encoding="utf-8")
        proc = subprocess.run([str(binary), "run", str(k), str(man)], capture_output=True, text=True, timeout=300,
                              env=env, check=False)
        last = start - 1
        for line in proc.stdout.splitlines():
            word, _, rest = line.partition(" ")
            num, _, why = rest.partition(" ")
            if num.isdigit():
                done[start + int(num)] = "ok" if word == "ok" else why or "failed"
                last = max(last, start + int(num))
        if proc.returncode == 0:
            break
        if last < start:
            done[start] = done.get(start) or f"crashed: {proc.stderr.strip()[-200:]}"
            last = start
        start = last + 1
    return done


def _run_layouts(binary: Path, k: int, manifest: list[str], cases: list[Case], work: Path,
                 env: dict | None) -> dict[int, str]:
    """``_run_driver`` per buffer offset (``hw_offset`` of a case's dims; the driver reads ``HW_OFFSET``)."""
    groups: dict[int, list[int]] = {}
    for c in cases:
        groups.setdefault(int(c.dims.get(OFFSET_KEY, 0)), []).append(c.index)
    done: dict[int, str] = {}
    for off, idx in groups.items():
        run_env = env if not off else {**(env or os.environ), "HW_OFFSET": str(off)}
        got = _run_driver(binary, k, [manifest[i] for i in idx], work, run_env)
        done.update({idx[pos]: why for pos, why in got.items()})
    return done


def sweep(spec: KernelSpec, k: int, binaries: dict[str, Path], work: Path, *, seed: int = 0,
          distributions: tuple[str, ...] = DISTRIBUTIONS, dims_list: list[dict[str, int]] | None = None,
          k_factor: float = 2.0, env: dict | None = None, capture: Path | None = None,
          stamp: dict | None = None, sanitizer: str = "", tools: tuple[str, ...] = ()) -> KernelResult:
    """Every shape x distribution of ``spec`` through the three drivers (``binaries``: variant -> driver); with
    ``sanitizer`` (compute-sanitizer's path) and ``tools``, one small case also under each tool (``sanitize``)."""
    start_t = time.perf_counter()
    work.mkdir(parents=True, exist_ok=True)
    dims_list = dims_list or shapes(spec)
    order = list(spec.dims)
    vectors = [[d[n] for n in order] for d in dims_list]
    orig_sizes = sizes(binaries["original"], k, vectors, env)
    use_twin = "twin" in binaries and not spec.reference  # the user's reference replaces the twin
    twin_sizes = sizes(binaries["twin"], k, vectors, env) if use_twin else None
    cases: list[Case] = []
    manifests: dict[str, list[str]] = {v: [] for v in binaries if v != "twin" or use_twin}
    data: dict[int, dict[str, np.ndarray]] = {}
    kinds = {}
    entries: dict = {}
    for si, (dims, sz) in enumerate(zip(dims_list, orig_sizes, strict=True)):
        if any(e * b > (1 << 28) for e, b in zip(sz.ext, sz.bytes, strict=False)):
            continue
        for dist in distributions:
            ci = len(cases)
            cases.append(Case(ci, dims, dist))
            rng = np.random.default_rng([seed, si, DISTRIBUTIONS.index(dist)])
            data[ci] = {}
            for j, buf in enumerate(spec.buffers):
                kind = kind_of(buf.type, sz.bytes[j])
                kinds[(si, j)] = kind
                lanes = sz.bytes[j] // kind.size * max(sz.ext[j], 1)
                if buf.role == "out":
                    raw = sentinel(lanes, kind)
                    vals = decode(raw, kind) if kind.family != "int" else raw.astype(np.float64)
                else:
                    vals = values(dist, lanes, kind, rng)
                    raw = encode(vals, kind)
                data[ci][buf.name] = vals
                prefix = work / f"c{ci}"
                raw.tofile(f"{prefix}.original.{j}.bin")
                if capture is not None:
                    entries[f"case{ci}/{buf.name}"] = (kind.tag, [len(raw)], raw)
                if twin_sizes is not None:
                    tsz = twin_sizes[si]
                    tkind = kind_of(buf.type, tsz.bytes[j]) if kind.family != "int" else kind
                    traw = sentinel(lanes, tkind) if buf.role == "out" else encode(vals, tkind)
                    traw.tofile(f"{prefix}.twin.{j}.bin")
            for v in manifests:
                src = "twin" if v == "twin" else "original"
                manifests[v].append(f"{work / f'c{ci}'}.{src} {work / f'o{ci}'}.{v} 2 "
                                    + " ".join(str(x) for x in vectors[si]))
    status = {v: _run_layouts(binaries[v], k, manifests[v], cases, work, env) for v in manifests}
    named = _referenced(spec, cases, data, dims_list, orig_sizes, status, work) if spec.reference else {}
    for c in cases:
        si = next(i for i, d in enumerate(dims_list) if d is c.dims)
        if status["original"].get(c.index) != "ok":
            c.verdict = CaseVerdict("original crashed", detail=status["original"].get(c.index, "not run"))
            continue
        if spec.reference and not isinstance(named.get(c.index), dict):
            c.verdict = CaseVerdict("oracle missing", detail=str(named.get(c.index, "the reference gave nothing")))
            continue
        if not spec.reference and ("twin" not in status or status["twin"].get(c.index) != "ok"):
            c.verdict = CaseVerdict("oracle missing", detail=status.get("twin", {}).get(c.index, "no twin"))
            continue
        if status["port"].get(c.index) != "ok":
            c.verdict = CaseVerdict("fail", "crash", detail=f"the port failed: {status['port'].get(c.index)}")
            continue
        bufs = []
        for j, buf in enumerate(spec.buffers):
            if buf.role == "in":
                continue
            kind = kinds[(si, j)]
            tkind = kind_of(buf.type, twin_sizes[si].bytes[j]) if twin_sizes and kind.family != "int" else kind

            def load(variant: str, r: int, kd=kind, jj=j, ci=c.index):
                return np.fromfile(f"{work / f'o{ci}'}.{variant}.r{r}.{jj}.bin", dtype=kd.numpy)

            o = [load("original", r) for r in (0, 1)]
            p = [load("port", r) for r in (0, 1)]
            oracle = (_padded(named[c.index], buf.name, len(o[0])) if spec.reference
                      else decode(load("twin", 0, tkind), tkind))
            bufs.append(BufferRuns(buf.name, kind.family, kind.size, oracle,
                                   [decode(x, kind) for x in o], [decode(x, kind) for x in p],
                                   is_sentinel(o[0], kind), [is_sentinel(x, kind) for x in p],
                                   [x.tobytes() for x in o], [x.tobytes() for x in p]))
            if capture is not None:
                for variant, arrs in (("original", o), ("port", p)):
                    entries[f"{variant}/case{c.index}/{buf.name}"] = (kind.tag, [len(arrs[0])], arrs[0])
        inputs = {b.name: data[c.index][b.name] for b in spec.buffers if b.role != "out"}
        c.verdict = judge(bufs, inputs, k_factor)
    checks = _sanitize(spec, cases, status, manifests, binaries, k, work, env, sanitizer, tools)
    result = KernelResult(spec.kernel, cases, time.perf_counter() - start_t, checks=[c.summary() for c in checks])
    for c in cases:
        key = c.verdict.status if c.verdict else "not run"
        result.counts[key] = result.counts.get(key, 0) + 1
    fails = [c for c in cases if c.verdict and c.verdict.status == "fail"]
    if fails:
        result.status = "fail"
        result.first_failure = fails[0]
    elif result.counts.get("pass"):
        result.status = "pass"
    elif result.counts.get("original broken"):
        result.status = "original broken"
    else:
        result.status = "not run"
    if capture is not None and entries:
        meta = {"hipwizard": _meta_json(spec, stamp)}
        write_tensor_file(capture, entries, meta)
    shutil.rmtree(work, ignore_errors=True)
    return result


def _referenced(spec: KernelSpec, cases: list[Case], data: dict, dims_list: list, sizes_: list[Sizes],
                status: dict, work: Path) -> dict[int, dict | str]:
    """The user's reference evaluated (in a subprocess) for every case the original ran."""
    todo = []
    for c in cases:
        if status["original"].get(c.index) != "ok":
            continue
        si = next(i for i, d in enumerate(dims_list) if d is c.dims)
        numbers = {**c.dims, **{s.name: int(v) if s.type in INT_TYPES else v
                                for s, v in zip(spec.scalars, sizes_[si].scalars, strict=False)}}
        todo.append({"case": c.index, "numbers": numbers,
                     "inputs": {b.name: data[c.index][b.name] for b in spec.buffers if b.role != "out"}})
    return evaluate(spec, todo, work / "reference") if todo else {}


def _padded(named: dict | str, name: str, lanes: int) -> np.ndarray:
    """The reference's values for buffer ``name`` over its ``lanes`` (NaN where it gives none: not judged)."""
    out = np.full(lanes, np.nan)
    got = np.asarray(named.get(name, []) if isinstance(named, dict) else [], dtype=np.float64)[:lanes]
    out[:len(got)] = got
    return out


def _sanitize(spec: KernelSpec, cases: list[Case], status: dict, manifests: dict, binaries: dict, k: int,
              work: Path, env: dict | None, sanitizer: str, tools: tuple[str, ...]) -> list[SanitizerCheck]:
    """Run ``tools`` on one small case both drivers ran (the inner dimension nearest 129, normal inputs); a
    verdict they add becomes one more case."""
    ran = [c for c in cases if status["original"].get(c.index) == "ok" and status["port"].get(c.index) == "ok"]
    if not (sanitizer and tools and ran):
        return []
    inner = spec.swept[-1] if spec.swept else ""
    pick = min(ran, key=lambda c: (abs(c.dims.get(inner, 129) - 129), c.distribution != "normal", c.index))
    checks = check_case(sanitizer, tools, binaries, k, manifests["port"][pick.index], work, env)
    for chk in checks:
        if chk.verdict is not None:
            cases.append(Case(len(cases), pick.dims, f"{pick.distribution} ({chk.tool})", chk.verdict))
    return checks


def _meta_json(spec: KernelSpec, stamp: dict | None) -> str:
    return json.dumps({"kind": "kernel-sweep", "kernel": spec.kernel, "spec": spec.to_dict(),
                       "environment": stamp or {}})


def minimal_failure(result: KernelResult) -> Case | None:
    """The failing case with the fewest elements (the smallest dims product), same detector as the first."""
    fails = [c for c in result.cases if c.verdict and c.verdict.status == "fail"]
    if not fails:
        return None
    first = fails[0].verdict.detector if fails[0].verdict else ""
    same = [c for c in fails if c.verdict and c.verdict.detector == first] or fails
    return min(same, key=lambda c: int(np.prod([max(v, 1) for v in c.dims.values()])))
