"""One migration record: the doctor's verdicts, the port, parity and training runs of a workspace, each
stamped with its environment, exported as one self-contained HTML file or as Markdown (``hipwizard report``).

``collect`` reads what the steps saved; ``document`` turns it into blocks; ``render`` writes HTML or Markdown;
``plots`` draws the charts with matplotlib. ``demo`` fills the embedded demo workspace so its report is full.
"""

from __future__ import annotations

from pathlib import Path

from hipwizard.errors import UserError
from hipwizard.workspace import Workspace


def make_report(ws: Workspace, out: str | Path, *, full: bool = False) -> list[Path]:
    """Write the workspace's report to ``out`` (.html or .md); returns the files written. Bad output paths
    raise ``UserError`` before anything is written."""
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
    blocks = build(collect(ws, full=full))
    try:
        parent.mkdir(parents=True, exist_ok=True)
        return render.write(blocks, path)
    except OSError as exc:
        raise UserError(f"cannot write the report {path}: {exc.strerror or exc}") from None
