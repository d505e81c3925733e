"""Headless port engine: ``hipwizard hipify SRC --out DIR`` and ``hipwizard check DIR``.

``hipify`` translates a CUDA tree, flags risky hunks, writes the review state beside ``DIR`` (all hunks
pending) and prints a summary; ``--accept-all`` / ``--accept-unflagged`` decide for scripted use and write
the accepted hunks into ``DIR`` (then compile-check them). hipify-perl's option names are accepted where
they mean the same, so existing scripts move over. ``check`` compile-checks a folder of HIP sources with
hipcc. Exit codes: 0 fine, 1 something failed (a compile error, an unreadable file), 2 nothing could be done.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hipwizard.errors import UserError


def add_commands(sub) -> None:
    from hipwizard.cli import port_review

    port_review.add_commands(sub)
    p = sub.add_parser("hipify", help="translate a CUDA tree to HIP, flag risky hunks, start a review",
                       description="Translate CUDA sources to HIP (hipify-clang / hipify-perl when installed, "
                                   "else the built-in engine), split into hunks, flag porting risks, and write "
                                   "the review state beside the output folder.")
    p.add_argument("src", help="CUDA source folder (or one file)")
    p.add_argument("--out", "-o", "-o-dir", dest="out", required=True, help="output folder for the HIP sources")
    p.add_argument("--backend", default="auto", choices=("auto", "builtin", "hipify-perl", "hipify-clang"))
    p.add_argument("--hip-version", help="HIP/ROCm version of the target runtime (default: the doctor's finding)")
    p.add_argument("--hip-kernel-execution-syntax", "-hip-kernel-execution-syntax", action="store_true",
                   help="rewrite <<<...>>> launches to hipLaunchKernelGGL")
    p.add_argument("--roc", "-roc", action="store_true", help="translate to rocBLAS/rocRAND/... instead of hip*")
    p.add_argument("--experimental", "-experimental", action="store_true",
                   help="also translate APIs HIP marks experimental")
    p.add_argument("--quiet-warnings", "-quiet-warnings", action="store_true", help="do not list diagnostics")
    decide = p.add_mutually_exclusive_group()
    decide.add_argument("--accept-all", action="store_true", help="accept every hunk, write and compile-check")
    decide.add_argument("--accept-unflagged", action="store_true",
                        help="accept hunks without risk flags, write them and compile-check (flagged stay pending)")
    p.add_argument("--no-check", action="store_true", help="with --accept-*: skip the hipcc compile check")
    p.add_argument("--arch", help="offload arch for the compile check (default: detected, else gfx942)")
    p.add_argument("--workspace", default=".", help="workspace that records this migration (default: .)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=_hipify)

    c = sub.add_parser("check", help="compile-check HIP sources with hipcc",
                       description="Compile each translation unit under DIR with hipcc -c for the target GPU; "
                                   "tells missing ROCm library headers apart from code that does not compile.")
    c.add_argument("dir", help="folder of HIP sources (e.g. the hipify output)")
    c.add_argument("--arch", help="offload arch (default: detected, else gfx942 with fallback)")
    c.add_argument("--jobs", "-j", type=int, help="parallel compiles (default: CPU count)")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=_check)


def doctor_facts(workspace: str | Path):
    """The doctor's findings (HIP version, gfx arch) in the workspace at ``workspace``."""
    from hipwizard.doctor.state import target_facts
    from hipwizard.workspace import Workspace

    path = Path(workspace).expanduser()
    return target_facts(Workspace(path) if path.is_dir() else None)


def _progress(label: str):
    if not sys.stderr.isatty():
        return None

    def report(done: int, total: int) -> None:
        end = "\n" if done == total else ""
        print(f"\r{label} {done}/{total}", end=end, file=sys.stderr, flush=True)

    return report


def _hipify(args) -> int:
    from hipwizard.port.engine import port_tree
    from hipwizard.port.review_state import ReviewState

    src, out = Path(args.src).expanduser().resolve(), Path(args.out).expanduser().resolve()
    if not src.exists():
        raise UserError(f"{args.src} does not exist")
    if out == src or (src.is_dir() and src.is_relative_to(out)):
        raise UserError("the output folder must not be the source folder or contain it")
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {args.out} exists and is not a folder")
    facts = doctor_facts(args.workspace)
    hip_version, arch = facts.hip_version, facts.arch
    report = port_tree(src, backend=args.backend, hip_version=args.hip_version or hip_version,
                       hip_kernel_execution_syntax=args.hip_kernel_execution_syntax, roc=args.roc,
                       experimental=args.experimental, exclude=[out], progress=_progress("translating"))
    summary = report.summary()
    if not report.files:
        why = "; ".join(f"{u.path}: {u.reason}" for u in report.unreadable[:3])
        raise UserError(f"no CUDA sources could be read in {args.src}" + (f" ({why})" if why else ""))
    review = ReviewState.create(src if src.is_dir() else src.parent, out, report.files)
    if args.accept_all or args.accept_unflagged:
        ids = [h.hunk_id for h in review.hunks if args.accept_all or not h.flags]
        review.decide(ids, "accepted")
    try:
        review.save()
    except OSError as exc:
        raise UserError(f"cannot write the review state {review.path}: {exc.strerror or exc}") from None
    _record(args.workspace, review)
    summary["review"] = str(review.path)
    code = 1 if report.unreadable or report.failed else 0
    if args.accept_all or args.accept_unflagged:
        from hipwizard.port.apply import apply

        applied = apply(review, check=not args.no_check, arch=args.arch or arch,
                        progress=_progress("compile-checking"))
        summary["written"] = applied.written
        summary["compile_errors"] = applied.compile_errors
        summary["check"] = {f.path: f.check for f in applied.files}
        summary["check_note"] = applied.check_note
        if applied.compile_errors or applied.written < len(applied.files):
            code = 1
    if args.json:
        summary["diagnostics"] = {} if args.quiet_warnings else {
            ft.path: [d.to_dict() for d in ft.diagnostics] for ft in report.files if ft.diagnostics}
        print(json.dumps(summary, indent=2))
    else:
        _print_summary(summary, report, quiet=args.quiet_warnings)
    return code


def _record(workspace: str, review) -> None:
    from hipwizard.workspace import Workspace

    try:
        Workspace(workspace).update_state("port", src=str(review.src), out=str(review.out))
    except OSError:
        pass  # a read-only current folder still gets its translation; only the workspace link is missing


def _print_summary(s: dict, report, *, quiet: bool) -> None:
    sev = s["flags_by_severity"]
    unt = s["untouched_flags_by_severity"]
    print(f"hipify ({s['backend']}): {s['files']} files, {s['files_changed']} changed, {s['hunks']} hunks, "
          f"{s['flagged_hunks']} flagged")
    print(f"  flags on hunks:          ✖ {sev['high']} high  ⚠ {sev['med']} med  ● {sev['low']} low")
    print(f"  flags on untouched lines: ✖ {unt['high']} high  ⚠ {unt['med']} med  ● {unt['low']} low")
    if s["flags_by_rule"]:
        print("  rules: " + ", ".join(f"{k} {v}" for k, v in s["flags_by_rule"].items()))
    if s["unsupported"]:
        names = list(s["unsupported"])
        print(f"  ✖ unsupported in HIP ({len(names)}): " + ", ".join(names[:12]) + (" ..." if len(names) > 12 else ""))
    if s["too_new"]:
        print("  ⚠ newer than the target HIP: " + ", ".join(s["too_new"]))
    if not quiet:
        for ft in report.files:
            for d in ft.diagnostics:
                if d.kind in ("unsupported", "too_new", "removed"):
                    print(f"    {ft.path}:{d.line}: {d.kind}: {d.message}")
    for item in s["unreadable"] + s["failed"]:
        print(f"  ✖ {item['path']}: {item['reason']}")
    if s["skipped"]:
        print(f"  ○ {s['skipped']} file(s) skipped (binary, generated, too large or no CUDA content)")
    if "written" in s:
        print(f"  wrote {s['written']} file(s); compile errors: {s['compile_errors']}"
              + (f" ({s['check_note']})" if s.get("check_note") else ""))
        for path, status in s["check"].items():
            if status and status != "ok":
                print(f"    {path}: {status}")
    print(f"  review: {s['review']}  (open with `hipwizard review {s['review']}`)")


def _check(args) -> int:
    from hipwizard.port.compile_check import UNITS, check_files
    from hipwizard.port.scan import SKIP_DIRS

    root = Path(args.dir).expanduser()
    if not root.is_dir():
        raise UserError(f"{args.dir} is not a folder")
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                   if p.is_file() and p.suffix in UNITS and not (set(p.relative_to(root).parts) & SKIP_DIRS))
    if not files:
        raise UserError(f"no translation units ({' '.join(UNITS)}) under {args.dir}")
    arch = doctor_facts(".").arch
    checks = check_files(root, files, arch=args.arch or arch, jobs=args.jobs, progress=_progress("compiling"))
    if args.json:
        print(json.dumps([{"path": c.path, "status": c.status, "arch": c.arch, "note": c.note,
                           "errors": [e.__dict__ for e in c.errors]} for c in checks], indent=2))
    else:
        symbol = {"ok": "✔", "failed": "✖", "missing-header": "⚠", "not available": "○", "skipped": "○", "error": "✖"}
        for c in checks:
            print(f"{symbol[c.status]} {c.status:<14} {c.path}")
            for e in c.errors:
                print(f"    {e.file}:{e.line}:{e.col}: {e.severity}: {e.message}")
        notes = {c.note for c in checks if c.note and c.status in ("ok", "not available", "error")}
        for n in sorted(notes):
            print(f"note: {n}")
    if all(c.status == "not available" for c in checks):
        return 2
    return 1 if any(c.status in ("failed", "missing-header", "error") for c in checks) else 0
