"""What the Port screen's key mixins (``ReviewActions``, ``ConflictActions``) assume of the screen they are
mixed into, declared: ``ReviewHost``. ``PortScreen`` meets it (a test checks that an open Port screen is one);
the mixins are typed against it, so a type checker sees every attribute and hook they use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Protocol, runtime_checkable

if TYPE_CHECKING:
    from textual.app import App

    from hipwizard.port import ApplyReport, ReviewNav, ReviewState


@runtime_checkable
class ReviewHost(Protocol):
    review: ReviewState | None  # the open review (saves every decision at once); None until one is open
    nav: ReviewNav | None  # where the user is in it, and the filter
    last_write: ApplyReport | None  # this session's last Write, for the results panel
    busy: str  # the job that holds the screen ("" when idle): decisions wait for it (``when_idle``)

    @property
    def app(self) -> App[Any]: ...

    def notify(self, message: str, *, title: str = "", severity: Any = "information",
               timeout: float | None = None, markup: bool = True) -> None: ...

    def query_one(self, selector: Any, expect_type: Any = None) -> Any: ...

    def refresh(self, *regions: Any, repaint: bool = True, layout: bool = False, recompose: bool = False) -> Any: ...

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


if TYPE_CHECKING:
    MixinBase = ReviewHost  # a Port screen mixin is typed against what it assumes of the screen
else:
    MixinBase = object
