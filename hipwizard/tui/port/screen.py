"""Step 2, the review: accept or reject hipify hunks one by one (``git add -p`` / lazygit staging style).

Layout and event wiring only; decisions live in ``hipwizard.port.review_state`` (saved after every
change), navigation in ``hipwizard.port.review_nav``, writing in ``hipwizard.port.apply``.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Button, ContentSwitcher, Footer, Header, Input, OptionList, Select, Static
from textual.widgets.option_list import Option

from hipwizard.errors import UserError
from hipwizard.port.review_nav import FILTERS, ReviewNav
from hipwizard.port.review_state import ReviewState
from hipwizard.tui.port.file_list import FileList
from hipwizard.tui.port.hunk_view import HunkView, render_file_risks, render_hunk
from hipwizard.tui.port.dialogs import ConfirmWrite, MigrationForm

REVIEW_ACTIONS = {"accept", "reject", "undo", "split", "edit", "accept_file", "reject_file", "accept_unflagged",
                  "next", "prev", "next_pending", "prev_pending", "search", "cycle_filter", "write"}


class PortScreen(Screen):
    step_key = "port"
    CSS_PATH = "port.tcss"
    HELP_TITLE = "Port — review hipify hunks"
    HELP_TEXT = ("Like `git add -p`: each hunk is a change hipify made. y takes the translation, n keeps the "
                 "original, e lets you write your own. Pending hunks keep the original when you write. Every "
                 "decision is saved at once beside the output folder (<output>.review.json and its journal).\n"
                 "File list: ○ pending  ✔ accepted/edited  ✖ rejected  ⚑ risk flags (on hunks, and on lines the "
                 "translation left unchanged: \"(n unchanged)\"). Risks on unchanged lines have nothing to "
                 "accept or reject — they are listed under each hunk of their file and need a manual edit.")
    BINDINGS = [
        Binding("y", "accept", "Accept", id="review.accept"),
        Binding("n", "reject", "Reject", id="review.reject"),
        Binding("u", "undo", "Undo", id="review.undo"),
        Binding("s", "split", "Split", id="review.split"),
        Binding("e", "edit", "Edit", id="review.edit"),
        Binding("a", "accept_file", "Accept file", id="review.accept_file"),
        Binding("d", "reject_file", "Reject file", id="review.reject_file"),
        Binding("A", "accept_unflagged", "Accept unflagged", id="review.accept_unflagged"),
        Binding("j", "next", "Next", id="review.next"),
        Binding("k", "prev", "Prev", id="review.prev"),
        Binding("J", "next_pending", "Next pending", id="review.next_pending"),
        Binding("K", "prev_pending", "Prev pending", id="review.prev_pending"),
        Binding("slash", "search", "Search", id="review.search"),
        Binding("f", "cycle_filter", "Filter", id="review.filter"),
        Binding("w", "write", "Write", id="review.write"),
        Binding("escape", "close_search", "Close search", show=False, id="review.close_search"),
    ]

    def __init__(self, state_path: Path | None = None) -> None:
        super().__init__()
        self._state_path = state_path
        self.review: ReviewState | None = None
        self.nav: ReviewNav | None = None
        self.errors: dict[str, list[tuple[int | None, str]]] = {}
        self.busy = ""

    # --- layout ---------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with ContentSwitcher(initial="port-loading", id="port-switch"):
            yield Static("Loading the review…", id="port-loading")
            yield MigrationForm(id="port-setup")
            with Horizontal(id="port-review"):
                with Vertical(id="port-files"):
                    yield Select([(label, key) for key, label in FILTERS], value="all", allow_blank=False,
                                 id="port-filter", compact=True)
                    yield FileList(id="port-filelist")
                with Vertical(id="port-right"):
                    yield HunkView(id="port-hunk-body")
                    with Horizontal(id="port-actions"):
                        for label, action in (("✔ Accept", "accept"), ("✖ Reject", "reject"),
                                              ("↶ Undo", "undo"), ("Split", "split"), ("✎ Edit", "edit"),
                                              ("Write", "write")):
                            yield Button(label, id=f"btn-{action}", compact=True, action=f"screen.{action}")
                    yield OptionList(id="port-results")
        yield Input(placeholder="search hunks: text, file or rule id — Enter finds next, Esc closes",
                    id="port-search")
        yield Static("", id="port-status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#port-search", Input).display = False
        self.query_one("#port-results", OptionList).display = False
        self._load()

    def on_unmount(self) -> None:
        if self.review is not None:
            _compact(self.review)  # the state file complete again on exit, ready to commit

    def check_action(self, action: str, parameters) -> bool | None:
        if action in REVIEW_ACTIONS and self.review is None:
            return None  # shown disabled until a review is open
        return True

    # --- loading or starting a migration --------------------------------------------------------
    @work(thread=True, exclusive=True, group="load")
    def _load(self) -> None:
        from hipwizard.port.migration import refresh
        from hipwizard.port.state import review_path

        ws = self.app.workspace
        path = self._state_path or review_path(ws)
        try:
            if path is not None and path.exists():
                review = ReviewState.load(path)
                report = refresh(review)
                _compact(review)
                self.app.call_from_thread(self._open_review, review, report)
                return
        except (UserError, OSError) as exc:
            self.app.call_from_thread(self._show_setup, f"✖ {exc}", None)
            return
        src = ws.read_state("port").get("src")
        self.app.call_from_thread(self._show_setup, "", src)

    def _show_setup(self, message: str, src: str | None) -> None:
        self.query_one("#port-switch", ContentSwitcher).current = "port-setup"
        form = self.query_one(MigrationForm)
        form.status(message)
        if src:  # the workspace already names a source (the demo does): translate it right away
            out = self.app.workspace.read_state("port").get("out") or src.rstrip("/") + "-hip"
            form.query_one("#setup-src", Input).value = src
            form.query_one("#setup-out", Input).value = out
            if not message:
                self._start(src, out)
                return
        form.query_one("#setup-src", Input).focus()

    def on_migration_form_submitted(self, event: MigrationForm.Submitted) -> None:
        self._start(event.src, event.out)

    def _start(self, src: str, out: str) -> None:
        self.query_one(MigrationForm).status(f"◐ translating {src} …")
        self._translate(src, out)

    @work(thread=True, exclusive=True, group="load")
    def _translate(self, src: str, out: str) -> None:
        from hipwizard.port.migration import start

        form = self.query_one(MigrationForm)
        try:
            review = start(self.app.workspace, src, out,
                           progress=lambda d, t, *_path: self.app.call_from_thread(form.progress, d, t))
        except (UserError, OSError) as exc:
            self.app.call_from_thread(form.status, f"✖ {exc}")
            return
        self.app.call_from_thread(self._open_review, review, None)

    def _open_review(self, review: ReviewState, report) -> None:
        self.review = review
        self.nav = ReviewNav(review)
        self.query_one("#port-switch", ContentSwitcher).current = "port-review"
        self._fill_files()
        first = review.first_pending()
        self.nav.go_to_hunk(first if first is not None else 0)
        self._show_hunk()
        self.query_one("#port-hunk-body").focus()
        self.refresh_bindings()
        if report is not None:
            self.notify(f"Sources changed: {report.kept} decisions kept, {report.changed} hunks back to pending "
                        f"(⟳ changed), {report.dropped} gone.", severity="warning", timeout=8)

    # --- drawing --------------------------------------------------------------------------------
    def _fill_files(self) -> None:
        files = self.query_one("#port-filelist", OptionList)
        files.clear_options()
        files.add_options([Option(Text(self.nav.file_prompt(rel)), id=rel) for rel in self.nav.files])

    def _update_files(self, rels) -> None:
        files = self.query_one("#port-filelist", FileList)
        for rel in rels:
            row = self.nav.file_row.get(rel)
            if row is not None:
                files.set_prompt_at(row, Text(self.nav.file_prompt(rel)))

    def _show_hunk(self) -> None:
        body = self.query_one("#port-hunk-body", HunkView)
        hunk, rel = self.nav.current, self.nav.current_file
        if rel is None:
            body.show(None, "No hunk matches this filter. Press f to change it.")
        else:
            risks, where = self.review.untouched.get(rel, ()), self.nav.where()
            if hunk is None:  # a file listed for its risks on unchanged lines only
                risks = self.nav.shown_risks(rel)
                body.show(("file", rel, where, risks), render_file_risks(rel, risks, where))
            else:
                d = self.review.decision(hunk.hunk_id)
                errors = self.errors.get(hunk.hunk_id, [])
                # Everything the drawing depends on (the hunk id is a hash of its file and text).
                key = (hunk.hunk_id, d.state, tuple(d.lines or ()), d.changed, where, tuple(errors), risks)
                body.show(key, render_hunk(hunk, d.state, edited=d.lines if d.state == "edited" else None,
                                           changed=d.changed, where=where, errors=errors, untouched=risks))
            row = self.nav.file_row.get(rel)
            files = self.query_one("#port-filelist", OptionList)
            if row is not None and files.highlighted != row:
                files.highlighted = row
        self._show_status()

    def _show_status(self) -> None:
        from hipwizard.port.state import status_of

        st = status_of(self.review)
        busy = f"   ◐ {self.busy}" if self.busy else ""
        # One row, fixed height: no layout needed (a layout pass is most of a keystroke's cost).
        self.query_one("#port-status", Static).update(
            f"{st.symbol} {st.summary}   filter: {self.nav.filter_label}{busy}", layout=False)

    # --- decisions ------------------------------------------------------------------------------
    def _save_guard(self, change) -> list[str] | None:
        if self.busy:
            self.notify(f"Wait: {self.busy}", severity="warning")
            return None
        try:
            return change()
        except OSError as exc:
            self.notify(f"✖ Not saved — {self.review.path}: {exc.strerror or exc}", severity="error", timeout=10)
            return None

    def _decide(self, ids: list[str], state: str, *, advance: bool, only_pending: bool = False) -> None:
        changed = self._save_guard(lambda: self.review.decide(ids, state, only_pending=only_pending))
        if changed is None:
            return
        self._update_files({self.review.hunk(i).file for i in changed} if len(changed) < 50 else self.nav.files)
        if advance:
            self.nav.step(1)
        self._show_hunk()

    def action_accept(self) -> None:
        if self.nav.current:
            self._decide([self.nav.current.hunk_id], "accepted", advance=True)

    def action_reject(self) -> None:
        if self.nav.current:
            self._decide([self.nav.current.hunk_id], "rejected", advance=True)

    def action_accept_file(self) -> None:
        if self.nav.current:
            self._decide(self.nav.file_ids(self.nav.current.file), "accepted", advance=False, only_pending=True)

    def action_reject_file(self) -> None:
        if self.nav.current:
            self._decide(self.nav.file_ids(self.nav.current.file), "rejected", advance=False, only_pending=True)

    def action_accept_unflagged(self) -> None:
        ids = [h.hunk_id for h in self.review.hunks if not h.flags]
        self._decide(ids, "accepted", advance=False, only_pending=True)

    def action_undo(self) -> None:
        current = self.nav.current.hunk_id if self.nav.current else None
        touched = self._save_guard(self.review.undo)
        if touched is None:
            if not self.review.history:
                self.notify("Nothing to undo.")
            return
        self.nav.rebuild(keep=touched[-1] if touched[-1] in self.review.index_of else current,
                         keep_file=self.nav.current_file)
        self._fill_files()
        self._show_hunk()

    def action_split(self) -> None:
        hunk = self.nav.current
        if hunk is None:
            return
        children = self._save_guard(lambda: self.review.split(hunk.hunk_id))
        if not children:
            if children == []:
                self.notify("This hunk cannot be split further.")
            return
        self.nav.rebuild(keep=children[0].hunk_id)
        self._fill_files()
        self._show_hunk()
        self.notify(f"Split into {len(children)} hunks.")

    def action_edit(self) -> None:
        from hipwizard.port.hunk_edit import edit_lines

        hunk = self.nav.current
        if hunk is None:
            return
        d = self.review.decision(hunk.hunk_id)
        try:
            try:
                with self.app.suspend():
                    lines = edit_lines(d.lines if d.state == "edited" else hunk.new_lines)
            except Exception as exc:  # a driver that cannot suspend (tests, web): run the editor as is
                if type(exc).__name__ != "SuspendNotSupported":
                    raise
                lines = edit_lines(d.lines if d.state == "edited" else hunk.new_lines)
        except UserError as exc:
            self.notify(f"✖ {exc}", severity="error", timeout=8)
            return
        self.refresh()
        if lines is None:
            self.notify("No change made in the editor.")
            return
        if self._save_guard(lambda: self.review.edit(hunk.hunk_id, lines) or []) is not None:
            self._update_files([hunk.file])
            self._show_hunk()

    # --- navigation -----------------------------------------------------------------------------
    def _move(self, moved: bool, what: str) -> None:
        if moved:
            self._show_hunk()
        else:
            self.notify(f"No {what}.", timeout=2)

    def action_next(self) -> None:
        self._move(self.nav.step(1), "next hunk")

    def action_prev(self) -> None:
        self._move(self.nav.step(-1), "previous hunk")

    def action_next_pending(self) -> None:
        self._move(self.nav.step_pending(1), "pending hunk after this one")

    def action_prev_pending(self) -> None:
        self._move(self.nav.step_pending(-1), "pending hunk before this one")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_list.id == "port-filelist":
            self._move(self.nav.go_to_file(event.option.id), "hunk or risk in this file")
        elif event.option_list.id == "port-results" and event.option.id:
            self._jump_to_hunk(event.option.id.split("|", 1)[1])

    def _jump_to_hunk(self, hunk_id: str) -> None:
        if hunk_id not in self.review.index_of:
            return
        if not self.nav.go_to_id(hunk_id):
            self.query_one("#port-filter", Select).value = "all"
            self.nav.set_filter("all")
            self._fill_files()
            self.nav.go_to_id(hunk_id)
        self._show_hunk()
        self.query_one("#port-hunk-body").focus()

    # --- filter and search ----------------------------------------------------------------------
    def action_cycle_filter(self) -> None:
        keys = self.nav.filter_keys()
        nxt = keys[(keys.index(self.nav.filter) + 1) % len(keys)] if self.nav.filter in keys else "all"
        select = self.query_one("#port-filter", Select)
        select.set_options([(label, key) for key, label in self.nav.filter_options()])
        select.value = nxt

    def on_select_changed(self, event: Select.Changed) -> None:
        if self.nav is None or event.value == self.nav.filter or event.value is Select.NULL:
            return
        self.nav.set_filter(str(event.value))
        self._fill_files()
        self._show_hunk()

    def on_descendant_focus(self, event) -> None:
        # The rule filters appear in the dropdown once a review is open.
        if getattr(event.widget, "id", None) == "port-filter" and self.nav is not None:
            select = self.query_one("#port-filter", Select)
            if len(select._options) < len(self.nav.filter_options()):
                value = select.value
                select.set_options([(label, key) for key, label in self.nav.filter_options()])
                select.value = value

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
        found = self.nav.search(event.value)
        if found is None:
            self.notify(f"No hunk matches {event.value!r}.", severity="warning")
        else:
            self._jump_to_hunk(found)

    # --- write ----------------------------------------------------------------------------------
    def action_write(self) -> None:
        if self.busy:
            self.notify(f"Wait: {self.busy}", severity="warning")
            return
        pending = self.review.counts()["pending"]
        if pending:
            self.app.push_screen(ConfirmWrite(pending), lambda ok: self._write() if ok else None)
        else:
            self._write()

    def _write(self) -> None:
        self.busy = "writing and compile-checking…"
        self._show_status()
        self._write_worker()

    @work(thread=True, exclusive=True, group="write")
    def _write_worker(self) -> None:
        from hipwizard.port.apply import apply

        def progress(done: int, total: int) -> None:
            self.app.call_from_thread(self._write_progress, done, total)

        try:
            report = apply(self.review, check=True, progress=progress)
        except (UserError, OSError) as exc:
            self.app.call_from_thread(self._write_done, None, str(exc))
            return
        self.app.call_from_thread(self._write_done, report, "")

    def _write_progress(self, done: int, total: int) -> None:
        self.busy = f"compile check {done}/{total}…"
        self._show_status()

    def _write_done(self, report, error: str) -> None:
        self.busy = ""
        if report is None:
            self.notify(f"✖ Write failed: {error}", severity="error", timeout=10)
            self._show_status()
            return
        from hipwizard.tui.port.results import result_options

        self.errors = {}
        for f in report.files:
            for e in f.errors:
                if e.hunk_id:
                    self.errors.setdefault(e.hunk_id, []).append((e.line, e.message))
        results = self.query_one("#port-results", OptionList)
        results.clear_options()
        results.add_options(result_options(report, self.review))
        results.display = True
        first_error = next((e.hunk_id for f in report.files for e in f.errors if e.hunk_id), None)
        if first_error:
            self._jump_to_hunk(first_error)
        else:
            self._show_hunk()
        manual = self.review.untouched_counts()["total"]
        self.notify(f"Wrote {report.written} of {len(report.files)} files; {report.compile_errors} compile error(s)"
                    + (f"; ⚑ {manual} risks on unchanged lines need a manual edit." if manual else "."),
                    severity="error" if report.compile_errors else "information")


def _compact(review: ReviewState) -> None:
    """Fold the decision journal into the state file. Failing is harmless (the journal stays and is read
    with the state), so a read-only review still opens."""
    try:
        review.compact()
    except OSError:
        pass


def run_review(state_path: Path) -> None:
    """``hipwizard review DIR``: the app, opened straight on the Port screen of this review."""
    from hipwizard.port.migration import workspace_for
    from hipwizard.tui.app import HipwizardApp

    ws = workspace_for(state_path, ReviewState.load(state_path))

    class ReviewApp(HipwizardApp):
        def on_mount(self) -> None:
            # Textual also runs HipwizardApp.on_mount (it pushes Home): open the review on top of it.
            self.call_later(self.push_screen, PortScreen(state_path))

    ReviewApp(ws, resume=False).run()
