"""The knobs a run gets through its launch environment, not its YAML: ``hipwizard_knobs.json`` in the run folder.

LLaMA-Factory refuses keys it does not know, so PyTorch's TunableOp (``TrainConfig.tunableop``) cannot live in
config.yaml: ``save_run_dir`` writes ``{"written_by": "hipwizard", "tunableop": true}`` beside it, ``load_yaml``
reads it back, and the launcher turns it into environment variables (``knob_environment``) on ROCm only: on CUDA
TunableOp only ever found cuBLAS's Default GEMM (+0.2%, noise; H200, /work/shared/gpu-box/README.md).

The variables (torch.cuda.tunable, "Environment Variable Interface" and "File Input and Output";
https://docs.pytorch.org/docs/stable/cuda.tunable.html, and the module's docstring in the installed torch):

- ``PYTORCH_TUNABLEOP_ENABLED=1``: GEMMs go through TunableOp, which uses a tuned solution when it has one;
- ``PYTORCH_TUNABLEOP_TUNING=1``: a GEMM shape with no result yet is tuned (every rocBLAS / hipBLASLt solution run
  up to 100 times or 30 ms, the fastest kept): the one-time cost, on the first steps;
- ``PYTORCH_TUNABLEOP_FILENAME``: the results file, read at the first GEMM and written with every result, old
  and new, when the process ends; ``%d`` is replaced by the GPU ordinal (one file per process). In the run
  folder, so a resume (same folder) reuses the tunings instead of paying them again; a file written under other
  torch / ROCm / hipBLASLt versions is rejected by TunableOp itself (its Validator lines).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hipwizard.train.config.bounded import read_regular_text

KNOBS_NAME = "hipwizard_knobs.json"
TUNABLEOP_RESULTS = "tunableop_results%d.csv"
WRITER = "hipwizard"


def knobs_json(config: Any) -> dict[str, Any] | None:
    """What ``hipwizard_knobs.json`` holds for ``config`` (a ``TrainConfig``), or None when no knob needs it."""
    return {"written_by": WRITER, "tunableop": True} if getattr(config, "tunableop", False) else None


def read_knobs(folder: Path) -> dict[str, Any]:
    """The launch knobs hipwizard wrote in ``folder`` ({} when none, unreadable, or not written by hipwizard)."""
    try:
        data = json.loads(read_regular_text(folder / KNOBS_NAME))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    if not isinstance(data, dict) or data.get("written_by") != WRITER:
        return {}
    return {"tunableop": data.get("tunableop") is True}


def knob_environment(knobs: dict[str, Any], platform: str, run_dir: Path) -> dict[str, str]:
    """The environment variables ``knobs`` stand for on ``platform`` (TunableOp: ROCm only; nothing elsewhere)."""
    if not knobs.get("tunableop") or platform != "rocm":
        return {}
    return {"PYTORCH_TUNABLEOP_ENABLED": "1", "PYTORCH_TUNABLEOP_TUNING": "1",
            "PYTORCH_TUNABLEOP_FILENAME": str(run_dir / TUNABLEOP_RESULTS)}
