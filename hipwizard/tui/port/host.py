"""What the Port screen's key mixins (``ReviewActions``, ``ConflictActions``) assume of the screen they are
mixed into, declared: a ``StepScreen`` that is a ``ReviewHost``. ``PortScreen`` meets it (a test checks that an
open Port screen is one); the mixins are typed against it, so a type checker sees every attribute and hook they
use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Protocol, runtime_checkable

if TYPE_CHECKING:
    from hipwizard.port import ApplyReport, ReviewNav, ReviewState
    from hipwizard.tui.step_screen import StepScreen


@runtime_checkable
class ReviewHost(Protocol):
    review: ReviewState | None  # the open review (saves every decision at once); None until one is open
    nav: ReviewNav | None  # where the user is in it, and the filter
    last_write: ApplyReport | None  # this session's last Write, for the results panel

    def fill_files(self) -> None:
        """Redraw the whole file list."""

    def update_files(self, rels: Iterable[str]) -> None:
        """Redraw the file list's rows of ``rels``."""

    def show_hunk(self) -> None:
        """Redraw the current hunk (and the status line)."""

    def fill_results(self) -> None:
        """Redraw the results panel (write results, conflicts, API notes)."""

    def jump_to_hunk(self, hunk_id: str) -> None:
        """Show ``hunk_id``, clearing the filter if it hides it."""

    def read_only_says(self) -> bool:
        """True (and says why) when another session writes this review."""

    def ask_resolve(self, rel: str) -> None:
        """Ask how to settle the conflict in ``rel`` (``ConflictActions``)."""

    def ask_region(self, option_id: str) -> None:
        """Open one conflict region of the results panel to decide it (``ConflictActions``)."""


if TYPE_CHECKING:
    class MixinBase(StepScreen, ReviewHost):
        """For the type checker only: a Port screen mixin is mixed into a step screen (``app``, ``busy``,
        ``notify``, ``query_one``...) that meets ``ReviewHost``."""
else:
    MixinBase = object


class ReviewKeys(MixinBase):
    """The base of the review key mixins: the open review and its navigation, never None. The review keys
    (binding ids "review.*") are disabled until a review is open, so reaching these without one is a bug."""

    @property
    def open_review(self) -> ReviewState:
        if self.review is None:
            raise RuntimeError("a review key ran with no review open")
        return self.review

    @property
    def open_nav(self) -> ReviewNav:
        if self.nav is None:
            raise RuntimeError("a review key ran with no review open")
        return self.nav
