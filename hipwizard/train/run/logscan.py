"""Read the run's stdout log (``train.log``): grad_norm, warnings, tracebacks, and the last lines.

tqdm writes its bar with carriage returns, so a "line" of the file holds many bar frames followed by
the Trainer's ``{'loss': ..., 'grad_norm': ...}`` dict; both ``\\r`` and ``\\n`` split lines here and
bar frames are kept aside as the current progress text instead of filling the view.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from dataclasses import dataclass
from typing import Iterable, Literal

from hipwizard.train.run.alarms import step_key

Level = Literal["info", "warn", "error"]
_BAR = re.compile(r"^\s*\d+%\|")
_DICT = re.compile(r"\{'(?:loss|eval_loss|train_runtime)'.*\}")
_ERROR = re.compile(r"^(\w+\.)*\w*(Error|Exception)\b.*:|^\s*(RuntimeError|CUDA error|HIP error|torch\.\w*Error)|"
                    r"\bError\b.*\bNCCL\b|ncclInternalError|ChildFailedError|^Killed$|Segmentation fault")
_WARN = re.compile(r"^\[WARNING|\bWarning:|UserWarning|FutureWarning|DeprecationWarning|^\[W\d{4}")
MAX_LINE = 400


@dataclass(frozen=True)
class LogLine:
    text: str
    level: Level


def _float(v) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


class StdoutScan:
    """Consumes lines of train.log in order; keeps what the run view shows."""

    def __init__(self, keep: int = 400):
        self.lines: deque[LogLine] = deque(maxlen=keep)
        self.grad_norms: list[float] = []
        self.grad_by_key: dict[str, float] = {}  # alarms.step_key(epoch, loss) -> grad_norm
        self.warnings = 0
        self.errors = 0
        self.progress_bar = ""
        self.in_traceback = False
        self.final_metrics: dict | None = None

    def reset(self) -> None:
        type(self).__init__(self, self.lines.maxlen or 400)

    def feed(self, lines: Iterable[str]) -> None:
        for raw in lines:
            for piece in raw.split("\r"):
                self._one(piece.rstrip())

    def _one(self, text: str) -> None:
        if not text.strip():
            return
        if _BAR.match(text):
            self.progress_bar = text.strip()
            return
        m = _DICT.search(text)
        if m:
            self._metrics(m.group(0))
            text = m.group(0)
        text = text[:MAX_LINE]
        level: Level = "info"
        if text.startswith("Traceback (most recent call last)"):
            self.in_traceback, level = True, "error"
        elif self.in_traceback:
            level = "error"
            if not text.startswith((" ", "\t")) and not text.startswith("Traceback"):
                # The exception line closes the traceback (chained ones reopen it).
                self.in_traceback = text.startswith(("The above exception", "During handling"))
                self.errors += 1
        elif _ERROR.search(text):
            level = "error"
            self.errors += 1
        elif _WARN.search(text):
            level = "warn"
            self.warnings += 1
        self.lines.append(LogLine(text, level))

    def _metrics(self, text: str) -> None:
        try:
            d = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return
        if not isinstance(d, dict):
            return
        g = _float(d.get("grad_norm"))
        if g is not None:
            self.grad_norms.append(g)
            key = step_key(d.get("epoch"), d.get("loss"))
            if key is not None:
                self.grad_by_key[key] = g
        if "train_runtime" in d:
            self.final_metrics = d

    @property
    def last_grad_norm(self) -> float | None:
        return self.grad_norms[-1] if self.grad_norms else None
