"""Adversarial rows of issue 27 (safe by default): see table.py for what every row checks."""

from __future__ import annotations

from pathlib import Path

from .rows_port import GOOD, link, review
from .table import Case, both, write

WRITE = ("review", "o", "--write", "--no-check")


def pending_review(tmp: Path) -> None:
    """A real review of ``src/a.cu`` into ``o`` with every hunk still pending."""
    from hipwizard.port import services

    GOOD(tmp)
    services.translate(None, tmp / "src", tmp / "o", backend="builtin")


def relink(rel: str, target: str):
    """``rel`` (made by building the review, e.g. its lock file) replaced by a symlink to ``target``."""
    def build(tmp: Path) -> None:
        (tmp / rel).unlink(missing_ok=True)
        link(rel, target)(tmp)
    return build


ACCEPTED = review(lambda data, tmp: None)
VICTIM = write("victim.txt", "precious\n")

ROWS: list[Case] = [
    # a headless write never applies undecided hunks silently
    Case("review-write-pending-refused", WRITE, pending_review, 2,
         ("still pending", "a.cu#1", "--include-pending", "original CUDA"), absent=("o",)),
    Case("review-write-include-pending", (*WRITE, "--include-pending"), pending_review, 0,
         ("still pending", "left as the original CUDA"), appear=("o/a.cu",)),
    Case("review-include-pending-alone-is-harmless", (*WRITE, "--include-pending"), ACCEPTED, 0, ("wrote 1 of 1",),
         not_words=("pending",), appear=("o/a.cu",)),
    # the lock and the journal are never written through a link planted in their place
    Case("review-lock-symlink-refused", WRITE, both(ACCEPTED, VICTIM, relink("o.review.lock", "victim.txt")), 2,
         ("o.review.lock", "symbolic link"), unchanged=("victim.txt", "o.review.json"), absent=("o",)),
    Case("review-resolve-lock-symlink-refused", ("review", "o", "--resolve", "a.cu=mine"),
         both(ACCEPTED, VICTIM, relink("o.review.lock", "victim.txt")), 2, ("symbolic link",),
         unchanged=("victim.txt",)),
    Case("review-journal-symlink-not-written-through", WRITE,
         both(ACCEPTED, VICTIM, relink("o.review.journal", "victim.txt")), 0, ("wrote 1 of 1",),
         unchanged=("victim.txt",), appear=("o/a.cu",)),
]
