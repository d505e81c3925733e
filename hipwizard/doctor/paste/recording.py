"""A paste (``recognise.parse_paste``) -> a recording folder in the ``--record`` layout, so the usual report
replays it and the folder can be attached to a ticket.

Each recognised part becomes the recording of its probe (``recognise.KIND_PROBE``): ``# argv:`` of that probe,
``# status:`` (ok, or missing/failed when the paste shows the tool or file absent), ``# source: pasted, lines
A-B of LABEL``. Parts of one probe that read well together (rocm-smi views, pip listings, lspci lines) are
joined; of any other probe the first part is used and the others are listed in ``PASTE-NOTES.txt``, with
what was not recognised.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hipwizard.atomic import atomic_write_text
from hipwizard.doctor.paste.recognise import PastePart, PasteResult, parse_paste
from hipwizard.doctor.probe.replay import format_recording, slug
from hipwizard.doctor.probe.tools import EVIDENCE_PROBES, default_probes, probe_by_name
from hipwizard.runner import RunResult

NOTES_FILE = "PASTE-NOTES.txt"
_JOINABLE = {"rocm-smi", "pip", "lspci"}


def known_slugs() -> set[str]:
    """File stems a replay reads: every probe's and every evidence probe's."""
    return {slug(p.argv) for p in (*default_probes(), *EVIDENCE_PROBES)}


def write_paste(result: PasteResult, folder: Path, label: str) -> list[str]:
    """Write the recognised parts of ``result`` into ``folder`` (created); returns the file names written.
    Raises OSError when the folder cannot be written."""
    folder.mkdir(parents=True, exist_ok=True)
    chosen: dict[str, list[PastePart]] = {}
    unused: list[str] = []
    for part in result.recognised:
        have = chosen.setdefault(part.probe, [])
        if have and part.kind not in _JOINABLE:
            unused.append(f"{part.kind} ({part.lines}): a second output of the same tool, not used")
            continue
        have.append(part)
    written = []
    for name, parts in chosen.items():
        probe = probe_by_name(name)
        if probe is None:
            continue
        res = _result(probe.argv, parts)
        text = format_recording(res).replace(
            "# status:", f"# source: pasted, {', '.join(p.lines for p in parts)} of {label}\n# status:", 1)
        file_name = f"{slug(probe.argv)}.txt"
        atomic_write_text(folder / file_name, text)
        written.append(file_name)
    notes = [result.summary(), *unused, *(f"{p.lines}: {p.note}" for p in result.parts if p.note)]
    notes += [f"{p.lines}: not recognised (starts {p.text.strip().splitlines()[0][:60]!r})" for p in result.unrecognised]
    atomic_write_text(folder / NOTES_FILE, "\n".join(notes) + "\n")
    return sorted(written)


def _result(argv: tuple[str, ...], parts: list[PastePart]) -> RunResult:
    first = parts[0]
    if first.status == "missing":
        return RunResult(argv, "missing", None, "", first.text, 0.0, first.text.strip().splitlines()[0][:120])
    if first.status == "failed":
        return RunResult(argv, "failed", 1, "", first.text, 0.0)
    body = "\n".join(p.text.rstrip("\n") for p in parts if p.status == "ok") + "\n"
    return RunResult(argv, "ok", 0, body, "", 0.0)


def record_paste(text: str, folder: Path, label: str) -> PasteResult:
    """Parse ``text`` and write it into ``folder``; the PasteResult says what was recognised."""
    result = parse_paste(text)
    write_paste(result, folder, label)
    return result


def loose_files(directory: Path) -> list[Path]:
    """Text files of a replay folder that are not recordings of a known probe (pasted outputs)."""
    known = known_slugs()
    try:
        files = sorted(p for p in directory.iterdir() if p.is_file() and p.suffix in (".txt", ".log", ".md", ""))
    except OSError:
        return []
    return [p for p in files if p.name.split("~")[0].removesuffix(p.suffix) not in known
            and p.name not in (NOTES_FILE, "README.txt", "README.md", "SOURCES.md")]


def materialise(directory: Path) -> tuple[Path, PasteResult] | None:
    """A replay folder holding pasted files (any name) -> a temporary recording folder with its recordings
    and the pastes split and recognised; None when the folder holds no loose files."""
    loose = loose_files(directory)
    if not loose:
        return None
    target = Path(tempfile.mkdtemp(prefix=f"hipwizard-{directory.name[:40]}-"))
    known = known_slugs()
    for path in directory.iterdir():
        if path.is_file() and path.suffix == ".txt" and path.name.split("~")[0].removesuffix(".txt") in known:
            shutil.copy2(path, target / path.name)
    merged = PasteResult()
    for path in loose:
        text = path.read_bytes()[: 8 * 2**20].decode("utf-8", errors="replace")
        merged.parts.extend(parse_paste(_body(text)).parts)
    recorded = {p.name for p in target.iterdir()}
    fresh = PasteResult([p for p in merged.parts if not p.kind or (probe := probe_by_name(p.probe)) is None
                         or f"{slug(probe.argv)}.txt" not in recorded])
    write_paste(fresh, target, directory.name)
    return target, merged


def _body(text: str) -> str:
    """A shared-fixture style file: drop the leading ``# key: value`` header lines."""
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines) and lines[i].startswith("# ") and ":" in lines[i][:40]:
        i += 1
    return "".join(lines[i:])
