"""Recorded tool outputs: replay them through the runner seam, or record live ones for a support ticket.

The format of a recording directory (``hipwizard doctor --record DIR`` writes it, ``--replay DIR`` reads it):

* one text file per command run, named ``<slug>.txt``; the same command run again in one session is
  ``<slug>~2.txt``, ``<slug>~3.txt`` ... (answered in that order, the last one repeats);
* the slug is the argv with the program reduced to its base name (any ``python3.X`` interpreter becomes
  ``python``), joined with ``_``, every run of characters other than ``A-Z a-z 0-9 . + = -`` becoming one
  ``_`` — e.g. ``rocm-smi --showproductname --showmeminfo vram --json`` ->
  ``rocm-smi_--showproductname_--showmeminfo_vram_--json.txt`` and ``cat /opt/rocm/.info/version`` ->
  ``cat_opt_rocm_.info_version.txt``;
* a file starts with ``# key: value`` header lines, then the output::

      # argv: rocminfo
      # status: failed          (ok | failed | missing | timeout | error; default: from the exit code)
      # exit code: 1
      # ---- stdout ----
      ...
      # ---- stderr ----
      ...

  Other header keys (``# source:``, ``# note:`` ...) are kept as notes. With no ``# ---- stdout ----``
  marker, everything after the header is stdout. This is the layout of the shared fixture files, so a
  real output pasted by a user only needs the right file name.

Files that match no probe are ignored. A damaged file (binary, truncated, unreadable) still answers: its
bytes are decoded with replacement characters and the parsers say what they could not read.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from hipwizard.atomic import atomic_write_text
from hipwizard.runner import Runner, RunResult

_STATUSES = {"ok", "failed", "missing", "timeout", "error"}
_PYTHON = re.compile(r"^python[0-9.]*$")
_UNSAFE = re.compile(r"[^A-Za-z0-9.+=-]+")
_HEADER = re.compile(r"^#\s*([A-Za-z][A-Za-z _-]*?)\s*:\s?(.*)$")
_STDOUT_MARK = "# ---- stdout ----"
_STDERR_MARK = "# ---- stderr ----"
NOT_RECORDED = "not recorded"
MAX_RECORDING_BYTES = 8 * 2**20  # a recording larger than this is read only up to this size


def slug(argv: Sequence[str]) -> str:
    """The file-name stem of a command's recording (see the module docstring)."""
    if not argv:
        return "empty"
    prog = os.path.basename(str(argv[0])) or str(argv[0])
    if _PYTHON.match(prog) or prog == os.path.basename(sys.executable):
        prog = "python"
    text = "_".join([prog, *map(str, argv[1:])])
    return (_UNSAFE.sub("_", text).strip("_") or "empty")[:120]


@dataclass
class Recording:
    """One recorded run, as read from a file."""

    path: Path
    argv: tuple[str, ...]
    result: RunResult
    notes: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def read_recording(path: Path, argv: Sequence[str] | None = None) -> Recording:
    """Parse one recording file. Never raises for bad content: problems are listed instead."""
    problems: list[str] = []
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_RECORDING_BYTES + 1)
    except OSError as exc:
        res = RunResult(tuple(argv or ()), "error", note=f"recording {path.name} unreadable: {exc.strerror or exc}")
        return Recording(path, res.argv, res, problems=[res.note])
    if len(raw) > MAX_RECORDING_BYTES:
        raw = raw[:MAX_RECORDING_BYTES]
        problems.append(f"{path.name} is larger than {MAX_RECORDING_BYTES} bytes; read its start only")
    if b"\x00" in raw[:4096]:
        problems.append(f"{path.name} looks binary (NUL bytes), not a text recording")
    text = raw.decode("utf-8", errors="replace").replace("\x00", "")
    if "\ufffd" in text and not problems:
        problems.append(f"{path.name} is not valid UTF-8; undecodable bytes were replaced")

    lines = text.splitlines(keepends=True)
    notes: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i].rstrip("\r\n")
        if line.strip() in (_STDOUT_MARK, _STDERR_MARK):
            break
        m = _HEADER.match(line)
        if not m:
            break
        notes[m.group(1).strip().lower()] = m.group(2).strip()
        i += 1
    body = lines[i:]
    stdout, stderr = _split_sections(body)

    rec_argv = tuple(notes["argv"].split()) if notes.get("argv") else tuple(argv or (path.stem,))
    returncode: int | None = None
    code_text = notes.get("exit code", "").strip()
    if code_text:
        try:
            returncode = int(code_text.split()[0])
        except ValueError:
            problems.append(f"{path.name}: exit code {code_text!r} is not a number")
    status = notes.get("status", "").split()[0].lower() if notes.get("status") else ""
    if status and status not in _STATUSES:
        problems.append(f"{path.name}: unknown status {status!r}")
        status = ""
    if not status:
        status = "ok" if returncode in (None, 0) else "failed"
    if status == "ok" and returncode is None:
        returncode = 0
    duration = 0.0
    try:
        duration = float(notes.get("duration", "0").split()[0] or 0)
    except (ValueError, IndexError):
        pass
    note = notes.get("note", "")
    if status == "missing" and not note:
        note = f"{rec_argv[0] if rec_argv else '?'} not found (recorded)"
    res = RunResult(tuple(argv or rec_argv), status, returncode, stdout, stderr, duration, note)  # type: ignore[arg-type]
    return Recording(path, rec_argv, res, notes, problems)


def _split_sections(body: list[str]) -> tuple[str, str]:
    out: list[str] = []
    err: list[str] = []
    target = out
    marked = False
    for line in body:
        stripped = line.strip()
        if stripped == _STDOUT_MARK:
            target, marked = out, True
            continue
        if stripped == _STDERR_MARK:
            target, marked = err, True
            continue
        target.append(line)
    if not marked:
        return "".join(body), ""
    return "".join(out), "".join(err)


class ReplayRunner:
    """A Runner answering from a recording directory instead of running anything."""

    def __init__(self, directory: str | os.PathLike[str]):
        self.directory = Path(directory)
        self._calls: dict[str, int] = {}
        self._lock = threading.Lock()
        self.problems: dict[str, list[str]] = {}  # slug -> what was wrong with its file

    def recorded_slugs(self) -> set[str]:
        """Slugs that have at least one recording file."""
        try:
            names = [p.name for p in self.directory.iterdir() if p.suffix == ".txt"]
        except OSError:
            return set()
        return {n[:-4].split("~")[0] for n in names}

    def _path(self, stem: str, nth: int) -> Path | None:
        candidates = [self.directory / f"{stem}.txt"] if nth == 1 else []
        candidates.append(self.directory / f"{stem}~{nth}.txt")
        for cand in candidates:
            if cand.is_file():
                return cand
        if nth > 1:  # fewer recordings than calls: the last one repeats
            return self._path(stem, nth - 1)
        return None

    def run(self, argv, *, timeout=30.0, env=None, cwd=None) -> RunResult:
        argv = tuple(str(a) for a in argv)
        stem = slug(argv)
        with self._lock:
            nth = self._calls[stem] = self._calls.get(stem, 0) + 1
        path = self._path(stem, nth)
        if path is None:
            return RunResult(argv, "error", note=f"{NOT_RECORDED} in {self.directory.name}/ (no {stem}.txt)")
        rec = read_recording(path, argv)
        if rec.problems:
            self.problems[stem] = rec.problems
        res = rec.result
        if res.status == "ok" and res.duration_s and res.duration_s > timeout:
            return RunResult(argv, "timeout", None, res.stdout, res.stderr, timeout, note=f"{timeout:g} s")
        return res

    def which(self, name: str) -> str | None:
        prog = slug([name])
        for stem in self.recorded_slugs():
            if stem == prog or stem.startswith(prog + "_"):
                rec = read_recording(self._path(stem, 1) or self.directory / f"{stem}.txt")
                if rec.result.status != "missing":
                    return name
        return None


class RecordingRunner:
    """Wraps a real Runner and writes every result into a recording directory (the format above)."""

    def __init__(self, inner: Runner, directory: str | os.PathLike[str]):
        self.inner = inner
        self.directory = Path(directory)
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def run(self, argv, *, timeout=30.0, env: Mapping[str, str] | None = None, cwd=None) -> RunResult:
        res = self.inner.run(argv, timeout=timeout, env=env, cwd=cwd)
        stem = slug(res.argv or tuple(argv))
        with self._lock:
            nth = self._counts[stem] = self._counts.get(stem, 0) + 1
        name = f"{stem}.txt" if nth == 1 else f"{stem}~{nth}.txt"
        atomic_write_text(self.directory / name, format_recording(res))
        return res

    def which(self, name: str) -> str | None:
        return self.inner.which(name)


def format_recording(res: RunResult) -> str:
    """The text of one recording file for a RunResult."""
    head = [
        f"# argv: {' '.join(portable_argv(res.argv))}",
        f"# status: {res.status}",
    ]
    if res.returncode is not None:
        head.append(f"# exit code: {res.returncode}")
    head.append(f"# duration: {res.duration_s:.2f}")
    if res.note:
        head.append(f"# note: {res.note}")
    out = res.stdout if res.stdout.endswith("\n") or not res.stdout else res.stdout + "\n"
    err = res.stderr if res.stderr.endswith("\n") or not res.stderr else res.stderr + "\n"
    return "\n".join(head) + f"\n{_STDOUT_MARK}\n{out}{_STDERR_MARK}\n{err}"


def portable_argv(argv: Sequence[str]) -> list[str]:
    """The argv as recorded: a python interpreter path becomes ``python`` so replays match anywhere."""
    if not argv:
        return []
    first = os.path.basename(argv[0]) or argv[0]
    if _PYTHON.match(first) or argv[0] == sys.executable:
        first = "python"
    return [first, *argv[1:]]
