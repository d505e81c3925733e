"""The run view's pure render helpers (``tui/train/run_panels``)."""

from __future__ import annotations

from hipwizard.train.run.history import TrainerPoint
from hipwizard.train.run.snapshot import RunSnapshot
from hipwizard.tui.train.run_panels import rates_text


def test_a_cpu_run_shows_zero_peak_vram_never_minus_zero():
    """LLaMA-Factory's RECORD_VRAM on a CPU run logs ``vram_reserved: -0.0``: the panel says 0.0 GB."""
    for logged in (-0.0, -0.004):
        point = TrainerPoint.from_record({"current_steps": 1, "vram_reserved": logged, "vram_allocated": logged})
        assert (point.vram_reserved_gb, point.vram_allocated_gb) == (0.0, 0.0)
        assert str(point.vram_reserved_gb) == "0.0"
        text = rates_text(RunSnapshot("cpu-run", "running", "", vram_peak_gb=logged)).plain
        assert "peak VRAM (torch) 0.0 GB" in text and "-0.0" not in text, text
    text = rates_text(RunSnapshot("gpu-run", "running", "", vram_peak_gb=41.26)).plain
    assert "peak VRAM (torch) 41.3 GB" in text
