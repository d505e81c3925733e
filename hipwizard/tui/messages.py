"""The TUI's message types, in one place (toolong's way): what workers post back to the screens.

Plain ``@dataclass`` messages. ``WorkProgress`` coalesces: a pending twin for the same job is replaced, so a
fast producer never floods the UI.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from hipwizard.progress import Progress


@dataclass
class WorkProgress(Message):
    """A background job of a screen reports how far it got."""

    job: str
    progress: Progress

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, WorkProgress) and message.job == self.job
