"""One migration record: the doctor's verdicts, the port, parity and training runs of a workspace, each
stamped with its environment, exported as one self-contained HTML file or as Markdown (``hipwizard report``).

``collect`` reads what the steps saved; ``document`` turns it into blocks; ``render`` writes HTML or Markdown;
``plots`` draws the charts with matplotlib. ``demo`` fills the embedded demo workspace so its report is full.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from hipwizard.errors import UserError
from hipwizard.report import state
from hipwizard.workspace import Workspace


def _digest(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def _not_ours(ws: Workspace, targets) -> Path | None:
    """The first existing target that hipwizard did not write last, as it left it (a hand edit, another file)."""
    written = state.written_digests(ws)
    for target in targets:
        try:
            now = _digest(target.read_bytes())
        except FileNotFoundError:
            continue
        except OSError:
            return target
        if written.get(str(target)) != now:
            return target
    return None


def make_report(ws: Workspace, out: str | Path, *, full: bool = False, force: bool = False) -> list[Path]:
    """Write the workspace's report to ``out`` (.html or .md); returns the files written. Bad output paths,
    and a file there that hipwizard did not write last (edited by hand, or someone else's; ``force`` replaces
    it), raise ``UserError`` before anything is written."""
    from hipwizard.report import render
    from hipwizard.report.collect import collect
    from hipwizard.report.document import build

    path = Path(out).expanduser()
    if not path.is_absolute():
        path = Path.cwd() / path
    if path.is_dir():
        raise UserError(f"--out {out} is a folder; name the report file, e.g. {Path(out) / 'report.html'}")
    if path.suffix.lower() not in (".html", ".htm", ".md", ".markdown"):
        raise UserError(f"--out {out}: write the report as FILE.html or FILE.md")
    parent = path.parent
    if parent.exists() and not parent.is_dir():
        raise UserError(f"--out {out}: {parent} is a file, not a folder")
    contents = render.files(build(collect(ws, full=full)), path)
    theirs = None if force else _not_ours(ws, contents)
    if theirs is not None:
        raise UserError(f"{theirs} exists and was changed since hipwizard wrote it (or hipwizard did not write it): "
                        "choose another --out, or pass --force to replace it")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        written = render.write(contents)
    except OSError as exc:
        raise UserError(f"cannot write the report {path}: {exc.strerror or exc}") from None
    try:
        state.record_written(ws, {p: _digest(contents[p]) for p in written})
    except OSError:
        pass  # the report is written; the next run will ask before replacing it
    return written
