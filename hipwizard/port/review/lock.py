"""One writer per review: an advisory lock beside the state file, released by the OS when its holder dies.

``<out>.review.lock`` (beside ``<out>.review.json``) is locked with ``flock`` by whoever writes decisions:
a review session (the Port screen, ``review --write`` / ``--resolve``, ``hipify`` over an existing review)
holds it while it runs; any other change takes it for the one write. A second session finds it taken and
opens read-only (the screen) or refuses (the CLI: ``ReviewBusy``, exit 2). The file holds the holder's pid,
for the message only: the lock itself is the ``flock``, so a holder killed with ``kill -9`` frees it at
once and a stale pid in the file means nothing. The file is opened with ``O_NOFOLLOW`` (a link planted in
its place is refused, never written through) and never deleted (deleting a locked file lets two holders
lock two different files).

Locks are per open file, so one process opening the file twice would lock itself out: the locks this
process holds are counted here, per lock file, and a second hold in the same process shares the first.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from hipwizard.errors import UserError

# lock file path -> [fd, holds]: the locks this process holds.
_HELD: dict[str, list[int]] = {}


class ReviewBusy(UserError):
    """Another session writes this review."""

    def __init__(self, state_path: Path, pid: int | None) -> None:
        self.pid = pid
        who = f" (pid {pid})" if pid else ""
        super().__init__(f"the review {state_path} is open in another session{who}; close it there first "
                         "(its decisions are saved as they are made)")


def lock_path(state_path: Path) -> Path:
    """``<out>.review.lock`` for ``<out>.review.json`` (any other name: the name plus ``.lock``)."""
    state_path = Path(state_path)
    return state_path.with_name(state_path.name.removesuffix(".json") + ".lock")


def _open(path: Path) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UserError(f"refusing to use the review lock {path}: it is a symbolic link") from None
        raise


class ReviewLock:
    """The lock of the review whose state file is ``state_path``."""

    def __init__(self, state_path: Path) -> None:
        self.state_path = Path(state_path)
        self.path = lock_path(self.state_path)
        self.held = 0  # holds this object has (each one counted in _HELD)

    def acquire(self) -> bool:
        """Take the lock without waiting: True when this process holds it now. Raises ``UserError`` for a
        lock file that is a link, ``OSError`` when it cannot be created (a read-only folder)."""
        key = str(self.path.absolute())
        if key in _HELD:
            _HELD[key][1] += 1
            self.held += 1
            return True
        fd = _open(self.path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return False
            raise
        try:  # the pid, for the other session's message
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass
        _HELD[key] = [fd, 1]
        self.held += 1
        return True

    def release(self) -> None:
        """Give back every hold this object took (the lock goes when no hold of this process is left)."""
        key = str(self.path.absolute())
        while self.held:
            self.held -= 1
            entry = _HELD.get(key)
            if entry is None:
                break
            entry[1] -= 1
            if entry[1] <= 0:
                del _HELD[key]
                try:
                    os.ftruncate(entry[0], 0)
                except OSError:
                    pass
                os.close(entry[0])  # closing the last descriptor drops the flock

    def release_one(self) -> None:
        """Give back one hold (a change's own, taken for one write)."""
        if not self.held:
            return
        held, self.held = self.held, 1
        self.release()
        self.held = held - 1

    def holder(self) -> int | None:
        """The pid written by the session holding the lock (None: not said, or not readable)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            text = os.read(fd, 32).decode("ascii", "replace").strip()
        finally:
            os.close(fd)
        return int(text) if text.isdigit() else None

    def busy(self) -> ReviewBusy:
        return ReviewBusy(self.state_path, self.holder())
