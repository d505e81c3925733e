"""Calibration fit and use, known-bad combinations, Liger in the advisor — on the H200 numbers of issue 18."""

from __future__ import annotations

import json
from pathlib import Path

from hipwizard.train.advisor import advise
from hipwizard.train.calibration import Calibration, Measurement, key_mismatch
from hipwizard.train.config import TrainConfig
from hipwizard.train.knobs import KnobAvailability, exclusion

from .test_advisor import SHAPE, recipe_values

FIXTURE = Path(__file__).parent.parent / "fixtures" / "train" / "h200_calibration_issue18.json"


def _h200_calibration() -> Calibration:
    data = json.loads(FIXTURE.read_text())["calibration"]
    return Calibration.from_dict(data)


def test_liger_with_torch_compile_is_never_proposed_and_the_advice_says_why():
    cfg = TrainConfig(**recipe_values(zero_stage=None, torch_compile=True))
    assert exclusion(cfg.model_copy(update={"enable_liger_kernel": True})).id == "liger-with-torch-compile"
    advice = advise(cfg, SHAPE, vram_gib=139.8, seq_len=830, lengths="fixed", knobs=KnobAvailability.everything())
    assert not any(c.config.enable_liger_kernel and c.config.torch_compile for c in advice.ranked)
    assert any("illegal memory access" in line and "torch 2.11.0" in line for line in advice.excluded)


def test_liger_is_proposed_where_installed_with_its_measured_reason():
    cfg = TrainConfig(**recipe_values(zero_stage=3))
    without = advise(cfg, SHAPE, vram_gib=139.8, seq_len=830, lengths="fixed")
    with_liger = advise(cfg, SHAPE, vram_gib=139.8, seq_len=830, lengths="fixed", knobs=KnobAvailability.everything())
    assert not without.best.config.enable_liger_kernel
    assert with_liger.best.config.enable_liger_kernel and with_liger.best.speedup > without.best.speedup
    assert any("1.10-1.23x" in r for r in with_liger.best.reasons)


def test_measured_configs_show_their_measurement_and_others_are_calibrated():
    cal = _h200_calibration()
    cfg = TrainConfig(**recipe_values(zero_stage=3, flash_attn="sdpa"))  # the recipe as calibrate_gpu.py ran it
    advice = advise(cfg, SHAPE, vram_gib=139.8, seq_len=830, lengths="fixed", knobs=KnobAvailability.everything(),
                    calibration=cal)
    measured = [c for c in advice.ranked if c.source == "measured"]
    assert len(measured) == len(cal.good) == 4
    for c in measured:
        assert abs(c.throughput.step_seconds - c.measured.step_s) < 1e-9
        assert abs(c.estimate.total_gib - c.measured.peak_gib) < 1e-6
    assert advice.best.source == "measured" and advice.best.throughput.tokens_per_s > 16_000
    assert any(c.source == "calibrated" for c in advice.ranked)
    assert any("measured here" in r for r in advice.best.reasons)


def test_one_measurement_gives_a_ratio_and_an_offset():
    m = Measurement("x", {}, True, step_s=1.2, tokens_per_s=100.0, peak_gib=50.0, predicted_step_s=1.0,
                    predicted_compute_s=0.9, predicted_peak_gib=45.0, predicted_per_token_gib=20.0)
    cal = Calibration(key={}, measurements=[m])
    cfg = TrainConfig()
    assert abs(cal.correct_step(cfg, 2.0, 1.8) - 2.4) < 1e-9
    assert abs(cal.correct_peak(cfg, 30.0, 10.0) - 35.0) < 1e-9


def test_a_calibration_from_another_gpu_or_torch_does_not_apply():
    key = _h200_calibration().key
    assert key_mismatch(key, {**key, "gpu": "H200"}) == ""
    assert "GPU" in key_mismatch(key, {**key, "gpu": "AMD Instinct MI300X"})
    assert "torch" in key_mismatch(key, {**key, "torch": "2.14.1"})
