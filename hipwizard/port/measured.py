"""How often each flag kind marks real AMD porting work, as measured (``assets/risk_precision.yaml``, written by
``benchmarks/amd_divergence.py --write-precision``): in projects that build for both vendors, the share of a kind's
flagged lines within 3 lines of code the humans guarded for AMD. Read by the risk budget (what the review shows of
a file's flags) and by the review (its flagged hunks, most telling first); neither depends on the other."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

ASSET = Path(__file__).resolve().parents[1] / "assets" / "risk_precision.yaml"
UNMEASURED = 0.5  # a kind the corpus never showed ranks in the middle


@lru_cache(maxsize=1)
def measured() -> dict[str, dict]:
    """{kind: {"places", "near", "precision"}} from the asset; {} when it is missing or unreadable."""
    try:
        data = yaml.safe_load(ASSET.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return {}
    kinds = data.get("kinds") if isinstance(data, dict) else None
    return {str(k): v for k, v in kinds.items() if isinstance(v, dict)} if isinstance(kinds, dict) else {}


def precision(kind: str) -> float:
    """The kind's measured share (``UNMEASURED`` for a kind the corpus never showed)."""
    v = measured().get(kind, {}).get("precision")
    return float(v) if isinstance(v, (int, float)) else UNMEASURED
