"""The doctor's part of the embedded demo.

Nothing is faked: on a machine without a GPU the doctor's live checks are exactly the tour — each ✖ and ⚠
says what this machine lacks for an MI300X fine-tune and how to get it. ``prepare`` only marks the
workspace so the screen opens with a line explaining that.
"""

from __future__ import annotations

from hipwizard.doctor.state import set_demo_note
from hipwizard.workspace import Workspace

DEMO_NOTE = ("Demo: these are live checks of this machine. Every ✖ fail and ⚠ warn says what it lacks for an "
             "MI300X fine-tune, why it matters and how to get it.")


def prepare(ws: Workspace) -> None:
    """Record the demo note in the doctor's state (keeps a saved report if there is one)."""
    set_demo_note(ws, DEMO_NOTE)
