from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hipwizard.errors import UserError
from hipwizard.parity.compare.curves import compare_curves, ema, read_curve

FIX = Path(__file__).parent.parent / "fixtures" / "llamafactory"


def _run(tmp_path, name, fixture):
    run = tmp_path / name
    run.mkdir()
    shutil.copy(FIX / fixture, run / "trainer_log.jsonl")
    return run


def test_real_h200_runs_plain_vs_zero3_match(tmp_path):
    a = read_curve(_run(tmp_path, "plain", "trainer_log-8b-lora-plain-h200.jsonl"))
    b = read_curve(_run(tmp_path, "zero3", "trainer_log-8b-lora-zero3-h200.jsonl"))
    assert a.steps == list(range(1, 13)) and a.skipped == 0  # the final summary line has no loss
    gap = compare_curves(a, b)
    assert not gap.diverged and 0 < gap.max_gap < 0.05
    assert gap.headline().startswith("✔ match")


def test_divergence_step_is_found_after_smoothing(tmp_path):
    a = read_curve(_run(tmp_path, "plain", "trainer_log-8b-lora-plain-h200.jsonl"))
    lines = (FIX / "trainer_log-8b-lora-plain-h200.jsonl").read_text().splitlines()
    drifted = []
    for line in lines:
        rec = json.loads(line)
        if "loss" in rec and rec["current_steps"] >= 6:
            rec["loss"] += 0.5
        drifted.append(json.dumps(rec))
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "trainer_log.jsonl").write_text("\n".join(drifted) + '\n{"current_steps": 13, "lo')  # killed mid-write
    b = read_curve(bad)
    assert b.skipped == 1
    gap = compare_curves(a, b, smoothing=0.3, threshold=0.1)
    assert gap.exceeds_at == 6  # 0.3 * 0.5 = 0.15 > 0.1 on the first drifted step
    gap = compare_curves(a, b, smoothing=0.1, threshold=0.1)
    assert gap.exceeds_at == 8  # heavier smoothing notices later: 0.5 * (1 - 0.9**3) = 0.136
    assert gap.max_gap_step == 12


def test_ema_and_bad_input(tmp_path):
    assert ema([1.0, 3.0], 0.5) == [1.0, 2.0]
    with pytest.raises(UserError, match="no trainer_log.jsonl"):
        read_curve(tmp_path)
    (tmp_path / "trainer_log.jsonl").write_text('{"current_steps": 1}\n')
    with pytest.raises(UserError, match="no loss values"):
        read_curve(tmp_path)
