"""Issue 33 item 4: calibration measures start-up and one checkpoint; the advisor ranks the planned run with them
(the H200 priors only where nothing was measured); a fresh plan's memory is corrected by calibration.

Fast tests on recorded numbers (the issue-18 H200 calibration, the H200 notes of issue 33) and synthetic step
arrivals; the real CPU runs are in test_calibration_wall_cpu.py."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from hipwizard.train.calibration.corrections import Calibration, Measurement, knobs_of
from hipwizard.train.calibration.measure import checkpoint_cost, save_span, save_step, steady_timing
from hipwizard.train.config.train_config import TrainConfig
from hipwizard.train.planning.advisor import advise
from hipwizard.train.planning.device import DeviceTarget
from hipwizard.train.planning.knobs import KnobAvailability
from hipwizard.train.planning.memory import estimate_memory
from hipwizard.train.planning.model_shape import load_shape
from hipwizard.train.planning.plan import make_plan
from hipwizard.train.planning.rules import RuleContext
from hipwizard.train.planning.wall import DS_CHECKPOINT_S, DS_STARTUP_S, planned_wall, saves

from .plan_fixtures import FIXTURES, recipe_values

SHAPE_RESULT = load_shape("m8b", FIXTURES)
SHAPE = SHAPE_RESULT.shape
H200 = json.loads((FIXTURES / "h200_calibration_issue18.json").read_text())["calibration"]
# The H200 run of issue 18: 8B LoRA q_proj,v_proj, 830-token fixed-length sequences, SDPA, Liger, no checkpointing.
PICK = dict(flash_attn="sdpa", enable_liger_kernel=True, disable_gradient_checkpointing=True,
            dataset="validate_fixed_len", per_device_train_batch_size=16, gradient_accumulation_steps=1)


def _arrivals(first_step: float, step: float, n: int, *, slow: dict[int, float] | None = None) -> dict[int, float]:
    """Step -> arrival: step 1 at ``first_step``, then ``step`` each, ``slow[s]`` seconds more before step s."""
    out, t = {}, first_step
    for s in range(1, n + 1):
        if s > 1:
            t += step + (slow or {}).get(s, 0.0)
        out[s] = t
    return out


def test_the_save_step_lies_inside_the_steady_window_once():
    assert save_step(8, 2) == 5 and save_step(6, 2) == 4 and save_step(12, 2) == 7
    assert save_step(4, 2) is None and save_step(5, 2) is None  # fewer than 3 steady intervals: no room
    for steps, warmup in ((6, 2), (8, 2), (12, 3), (40, 2), (1000, 2)):
        c = save_step(steps, warmup)
        assert c is not None and warmup < c < steps and 2 * c > steps  # one save, its next step timed


def test_step_arrivals_give_step_time_start_up_and_one_checkpoint():
    # launch at 100; step 1 after 14 s (load + a slow first step: 1.5 s), step 2 slow too; the save after step 5
    arrivals = _arrivals(114.0, 0.5, 8, slow={2: 0.7, 6: 0.3})
    t = steady_timing(arrivals, warmup=2, save_at=5, start=100.0)
    assert t.step_s == pytest.approx(0.5) and t.checkpoint_s == pytest.approx(0.3) and t.checkpoint_step == 5
    assert t.first_step_s == pytest.approx(14.0)
    # to step 3 it took 14 + 1.2 + 0.5 = 15.7 s, of which 3 steady steps are 1.5 s
    assert t.startup_s == pytest.approx(15.7 - 1.5)
    # without the save left out, the step time would be 0.3 / 5 too long: the interval holding it is excluded
    plain = steady_timing(arrivals, warmup=2, save_at=None, start=100.0)
    assert plain.step_s == pytest.approx(0.56) and plain.checkpoint_s is None


def test_a_save_inside_the_step_noise_is_taken_from_its_file_times():
    """A loaded CPU: steps of 0.1-0.3 s, a 20 ms LoRA save; the interval after it says 0.25 s more than the median,
    the noise (median absolute deviation) is 0.1 s: the file times' 0.02 s are taken. An 11 s DeepSpeed save over
    0.8 s steps that vary by 10 ms is the interval's."""
    arrivals = _arrivals(10.0, 0.2, 8, slow={4: -0.1, 5: 0.1, 6: 0.25, 7: -0.1, 8: 0.1})
    t = steady_timing(arrivals, warmup=2, save_at=5, start=0.0)
    assert t.checkpoint_s == pytest.approx(0.25) and t.noise_s == pytest.approx(0.1)
    assert checkpoint_cost(t.checkpoint_s, 0.02, t.noise_s) == 0.02
    gpu = steady_timing(_arrivals(40.0, 0.8, 8, slow={4: 0.01, 6: 11.0, 7: -0.01}), warmup=2, save_at=5, start=0.0)
    assert gpu.checkpoint_s == pytest.approx(11.0) and checkpoint_cost(gpu.checkpoint_s, 9.5, gpu.noise_s) == (
        pytest.approx(11.0))
    assert checkpoint_cost(0.01, 0.05, 0.0) == 0.05  # never below what the files took
    assert checkpoint_cost(None, 0.05, 0.0) == 0.05 and checkpoint_cost(0.3, None, 0.0) == 0.3


def test_a_burst_of_steps_has_no_checkpoint_and_start_up_from_the_last_arrival():
    burst = dict.fromkeys(range(1, 9), 120.0)  # all steps read in one poll
    assert steady_timing(burst, warmup=2, save_at=5, start=100.0).step_s == 0.0  # the caller times it otherwise
    t = steady_timing(burst, warmup=2, save_at=None, start=100.0, step_s=0.5)
    assert t.checkpoint_s is None and t.startup_s == pytest.approx(20.0 - 8 * 0.5)


def test_a_checkpoint_folder_gives_the_span_of_its_file_times(tmp_path):
    import os

    folder = tmp_path / "checkpoint-5"
    (folder / "global_step5").mkdir(parents=True)
    for i, name in enumerate(("adapter_model.safetensors", "global_step5/optim_states.pt", "trainer_state.json")):
        (folder / name).write_text("x")
        os.utime(folder / name, (1000.0 + 2 * i, 1000.0 + 2 * i))
    assert save_span(folder) == pytest.approx(4.0)
    assert save_span(tmp_path / "missing") is None
    # the trainer's own line says when the save began (local time, milliseconds): from there to the last file
    from datetime import datetime

    stamp = datetime.fromtimestamp(999.25).strftime("%Y-%m-%d %H:%M:%S") + ",250"
    log = tmp_path / "train.log"
    log.write_text(f"[INFO|trainer.py:3815] {stamp.replace(',250', ',100')} >> Saving model checkpoint to "
                   f"output/checkpoint-4\n 42%|####| 5/12 [INFO|trainer.py:3815] {stamp} >> Saving model checkpoint "
                   "to output/checkpoint-5\n")
    assert save_span(folder, log) == pytest.approx(4.75)
    assert save_span(folder, tmp_path / "no-log") == pytest.approx(4.0)  # no line: the files alone


def test_old_calibrations_load_and_fall_back_to_the_priors():
    old = {k: v for k, v in H200.items()}  # written before start-up and checkpoint costs were kept
    assert not any("startup_s" in m or "checkpoint_s" in m for m in old["measurements"])
    cal = Calibration.from_dict(old)
    assert cal is not None and cal.good and all(m.startup_s is None and m.checkpoint_s is None for m in cal.good)
    zero2 = TrainConfig(**recipe_values(zero_stage=2, **PICK))
    wall, how, source = planned_wall(zero2, step_s=0.8, steps=40, save_steps=500, measured=cal.find(zero2),
                                     calibration=cal)
    assert source == "prior" and wall == pytest.approx(DS_STARTUP_S + 40 * 0.8 + DS_CHECKPOINT_S)
    assert "H200 prior, not timed here" in how
    # round trip keeps the new fields
    m = replace(cal.good[0], first_step_s=20.0, startup_s=18.5, checkpoint_s=0.4, checkpoint_step=5)
    back = Calibration.from_dict({**cal.to_dict(), "measurements": [vars(m)]})
    assert back is not None and (back.measurements[0].startup_s, back.measurements[0].checkpoint_s) == (18.5, 0.4)


def test_checkpoints_counted_include_the_last_steps_save():
    assert [saves(n, 500) for n in (0, 40, 500, 501, 2000)] == [0, 1, 1, 2, 4]


def _h200_pair(no_ds_step: float, zero2_step: float, no_ds_start: float = 0.0, no_ds_ckpt: float = 0.0):
    """The issue-18 calibration's two 16 x 1 measurements with the H200 notes' extras: ZeRO-2 needs 12 s more to
    its first step and 11 s more per checkpoint (/work/shared/gpu-box notes; only these differences were kept
    there, so no DeepSpeed's own start-up and save are ``no_ds_start`` / ``no_ds_ckpt``: the ranking does not
    depend on them)."""
    cal = Calibration.from_dict(H200)
    plain = TrainConfig(**recipe_values(zero_stage=None, **PICK))
    zero2 = plain.model_copy(update={"zero_stage": 2})
    out = []
    for m in cal.measurements:
        if m.knobs == knobs_of(plain):
            out.append(replace(m, step_s=no_ds_step, tokens_per_s=m.tokens_per_s * m.step_s / no_ds_step,
                               startup_s=no_ds_start, checkpoint_s=no_ds_ckpt))
        elif m.knobs == knobs_of(zero2):
            out.append(replace(m, step_s=zero2_step, tokens_per_s=m.tokens_per_s * m.step_s / zero2_step,
                               startup_s=no_ds_start + 12.0, checkpoint_s=no_ds_ckpt + 11.0))
    cal.measurements = out
    return cal, plain, zero2


def _winner(cal: Calibration, plain: TrainConfig, steps: int, save_steps: int) -> tuple[str, dict]:
    cfg = plain.model_copy(update={"max_steps": steps, "save_steps": save_steps})
    advice = advise(cfg, SHAPE, vram_gib=139.8, seq_len=830, lengths="fixed", knobs=KnobAvailability.everything(),
                    calibration=cal, planned_steps=steps)
    both = {c.config.zero_stage: c for c in [advice.baseline, *advice.ranked]
            if c.source == "measured" and c.config.per_device_train_batch_size == 16}
    assert set(both) == {None, 2}
    assert [c.wall_source for c in both.values()] == ["measured here"] * 2
    return ("no DeepSpeed" if both[None].wall_s < both[2].wall_s else "ZeRO-2"), both


def crossover(cal: Calibration, plain: TrainConfig, save_steps: int, limit: int = 20_000) -> int | None:
    """The first planned step count (in steps of 10) where ZeRO-2's run is the shorter one: the advisor's own
    candidates (one plan), their walls from ``planned_wall`` as the advisor makes them."""
    _, both = _winner(cal, plain, 10, save_steps)
    for steps in range(10, limit, 10):
        walls = {z: planned_wall(c.config, step_s=c.throughput.step_seconds, steps=steps, save_steps=save_steps,
                                 measured=c.measured, calibration=cal)[0] for z, c in both.items()}
        if walls[2] < walls[None]:
            return steps
    return None


def test_the_h200_measured_extras_rank_the_planned_run():
    """The H200 notes: ZeRO-2 16.6-16.8k tokens/s (0.795 s a step at 16 x 830), no DeepSpeed ~3% slower; +12 s to
    the first step, +11 s a checkpoint. Fed through the calibration, the advisor picks no DeepSpeed for 40 steps
    and, with one save at the end, ZeRO-2 from ~960 steps; with LLaMA-Factory's default save_steps 500, ZeRO-2's
    saves eat almost all its gain."""
    cal, plain, _ = _h200_pair(0.795 * 1.03, 0.795, no_ds_start=20.0, no_ds_ckpt=0.5)
    winner, both = _winner(cal, plain, 40, 10**9)
    assert winner == "no DeepSpeed"
    assert "start-up 32.00 s measured here" in both[2].wall_note and "1 checkpoint x 11.50 s measured here" in (
        both[2].wall_note)
    assert _winner(cal, plain, 2000, 10**9)[0] == "ZeRO-2"
    one_save = crossover(cal, plain, 10**9)
    assert one_save is not None and 950 <= one_save <= 970  # 23 s / 0.024 s a step
    # the notes' ~1,250 is this model with a 2.3% gap (23 s / 1,250 = 0.0184 s a step)
    cal23, plain23, _ = _h200_pair(0.795 * 1.023, 0.795)
    found = crossover(cal23, plain23, 10**9)
    assert found is not None and 1230 <= found <= 1280
    default_saves = crossover(cal, plain, 500)
    assert default_saves is not None and 6_000 <= default_saves <= 7_000  # 11 s a save vs 11.9 s gained
    # the same extras do not depend on no DeepSpeed's own start-up or save: only differences count
    cal0, plain0, _ = _h200_pair(0.795 * 1.03, 0.795)
    assert crossover(cal0, plain0, 10**9) == one_save


def test_issue_18s_short_calibration_times_move_the_crossover():
    """The 7-step calibration of issue 18 timed ZeRO-2 at 0.781 s and no DeepSpeed at 0.860 s a step (a 10% gap
    the 40-step runs did not confirm): with the same extras ZeRO-2 wins from ~290 steps."""
    cal, plain, _ = _h200_pair(0.860, 0.781)
    found = crossover(cal, plain, 10**9)
    assert found is not None and 280 <= found <= 300


def test_start_up_is_pooled_over_runs_that_differ_only_where_it_does_not_matter():
    """Two no-DeepSpeed runs that differ in gradient checkpointing start in 9.3 and 14.5 s on a loaded CPU: both
    get their median, so a short plan is not decided by one noisy start-up; packing keeps its own."""
    plain = TrainConfig(**recipe_values(zero_stage=None, **PICK))
    ckpt = plain.model_copy(update={"disable_gradient_checkpointing": False})
    packed = plain.model_copy(update={"packing": True})
    ms = [Measurement("a", knobs_of(plain), True, step_s=0.1, startup_s=9.3, checkpoint_s=0.1),
          Measurement("b", knobs_of(ckpt), True, step_s=0.15, startup_s=14.5, checkpoint_s=0.3),
          Measurement("c", knobs_of(packed), True, step_s=0.16, startup_s=12.6, checkpoint_s=0.05)]
    cal = Calibration({}, ms)
    for cfg, m in ((plain, ms[0]), (ckpt, ms[1])):
        wall, how, _ = planned_wall(cfg, step_s=m.step_s, steps=8, save_steps=500, measured=m, calibration=cal)
        assert wall == pytest.approx(11.9 + 8 * m.step_s + 0.1)  # start-up and checkpoint: medians of a, b (, c)
        assert "start-up 11.90 s measured here (median of 2 runs with the same DeepSpeed, compile and packing" in how
        assert "checkpoint x 0.10 s measured here (median of 3 runs with the same DeepSpeed setting)" in how
    wall, how, _ = planned_wall(packed, step_s=0.16, steps=8, save_steps=500, measured=ms[2], calibration=cal)
    assert "start-up 12.60 s measured here;" in how and wall == pytest.approx(12.6 + 8 * 0.16 + 0.1)


def test_an_unmeasured_candidate_borrows_its_setting_s_measurement_or_the_measured_one_plus_the_prior():
    cal, plain, zero2 = _h200_pair(0.82, 0.8, no_ds_start=20.0, no_ds_ckpt=0.5)
    half = plain.model_copy(update={"per_device_train_batch_size": 8, "gradient_accumulation_steps": 2})
    wall, how, source = planned_wall(half, step_s=1.0, steps=10, save_steps=500, measured=None, calibration=cal)
    assert source == "measured here" and wall == pytest.approx(20 + 10 + 0.5)
    assert "start-up 20.00 s measured here (a run with the same DeepSpeed, compile and packing settings)" in how
    assert "checkpoint x 0.50 s measured here (a run with the same DeepSpeed setting)" in how
    only_plain = Calibration(cal.key, [m for m in cal.measurements if m.knobs["zero_stage"] is None])
    wall, how, source = planned_wall(zero2, step_s=1.0, steps=10, save_steps=500, measured=None,
                                     calibration=only_plain)
    assert source == "measured here + prior" and wall == pytest.approx(20 + 12 + 10 + 0.5 + 11)
    assert "another DeepSpeed setting + 12 s" in how


def _h200_plan(config: TrainConfig, cal: Calibration):
    key = cal.key
    versions = {k: key[k] for k in ("torch", "llamafactory", "transformers", "liger-kernel")}
    knobs = replace(KnobAvailability.everything(), versions=versions)
    ctx = RuleContext(base_dir=FIXTURES, device=DeviceTarget("NVIDIA H200", 139.8, "sm_90", "test"),
                      shape=SHAPE_RESULT)
    return make_plan(config, base_dir=FIXTURES, device=ctx.device, seq_len=830, lengths="fixed", context=ctx,
                     calibrations=[cal], knobs=knobs)


def test_a_fresh_plan_of_a_calibrated_no_deepspeed_family_is_within_3_percent():
    """Issue 33: the no-DeepSpeed estimate is 8.4% low on the H200 (61.8 predicted, 67.5 GiB measured at 16 x 1).
    A calibration that measured only that config corrects a fresh plan of its family: the same config lands on
    its measurement, and 8 x 2 (measured 41.70 GiB in the same session, held out here) within 3%."""
    plain = TrainConfig(**recipe_values(zero_stage=None, **PICK))
    raw = estimate_memory(plain, SHAPE, seq_len=830, device_vram_gib=139.8, lengths="fixed").total_gib
    assert raw == pytest.approx(61.82, abs=0.05) and (67.507 - raw) / 67.507 > 0.08  # the miss, reproduced
    full = Calibration.from_dict(H200)
    held = next(m for m in full.measurements if m.knobs["zero_stage"] is None and m.knobs[
        "per_device_train_batch_size"] == 8)
    only = Calibration(full.key, [m for m in full.measurements if m.knobs == knobs_of(plain)], machine="h200-box")
    same = _h200_plan(plain, only)
    assert same.source == "measured" and same.estimate.total_gib == pytest.approx(67.507, rel=0.03)
    half = plain.model_copy(update={"per_device_train_batch_size": 8, "gradient_accumulation_steps": 2})
    fresh = _h200_plan(half, only)
    assert fresh.source == "calibrated"
    assert abs(fresh.estimate.total_gib - held.peak_gib) / held.peak_gib < 0.03, fresh.estimate.total_gib
    raw_half = estimate_memory(half, SHAPE, seq_len=830, device_vram_gib=139.8, lengths="fixed").total_gib
    assert abs(raw_half - held.peak_gib) / held.peak_gib > abs(fresh.estimate.total_gib - held.peak_gib) / held.peak_gib
    (part,) = [p for p in fresh.estimate.parts if p.name == "calibration"]
    assert part.note.startswith("corrected by calibration (calibrated here, h200-box)") and part.gib > 0


def test_the_plan_text_says_corrected_by_calibration_and_how_the_planned_run_was_timed():
    from hipwizard.cli.train_plan import render_plan

    cal, plain, _ = _h200_pair(0.82, 0.795, no_ds_start=20.0, no_ds_ckpt=0.5)
    text = render_plan(_h200_plan(plain.model_copy(update={"max_steps": 40, "save_steps": 500}), cal))
    assert "corrected by calibration (measured here" in text
    assert "shortest run of the planned 40 steps first" in text
    assert "start-up and checkpoints measured here (40 steps x 0.82 s; start-up 20.00 s measured here" in text
    elsewhere = Calibration({**cal.key, "gpu": "AMD Instinct MI300X"}, cal.measurements)  # does not apply here
    fresh = render_plan(_h200_plan(plain.model_copy(update={"max_steps": 40}), elsewhere))
    assert "corrected by calibration" not in fresh
    assert "(relative: what every config pays alike is left out); start-up and checkpoints prior" in fresh
