"""Issue 32's truth: where humans really diverged for AMD in projects that build for both vendors.

A dual-target project keeps its AMD code behind preprocessor guards (``USE_ROCM``, ``__HIP_PLATFORM_AMD__``,
gfx target macros, a project's own ``JAX_GPU_HIP``...). ``unifdef`` with every AMD symbol undefined (and the
project's CUDA symbols defined) gives the **CUDA-only view** a porter starts from; each conditional group it
resolves or rewrites is a **divergence region**, porting work by construction. The port runs on the view
(``hipwizard.port.translate``, the door's service, nothing accepted or written) and its flags are judged against
the regions.

Method (also in docs/benchmarks.md, "AMD divergence"):

- **Files**: those the project compiles for AMD (the spec's ``build`` globs: its ROCm build lists and the headers
  beside them), C/C++/CUDA suffixes, minus ``exclude`` (vendored code, AMD-only files). Globs are ``fnmatch`` on the
  path relative to the checkout (``*`` crosses ``/``).
- **View**: ``unifdef -b -U<amd>... -D<cuda>...`` per file. Symbols: the spec's ``undefine`` plus every
  ``__gfx*__`` macro the file's directives name; ``define``: symbols true on a CUDA build (``JAX_GPU_CUDA``).
  unifdef leaves ``#if 0`` alone (no ``-k``) and does not simplify an expression it cannot decide
  (``defined(USE_ROCM) || CUDA_VERSION >= 11000`` stays as it is): on such kept directive lines every AMD symbol
  is replaced by ``0`` (its value on a CUDA build), which is what a CUDA-only source would say. The port reads
  the view with removed lines deleted; ``-b`` (removed lines blanked) on a copy whose blank lines were made
  non-blank gives the exact map from original lines to view lines.
- **Regions**: the original's conditional groups (``#if/#ifdef/#ifndef`` ... ``#endif`` with their ``#elif`` /
  ``#else``; directives continued with ``\\`` are one directive) are paired by nesting. A group is a region when
  any of its own directive lines was removed or rewritten in the view (resolved by unifdef, an ``#elif`` turned
  into ``#if``, or an AMD symbol zeroed on a kept line) - **counted once**, however many branches it has. A group
  inside a branch that the view dropped is not counted (its enclosing group is). Where a region lands in the view:
  the view lines kept from the group (the CUDA branch a human replaced or kept beside the AMD one); only the
  rewritten directive lines when the view removed none of the group's lines; when nothing is kept (an AMD-only block), the two view lines around where it was.
- **Scores**, per codebase and pooled: *regions caught* (a flag within ``NEAR`` = 3 view lines of the region's
  span), *flagged places* (distinct view lines with a flag) per 1,000 view lines, *places near a region* (the rest
  land nowhere near one); by flag kind (rule id; the translator's ``unsupported`` / ``too_new`` / ``opt_in`` /
  ``removed`` / ``deprecated`` diagnostics as ``diag:<kind>``, counted as the review lists them: a diagnostic the
  budget folded into another line's is no place of its own): places, places near a region, regions caught.
  Flags: hunk flags (placed back on the hunk's view line), flags on untouched lines, those diagnostics - what the
  review shows (after the review's budget, ``hipwizard/port/risk/budget.py``; ``--no-budget`` for every finding).
  APIs are checked against the newest ROCm HIPIFY's tables know (``too_new`` does not depend on the local hipcc).
- **Corpus**: a JSON spec (``benchmarks/amd_divergence_corpus.json``: repository, commit, symbols, build globs,
  the held-out project); checkouts are passed as ``NAME=PATH`` (fetch, ``git archive`` the commit; never vendored).

Usage: ``python benchmarks/amd_divergence.py --spec benchmarks/amd_divergence_corpus.json --checkout NAME=PATH ...
[--held-out] [--json FILE] [--examples N]``. Without ``--held-out`` the held-out project is refused (it is measured
once, at the end). Needs ``unifdef`` (``apt-get install unifdef``).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from realworld_metrics import human_edits  # noqa: E402

from hipwizard import port  # noqa: E402
from hipwizard.port.risk import budget  # noqa: E402
from hipwizard.port.translation.tables import load_tables  # noqa: E402

SOURCE_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".hh", ".cpp", ".cc", ".cxx", ".c", ".inc", ".cu.cc")
NEAR = 3
HIP_VERSION = port.newest_known()  # APIs checked against the newest ROCm HIPIFY knows, not the hipcc on this box
DIAG_KINDS = ("unsupported", "too_new", "opt_in", "removed", "deprecated")
_DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif|elifdef|elifndef)\b")
_GFX = re.compile(r"\b__gfx[0-9a-z]+__\b")
_BLANK_MARK = "//@amd-divergence-blank@"
_DIGIT_SEP = re.compile(r"(?<=[0-9a-fA-F])'(?=[0-9a-fA-F])")


@dataclass
class Group:
    """One #if ... #endif: its directive lines (0-based, first line of each directive) and each branch's body."""

    directives: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)  # last physical line of each directive (continuations)
    parent: tuple[int, int] | None = None  # (group index, branch index) holding this group
    end: int = -1  # the #endif line

    def branch_body(self, k: int) -> range:
        return range(self.ends[k] + 1, self.directives[k + 1])


@dataclass
class FileView:
    rel: str
    original: list[str]
    view: list[str]
    kept: list[int | None]  # original line (0-based) -> view line (0-based) or None
    regions: list[tuple[int, int]]  # 1-based view lines, inclusive
    region_lines: list[int]  # the original #if line (1-based) of each region


def groups_of(lines: list[str]) -> list[Group]:
    """The conditional groups of a file, paired by nesting (an unmatched #endif or #else is ignored)."""
    out: list[Group] = []
    stack: list[int] = []
    i = 0
    while i < len(lines):
        start = i
        while lines[i].rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
        m = _DIRECTIVE.match(lines[start])
        if m:
            word = m.group(1)
            if word in ("if", "ifdef", "ifndef"):
                parent = (stack[-1], len(out[stack[-1]].directives) - 1) if stack else None
                out.append(Group([start], [i], parent))
                stack.append(len(out) - 1)
            elif stack and word == "endif":
                g = out[stack.pop()]
                g.directives.append(start)
                g.ends.append(i)
                g.end = start
            elif stack:
                g = out[stack[-1]]
                g.directives.append(start)
                g.ends.append(i)
        i += 1
    for g in out:  # unterminated at end of file: close it there
        if g.end < 0:
            g.directives.append(len(lines))
            g.ends.append(len(lines))
            g.end = len(lines) - 1
    return out


def run_unifdef(lines: list[str], undefine: list[str], define: list[str], unifdef: str) -> tuple[list[str], str] | str:
    """(unifdef -b's output lines for ``lines``, the symbols undefined) or an error line."""
    symbols = sorted(set(undefine) | {s for line in lines if _DIRECTIVE.match(line) for s in _GFX.findall(line)})
    argv = [unifdef, "-b", *(f"-U{s}" for s in symbols), *(f"-D{s}" for s in define)]
    marked = "\n".join(lines) + "\n"  # a // line ends with a newline
    run = subprocess.run(argv, input=marked, capture_output=True, text=True, check=False)
    if run.returncode not in (0, 1):
        return (run.stderr.strip().splitlines() or [f"unifdef exit {run.returncode}"])[0]
    return run.stdout.split("\n")[:len(lines)], " ".join(symbols)


def make_view(rel: str, text: str, undefine: list[str], define: list[str], unifdef: str) -> FileView | str:
    orig = text.replace("\r\n", "\n").split("\n")
    # what unifdef reads: blank lines made non-blank (a blank in -b's output then means removed), C++14 digit
    # separators (0xff'ff) dropped (unifdef takes them for an unterminated char literal)
    fed = [_DIGIT_SEP.sub("", line) if "'" in line else line for line in orig]
    fed = [line if line.strip() else _BLANK_MARK for line in fed]
    res = run_unifdef(fed, undefine, define, unifdef)
    if isinstance(res, str):
        return f"{rel}: {res}"
    out, symbols = res
    if len(out) != len(orig):
        return f"{rel}: unifdef -b gave {len(out)} lines for {len(orig)}"
    zero = re.compile(r"\bdefined\s*\(\s*(?:%s)\s*\)|\bdefined\s+(?:%s)\b|\b(?:%s)\b" % ((symbols.replace(" ", "|"),) * 3)) \
        if symbols else None
    kept: list[int | None] = []
    rewritten: list[bool] = []
    view: list[str] = []
    for o, f, b in zip(orig, fed, out, strict=True):
        if b == "":
            kept.append(None)
            rewritten.append(False)
            continue
        line = o if b == f else b
        if zero is not None and _DIRECTIVE.match(line) and zero.search(line):
            line = zero.sub("0", line)
        kept.append(len(view))
        rewritten.append(line != o)
        view.append(line)
    regions, where = regions_of(orig, kept, rewritten)
    return FileView(rel, orig, view, kept, regions, where)


def regions_of(orig: list[str], kept: list[int | None], rewritten: list[bool]) -> tuple[list[tuple[int, int]], list[int]]:
    groups = groups_of(orig)
    dropped: set[tuple[int, int]] = set()  # (group, branch) whose body the view dropped

    def changed(i: int) -> bool:
        return i >= len(orig) or kept[i] is None or rewritten[i]

    regions: list[tuple[int, int]] = []
    where: list[int] = []
    for gi, g in enumerate(groups):
        for k in range(len(g.directives) - 1):
            body = [i for i in g.branch_body(k) if i < len(orig)]
            if body and all(kept[i] is None for i in body):
                dropped.add((gi, k))
        p = g.parent
        shadowed = False
        while p is not None:
            if p in dropped:
                shadowed = True
                break
            p = groups[p[0]].parent
        if shadowed or not any(changed(i) for i in g.directives):
            continue
        inside = range(g.directives[0], min(g.end, len(orig) - 1) + 1)
        if all(kept[i] is not None for i in inside):  # nothing removed: only a rewritten #if / #elif line
            span = [kept[i] for i in g.directives if i < len(orig) and changed(i)]
        else:
            span = [kept[i] for i in inside if kept[i] is not None]
        if span:
            regions.append((min(span) + 1, max(span) + 1))  # type: ignore[type-var]
        else:
            before = [kept[i] for i in range(g.directives[0] - 1, -1, -1) if kept[i] is not None][:1]
            at = (before[0] + 1) if before else 0  # type: ignore[operator]
            regions.append((max(at, 1), at + 1))
        where.append(g.directives[0] + 1)
    return regions, where


def built_files(root: Path, spec: dict) -> list[str]:
    build, exclude = spec["build"], spec.get("exclude", [])
    out = []
    for p in sorted(root.rglob("*")):
        if not p.is_file() or not p.name.endswith(SOURCE_SUFFIXES):
            continue
        rel = p.relative_to(root).as_posix()
        if any(fnmatch.fnmatch(rel, g) for g in build) and not any(fnmatch.fnmatch(rel, g) for g in exclude):
            out.append(rel)
    return out


def flags_of(ft) -> dict[int, set[str]]:
    """{view line (1-based): kinds} for one translated file: hunk flags placed on the hunk's old side, untouched
    flags mapped through the hunks' line shifts, and the shown diagnostics (already on original lines; one the
    budget folded into another line's, ``Diagnostic.folded_into``, is not a place of its own, as the review lists it)."""
    out: dict[int, set[str]] = defaultdict(set)
    hunks = sorted(ft.hunks, key=lambda h: h.new_start)
    for h in hunks:
        for f in h.flags:
            if f.line:
                off = min(max(f.line - h.new_start, 0), max(len(h.old_lines) - 1, 0))
                out[max(h.old_start + off, 1)].add(f.rule_id)

    def to_old(t: int) -> int:
        shift = 0
        for h in hunks:
            if h.new_start + len(h.new_lines) <= t:
                shift += len(h.old_lines) - len(h.new_lines)
            else:
                break
        return t + shift

    for f in ft.untouched_flags:
        if f.line:
            out[to_old(f.line)].add(f.rule_id)
    for d in ft.diagnostics:
        if d.kind in DIAG_KINDS and d.line and not d.folded_into:  # a folded one is listed through another line
            out[d.line].add(f"diag:{d.kind}")
    return out


def near(line: int, span: tuple[int, int]) -> bool:
    return span[0] - NEAR <= line <= span[1] + NEAR


def measure(name: str, root: Path, spec: dict, unifdef: str, work: Path) -> dict:
    files = built_files(root, spec)
    view_root = work / name / "view"
    views: dict[str, FileView] = {}
    errors: list[str] = []
    for rel in files:
        text = (root / rel).read_text(encoding="utf-8", errors="surrogateescape")
        v = make_view(rel, text, spec.get("undefine", []), spec.get("define", []), unifdef)
        if isinstance(v, str):
            errors.append(v)
            continue
        views[rel] = v
        dest = view_root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text("\n".join(v.view), encoding="utf-8", errors="surrogateescape")
    start = time.perf_counter()
    result = port.translate(None, view_root, work / name / "out", check=False, hip_version=HIP_VERSION)
    took = time.perf_counter() - start
    flags = {ft.path: flags_of(ft) for ft in result.report.files}
    return score(name, root, spec, views, flags, errors, took, result.report.backend)


def score(name: str, root: Path, spec: dict, views: dict[str, FileView], flags: dict[str, dict[int, set[str]]],
          errors: list[str], took: float, backend: str) -> dict:
    lines = sum(len(v.view) for v in views.values())
    regions = caught = places = places_near = 0
    kinds: dict[str, dict] = defaultdict(lambda: {"places": 0, "near": 0, "regions": 0})
    per_file = []
    missed_examples, far_examples = [], []
    for rel, v in sorted(views.items()):
        fl = flags.get(rel, {})
        regions += len(v.regions)
        got = 0
        for span, at in zip(v.regions, v.region_lines, strict=True):
            hit = {k for line, ks in fl.items() if near(line, span) for k in ks}
            got += bool(hit)
            for k in hit:
                kinds[k]["regions"] += 1
            if not hit:
                missed_examples.append(f"{rel}:{at}")
        caught += got
        nplaces = len(fl)
        places += nplaces
        for line, ks in fl.items():
            is_near = any(near(line, s) for s in v.regions)
            places_near += is_near
            for k in ks:
                kinds[k]["places"] += 1
                kinds[k]["near"] += is_near
            if not is_near:
                far_examples.append(f"{rel}:{line} {','.join(sorted(ks))}")
        per_file.append({"file": rel, "lines": len(v.view), "regions": len(v.regions), "caught": got,
                         "places": nplaces})
    return {
        "project": name, "path": str(root), "commit": spec.get("commit", ""), "held_out": bool(spec.get("held_out")),
        "files": len(views), "unifdef_errors": errors, "view_lines": lines, "regions": regions,
        "regions_caught": caught, "flagged_places": places, "places_near_region": places_near,
        "port_seconds": round(took, 1), "backend": backend,
        "kinds": {k: dict(v) for k, v in sorted(kinds.items())}, "per_file": per_file,
        "missed_examples": missed_examples, "far_examples": far_examples,
    }


def pooled(rows: list[dict]) -> dict:
    out = {"project": "pooled", "files": 0, "view_lines": 0, "regions": 0, "regions_caught": 0, "flagged_places": 0,
           "places_near_region": 0, "kinds": defaultdict(lambda: {"places": 0, "near": 0, "regions": 0})}
    for r in rows:
        for key in ("files", "view_lines", "regions", "regions_caught", "flagged_places", "places_near_region"):
            out[key] += r[key]
        for k, v in r["kinds"].items():
            for key in ("places", "near", "regions"):
                out["kinds"][k][key] += v[key]
    out["kinds"] = {k: dict(v) for k, v in sorted(out["kinds"].items())}
    return out


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.0f}%" if b else "-"


def show(row: dict, examples: int) -> None:
    per_k = 1000 * row["flagged_places"] / row["view_lines"] if row["view_lines"] else 0.0
    head = f"\n== {row['project']}" + (f" @ {row['commit'][:12]}" if row.get("commit") else "")
    print(head + (" (held out)" if row.get("held_out") else ""))
    print(f"  files {row['files']}, view lines {row['view_lines']}, regions {row['regions']}")
    print(f"  regions with a flag within {NEAR} lines: {row['regions_caught']}/{row['regions']} "
          f"({_pct(row['regions_caught'], row['regions'])}); flagged places {row['flagged_places']} = "
          f"{per_k:.1f} per 1,000 lines; near a region {row['places_near_region']} "
          f"({_pct(row['places_near_region'], row['flagged_places'])})")
    if row.get("unifdef_errors"):
        print(f"  unifdef refused {len(row['unifdef_errors'])} files, e.g. {row['unifdef_errors'][0]}")
    print(f"  {'kind':28} {'places':>6} {'near':>5} {'near%':>6} {'regions caught':>15}")
    for k, v in sorted(row["kinds"].items(), key=lambda kv: -kv[1]["places"]):
        print(f"  {k:28} {v['places']:>6} {v['near']:>5} {_pct(v['near'], v['places']):>6} {v['regions']:>15}")
    if examples and "missed_examples" in row:
        print(f"  regions missed (first {examples}): {', '.join(row['missed_examples'][:examples])}")
        print(f"  far flags (first {examples}): {'; '.join(row['far_examples'][:examples])}")


def human_case(name: str, cuda: Path, human: Path, work: Path) -> dict:
    """A CUDA tree against its human HIP port (same relative paths): the port's flags in the files the humans
    changed, per substantive human edit (``realworld_metrics.human_edits``, as ``port_projects.py`` counts them:
    one flag per rule and line), and the edits with a flag within ``NEAR`` lines; per kind too."""
    (work / name).mkdir(parents=True, exist_ok=True)
    result = port.translate(None, cuda, work / name / "out", check=False, hip_version=HIP_VERSION)
    tables = load_tables()
    edits = seen = nflags = 0
    kinds: dict[str, dict] = defaultdict(lambda: {"flags": 0, "near": 0, "edits": 0})
    for ft in result.report.files:
        hpath = human / ft.path
        if not hpath.is_file() or not ft.path.endswith(SOURCE_SUFFIXES):
            continue
        found = human_edits(ft.original, hpath.read_text(encoding="utf-8", errors="surrogateescape"), tables)
        if not found:
            continue
        fl = flags_of(ft)
        edits += len(found)
        seen += sum(1 for e in found if any(e.near(line) for line in fl))
        for line, ks in fl.items():
            nflags += len(ks)
            for k in ks:
                kinds[k]["flags"] += 1
                kinds[k]["near"] += any(e.near(line) for e in found)
        for e in found:
            for k in {k for line, ks in fl.items() if e.near(line) for k in ks}:
                kinds[k]["edits"] += 1
    return {"project": name, "human_edits": edits, "edits_flagged": seen, "flags": nflags,
            "flags_per_edit": round(nflags / edits, 2) if edits else None,
            "kinds": {k: dict(v) for k, v in sorted(kinds.items())}}


def show_human(row: dict) -> None:
    print(f"\n== {row['project']} vs its human port: {row['human_edits']} edits, flagged {row['edits_flagged']} "
          f"({_pct(row['edits_flagged'], row['human_edits'])}); {row['flags']} flags = {row['flags_per_edit']} per edit")
    print(f"  {'kind':28} {'flags':>6} {'near an edit':>13} {'edits seen':>11}")
    for k, v in sorted(row["kinds"].items(), key=lambda kv: -kv[1]["flags"]):
        print(f"  {k:28} {v['flags']:>6} {v['near']:>13} {v['edits']:>11}")


def write_precision(path: Path, pool: dict, names: list[str], humans: list[dict]) -> None:
    """The asset ``hipwizard/port/risk/budget.py`` reads: per kind, its flagged lines on the dev projects (every
    flag, no budget), those within NEAR lines of a divergence region, and their share; a human port case (llm.c)
    adds its flags and those within NEAR lines of a human edit."""
    import yaml  # noqa: PLC0415  # only this option writes YAML

    merged = {k: dict(v) for k, v in pool["kinds"].items()}
    for h in humans:
        for k, v in h["kinds"].items():
            m = merged.setdefault(k, {"places": 0, "near": 0, "regions": 0})
            m["places"] += v["flags"]
            m["near"] += v["near"]
    kinds = {k: {"places": v["places"], "near": v["near"], "regions": v["regions"],
                 "precision": round(v["near"] / v["places"], 3) if v["places"] else 0.0}
             for k, v in sorted(merged.items())}
    doc = {"method": (f"benchmarks/amd_divergence.py --write-precision on {', '.join(names)} (commits in "
                      "benchmarks/amd_divergence_corpus.json), every flag shown (no budget): places = view lines "
                      f"with a flag of the kind, near = those within {NEAR} lines of a divergence region (a "
                      "conditional group unifdef resolves or rewrites with the AMD symbols undefined), precision = "
                      "near / places; regions = divergence regions a flag of the kind is near. Pooled with the human port "
                      f"cases {', '.join(h['project'] for h in humans) or '(none)'} (places = flags in the files the "
                      f"humans changed, near = within {NEAR} lines of a human edit). The held-out project is not in it."),
           "kinds": kinds}
    path.write_text("# written by benchmarks/amd_divergence.py --write-precision; read by hipwizard/port/risk/budget.py\n"
                    + yaml.safe_dump(doc, sort_keys=False, width=110), encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", type=Path, default=Path(__file__).with_name("amd_divergence_corpus.json"))
    ap.add_argument("--checkout", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--held-out", action="store_true", help="also measure the held-out project (once, at the end)")
    ap.add_argument("--unifdef", default=shutil.which("unifdef") or "/usr/bin/unifdef")
    ap.add_argument("--examples", type=int, default=5)
    ap.add_argument("--human", action="append", default=[], metavar="NAME=CUDA_PATH,HIP_PATH",
                    help="a CUDA tree and its human AMD port (llm.c and anthonix/llm.c): flags per human edit")
    ap.add_argument("--no-budget", action="store_true", help="every flag, no per-kind / per-file folding")
    ap.add_argument("--no-api-fold", action="store_true",
                    help="the budget, but every API diagnostic listed on its own (the review before the third pass)")
    ap.add_argument("--write-precision", type=Path, metavar="YAML",
                    help="write each kind's measured precision on the dev projects (the asset risk/budget.py reads)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not Path(args.unifdef).is_file():
        raise SystemExit("unifdef not found: apt-get install unifdef (or pass --unifdef PATH)")
    if args.no_budget or args.write_precision:
        budget.ENABLED = False
    if args.no_api_fold:
        budget.FOLD_DIAGNOSTICS = False
    spec = json.loads(args.spec.read_text(encoding="utf-8"))
    common = spec.get("common_undefine", [])
    projects = {p["name"]: {**p, "undefine": [*common, *p.get("undefine", [])]} for p in spec["projects"]}
    rows = []
    with tempfile.TemporaryDirectory(prefix="amd-divergence-") as tmp:
        for item in args.checkout:
            name, sep, path = item.partition("=")
            if not sep or name not in projects:
                raise SystemExit(f"--checkout {item!r}: expected NAME=PATH with NAME one of {', '.join(projects)}")
            if projects[name].get("held_out") and not args.held_out:
                raise SystemExit(f"{name} is the held-out project: measured once, at the end (--held-out)")
            root = Path(path).expanduser().resolve()
            if not root.is_dir():
                raise SystemExit(f"--checkout {item!r}: {root} is not a folder")
            row = measure(name, root, projects[name], args.unifdef, Path(tmp))
            rows.append(row)
            show(row, args.examples)
        humans = []
        for item in args.human:
            name, sep, paths = item.partition("=")
            cuda, comma, hip = paths.partition(",")
            if not sep or not comma or not Path(cuda).is_dir() or not Path(hip).is_dir():
                raise SystemExit(f"--human {item!r}: expected NAME=CUDA_FOLDER,HIP_FOLDER")
            humans.append(human_case(name, Path(cuda).resolve(), Path(hip).resolve(), Path(tmp)))
            show_human(humans[-1])
    dev = [r for r in rows if not r["held_out"]]
    if len(dev) > 1:
        show(pooled(dev), 0)
    if args.write_precision and dev:
        write_precision(args.write_precision, pooled(dev), [r["project"] for r in dev], humans)
    if args.json:
        args.json.write_text(json.dumps({"near": NEAR, "rows": rows, "pooled_dev": pooled(dev) if dev else None,
                                         "human": humans},
                                        indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
