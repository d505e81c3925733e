"""Wait in a Pilot test for what the app does on its own time (workers, layout), never for a fixed pause."""

from __future__ import annotations

import time


async def until(pilot, predicate, timeout: float = 30.0, describe=None) -> None:
    """Let the app run until ``predicate()`` holds; fail the test after ``timeout`` seconds (saying what
    ``describe()`` returns then, when given: the app's state that explains the wait)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not reached in time" + (f": {describe()}" if describe else ""))


def eventually(predicate, timeout: float = 30.0, step: float = 0.05) -> None:
    """Outside an app (a process, a file): poll until ``predicate()`` holds; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(step)


def toasts(app) -> list:
    """The app's toasts still on screen (Textual ``Notification``s), oldest first. Textual has no public
    reader for them: this is the one place a test touches its private ``_notifications``."""
    return list(app._notifications)


def notifications(app) -> list[str]:
    """The words of the app's toasts still on screen, oldest first."""
    return [str(n.message) for n in toasts(app)]
