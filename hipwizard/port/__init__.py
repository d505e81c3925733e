"""Step 2, the port: translate a CUDA tree to HIP, split it into hunks, flag risks, review, write, compile-check.

The front door. Faces (``hipwizard.cli``, ``hipwizard.tui``) and ``hipwizard.report`` import the port only
from here and from ``hipwizard.port.state`` (tests/test_architecture.py checks it).

- Services, one per user action (``services``): ``translate`` (a tree into a review, reconciled with an
  earlier one), ``open_review`` / ``refresh`` / ``close`` (the workspace's review as a session holds it),
  ``write`` (the decisions into the output folder, compile-checked), ``worktree_status`` / ``output_hunks`` /
  ``resolve`` / ``choose`` (the output folder as the user's working tree: edits, conflicts), ``check``
  (compile-check a folder the way its build does); their results ``Translation``, ``Opened``, ``ApplyReport``,
  ``TreeCheck`` of ``FileCheck``,
  ``PortReport``, ``WorktreeStatus``.
- State readers (``state``): ``read_link`` / ``PortLink``, ``review_path``, ``locate``, ``review_workspace``,
  ``workspace_for``, ``summarize``, ``status_of``.
- Value types the faces show or build: ``ReviewState`` (a review, saved after every change) and its
  ``ReviewCounts`` and ``ReconcileReport``, ``ReviewNav`` and its ``FILTERS`` (where the user is in it),
  ``Hunk``, ``RiskFlag``, ``UntouchedRisk``, ``WorkTree`` (the output folder's record of what was
  written, its conflicts and the machine that wrote it); ``newest_known`` (the newest HIP version HIPIFY's tables know)
  and ``edit_lines`` / ``editor_command`` (a hunk in the user's editor).

Behind the door, rooms by concept: ``translation/`` (the scan of a tree, the backends, the built-in engine on
HIPIFY's tables, hunks), ``risk/`` (the rules and the catalogue that runs them), ``review/`` (the decisions: the
review model, its file, journal, lock and store, navigation), ``output/`` (the decisions written into the output
folder, the user's working tree, and compile-checked). ``model`` (hunks, risk flags, a file's translation: the
words all four rooms share), ``state``, ``services`` and ``demo`` stay at the top. The rooms are named
``translation`` and ``output``, not ``translate`` and ``write``: a submodule would shadow the service.

Everything but the hunk model loads on first use (``hipwizard.lazy``): every ``hipwizard`` command imports
the CLI's port module, which pays for the review machinery only when a port command runs, and a face that
only shows a saved review does not import the translators.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hipwizard.lazy import lazy_attributes
from hipwizard.port.model import Hunk, RiskFlag, UntouchedRisk, fold_note

if TYPE_CHECKING:  # the lazy names below, for type checkers; at run time each loads on first use
    from hipwizard.port.build.check import TreeCheck
    from hipwizard.port.build.commands import buildfile_flags
    from hipwizard.port.dual.service import check_dual
    from hipwizard.port.output.apply import ApplyReport
    from hipwizard.port.output.compile_check import FileCheck
    from hipwizard.port.output.worktree import WorkTree, WorktreeStatus
    from hipwizard.port.review.editor import edit_lines, editor_command
    from hipwizard.port.review.nav import FILTERS, ReviewNav
    from hipwizard.port.review.queries import ReviewCounts
    from hipwizard.port.review.reconcile import ReconcileReport
    from hipwizard.port.review.state import ReviewState
    from hipwizard.port.services import (
        Opened,
        Translation,
        check,
        choose,
        close,
        open_review,
        output_hunks,
        refresh,
        resolve,
        translate,
        worktree_status,
        write,
    )
    from hipwizard.port.state import (
        PortLink,
        locate,
        read_link,
        review_path,
        review_workspace,
        status_of,
        summarize,
        workspace_for,
    )
    from hipwizard.port.translation.compat import newest_known
    from hipwizard.port.translation.engine import PortReport
    from hipwizard.port.translation.tables import load_tables

_LAZY = {
    "check_dual": "hipwizard.port.dual.service",
    **dict.fromkeys(("translate", "open_review", "refresh", "close", "write", "resolve", "output_hunks", "choose",
                     "worktree_status", "check", "Translation", "Opened"), "hipwizard.port.services"),
    "ApplyReport": "hipwizard.port.output.apply",
    "FileCheck": "hipwizard.port.output.compile_check",
    "TreeCheck": "hipwizard.port.build.check",
    "buildfile_flags": "hipwizard.port.build.commands",
    "PortReport": "hipwizard.port.translation.engine",
    **dict.fromkeys(("WorkTree", "WorktreeStatus"), "hipwizard.port.output.worktree"),
    "ReviewCounts": "hipwizard.port.review.queries",
    **dict.fromkeys(("PortLink", "read_link", "review_path", "locate", "review_workspace", "workspace_for",
                     "summarize", "status_of"), "hipwizard.port.state"),
    "ReviewState": "hipwizard.port.review.state",
    "ReconcileReport": "hipwizard.port.review.reconcile",
    **dict.fromkeys(("ReviewNav", "FILTERS"), "hipwizard.port.review.nav"),
    "newest_known": "hipwizard.port.translation.compat",
    "load_tables": "hipwizard.port.translation.tables",
    **dict.fromkeys(("edit_lines", "editor_command"), "hipwizard.port.review.editor"),
}

__getattr__ = lazy_attributes(__name__, _LAZY)

__all__ = [
    # services and their results
    "check_dual",  # a dual-target tree's two builds (port.dual)
    "translate", "open_review", "refresh", "close", "write", "resolve", "output_hunks", "choose",
    "worktree_status", "check", "Translation", "Opened", "ApplyReport", "FileCheck", "TreeCheck", "PortReport",
    # state readers
    "PortLink", "read_link", "review_path", "locate", "review_workspace", "workspace_for", "summarize", "status_of",
    # value types
    "ReviewState", "ReconcileReport", "ReviewNav", "FILTERS", "Hunk", "RiskFlag", "UntouchedRisk",
    "newest_known", "edit_lines", "editor_command", "WorkTree", "WorktreeStatus", "ReviewCounts",
    # what a listed API diagnostic says of the lines the review's budget folded into it
    "fold_note",
    # HIPIFY's CUDA -> HIP name tables (parity's reverse-mapping headers read them)
    "load_tables",
    # the -I/-D/-std flags of a file's nearest build file (parity's generated kernel drivers build with them)
    "buildfile_flags",
]
