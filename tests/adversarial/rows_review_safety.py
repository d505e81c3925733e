"""Adversarial rows of issue 27 (safe by default): see table.py for what every row checks."""

from __future__ import annotations

from .table import Case

ROWS: list[Case] = []
