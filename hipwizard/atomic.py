"""Atomic file writes: temp file in the same directory, fsync, rename, fsync the directory.

A crash or `kill -9` at any moment leaves either the old file or the new one, never half of each.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, mode: int = 0o644) -> None:
    """Write ``data`` to ``path`` atomically (creating parent folders)."""
    atomic_write_chunks(path, (data,), mode)


def atomic_write_chunks(path: str | os.PathLike[str], chunks: Iterable[Any], mode: int = 0o644) -> None:
    """Write the buffers of ``chunks`` (bytes, memoryviews, arrays) back to back to ``path`` atomically.

    Writing buffers in place, one after the other, spares joining them into one bytes object first
    (a full copy of a file that can be hundreds of MB).
    """
    target = Path(path)
    fd, tmp = temp_beside(target)
    try:
        with os.fdopen(fd, "wb", buffering=0) as fh:
            for chunk in chunks:
                write_all(fh, chunk)
            commit(fh, tmp, target, mode)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def temp_beside(target: Path) -> tuple[int, Path]:
    """A new temp file next to ``target`` (parents created), named ``.<name>.XXXXXXXX.tmp`` so that what a
    killed write leaves is recognisable (``port.output.worktree.remove_temps``): (its fd, its path)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    return fd, Path(tmp)


def write_all(fh, chunk: Any) -> None:
    """Write one buffer whole to an unbuffered file (a raw write may be partial)."""
    view = memoryview(chunk).cast("B")
    while view:
        view = view[fh.write(view):]


def commit(fh, tmp: Path, target: Path, mode: int = 0o644) -> None:
    """Make the temp file ``tmp`` (open as ``fh``) durable and move it to ``target``: flush, fsync, close,
    chmod, rename, fsync the folder. The caller removes ``tmp`` if this raises."""
    fh.flush()
    os.fsync(fh.fileno())
    fh.close()
    os.chmod(tmp, mode)
    os.replace(tmp, target)
    fsync_dir(target.parent)


def atomic_write_text(path: str | os.PathLike[str], text: str, mode: int = 0o644) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode)


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def fsync_dir(folder: Path) -> None:
    """fsync a folder so a rename or a new file in it survives a crash (best effort)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
