"""``hipwizard review DIR``: open the Port screen on a migration, or summarise / write it headless.

``DIR`` is a workspace, an output folder (its ``<out>.review.json`` beside it) or the state file.
``--summary [--json]`` prints the decisions; ``--write`` applies them into the output folder and runs the
compile check (with hunks still pending it refuses and lists them, exit 2, unless ``--include-pending``: then
only decided hunks are applied and pending ones stay the original CUDA, as ``git add -p`` leaves them) for the doctor's gfx arch (exit 1 when a file failed to compile, could not be written, or
met conflicting hand edits: the user's file is then kept, one line per file). ``--resolve PATH=mine|new|merged``
settles such a conflict: keep your file, take the new result, or write the merge with conflict markers;
``--resolve PATH#N=mine|new`` decides one conflict of the file (``--summary`` lists them as ``PATH#N``, and
your edits that every write keeps); the file is written once all its conflicts are decided.
"""

from __future__ import annotations

import json

from hipwizard import port
from hipwizard.errors import UserError


def add_commands(sub) -> None:
    p = sub.add_parser("review", help="review hipify hunks (TUI), or summarise / write the decisions")
    p.add_argument("dir", help="workspace, output folder, or *.review.json file")
    p.add_argument("--summary", action="store_true", help="print the decisions so far and exit")
    p.add_argument("--json", action="store_true", help="with --summary or --write: machine-readable output")
    p.add_argument("--write", action="store_true", help="apply the decisions to the output folder and compile-check")
    p.add_argument("--no-check", action="store_true", help="with --write: skip the hipcc compile check")
    p.add_argument("--copy-untouched", action="store_true", default=True,
                   help="with --write: copy the project's other files too (the default: the tree builds on its own)")
    p.add_argument("--no-copy-untouched", dest="copy_untouched", action="store_false",
                   help="with --write: write only the reviewed files")
    p.add_argument("--arch", help="with --write: offload arch for the compile check (default: detected)")
    p.add_argument("--force", action="store_true",
                   help="with --write: overwrite files in the output folder that hipwizard did not write")
    p.add_argument("--include-pending", action="store_true",
                   help="with --write: write even though some hunks are still pending; only decided hunks "
                        "are applied, pending ones stay the original CUDA (without it, --write refuses and "
                        "lists them)")
    p.add_argument("--resolve", action="append", metavar="PATH[#N]=mine|new|merged", default=[],
                   help="settle a write's conflict with your edits: keep mine, take new, or write merged "
                        "(with conflict markers); PATH#N=mine|new decides conflict N of the file alone "
                        "(--summary lists them); repeatable")
    p.set_defaults(func=_review)


def _review(args) -> int:
    path = port.locate(args.dir)
    # Writing decisions or the output folder: this session is the review's one writer, or it refuses.
    review = port.ReviewState.load(path, lock="hold" if args.resolve or args.write else "none")
    try:
        if args.resolve:
            return _resolve(review, args.resolve)
        if args.summary:
            return _summary(review, args.json)
        if args.write:
            return _write(port.review_workspace(args.dir, path), review, args)
    finally:
        review.release()  # the lock goes with the command (a caller in the same process keeps no hold)
    if args.json:
        raise UserError("--json goes with --summary or --write")
    from hipwizard.tui.port.launch import run_review

    run_review(path)
    return 0


def _resolve(review, items: list[str]) -> int:

    pairs = []
    for item in items:
        rel, sep, choice = item.rpartition("=")
        if not sep or not rel:
            raise UserError(f"--resolve takes PATH=mine|new|merged, not {item!r}")
        path, hash_, number = rel.rpartition("#")
        if hash_ and path:
            if not number.isdigit():
                raise UserError(f"--resolve takes PATH#N=mine|new with N a conflict's number, not {item!r}")
            pairs.append((path, int(number), choice))
        else:
            pairs.append((rel, 0, choice))
    for rel, index, choice in pairs:
        if index:
            done = port.choose(review, rel, index, choice)
            print(f"  ✔ {rel}#{index}: {'your lines' if choice == 'mine' else 'the new lines'} chosen"
                  + ("; every conflict decided, file written" if done else "; file kept until all are decided"))
            continue
        port.resolve(review, rel, choice)
        print(f"  ✔ {rel}: {dict(mine='your file kept', new='new result written', merged='merged text with conflict markers written')[choice]}")
    return 0


def _summary(review, as_json: bool) -> int:

    data = review.summary()
    data["changed_sources"] = review.changed_sources()
    data["changed_since_decided"] = [
        {"id": h.hunk_id, "file": h.file, "line": h.old_start, "was": review.decision(h.hunk_id).was}
        for h in review.hunks if review.decision(h.hunk_id).before is not None]
    data["vanished"] = [{"id": v["id"], "file": v.get("file"), "line": v.get("old_start"),
                         "was": v["decision"].get("state")} for v in review.vanished]
    data["flagged_order"] = _flagged_order(review)
    tree = port.worktree_status(review)
    data["worktree"] = tree.to_dict()
    if not tree.error:
        data["output_hunks"] = [h.to_dict() for h in port.output_hunks(review)]
    if as_json:
        print(json.dumps(data, indent=2))
        return 0
    st = port.status_of(review)
    print(f"{st.symbol} {st.summary}")
    c = review.counts()
    print(f"  {c.accepted} accepted, {c.edited} edited, {c.rejected} rejected, "
          f"{c.pending} pending ({c.changed} changed) in {len(review.files)} files")
    sev = data["flagged"]
    print(f"  {data['flagged_hunks']} flagged hunks: {sev['high']} high, {sev['med']} med, {sev['low']} low")
    _print_flagged_order(data["flagged_order"])
    print(_manual_line(review))
    if data["too_new"]:
        print(f"  ⚠ newer than the target HIP {data['hip_version']}: " + ", ".join(data["too_new"]))
    for c in data["changed_since_decided"]:
        print(f"  ⟳ {c['file']}:{c['line']}  changed since you decided (was {c['was']}); pending")
    for v in data["vanished"]:
        print(f"  ✗ {v['file']}:{v['line']}  decided hunk vanished from the translation (was {v['was']})")
    if tree.edited:
        print(f"  ✎ your edits in {len(tree.edited)} written file(s), kept on every write: "
              + ", ".join(tree.edited))
    for rel, why in tree.conflicts.items():
        print(f"  ✖ conflict {rel}: {why}; resolve with --resolve {rel}=mine|new|merged, or each below")
    for h in data.get("output_hunks", ()):
        if h["kind"] == "conflict":
            state = f"chosen: {h['choice']}" if h["choice"] else "undecided"
            print(f"    ✖ {h['ref']} L{h['line']}: yours {len(h['old'])} line(s) vs new {len(h['new'])} "
                  f"line(s) [{state}] → --resolve {h['ref']}=mine|new")
        else:
            print(f"    ✎ your edit {h['ref']} L{h['line']}: -{len(h['old'])} +{len(h['new'])} line(s), kept on write")
    if tree.error:
        print(f"  ✖ {tree.error}")
    if review.journal_warning():
        print(f"  ⚠ {review.journal_warning()}")
    if data["changed_sources"]:
        print(f"  ⚠ {len(data['changed_sources'])} source file(s) changed since the review; "
              f"open it to reconcile")
    print(f"  state: {review.path}")
    return 0


FLAGGED_SHOWN = 10


def _flagged_order(review) -> list[dict]:
    """The flagged hunks, most telling first: the hunk's most telling kind by its measured share of flags near
    code that dual-target projects guard for AMD (the Port screen's "flagged" filter opens on the same hunk; it keeps
    a file's hunks together)."""
    number = {i: n for rows in review.by_file.values() for n, i in enumerate(rows, 1)}
    out = []
    for i in review.flagged_order():
        h = review.hunks[i]
        top, share = review.telling_flag(h)
        out.append({"ref": f"{h.file}#{number[i]}", "line": h.old_start, "rule": top.rule_id,
                    "severity": top.severity, "precision": round(share, 3), "state": review.decision(h.hunk_id).state})
    return out


def _print_flagged_order(rows: list[dict]) -> None:
    if not rows:
        return
    print("  flagged hunks, most telling first (how often the kind marks real AMD porting work, measured):")
    for r in rows[:FLAGGED_SHOWN]:
        print(f"    ⚑ {r['ref']} L{r['line']}  {r['rule']} ({r['severity']}) {r['precision']:.0%}  [{r['state']}]")
    if len(rows) > FLAGGED_SHOWN:
        print(f"    ... {len(rows) - FLAGGED_SHOWN} more (--json lists them all)")


def _manual_line(review) -> str:
    """"  ⚑ 5 lines need a hand edit: 3 with risks on unchanged lines (2 high, 1 med, 0 low) in 1 file, 2 with an
    API HIP lacks or the target is too old for" (each line once)."""
    u = review.untouched_counts()
    hand = review.hand_edit_lines()
    if not hand["total"]:
        return "  ✔ no line needs a hand edit (no risks on unchanged lines, no unsupported API)"
    return (f"  ⚑ {hand['total']} line(s) need a hand edit: {hand['risks']} with risks on unchanged lines "
            f"({u['total']} risks: {u['high']} high, {u['med']} med, {u['low']} low) in {len(review.untouched)} "
            f"file(s), {hand['api']} with an API HIP lacks or the target is too old for")


def pending_refs(review) -> list[str]:
    """``path#N`` (N: the hunk's number in its file, as the Port screen counts) of every pending hunk."""
    out = []
    for rel, rows in review.by_file.items():
        out += [f"{rel}#{n}" for n, i in enumerate(rows, 1)
                if review.decision(review.hunks[i].hunk_id).state == "pending"]
    return out


def _pending_line(refs: list[str], total: int) -> str:
    shown = ", ".join(refs[:5]) + (f", ... ({len(refs) - 5} more)" if len(refs) > 5 else "")
    return f"{len(refs)} of {total} hunks still pending ({shown})"


def _write(ws, review, args) -> int:
    from hipwizard.progress import terminal_progress

    pending = pending_refs(review)
    if pending and not args.include_pending:  # like `git add -p`: only what was decided is applied
        raise UserError(f"{_pending_line(pending, len(review.hunks))}; decide them with `hipwizard review "
                        f"{args.dir}` (the Port screen), or pass --include-pending to write anyway: only decided "
                        "hunks are applied, pending ones stay the original CUDA")
    with terminal_progress() as progress:
        report = port.write(ws, review, arch=args.arch, check=not args.no_check,
                                copy_untouched=args.copy_untouched, force=args.force, progress=progress)
    failed = [f for f in report.files if f.status not in ("written", "merged", "kept") or f.errors]
    if args.json:
        print(json.dumps({
            "out": str(report.out), "written": report.written, "copied": report.copied,
            "compile_errors": report.compile_errors, "note": report.check_note, "arch": report.arch,
            "pending": pending,
            "untouched": {rel: [{**r.to_dict(), "written_line": review.written_line(rel, r)} for r in risks]
                          for rel, risks in review.untouched.items()},
            "files": [{"path": f.path, "status": f.status, "detail": f.detail, "check": f.check,
                       "errors": [e.__dict__ for e in f.errors]} for f in report.files],
        }, indent=2))
    else:
        for f in report.files:
            detail = f.detail or f.check or ""
            print(f"  {f.symbol} {f.path}  {f.status}{': ' + detail if detail else ''}")
            for e in f.errors:
                where = f"hunk {e.hunk_id}" if e.hunk_id else "outside the reviewed hunks"
                print(f"      line {e.line}: {e.message}  ({where})")
        if report.check_note:
            print(f"  note: {report.check_note}")
        for f in report.conflicts:
            print(f"conflict: {f.path}: {f.detail}")
        print(f"wrote {report.written} of {len(report.files)} files to {report.out}"
              + (f", copied {report.copied} others" if report.copied else "")
              + (f"; {report.compile_errors} file(s) with compile errors" if report.compile_errors else "")
              + (f" (checked for {report.arch})" if report.arch else ""))
        if pending:
            print(f"  ○ {_pending_line(pending, len(review.hunks))}: left as the original CUDA")
        if review.untouched:
            print(_manual_line(review))
            for rel, risks in review.untouched.items():
                for r in risks:
                    print(f"    ⚑ {rel}:{review.written_line(rel, r)}  {r.flag.rule_id} ({r.flag.severity})  {r.code.strip()}")
    if report.files and all(f.status in ("stale", "error") for f in report.files):
        return 2
    return 1 if failed else 0
