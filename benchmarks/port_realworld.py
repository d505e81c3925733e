"""Step 2 on real ports: hipwizard's built-in backend and AMD's hipify-perl on HeCBench's paired CUDA/HIP
benchmarks, judged against the human HIP port and by hipcc.

Reports in one run, for the in-sample and the held-out split separately (every 5th benchmark by sorted name is
held out; rules are written from the in-sample split only): translation similarity to the human port (token and
line) for the built-in backend, hipify-perl and the untranslated CUDA; risk-flag recall on the substantive human
edits, precision (flagged places near an edit) and flagged places per 1,000 lines, by kind and by rule; the
hipcc compile rate of each backend's output (and of the human port, the ceiling); files/s of the full engine
(``port_tree``: scan, translate, hunks, risk rules) against hipify-perl run in batches of 64. The method is in
``realworld_metrics`` and docs/benchmarks.md.

HeCBench is never vendored: pass a checkout or a bare mirror (``fetch github:zjin-lcf/HeCBench``) with
``--hecbench DIR``; its commit is printed. Absent: a message and exit 0.

Usage: ``python benchmarks/port_realworld.py --hecbench DIR [--hipify-perl PATH] [--hipcc PATH | --no-compile]
[--compile-split held-out|all|in-sample-differing] [--jobs N] [--in-sample-only] [--show-misses N]
[--show-far RULE,...] [--edit-finder v1|v2] [--reuse-perl] [--json FILE]``
"""

from __future__ import annotations

import argparse
import hashlib
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

import realworld_metrics
from realworld_metrics import (
    SOURCE_SUFFIXES,
    Pair,
    Score,
    find_pairs,
    human_edits,
    similarity,
)

from hipwizard.port.model import FileTranslation
from hipwizard.port.translation.engine import port_tree
from hipwizard.port.translation.lexer import mask_non_code
from hipwizard.port.translation.tables import load_tables

BATCH = 64
TU_SUFFIXES = {".cu", ".cpp", ".cc"}
CACHE = Path(tempfile.gettempdir()) / "hipwizard-realworld-cache"


def locate(path: Path, work: Path) -> tuple[Path | None, str]:
    """(HeCBench's src folder, its commit) from a checkout or a bare mirror; (None, why) when absent."""
    if not path.exists():
        return None, f"{path} does not exist"
    bare = (path / "HEAD").is_file() and (path / "objects").is_dir()
    git = ["git", f"--git-dir={path}"] if bare else ["git", "-C", str(path)]
    rev = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    commit = rev.stdout.strip() if rev.returncode == 0 else "unknown (not a git checkout)"
    if bare:  # a mirror: read the -cuda/-hip sources out of it (its big data blobs may be absent), once a commit
        dest = CACHE / f"hecbench-{commit[:12]}" / "src"
        if (dest.parent / "complete").exists():
            return dest, commit
        shutil.rmtree(dest.parent, ignore_errors=True)
        if _extract(git, dest):
            (dest.parent / "complete").write_text(commit)
        else:
            return None, f"no src/*-cuda sources in {path}"
        return dest, commit
    for src in (path / "src", path):
        if any(src.glob("*-cuda")):
            return src, commit
    return None, f"{path} holds no src/*-cuda folders"


def _extract(git: list[str], dest: Path) -> bool:
    listing = subprocess.run([*git, "ls-tree", "-r", "HEAD", "src"], capture_output=True, text=True, check=False).stdout
    wanted = []
    for row in listing.splitlines():
        meta, _, path = row.partition("\t")
        parts = path.split("/")
        if len(parts) > 2 and parts[1].endswith(("-cuda", "-hip")) and Path(path).suffix in SOURCE_SUFFIXES:
            wanted.append((meta.split()[2], path))
    if not wanted:
        return False
    batch = subprocess.run([*git, "cat-file", "--batch"], input="".join(f"{sha}\n" for sha, _ in wanted).encode(),
                           capture_output=True, check=False).stdout
    pos = 0
    for _, path in wanted:
        header_end = batch.index(b"\n", pos)
        header = batch[pos:header_end].split()
        pos = header_end + 1
        if len(header) < 3 or header[1] != b"blob":  # "<sha> missing"
            continue
        size = int(header[2])
        out = dest / Path(path).relative_to("src")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(batch[pos:pos + size])
        pos += size + 1
    return True


def copy_corpus(src: Path, names: list[str], dest: Path) -> int:
    """Every source file of each paired benchmark's -cuda folder, laid out as in HeCBench."""
    n = 0
    for name in names:
        cdir = src / f"{name}-cuda"
        for p in cdir.rglob("*"):
            if p.is_file() and p.suffix in SOURCE_SUFFIXES:
                out = dest / f"{name}-cuda" / p.relative_to(cdir)
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(p, out)
                n += 1
    return n


def run_perl(perl: str, corpus: Path, dest: Path) -> tuple[dict[str, str], float, int]:
    """hipify-perl over the corpus in batches of 64 (``-inplace -quiet-warnings`` on copies, as hipwizard runs it):
    ({relative path: output}, seconds, files)."""
    shutil.copytree(corpus, dest)
    files = sorted(p for p in dest.rglob("*") if p.is_file())
    start = time.perf_counter()
    for i in range(0, len(files), BATCH):
        subprocess.run(["perl", perl, "-inplace", "-quiet-warnings", *map(str, files[i:i + BATCH])],
                       capture_output=True, check=False)
    took = time.perf_counter() - start
    for p in dest.rglob("*.prehip"):
        p.unlink()
    return {p.relative_to(dest).as_posix(): p.read_text(encoding="utf-8", errors="surrogateescape")
            for p in files}, took, len(files)


def original_line_flags(ft: FileTranslation) -> dict[int, set[str]]:
    """The engine's flags on ``ft``, placed on the CUDA file's lines: {line: rule ids}."""
    out: dict[int, set[str]] = {}
    hunks = sorted(ft.hunks, key=lambda h: h.new_start)

    def to_old(n: int) -> int:
        shift = 0
        for h in hunks:
            if h.new_start <= n < h.new_start + max(len(h.new_lines), 1):
                return h.old_start + min(n - h.new_start, max(len(h.old_lines) - 1, 0))
            if h.new_start + len(h.new_lines) <= n:
                shift += len(h.old_lines) - len(h.new_lines)
        return n + shift

    for h in ft.hunks:
        for f in h.flags:
            out.setdefault(to_old(f.line or h.new_start), set()).add(f.rule_id)
    for f in ft.untouched_flags:
        out.setdefault(to_old(f.line or 1), set()).add(f.rule_id)
    return out


# -- hipcc ---------------------------------------------------------------------------------------------

def write_tree(dest: Path, texts: dict[str, str]) -> None:
    for rel, text in texts.items():
        p = dest / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text.encode("utf-8", "surrogateescape"))


def compile_one(hipcc: str, arch: str, tu: Path, includes: list[Path]) -> tuple[bool, str]:
    """hipcc -fsyntax-only on one translation unit, cached by the bytes of its folder(s)."""
    h = hashlib.sha1(f"{hipcc} {arch} {tu.name}".encode())
    for inc in includes:
        for p in sorted(inc.rglob("*")):
            if p.is_file() and p.suffix in SOURCE_SUFFIXES:
                h.update(p.relative_to(inc).as_posix().encode() + b"\0" + p.read_bytes())
    h.update(tu.relative_to(includes[0]).as_posix().encode())
    key = CACHE / f"{h.hexdigest()}.json"
    if key.exists():
        hit = json.loads(key.read_text())
        return hit["ok"], hit["err"]
    argv = [hipcc, f"--offload-arch={arch}", "-fsyntax-only", "-std=c++17", "-x", "hip", str(tu),
            *[f"-I{i}" for i in includes]]
    env = {**os.environ, "HIP_PLATFORM": "amd"}
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env, cwd=tu.parent, check=False)
        ok, err = res.returncode == 0, next((x for x in res.stderr.splitlines() if "error:" in x), "")
    except subprocess.TimeoutExpired:
        ok, err = False, "timeout"
    CACHE.mkdir(exist_ok=True)
    key.write_text(json.dumps({"ok": ok, "err": err[:300]}))
    return ok, err


def differing_benchmarks(a: Path, b: Path | None) -> set[str]:
    """Benchmarks whose -cuda folder differs in code between trees ``a`` and ``b`` (comments and blanks aside)."""
    if b is None:
        return set()

    def code(p: Path) -> str:  # a header's runtime include is left out (its translation unit has one, mostly)
        text = p.read_text(encoding="utf-8", errors="surrogateescape")
        keep = [m if "#" not in m or "include" not in m else o
                for m, o in zip(mask_non_code(text).split("\n"), text.split("\n"), strict=True)]
        tu = p.suffix in TU_SUFFIXES
        return " ".join(" ".join(x for x in keep if tu or "hip/hip_runtime" not in x).split())

    out = set()
    for pa in a.rglob("*"):
        if pa.is_file() and pa.suffix in SOURCE_SUFFIXES:
            pb = b / pa.relative_to(a)
            if not pb.is_file() or code(pa) != code(pb):
                out.add(pa.relative_to(a).parts[0][:-len("-cuda")])
    return out


def compile_rates(hipcc: str, arch: str, jobs: int, trees: dict[str, Path], src: Path,
                  pairs: list[Pair]) -> dict[str, dict[str, bool]]:
    """{backend: {"bench/rel": compiled}} for every translation unit among the pairs; "human" compiles the
    human port in place (with the -cuda folder on the include path, as HeCBench's Makefiles do)."""
    tasks = []
    for p in pairs:
        if Path(p.rel).suffix not in TU_SUFFIXES:
            continue
        key = f"{p.bench}/{p.rel}"
        for backend, root in trees.items():
            bdir = root / f"{p.bench}-cuda"
            tasks.append((backend, key, bdir / p.rel, [bdir]))
        hdir = src / f"{p.bench}-hip"
        tasks.append(("human", key, hdir / p.rel, [hdir, src / f"{p.bench}-cuda"]))
    out: dict[str, dict[str, bool]] = {}
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        for (backend, key, _, _), (ok, err) in zip(tasks, pool.map(lambda t: compile_one(hipcc, arch, t[2], t[3]), tasks), strict=True):
            out.setdefault(backend, {})[key] = ok
            if not ok:
                out.setdefault(f"{backend}:error", {})[key] = err
    return out


# -- report --------------------------------------------------------------------------------------------

def _pct(x: float) -> str:
    return f"{100 * x:5.1f}%"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hecbench", type=Path, default=Path("/work/.mirror/zjin-lcf+HeCBench/repo"))
    ap.add_argument("--hipify-perl", default=shutil.which("hipify-perl"))
    ap.add_argument("--hipcc", default="/usr/bin/hipcc" if Path("/usr/bin/hipcc").exists() else None)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--arch", default="gfx90a")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--compile-split", choices=("held-out", "all", "in-sample-differing"), default="held-out",
                    help="which pairs hipcc judges (all: ~3x700 compiles, an hour on 2 cores; in-sample-differing: "
                         "the in-sample translation units whose benchmark folder the two backends translate "
                         "differently in code, comments and blanks aside)")
    ap.add_argument("--show-misses", type=int, default=0, help="print N missed in-sample edits (never held-out ones)")
    ap.add_argument("--show-far", default="", help="RULE[,RULE]: print the rule's in-sample places near no edit")
    ap.add_argument("--in-sample-only", action="store_true", help="leave the held-out split out (rule writing)")
    ap.add_argument("--reuse-perl", action="store_true",
                    help="reuse hipify-perl's output of an earlier run (same script, same commit) and its timing")
    ap.add_argument("--edit-finder", choices=("v1", "v2"), default="v2",
                    help="v1: the first session's renaming folds; v2: also library-prefixed project names and "
                         "HIP's deprecated aliases (realworld_metrics.FINDER)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    realworld_metrics.FINDER = args.edit_finder
    work = Path(tempfile.mkdtemp(prefix="hipwizard-realworld-"))
    try:
        return _run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(args, work: Path) -> int:
    src, commit = locate(args.hecbench.expanduser(), work)
    if src is None:
        print(f"HeCBench not found ({commit}): skipped. Fetch github:zjin-lcf/HeCBench and pass --hecbench DIR.")
        return 0
    tables = load_tables()
    pairs, same, names = find_pairs(src)
    print(f"HeCBench @ {commit}: {len(names)} benchmarks with -cuda and -hip, {len(pairs)} differing file pairs "
          f"({same} identical, not scored); held out: every 5th by name ({sum(p.held_out for p in pairs)} pairs)")
    corpus = work / "corpus"
    n_files = copy_corpus(src, names, corpus)
    start = time.perf_counter()
    report = port_tree(corpus, backend="builtin")
    t_builtin = time.perf_counter() - start
    built = {ft.path: ft for ft in report.files}
    perl_out, t_perl, n_perl = ({}, 0.0, 0)
    if args.hipify_perl:
        saved = CACHE / f"perl-{hashlib.sha1(Path(args.hipify_perl).read_bytes()).hexdigest()[:12]}-{commit[:12]}"
        if args.reuse_perl and (saved / "done.json").exists():  # rule writing: the same output, its timing as measured
            shutil.copytree(saved / "tree", work / "perl")
            t_perl, n_perl = json.loads((saved / "done.json").read_text())
            perl_out = {p.relative_to(work / "perl").as_posix(): p.read_text(encoding="utf-8", errors="surrogateescape")
                        for p in (work / "perl").rglob("*") if p.is_file()}
        else:
            perl_out, t_perl, n_perl = run_perl(args.hipify_perl, corpus, work / "perl")
            shutil.rmtree(saved, ignore_errors=True)
            shutil.copytree(work / "perl", saved / "tree")
            (saved / "done.json").write_text(json.dumps([t_perl, n_perl]))
    print(f"  (engine {t_builtin:.1f} s, hipify-perl {t_perl:.1f} s; scoring ...)", file=sys.stderr)
    results: dict[str, dict] = {}
    for split in ("in-sample",) if args.in_sample_only else ("in-sample", "held-out"):
        chosen = [p for p in pairs if p.held_out == (split == "held-out")]
        score, sims = Score(), {"builtin": [0.0, 0.0], "hipify-perl": [0.0, 0.0], "cuda": [0.0, 0.0]}
        closer = {"builtin": 0, "hipify-perl": 0, "tie": 0}
        for p in chosen:
            rel = f"{p.bench}-cuda/{p.rel}"
            ft = built.get(rel) or FileTranslation(rel, p.cuda, p.cuda, "builtin")  # no CUDA content: not scanned
            cands = {"builtin": ft.translated, "cuda": p.cuda}
            if perl_out:
                cands["hipify-perl"] = perl_out.get(rel, p.cuda)
            got = {k: similarity(v, p.hip) for k, v in cands.items()}
            for k, (tok, line) in got.items():
                sims[k][0] += tok
                sims[k][1] += line
            if perl_out:
                d = got["builtin"][0] - got["hipify-perl"][0]
                closer["builtin" if d > 1e-9 else "hipify-perl" if d < -1e-9 else "tie"] += 1
            score.add(rel, human_edits(p.cuda, p.hip, tables), original_line_flags(ft), p.cuda.count("\n") + 1,
                      ft.translated, tables)
        n = max(len(chosen), 1)
        results[split] = {"pairs": len(chosen), "score": score, "closer": closer,
                          "similarity": {k: (v[0] / n, v[1] / n) for k, v in sims.items() if k in cands}}
    rates = {}
    if args.hipcc and not args.no_compile:
        trees = {"builtin": work / "out-builtin"}
        shutil.copytree(corpus, trees["builtin"])  # files without CUDA content are not scanned: keep them as they are
        write_tree(trees["builtin"], {k: v.translated for k, v in built.items()})
        if perl_out:
            trees["hipify-perl"] = work / "perl"
        if args.compile_split == "in-sample-differing":
            differ = differing_benchmarks(trees["builtin"], trees.get("hipify-perl"))
            judged = [p for p in pairs if not p.held_out and p.bench in differ]
            print(f"  hipcc judges {len(judged)} in-sample pairs of {len(differ)} benchmarks the backends translate "
                  "differently", file=sys.stderr)
        else:
            judged = [p for p in pairs if p.held_out or args.compile_split == "all"]
        rates = compile_rates(args.hipcc, args.arch, args.jobs, trees, src, judged)
    _print(results, rates, pairs, n_files, t_builtin, n_perl, t_perl, args)
    if args.json:
        args.json.write_text(json.dumps(_as_json(commit, results, rates, pairs, n_files, t_builtin, t_perl), indent=2))
    return 0


def _rate(rates: dict, backend: str, pairs: list[Pair], held: bool, only_human_ok: bool = False) -> tuple[int, int]:
    got = rates.get(backend, {})
    human = rates.get("human", {})
    keys = [f"{p.bench}/{p.rel}" for p in pairs if p.held_out == held and f"{p.bench}/{p.rel}" in got]
    if only_human_ok:
        keys = [k for k in keys if human.get(k)]
    return sum(got[k] for k in keys), len(keys)


def _print(results, rates, pairs, n_files, t_builtin, n_perl, t_perl, args) -> None:
    for split, r in results.items():
        s: Score = r["score"]
        print(f"\n== {split}: {r['pairs']} file pairs, {s.lines} CUDA lines, {s.edits} substantive human edits")
        for k, (tok, line) in r["similarity"].items():
            print(f"  similarity to the human port  {k:12s} tokens {tok:.4f}  lines {line:.4f}")
        if "hipify-perl" in r["similarity"]:
            c = r["closer"]
            print(f"  closer to the human port: builtin {c['builtin']}, hipify-perl {c['hipify-perl']}, ties {c['tie']}")
        print(f"  risk flags: recall {_pct(s.recall)} ({s.caught}/{s.edits})  precision {_pct(s.precision)} "
              f"({s.places_near}/{s.places} places)  {s.per_kloc:.1f} flagged places / 1000 lines")
        print(f"  edits the built-in translation already makes: {s.translated}; flagged or translated: "
              f"{_pct(s.handled / max(s.edits, 1))} ({s.handled}/{s.edits})")
        for kind, (e, c) in sorted(s.by_kind.items(), key=lambda kv: -kv[1][0]):
            print(f"    edits {kind:20s} {c:4d}/{e:<4d} caught {_pct(c / e)}")
        for rule, (pl, near) in sorted(s.by_rule.items(), key=lambda kv: -kv[1][0]):
            print(f"    flags {rule:24s} {pl:4d} places, {_pct(near / pl)} near an edit")
        for backend in ("builtin", "hipify-perl", "human"):  # (":error" entries are messages, not rates)
            ok, total = _rate(rates, backend, pairs, split == "held-out")
            if total:
                ok2, total2 = _rate(rates, backend, pairs, split == "held-out", only_human_ok=True)
                print(f"  hipcc {args.arch} -fsyntax-only {backend:12s} {ok}/{total} compile ({_pct(ok / total)}); "
                      f"where the human port compiles: {ok2}/{total2}")
        if split == "in-sample":  # where the built-in fails and hipify-perl compiles: the translator's to fix
            got, perl = rates.get("builtin", {}), rates.get("hipify-perl", {})
            for key in sorted(k for k, ok in got.items() if not ok and perl.get(k) and k.split("/")[0] in
                              {p.bench for p in pairs if not p.held_out}):
                print(f"  hipcc: built-in fails, hipify-perl compiles: {key}: {rates['builtin:error'].get(key, '')}")
        if split == "in-sample" and args.show_far:
            for name, line, rule in s.far:
                if rule in args.show_far.split(","):
                    print(f"  far [{rule}] {name}:{line}")
        if split == "in-sample" and args.show_misses:
            for name, e in s.missed[:args.show_misses]:
                print(f"  miss [{e.kind}] {name}:{e.lo}-{e.hi}\n      - " + "\n      - ".join(e.old[:4])
                      + "\n      + " + "\n      + ".join(e.new[:4]))
    print(f"\nspeed on {n_files} files: full engine (port_tree, builtin) {n_files / t_builtin:.1f} files/s ({t_builtin:.2f} s)"
          + (f"; hipify-perl batched {n_perl / t_perl:.1f} files/s ({t_perl:.2f} s); ratio "
             f"{(n_files / t_builtin) / (n_perl / t_perl):.1f}x" if t_perl else ""))


def _as_json(commit, results, rates, pairs, n_files, t_builtin, t_perl) -> dict:
    out = {"commit": commit, "files": n_files, "seconds": {"builtin_engine": t_builtin, "hipify_perl": t_perl}}
    for split, r in results.items():
        s = r["score"]
        out[split] = {"pairs": r["pairs"], "lines": s.lines, "edits": s.edits, "recall": s.recall,
                      "precision": s.precision, "translated": s.translated, "handled": s.handled, "places_per_kloc": s.per_kloc, "similarity": r["similarity"],
                      "closer": r["closer"], "by_kind": s.by_kind, "by_rule": s.by_rule,
                      "compile": {b: _rate(rates, b, pairs, split == "held-out") for b in rates if ":" not in b}}
    return out


if __name__ == "__main__":
    raise SystemExit(main())
