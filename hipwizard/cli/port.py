"""Headless port engine: ``hipwizard hipify SRC --out DIR`` and ``hipwizard check DIR``.

``hipify`` translates a CUDA tree, flags risky hunks, writes the review state beside ``DIR`` (all hunks
pending) and prints a summary; run again over the same ``DIR`` it keeps every decision whose hunk did not
change, brings changed ones back pending with the old decision shown and lists the vanished ones.
``--accept-all`` / ``--accept-unflagged`` decide the pending hunks for scripted use and write them into
``DIR`` (then compile-check them); hand edits there are merged, never overwritten (a conflict is one line
per file, exit 1), and a non-empty ``DIR`` hipwizard did not write is refused unless ``--force``. hipify-perl's option names are accepted where
they mean the same, so existing scripts move over. ``check`` compile-checks a folder of HIP sources with
hipcc. Exit codes: 0 fine, 1 something failed (a compile error, an unreadable file), 2 nothing could be done.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from hipwizard import port
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
    p.add_argument("--no-copy-untouched", dest="copy_untouched", action="store_false",
                   help="with --accept-*: write only the translated files (by default the project's other files "
                        "are copied too, so the written tree builds on its own)")
    p.add_argument("--force", action="store_true",
                   help="with --accept-*: write into a non-empty folder hipwizard did not create (overwrites its files)")
    p.add_argument("--arch", help="offload arch for the compile check (default: detected, else gfx942)")
    p.add_argument("--max-file-size", type=_size, metavar="SIZE",
                   help="skip (and name) source files larger than SIZE, e.g. 500k, 16M (default: 8M)")
    p.add_argument("--workspace", metavar="DIR",
                   help="the workspace folder, which records this migration (default: the current folder, or the "
                        "folder holding --out when the current folder is in the source tree: nothing is written there)")
    p.add_argument("--mode", choices=("fork", "dual"),
                   help="fork: a HIP copy of the tree; dual: one source for NVIDIA and AMD (the CUDA tree kept, a "
                        "compat header, guarded branches, build files that build both ways, a patch beside --out). "
                        "Default: the workspace's last choice, else fork")
    p.add_argument("--guard", metavar="MACRO",
                   help="with --mode dual: the macro the project's AMD builds define (default: USE_ROCM)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=_hipify)

    c = sub.add_parser("check", help="compile-check HIP sources with hipcc, the way the project builds",
                       description="Compile each GPU translation unit under DIR with hipcc -c for the target GPU, "
                                   "with the flags the project's build gives it (compile_commands.json, CMake's "
                                   "export, make -Bn, else the build file's -I/-D/-std); CPU-only and other "
                                   "platforms' files are skipped with the reason. Tells missing ROCm library "
                                   "headers (and the package that installs each) apart from code that does not "
                                   "compile. --build runs the project's own build instead.")
    c.add_argument("dir", help="folder of HIP sources (e.g. the hipify output)")
    c.add_argument("--build", action="store_true",
                   help="run the folder's own build (Makefile / CMake) with hipcc and report each unit from it")
    c.add_argument("--arch", help="offload arch (default: detected, else gfx942 with fallback)")
    c.add_argument("--jobs", "-j", type=int, help="parallel compiles (default: CPU count)")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=_check)


def _workspace(path: str | Path):
    """The workspace at ``path``, or None when that is not a folder (no doctor facts then)."""
    from hipwizard.workspace import Workspace

    p = Path(path).expanduser()
    return Workspace(p) if p.is_dir() else None


def _size(text: str) -> int:
    """'500k', '16M', '1G' or a number of bytes -> bytes. A ``UserError`` passes through argparse (which
    would print its usage block), so bad input is the CLI's one line, exit 2."""
    t = text.strip().lower().removesuffix("b").removesuffix("i")
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(t[-1:], 1)
    try:
        value = float(t[:-1] if scale > 1 else t) * scale
    except ValueError:
        raise UserError(f"--max-file-size: {text!r} is not a size (e.g. 500k, 16M, 1G)") from None
    if not 1 <= value < 1 << 40:
        raise UserError(f"--max-file-size: {text!r}: the cap must be between 1 byte and 1 TiB")
    return int(value)


def _hipify_workspace(given: str | None, src: Path, out: Path) -> Path:
    """The workspace folder of a hipify run: ``--workspace``; else the current folder, unless it lies in the
    source tree and is not a workspace yet (``cd src && hipwizard hipify . --out ../out`` must not write a
    ``.hipwizard/`` into the sources): then the folder that holds ``--out`` and its review."""
    from hipwizard.workspace import STATE_DIRNAME

    if given is not None:
        return Path(given)
    here = Path.cwd().resolve()
    root = src if src.is_dir() else src.parent
    if here.is_relative_to(root) and not (here / STATE_DIRNAME).is_dir():
        return out.parent
    return here


def _hipify(args) -> int:
    from hipwizard.progress import terminal_progress
    from hipwizard.workspace import Workspace

    accept: Literal["all", "unflagged"] | None = ("all" if args.accept_all else "unflagged" if args.accept_unflagged
                                                 else None)
    src, out = Path(args.src).expanduser().resolve(), Path(args.out).expanduser().resolve()
    with terminal_progress() as progress:
        done = port.translate(
            Workspace(_hipify_workspace(args.workspace, src, out)), src, out,
            backend=args.backend, hip_version=args.hip_version,
            hip_kernel_execution_syntax=args.hip_kernel_execution_syntax, roc=args.roc,
            experimental=args.experimental, accept=accept, check=not args.no_check, arch=args.arch, force=args.force,
            mode=args.mode, guard=args.guard,
            max_bytes=args.max_file_size, copy_untouched=args.copy_untouched, progress=progress)
    report, review, applied = done.report, done.review, done.written
    summary = report.summary()
    summary["hip_version"] = review.hip_version
    if args.hip_version:  # the service says "given"; here it was the option
        summary["target"] = {"hip_version": args.hip_version, "source": "--hip-version"}
    summary["review"] = str(review.path)
    summary["mode"] = "dual" if done.dual else "fork"
    if done.dual:
        summary["dual"] = dict(done.dual)
        written_dual = getattr(applied, "dual", None)
        if written_dual is not None:
            summary["dual"]["patch"] = str(written_dual.patch)
            summary["dual"]["both_builds"] = [c.to_dict() for c in written_dual.checks]
    code = 1 if report.unreadable or report.failed else 0
    if done.reconciled is not None:
        summary["reconciled"] = done.reconciled.to_dict()
        summary["changed_since_decided"] = [
            {"id": h.hunk_id, "file": h.file, "line": h.old_start, "was": review.decision(h.hunk_id).was}
            for h in review.hunks if review.decision(h.hunk_id).before is not None]
    if applied is not None:
        summary["written"] = applied.written
        summary["copied"] = applied.copied
        summary["checked"] = applied.checked
        summary["compile_errors"] = applied.compile_errors if applied.checked else None  # files, not errors
        summary["check_how"] = applied.check_how
        summary["stopped"] = applied.stopped
        summary["ahead"] = applied.ahead
        summary["check"] = {f.path: f.check for f in applied.files}
        summary["check_note"] = applied.check_note
        summary["arch"] = applied.arch
        summary["conflicts"] = {f.path: f.detail for f in applied.conflicts}
        summary["merged"] = [f.path for f in applied.files if f.status == "merged"]
        if applied.compile_errors or any(f.status not in ("written", "merged", "kept") for f in applied.files):
            code = 1
    if args.json:
        summary["diagnostics"] = {} if args.quiet_warnings else {
            ft.path: [d.to_dict() for d in ft.diagnostics] for ft in report.files if ft.diagnostics}
        print(json.dumps(summary, indent=2))
    else:
        _print_summary(summary, report, quiet=args.quiet_warnings)
    return code


def _print_summary(s: dict, report, *, quiet: bool) -> None:
    sev = s["flagged_hunks_by_severity"]
    unt = s["untouched_flags_by_severity"]
    print(f"hipify ({s['backend']}): {s['files']} files, {s['files_changed']} changed, {s['hunks']} hunks, "
          f"{s['flagged_hunks']} flagged")
    if s.get("dual"):
        d = s["dual"]
        kinds = ", ".join(f"{k} {v}" for k, v in d["branches_by_kind"].items()) or "none"
        print(f"  mode: dual-target (one source; AMD builds define {d['guard']}): {d['renames']} CUDA name(s) in "
              f"{d['header']}, {d['branches']} guarded branch(es): {kinds}")
    else:
        print("  mode: fork (a HIP copy of the tree)")
    print(f"  flagged hunks (by highest flag): ✖ {sev['high']} high  ⚠ {sev['med']} med  ● {sev['low']} low")
    hand = s["hand_edit_lines"]
    print(f"  lines needing a hand edit: {hand['total']} ({hand['risks']} with risks on unchanged lines, "
          f"{hand['api']} with an API HIP lacks or the target is too old for)")
    print(f"  risks on unchanged lines: {sum(unt.values())}: ✖ {unt['high']} high  ⚠ {unt['med']} med  ● {unt['low']} low")
    if s["flags_by_rule"]:
        print("  rules (most telling first): " + ", ".join(f"{k} {v}" for k, v in s["flags_by_rule"].items()))
    if s["unsupported"]:
        names = list(s["unsupported"])
        print(f"  ✖ unsupported in HIP ({len(names)}): " + ", ".join(names[:12]) + (" ..." if len(names) > 12 else ""))
    target = s["target"]
    print(f"  target: ROCm/HIP {target['hip_version']} ({target['source']})")
    if s["too_new"]:
        print(f"  ⚠ newer than the target ROCm/HIP {target['hip_version']}: " + ", ".join(s["too_new"]))
    if s.get("opt_in"):
        print(f"  ⚠ opt-in on ROCm/HIP {target['hip_version']} (see each line for the define): " + ", ".join(s["opt_in"]))
    if not quiet:
        for ft in report.files:
            for d in ft.diagnostics:  # a line folded into another is named on the one that stands for it
                if d.kind in ("unsupported", "too_new", "removed", "opt_in") and not d.folded_into:
                    print(f"    {ft.path}:{d.line}: {d.kind}: {d.message}{port.fold_note(d, ft.diagnostics)}")
    for item in s["unreadable"] + s["failed"]:
        print(f"  ✖ {item['path']}: {item['reason']}")
    if s["skipped"]:
        kinds = ", ".join(f"{n} {kind}" for kind, n in s.get("skipped_by_kind", {}).items())
        print(f"  ○ {s['skipped_count']} file(s) skipped ({kinds}):")  # and each line its own reason
        for item in s["skipped"][:20]:
            print(f"    ○ {item['path']}: {item['reason']}")
        if len(s["skipped"]) > 20:
            print(f"    ... and {len(s['skipped']) - 20} more (--json lists them all)")
    if "reconciled" in s:
        r = s["reconciled"]
        print(f"  re-run over the existing review: {r['kept']} decision(s) kept, {r['changed']} changed since you "
              f"decided (pending again), {r['new']} new hunk(s), {r['vanished']} decided hunk(s) vanished")
        for c in s["changed_since_decided"]:
            print(f"    ⟳ {c['file']}:{c['line']}  changed since you decided (was {c['was']})")
        for v in r["vanished_hunks"]:
            print(f"    ✗ {v['file']}:{v['old_start']}  vanished (was {v['decision'].get('state', '?')})")
        if r["changed_files"]:
            print(f"    sources changed: {', '.join(r['changed_files'])}")
    if "written" in s:
        copied = f" (+{s['copied']} untouched file(s) copied)" if s.get("copied") else ""
        if s.get("checked"):
            arch = f" for {s['arch']}" if s.get("arch") else ""
            how = f"; flags from {s['check_how']}" if s.get("check_how") else ""
            print(f"  wrote {s['written']} file(s){copied}; files with compile errors{arch}: {s['compile_errors']}"
                  + how + (f" ({s['check_note']})" if s.get("check_note") else ""))
        else:
            why = s.get("check_note") or "--no-check"
            print(f"  wrote {s['written']} file(s){copied}; compile check not run ({why})")
        for path, status in s["check"].items():
            if status and status not in ("ok", "skipped"):
                print(f"    {path}: {status}")
        for path, note in s.get("stopped", {}).items():
            ahead = s.get("ahead", {}).get(path, [])
            print(f"    ⚠ {path}: {note}" + (f"; {len(ahead)} flagged line(s) still ahead, unchecked: "
                                              + ", ".join(ahead[:4]) + (" ..." if len(ahead) > 4 else "")
                                              if ahead else ""))
        for path in s["merged"]:
            print(f"    ✎ {path}: your edits merged with the new result")
        for path, why in s["conflicts"].items():
            print(f"  ✖ conflict {path}: {why}")
    if s.get("dual", {}).get("patch"):
        print(f"  patch for the CUDA tree: {s['dual']['patch']}  (git apply it from the tree's root)")
        for c in s["dual"].get("both_builds", []):
            for side in ("nvidia", "amd"):
                if c[side]["status"] not in ("ok",):
                    print(f"    {c['path']} ({side}): {c[side]['status']}" + (f": {c[side]['note']}"
                                                                                if c[side]["note"] else ""))
    print(f"  review: {s['review']}  (open with `hipwizard review {s['review']}`)")


def _check(args) -> int:
    from hipwizard.progress import terminal_progress

    if args.jobs is not None and args.jobs < 1:
        raise UserError(f"--jobs {args.jobs}: give at least 1 parallel compile")
    with terminal_progress() as progress:  # a dual-target tree: both builds, nvcc and hipcc
        both = port.check_dual(args.dir, arch=args.arch, jobs=args.jobs, progress=progress)
    if both is not None:
        return _print_both(both, as_json=args.json)
    with terminal_progress() as progress:
        tree = port.check(_workspace("."), args.dir, arch=args.arch, jobs=args.jobs, build=args.build,
                          progress=progress)
    checks = tree.files
    gpu = [c for c in checks if c.status != "skipped"]
    counts = {k: sum(c.status == k for c in gpu) for k in ("ok", "failed", "missing-header", "not built", "error")}
    if args.json:
        print(json.dumps({
            "how": tree.how, "notes": tree.notes, "gpu_units": len(gpu), "counts": counts,
            "build": None if tree.build is None else {"system": tree.build.system, "status": tree.build.status,
                                                      "note": tree.build.note, "tail": tree.build.tail},
            "files": [{"path": c.path, "status": c.status, "arch": c.arch, "note": c.note, "flags_from": c.flags_from,
                       "errors": [e.__dict__ for e in c.errors], "ahead": [a.__dict__ for a in c.ahead]}
                      for c in checks]}, indent=2))
    else:
        symbol = {"ok": "✔", "failed": "✖", "missing-header": "⚠", "not available": "○", "skipped": "○", "error": "✖",
                  "not built": "✖"}
        for c in checks:
            print(f"{symbol[c.status]} {c.status:<14} {c.path}" + (f"  ({c.note})" if c.status == "skipped" else ""))
            for e in c.errors:
                if not e.missing_header:
                    print(f"    {e.file}:{e.line}:{e.col}: {e.severity}: {e.message}")
            if c.status in ("missing-header", "not built") or (c.status == "failed" and c.note and (
                    not c.errors or c.note.startswith(("a CUDA header left", "checked without")))):
                print(f"    {c.note}")
            if c.ahead:
                print(f"    still ahead in this unit, unchecked ({len(c.ahead)} flagged line(s)):")
                for a in c.ahead[:12]:
                    print(f"      {a}")
                if len(c.ahead) > 12:
                    print(f"      ... and {len(c.ahead) - 12} more (--json lists them all)")
        notes = {c.note for c in checks if c.note and c.status in ("ok", "not available", "error")}
        for n in [*tree.notes, *sorted(notes)]:
            print(f"note: {n}")
        if tree.build is not None and tree.build.tail and tree.build.units:
            print("the build's last lines:\n" + tree.build.tail)
        skipped = sum(c.status == "skipped" and c.path.endswith(UNIT_SUFFIXES) for c in checks)
        print(f"GPU units: {len(gpu)}: ✔ {counts['ok']} compile, ✖ {counts['failed'] + counts['error']} fail, "
              f"⚠ {counts['missing-header']} stopped at a missing ROCm library header"
              + (f", ✖ {counts['not built']} not built" if counts["not built"] else "")
              + (f"; {skipped} other unit(s) skipped (CPU-only or another platform's)" if skipped else "")
              + f"; flags from {tree.how or 'the default -I <dir> (no build file gave any)'}")
    if checks and all(c.status in ("not available", "skipped") for c in checks):
        return 2
    return 1 if any(c.status in ("failed", "missing-header", "error", "not built") for c in checks) else 0


UNIT_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c", ".hip")


def _print_both(checks, *, as_json: bool) -> int:
    """``check`` on a dual-target tree: each unit's NVIDIA (nvcc) and AMD (hipcc) compile. Exit 1 when either
    side fails (a change that breaks the NVIDIA build is an error), 2 when neither compiler is there."""
    if as_json:
        print(json.dumps([c.to_dict() for c in checks], indent=2))
    else:
        symbol = {"ok": "✔", "failed": "✖", "missing-header": "⚠", "not available": "○", "skipped": "○", "error": "✖"}
        for c in checks:
            for side, fc in (("NVIDIA nvcc", c.nvidia), ("AMD hipcc", c.amd)):
                print(f"{symbol[fc.status]} {fc.status:<14} {c.path}  [{side}]" + (f"  {fc.note}" if fc.note else ""))
                if fc.status == "failed":
                    for e in fc.errors[:10]:
                        print(f"    {e.file}:{e.line}:{e.col}: {e.severity}: {e.message}")
    if checks and all(c.nvidia.status == c.amd.status == "not available" for c in checks):
        return 2
    return 1 if any(s in ("failed", "error") for c in checks for s in (c.nvidia.status, c.amd.status)) else 0
