"""The Port screen's conflict keys: settle a write's conflict with the user's edits from the results panel —
the whole file (m or Enter on its row: mine / new / merged, ``port.resolve``) or one conflict at a time
(m or Enter on a conflict's row: mine / new, ``port.choose``; the file is written once all are decided).
A mixin of ``PortScreen``: it uses the screen's ``review``, ``last_write``, ``busy`` and ``fill_results`` (all
declared in ``host.ReviewHost``). Settling waits while a write or a re-read holds the screen (``when_idle``).
"""

from __future__ import annotations

from typing import Literal

from textual.widgets import OptionList

from hipwizard import port
from hipwizard.errors import UserError
from hipwizard.tui.port.dialogs import ChooseRegion, ResolveConflict
from hipwizard.tui.port.host import ReviewKeys
from hipwizard.tui.step_screen import when_idle


class ConflictActions(ReviewKeys):
    # --- settling a write's conflict with the user's edits ---------------------------------------
    def action_resolve(self) -> None:
        results = self.query_one("#port-results", OptionList)
        index = results.highlighted
        option = results.get_option_at_index(index) if results.display and index is not None else None
        option_id = (option.id or "") if option is not None else ""
        if option_id.startswith("region|"):
            self.ask_region(option_id)
            return
        if not option_id.startswith("conflict|"):
            self.notify("Highlight a file in conflict in the results panel first (✖ … → m: settle).",
                        severity="warning")
            return
        self.ask_resolve(option_id.split("|", 1)[1])

    @when_idle
    def ask_region(self, option_id: str) -> None:
        """Open one conflict (row id ``region|<n>|<path>``) to decide: mine or new."""
        _, index, rel = option_id.split("|", 2)
        if self.read_only_says():
            return
        try:
            regions = [h for h in port.output_hunks(self.open_review, edits=False) if h.file == rel]
        except UserError as exc:
            self.notify(f"✖ {exc}", severity="error", timeout=10)
            return
        hunk = next((h for h in regions if h.index == int(index)), None)
        if hunk is None:
            self.fill_results()
            self.notify(f"{rel} has no conflict #{index} any more.", severity="warning")
            return
        self.app.push_screen(ChooseRegion(hunk, len(regions)),
                             lambda choice: self._choose(rel, hunk.index, choice) if choice else None)

    def _choose(self, rel: str, index: int, choice: str) -> None:
        try:
            done = port.choose(self.open_review, rel, index, choice)
        except UserError as exc:
            self.notify(f"✖ {exc}", severity="error", timeout=10)
            return
        if done:
            for f in (self.last_write.files if self.last_write is not None else ()):
                if f.path == rel and f.status == "conflict":
                    f.status = "written"
                    f.detail = "every conflict decided"
        self.fill_results()
        self.notify(f"✔ {rel}#{index}: {'yours' if choice == 'mine' else 'new result'} chosen"
                    + ("; every conflict decided, file written." if done else "; the file is written once all are decided."))

    @when_idle
    def ask_resolve(self, rel: str) -> None:
        if self.read_only_says():
            return
        why = port.worktree_status(self.open_review, edited=False).conflicts.get(rel)
        if why is None and self.last_write is not None:
            why = next((f.detail for f in self.last_write.conflicts if f.path == rel), None)
        self.app.push_screen(ResolveConflict(rel, (why or "in conflict").split("; your file")[0]),
                             lambda choice: self._settle(rel, choice) if choice else None)

    def _settle(self, rel: str, choice: str) -> None:
        try:
            port.resolve(self.open_review, rel, choice)
        except UserError as exc:
            self.notify(f"✖ {exc}", severity="error", timeout=10)
            return
        outcomes: dict[str, tuple[Literal["kept", "written"], str]] = {"mine": ("kept", "your file kept (conflict settled)"),
                "new": ("written", "new result written (conflict settled)"),
                "merged": ("written", "merged text with conflict markers written: edit the markers out")}
        done = outcomes[choice]
        for f in (self.last_write.files if self.last_write is not None else ()):
            if f.path == rel and f.status == "conflict":
                f.status, f.detail = done
        self.fill_results()
        self.notify(f"✔ {rel}: {done[1]}.")
