"""Step 2, the review: accept or reject hipify hunks one by one (``git add -p`` / lazygit staging style).

Layout and event wiring only. Every action that translates, re-reads, writes or compile-checks is a call to
a service of ``hipwizard.port`` (the same functions ``hipwizard hipify / review`` call) in a thread job; the
decisions live in ``ReviewState`` (saved after every change), navigation in ``ReviewNav``; the review keys are
in ``actions``, the set-up form and the write confirm in ``dialogs``, the results rows in ``results``. A write's conflict with the user's edits is settled from the
results panel: the whole file (m or Enter on its row: mine / new / merged, ``port.resolve``) or one
conflict at a time (m or Enter on a conflict's row: mine / new, ``port.choose``).
"""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import (
    Button,
    ContentSwitcher,
    Footer,
    Header,
    Input,
    OptionList,
    Select,
    Static,
)

from hipwizard import port
from hipwizard.errors import UserError
from hipwizard.port import FILTERS, PortLink, ReviewNav, ReviewState, status_of
from hipwizard.tui.messages import WorkProgress
from hipwizard.tui.port.actions import ReviewActions
from hipwizard.tui.port.conflicts import ConflictActions
from hipwizard.tui.port.dialogs import ConfirmWrite, MigrationForm
from hipwizard.tui.port.file_list import FileList
from hipwizard.tui.port.hunk_view import HunkView, render_file_risks, render_hunk
from hipwizard.tui.port.results import api_options, result_options, target_label, worktree_options
from hipwizard.tui.step_screen import StepScreen, when_idle


class PortScreen(ReviewActions, ConflictActions, StepScreen):
    step_key = "port"
    CSS_PATH = "port.tcss"
    help_title = "Port — review hipify hunks"
    help_text = ("Like `git add -p`: each hunk is a change hipify made. y takes the translation, n keeps the "
                 "original, e lets you write your own. Pending hunks keep the original when you write. Every "
                 "decision is saved at once beside the output folder (<output>.review.json and its journal).\n"
                 "File list: ○ pending  ✔ accepted/edited  ✖ rejected  ⚑ risk flags (on hunks, and on lines the "
                 "translation left unchanged: \"(n unchanged)\"). Risks on unchanged lines have nothing to "
                 "accept or reject — they are listed under each hunk of their file and need a manual edit.\n"
                 "The translation checks APIs against the HIP version the Doctor found and Write compile-checks "
                 "for the Doctor's GPU arch; r re-reads the sources and reconciles your decisions. A file whose write "
                 "met your hand edits is kept and listed in the results: highlight it and press m (or Enter) to "
                 "keep mine, take new, or write the merge with conflict markers. A hunk's flags are listed in one line each "
                 "above its diff; PgDn/PgUp (or ↓/↑) scroll the hunk to their details.")
    # The footer shows the hunk verbs and the app's help; every key is listed by ? (help) and in the palette,
    # the rest would only push ? Help off an 80-column footer. A "review." id means the key acts on the open
    # review: it is shown disabled until one is open (REVIEW_ACTIONS, below).
    BINDINGS = [
        Binding("y", "accept", "Accept", id="review.accept"),
        Binding("n", "reject", "Reject", id="review.reject"),
        Binding("u", "undo", "Undo", id="review.undo"),
        Binding("s", "split", "Split", id="review.split"),
        Binding("e", "edit", "Edit", id="review.edit"),
        Binding("w", "write", "Write", id="review.write"),
        Binding("a", "accept_file", "Accept file", show=False, id="review.accept_file"),
        Binding("d", "reject_file", "Reject file", show=False, id="review.reject_file"),
        Binding("A", "accept_unflagged", "Accept unflagged", show=False, id="review.accept_unflagged"),
        Binding("r", "reread", "Re-read", show=False, id="review.reread"),
        Binding("m", "resolve", "Settle conflict", show=False, id="review.resolve"),
        Binding("slash", "search", "Search", show=False, id="review.search"),
        Binding("f", "cycle_filter", "Filter", show=False, id="review.filter"),
        Binding("j", "next", "Next", show=False, id="review.next"),
        Binding("k", "prev", "Prev", show=False, id="review.prev"),
        Binding("J", "next_pending", "Next pending", show=False, id="review.next_pending"),
        Binding("K", "prev_pending", "Prev pending", show=False, id="review.prev_pending"),
        Binding("escape", "close_search", "Close search", show=False, id="review.close_search"),
    ]

    def __init__(self, state_path: Path | None = None) -> None:
        super().__init__()
        self._state_path = state_path
        self.review: ReviewState | None = None
        self.nav: ReviewNav | None = None
        self.errors: dict[str, list[tuple[int | None, str]]] = {}
        self.last_write = None  # the ApplyReport of this session's last Write

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
        self.start_job("load", port.open_review, self.app.workspace, self._state_path, progress=True,
                       done=self._loaded, failed=lambda text: self._show_setup(f"✖ {text}", PortLink()))

    def on_unmount(self) -> None:
        if self.review is not None:
            port.close(self.review)  # the state file complete again on exit, ready to commit
            self.review.release()  # the review's lock: another session may write it now

    def check_action(self, action: str, parameters) -> bool | None:
        if action in REVIEW_ACTIONS and self.review is None:
            return None  # shown disabled until a review is open
        return True

    def on_work_progress(self, event: WorkProgress) -> None:
        p = event.progress
        if event.job == "translate":
            self.query_one(MigrationForm).progress(p)
        elif event.job == "load":  # the sources changed: re-translating before the review opens
            self.query_one("#port-loading", Static).update(f"Loading the review… {p.text()}")
        elif self.busy:  # a write or a re-read under way (a late report after it ended is dropped)
            self.busy = f"{p.text()}…"

    # --- loading or starting a migration --------------------------------------------------------
    def _loaded(self, opened: port.Opened) -> None:
        if opened.review is None:
            self._show_setup("", opened.link)
        else:
            self._open_review(opened.review, opened.reconciled)

    def _show_setup(self, message: str, link: PortLink) -> None:
        self.query_one("#port-switch", ContentSwitcher).current = "port-setup"
        form = self.query_one(MigrationForm)
        form.status(message)
        if link.src is not None:  # the workspace already names a source (the demo does): translate it right away
            src = str(link.src)
            out = str(link.out) if link.out is not None else src.rstrip("/") + "-hip"
            form.query_one("#setup-src", Input).value = src
            form.query_one("#setup-out", Input).value = out
            form.choose_mode(link.mode)
            if not message:
                self._start(src, out)
                return
        form.query_one("#setup-src", Input).focus()

    def on_migration_form_submitted(self, event: MigrationForm.Submitted) -> None:
        self._start(event.src, event.out, event.mode)

    def _start(self, src: str, out: str, mode: str | None = None) -> None:
        form = self.query_one(MigrationForm)
        form.status(f"◐ translating {src} …")
        self.start_job("translate", port.translate, self.app.workspace, src, out, mode=mode, progress=True,
                       done=self._translated, failed=lambda text: form.status(f"✖ {text}"))

    def _translated(self, result: port.Translation) -> None:
        self._open_review(result.review, result.reconciled)
        self.notify(f"target ROCm/HIP {target_label(result.review)}", timeout=6)
        if result.too_new:
            self.notify(f"⚠ {len(result.too_new)} API(s) newer than HIP {result.review.hip_version}: "
                        + ", ".join(result.too_new), severity="warning", timeout=10)

    def _open_review(self, review: ReviewState, reconciled) -> None:
        if review.read_only is None:
            review.store.try_hold()  # this screen is the review's writer while it is open (review_lock)
        self.review = review
        self.nav = ReviewNav(review)
        self.query_one("#port-switch", ContentSwitcher).current = "port-review"
        self.fill_files()
        first = review.first_pending()
        self.nav.go_to_hunk(first if first is not None else 0)
        self.fill_results()
        self.show_hunk()
        self.query_one("#port-hunk-body").focus()
        self.refresh_bindings()
        if reconciled is not None:
            self._say_reconciled(reconciled)

    def _say_reconciled(self, r) -> None:
        self.notify(f"Sources changed: {r.kept} decisions kept, {r.changed} changed since you decided (⟳, pending "
                    f"with the old decision shown), {r.dropped} vanished (listed in the results).",
                    severity="warning", timeout=8)

    # --- re-reading the sources -----------------------------------------------------------------
    @when_idle
    def action_reread(self) -> None:
        self.busy = "re-reading the sources…"
        # A fresh copy of the review is refreshed in the job (every decision is on disk already); decisions
        # wait while it runs (``busy``), moving around does not.
        self.start_job("reread", port.open_review, self.app.workspace, self.open_review.path, progress=True,
                       done=self._reread, failed=self._job_failed)

    def _reread(self, opened: port.Opened) -> None:
        self.busy = ""
        if opened.review is None:  # nothing to re-read any more: the open review stays as it is
            self.notify(f"✖ The review could not be re-read: {self.open_review.path} is gone.", severity="error")
            return
        nav = self.open_nav
        keep, keep_filter = (nav.current.hunk_id if nav.current else None), nav.filter
        self.open_review.release()  # the fresh copy holds the lock now (or is read-only)
        self.review = opened.review
        self.nav = nav = ReviewNav(opened.review)
        nav.filter = keep_filter if keep_filter in nav.filter_keys() else "all"
        nav.rebuild(keep=keep)
        if nav.filter != keep_filter:
            self.query_one("#port-filter", Select).value = "all"
        self.fill_files()
        self.fill_results()
        self.show_hunk()
        if opened.reconciled is None:
            self.notify("The sources are as the review knows them: nothing to reconcile.")
        else:
            self._say_reconciled(opened.reconciled)

    def _job_failed(self, text: str) -> None:
        self.busy = ""
        self.notify(f"✖ {text}", severity="error", timeout=10)

    # --- drawing --------------------------------------------------------------------------------
    def fill_files(self) -> None:
        self.query_one("#port-filelist", FileList).fill([(rel, self.open_nav.file_prompt(rel)) for rel in self.open_nav.files])

    def update_files(self, rels) -> None:
        files = self.query_one("#port-filelist", FileList)
        for rel in rels:
            row = self.open_nav.file_row.get(rel)
            if row is not None:
                files.set_prompt_at(row, self.open_nav.file_prompt(rel))

    def fill_results(self) -> None:
        """Write results (after a Write) and the API notes kept with the review; hidden when there are none."""
        rows = result_options(self.last_write, self.open_review) if self.last_write is not None else []
        try:
            hunks = port.output_hunks(self.open_review)
        except UserError:
            hunks = []  # worktree_status names the damaged record
        rows += worktree_options(self.open_review, port.worktree_status(self.open_review, edited=False),
                                 written=self.last_write, hunks=hunks)
        rows += api_options(self.open_review)
        results = self.query_one("#port-results", OptionList)
        results.clear_options()
        results.add_options(rows)
        results.display = bool(rows)

    def show_hunk(self) -> None:
        body = self.query_one("#port-hunk-body", HunkView)
        hunk, rel = self.open_nav.current, self.open_nav.current_file
        if rel is None:
            body.show(None, "No hunk matches this filter. Press f to change it.")
        else:
            risks, where = self.open_review.untouched.get(rel, ()), self.open_nav.where()
            if hunk is None:  # a file listed for its risks on unchanged lines only
                risks = self.open_nav.shown_risks(rel)
                body.show(("file", rel, where, risks), render_file_risks(rel, risks, where))
            else:
                d = self.open_review.decision(hunk.hunk_id)
                errors = self.errors.get(hunk.hunk_id, [])
                # Everything the drawing depends on (the hunk id is a hash of its file and text).
                key = (hunk.hunk_id, d.state, tuple(d.lines or ()), d.changed, where, tuple(errors), risks)
                body.show(key, render_hunk(hunk, d.state, edited=d.lines if d.state == "edited" else None,
                                           changed=d.changed, where=where, errors=errors, untouched=risks,
                                           was=d.was))
            row = self.open_nav.file_row.get(rel)
            files = self.query_one("#port-filelist", OptionList)
            if row is not None and files.highlighted != row:
                files.highlighted = row
        self.show_status()

    def show_status(self) -> None:
        busy = f"   ◐ {self.busy}" if self.busy else ""
        if self.review is not None and self.nav is not None:
            st = status_of(self.review)
            flagged = f"   ⚑ {self.review.flagged_counts()['total']} flagged"
            text = f"{st.symbol} {st.summary}{flagged}   filter: {self.nav.filter_label}{busy}"
        else:
            text = busy.strip()
        if self.review is not None and self.review.read_only is not None:
            pid = self.review.read_only.pid
            text = f"🔒 READ-ONLY: open in another session{f' (pid {pid})' if pid else ''}; r re-reads   " + text
        # One row, fixed height: no layout needed (a layout pass is most of a keystroke's cost).
        self.query_one("#port-status", Static).update(text, layout=False)

    # --- write ----------------------------------------------------------------------------------
    @when_idle
    def action_write(self) -> None:
        if self.read_only_says():
            return
        pending = self.open_review.counts().pending
        if pending:
            self.app.push_screen(ConfirmWrite(pending), lambda ok: self._write() if ok else None)
        else:
            self._write()

    def _write(self) -> None:
        self.busy = "writing and compile-checking…"
        self.start_job("write", port.write, self.app.workspace, self.open_review, progress=True,
                       done=self._written, failed=lambda text: self._job_failed(f"Write failed: {text}"))

    def _written(self, report) -> None:
        self.busy = ""
        self.last_write = report
        self.errors = {}
        for f in report.files:
            for e in f.errors:
                if e.hunk_id:
                    self.errors.setdefault(e.hunk_id, []).append((e.line, e.message))
        self.fill_results()
        first_error = next((e.hunk_id for f in report.files for e in f.errors if e.hunk_id), None)
        if first_error:
            self.jump_to_hunk(first_error)
        else:
            self.show_hunk()
        hand, conflicts = self.open_review.hand_edit_lines(), len(report.conflicts)
        said = (f"{report.compile_errors} file(s) with compile errors" if report.checked
                else f"not compile-checked ({report.check_note or 'no check asked'})")
        self.notify(f"Wrote {report.written} of {len(report.files)} files; {said}"
                    + (f"; ✖ {conflicts} file(s) in conflict with your edits, kept (see the results)" if conflicts else "")
                    + (f"; ⚑ {hand['total']} line(s) need a hand edit ({hand['risks']} with risks on unchanged "
                       f"lines, {hand['api']} with an API HIP lacks)." if hand["total"] else "."),
                    severity="error" if report.compile_errors or conflicts else "information")


# Every "review." binding acts on the open review (check_action shows it disabled until one is open).
REVIEW_ACTIONS = frozenset(b.action for b in PortScreen.BINDINGS
                            if isinstance(b, Binding) and (b.id or "").startswith("review."))
