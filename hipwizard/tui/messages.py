"""The TUI's message types, in one place (toolong's way): what workers post back to the screens.

Plain ``@dataclass`` messages. ``WorkProgress`` coalesces: a pending twin for the same job is replaced, so a
fast producer never floods the UI.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

from hipwizard.progress import Progress

if TYPE_CHECKING:
    from hipwizard.train import RunSnapshot


@dataclass
class WorkProgress(Message):
    """A background job of a screen reports how far it got."""

    job: str
    progress: Progress

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, WorkProgress) and message.job == self.job


@dataclass
class RunUpdated(Message):
    """Train: a new picture of the attached run (from the watch worker). A pending older one is dropped, so
    a log that grows by thousands of lines a second costs at most one redraw per poll."""

    snap: RunSnapshot
    generation: int  # the attach it belongs to: snapshots of a run attached before are ignored

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RunUpdated)
