"""The four steps as the app knows them: title, key and where the screen lives.

A step whose screen module is not present in this build is listed as "not in this build" and cannot be
opened — never shown as if it worked.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass


@dataclass(frozen=True)
class StepSpec:
    key: str  # workspace step key
    number: int
    title: str
    blurb: str
    screen: str  # "module:Class"

    @property
    def available(self) -> bool:
        module = self.screen.split(":")[0]
        try:
            return importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            return False

    def load(self):
        module, cls = self.screen.split(":")
        return getattr(importlib.import_module(module), cls)


STEPS: tuple[StepSpec, ...] = (
    StepSpec("doctor", 1, "Doctor", "Is this machine ready for an MI300X fine-tune?",
             "hipwizard.tui.doctor_screen:DoctorScreen"),
    StepSpec("port", 2, "Port", "Hipify the CUDA tree and review it hunk by hunk",
             "hipwizard.tui.port_screen:PortScreen"),
    StepSpec("parity", 3, "Parity", "Do the layers compute the same numbers?",
             "hipwizard.tui.parity_screen:ParityScreen"),
    StepSpec("train", 4, "Train", "Plan, launch and watch the LLaMA-Factory run",
             "hipwizard.tui.train_screen:TrainScreen"),
)


def step_by_key(key: str) -> StepSpec:
    for s in STEPS:
        if s.key == key:
            return s
    raise KeyError(key)
