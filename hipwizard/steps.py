"""The one list of hipwizard's steps. Everything that enumerates steps derives from ``STEPS``:

- the workspace's step keys (``STEP_KEYS``) and each step's saved-state owner (``hipwizard.<key>.state``),
- the CLI's sub-commands (each step's ``cli`` module adds ``commands``; the names are known here without
  importing it, so opening the app does not pay for every step's CLI),
- the Home cards, the command palette and the 1-4 keys of the TUI (``screen``, loaded on first use).

Plain data: importing this module imports neither face nor any step package.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    key: str  # workspace key: .hipwizard/<key>.json, hipwizard.<key> package
    number: int  # the digit that opens it from any screen
    title: str
    blurb: str
    cli: str  # module of the headless face that adds ``commands``
    commands: tuple[str, ...]  # top-level sub-commands that module adds
    screen: str  # "module:Class" of the TUI face

    @property
    def state_module(self) -> str:
        """The module that owns ``.hipwizard/<key>.json`` and provides ``summarize(ws)``."""
        return f"hipwizard.{self.key}.state"

    def load_state(self):
        """The step's state module (loading it registers its file's field types with the workspace)."""
        return importlib.import_module(self.state_module)

    def load_screen(self):
        module, cls = self.screen.split(":")
        return getattr(importlib.import_module(module), cls)


STEPS: tuple[Step, ...] = (
    Step("doctor", 1, "Doctor", "Is this machine ready for an MI300X fine-tune?",
         "hipwizard.cli.doctor", ("doctor", "preflight"), "hipwizard.tui.doctor.screen:DoctorScreen"),
    Step("port", 2, "Port", "Hipify the CUDA tree and review it hunk by hunk",
         "hipwizard.cli.port", ("hipify", "review", "check"), "hipwizard.tui.port.screen:PortScreen"),
    Step("parity", 3, "Parity", "Do the layers compute the same numbers?",
         "hipwizard.cli.parity", ("parity",), "hipwizard.tui.parity.screen:ParityScreen"),
    Step("train", 4, "Train", "Plan, launch and watch the LLaMA-Factory run",
         "hipwizard.cli.train", ("train", "runs", "attach", "stop"), "hipwizard.tui.train.screen:TrainScreen"),
)

STEP_KEYS: tuple[str, ...] = tuple(s.key for s in STEPS)

# Workspace-wide commands (not a step's): ``hipwizard status``, ``report`` and ``env``.
WORKSPACE_CLIS: tuple[str, ...] = ("hipwizard.cli.status", "hipwizard.cli.report")
WORKSPACE_COMMANDS: tuple[str, ...] = ("status", "report", "env")


def step_by_key(key: str) -> Step:
    for s in STEPS:
        if s.key == key:
            return s
    raise KeyError(key)


def cli_modules() -> tuple[str, ...]:
    return WORKSPACE_CLIS + tuple(s.cli for s in STEPS)


def subcommands() -> frozenset[str]:
    return frozenset(WORKSPACE_COMMANDS).union(*(s.commands for s in STEPS))
