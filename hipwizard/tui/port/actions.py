"""The Port screen's review keys: decide (y n a d A u s e), move (j k J K, the file list, the results), filter
(f) and search (/). A mixin of ``PortScreen``: it works on the screen's ``review`` (``ReviewState``, which saves
every change at once) and ``nav`` (``ReviewNav``), and redraws through the screen's ``fill_files``,
``update_files`` and ``show_hunk`` (all declared in ``host.ReviewHost``). Decisions wait while a write or a
re-read holds the screen (``when_idle``); moving around does not.
"""

from __future__ import annotations

from typing import Callable, Literal, TypeVar

from textual.app import SuspendNotSupported
from textual.widgets import Input, OptionList, Select

from hipwizard.errors import UserError
from hipwizard.port import edit_lines, editor_command
from hipwizard.tui.port.host import ReviewKeys
from hipwizard.tui.step_screen import when_idle

# Above this many changed hunks a decision redraws the whole file list instead of its rows one by one.
WHOLE_LIST_REDRAW = 50

T = TypeVar("T")

class ReviewActions(ReviewKeys):
    _filter_choices: int = 0  # how many choices the filter dropdown was last given
    # --- decisions ------------------------------------------------------------------------------
    def read_only_says(self) -> bool:
        """True (and says why) when another session writes this review: decisions, edits and writes do nothing."""
        if self.review is None or self.review.read_only is None:
            return False
        self.notify(f"Read-only: {self.open_review.read_only}. Press r to re-read once it is closed.",
                    severity="warning", timeout=8)
        return True

    def _save_guard(self, change: Callable[[], T]) -> T | None:
        if self.read_only_says():
            return None
        try:
            return change()
        except OSError as exc:
            self.notify(f"✖ Not saved — {self.open_review.path}: {exc.strerror or exc}", severity="error", timeout=10)
            return None
        except UserError as exc:  # another session took the review, or the journal is a link
            self.notify(f"✖ Not saved — {exc}", severity="error", timeout=10)
            return None

    def _decide(self, ids: list[str], state: Literal["accepted", "rejected"], *, advance: bool, only_pending: bool = False) -> None:
        changed = self._save_guard(lambda: self.open_review.decide(ids, state, only_pending=only_pending))
        if changed is None:
            return
        self.update_files({self.open_review.hunk(i).file for i in changed} if len(changed) < WHOLE_LIST_REDRAW else self.open_nav.files)
        if advance:
            self.open_nav.step(1)
        self.show_hunk()

    @when_idle
    def action_accept(self) -> None:
        if self.open_nav.current:
            self._decide([self.open_nav.current.hunk_id], "accepted", advance=True)

    @when_idle
    def action_reject(self) -> None:
        if self.open_nav.current:
            self._decide([self.open_nav.current.hunk_id], "rejected", advance=True)

    @when_idle
    def action_accept_file(self) -> None:
        if self.open_nav.current:
            self._decide(self.open_nav.file_ids(self.open_nav.current.file), "accepted", advance=False, only_pending=True)

    @when_idle
    def action_reject_file(self) -> None:
        if self.open_nav.current:
            self._decide(self.open_nav.file_ids(self.open_nav.current.file), "rejected", advance=False, only_pending=True)

    @when_idle
    def action_accept_unflagged(self) -> None:
        ids = [h.hunk_id for h in self.open_review.hunks if not h.flags]
        self._decide(ids, "accepted", advance=False, only_pending=True)

    @when_idle
    def action_undo(self) -> None:
        current = self.open_nav.current.hunk_id if self.open_nav.current else None
        touched = self._save_guard(self.open_review.undo)
        if touched is None:
            if not self.open_review.history:
                self.notify("Nothing to undo.")
            return
        self.open_nav.rebuild(keep=touched[-1] if touched[-1] in self.open_review.index_of else current,
                         keep_file=self.open_nav.current_file)
        self.fill_files()
        self.show_hunk()

    @when_idle
    def action_split(self) -> None:
        hunk = self.open_nav.current
        if hunk is None:
            return
        children = self._save_guard(lambda: self.open_review.split(hunk.hunk_id))
        if not children:
            if children == []:
                self.notify("This hunk cannot be split further.")
            return
        self.open_nav.rebuild(keep=children[0].hunk_id)
        self.fill_files()
        self.show_hunk()
        self.notify(f"Split into {len(children)} hunks.")

    @when_idle
    def action_edit(self) -> None:
        hunk = self.open_nav.current
        if hunk is None or self.read_only_says():
            return
        d = self.open_review.decision(hunk.hunk_id)
        start = d.lines if d.state == "edited" and d.lines is not None else hunk.new_lines
        try:
            argv = editor_command()  # before the terminal is handed over: no editor is said here, inline
            try:
                with self.app.suspend():
                    lines = edit_lines(start, argv=argv)
            except SuspendNotSupported:  # a driver that cannot suspend (tests, web): run the editor as is
                lines = edit_lines(start, argv=argv)
        except UserError as exc:
            self.notify(f"✖ {exc}", severity="error", timeout=8)
            return
        self.refresh()
        if lines is None:
            self.notify("No change made in the editor.")
            return
        edited = lines

        def save() -> list[str]:
            self.open_review.edit(hunk.hunk_id, edited)
            return [hunk.hunk_id]

        if self._save_guard(save) is not None:
            self.update_files([hunk.file])
            self.show_hunk()

    # --- navigation -----------------------------------------------------------------------------
    def _move(self, moved: bool, what: str) -> None:
        if moved:
            self.show_hunk()
        else:
            self.notify(f"No {what}.", timeout=2)

    def action_next(self) -> None:
        self._move(self.open_nav.step(1), "next hunk")

    def action_prev(self) -> None:
        self._move(self.open_nav.step(-1), "previous hunk")

    def action_next_pending(self) -> None:
        self._move(self.open_nav.step_pending(1), "pending hunk after this one")

    def action_prev_pending(self) -> None:
        self._move(self.open_nav.step_pending(-1), "pending hunk before this one")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        option_id = event.option.id or ""
        if event.option_list.id == "port-filelist":
            self._move(self.open_nav.go_to_file(option_id), "hunk or risk in this file")
        elif event.option_list.id == "port-results" and option_id.startswith("conflict|"):
            self.ask_resolve(option_id.split("|", 1)[1])
        elif event.option_list.id == "port-results" and option_id.startswith("region|"):
            self.ask_region(option_id)
        elif event.option_list.id == "port-results" and option_id:
            self.jump_to_hunk(option_id.split("|", 1)[1])

    def jump_to_hunk(self, hunk_id: str) -> None:
        if hunk_id not in self.open_review.index_of:
            return
        if not self.open_nav.go_to_id(hunk_id):
            self.query_one("#port-filter", Select).value = "all"
            self.open_nav.set_filter("all")
            self.fill_files()
            self.open_nav.go_to_id(hunk_id)
        self.show_hunk()
        self.query_one("#port-hunk-body").focus()

    # --- filter and search ----------------------------------------------------------------------
    def _set_filter_options(self, value: str) -> None:
        """The filter dropdown's choices (the fixed ones, then one per rule id present in the review), on
        ``value``."""
        select = self.query_one("#port-filter", Select)
        options = self.open_nav.filter_options()
        select.set_options([(label, key) for key, label in options])
        self._filter_choices = len(options)
        select.value = value

    def action_cycle_filter(self) -> None:
        keys = self.open_nav.filter_keys()
        nxt = keys[(keys.index(self.open_nav.filter) + 1) % len(keys)] if self.open_nav.filter in keys else "all"
        self._set_filter_options(nxt)

    def on_select_changed(self, event: Select.Changed) -> None:
        if self.nav is None or event.value == self.open_nav.filter or event.value is Select.NULL:
            return
        self.open_nav.set_filter(str(event.value))
        self.fill_files()
        self.show_hunk()

    def on_descendant_focus(self, event) -> None:
        # The rule filters appear in the dropdown once a review is open.
        if getattr(event.widget, "id", None) == "port-filter" and self.nav is not None:
            if self._filter_choices < len(self.open_nav.filter_options()):
                self._set_filter_options(self.open_nav.filter)

    def action_search(self) -> None:
        search = self.query_one("#port-search", Input)
        search.display = True
        search.focus()

    def action_close_search(self) -> None:
        search = self.query_one("#port-search", Input)
        if search.display:
            search.display = False
            self.query_one("#port-hunk-body").focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "port-search" or self.nav is None:
            return
        found = self.open_nav.search(event.value)
        if found is None:
            self.notify(f"No hunk matches {event.value!r}.", severity="warning")
        else:
            self.jump_to_hunk(found)
