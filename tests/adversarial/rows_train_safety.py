"""Adversarial rows of issue 27 (safe by default) for the Train step: see table.py for what every row checks."""

from __future__ import annotations

from .rows_port import link
from .rows_train import recipe, run
from .table import Case, both, write

PRECIOUS = "the user's own file\n"


def run_dir_with_link(name: str):
    """``r/`` a run directory (its config.yaml launchable) whose ``name`` is a link to the user's file."""
    return both(recipe("config.yaml"), write("precious.txt", PRECIOUS), link(f"r/{name}", "precious.txt"))


ROWS: list[Case] = [
    # a link where a run file goes: refused before anything starts, the link's target untouched
    *(Case(f"run-dir-{name.replace('.', '-')}-is-a-link", run("r"), run_dir_with_link(name), 2,
           (name, "symbolic link"), unchanged=("precious.txt",), absent=("r/run.json",) if name != "run.json" else ())
      for name in ("train.log", "run.json", "exit.json", "stop_requested")),
]
