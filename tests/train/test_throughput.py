"""Steady tokens/s from the real tokens of each step (issue 34 item 1): the short last step of an epoch counted as
what it is, padding apart from real tokens.

The recorded logs are two real CPU runs of ``llamafactory-cli train`` (the tiny demo model, LoRA, 64 samples at
4 x 5: three steps of 20 samples and one of 4 per epoch, 12 steps), the same seed, one counting tokens with
``include_num_input_tokens_seen: all`` (padding included), one with ``non_padding``
(tests/fixtures/llamafactory/*-demo-shortbatch-*; their config beside them).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from hipwizard.train.calibration.measure import _tokens_per_s
from hipwizard.train.run.history import RunHistory, TrainerPoint
from hipwizard.train.run.throughput import (
    EpochShape,
    banner_of,
    read_banner,
    steady_of_records,
    steady_rate,
    token_count_mode,
)

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "llamafactory"


def _points(name: str) -> list[TrainerPoint]:
    h = RunHistory()
    h.add(json.loads(line) for line in (FIX / name).read_text().splitlines() if line.strip())
    return h.points


def _tokens(points) -> dict[int, float]:
    return {p.step: p.total_tokens for p in points}


def test_epoch_shape_cuts_steps_as_the_trainer_does():
    s = EpochShape(500, 4, 4)  # issue 34's H200 recipe: 500 samples = 31 x 16 + 4
    assert s.steps_per_epoch == 32 and s.samples(31) == 16 and s.samples(32) == 4 and s.samples(33) == 16
    # a 50-step window over the epoch's end: 47 x 16 + 4 samples, not 48 x 16: the naive count is 1.6% high
    assert s.samples_between(2, 50) == 756 and round(48 * 16 / 756 - 1, 4) == 0.0159
    assert EpochShape(501, 4, 4).samples(32) == 5  # two micro-batches, the second of one sample
    assert EpochShape(501, 4, 4, drop_last=True).samples(32) == 4
    assert [EpochShape(10, 2, 1, world=2).samples(s) for s in (1, 2, 3)] == [4, 4, 2]  # 5 a rank: 2, 2, 1


def test_banner_of_the_recorded_run_gives_the_short_last_step():
    shape = banner_of(FIX / "stdout-demo-shortbatch-all-cpu.log")
    assert shape == EpochShape(64, 4, 5, 1)
    assert [shape.samples(s) for s in range(1, 13)] == [20, 20, 20, 4] * 3
    # the 8B H200 log: 1,500 samples at 4 x 4 = 93 steps of 16 and one of 12; its 12 steps are all full
    h200 = banner_of(FIX / "stdout-8b-lora-plain-h200.log")
    assert h200 == EpochShape(1500, 4, 4, 1) and h200.samples(94) == 12 and h200.samples_between(0, 12) == 192
    assert read_banner("Num examples = 64\nno batch sizes here") is None


def test_recorded_short_batch_log_steady_rate_against_the_naive_one():
    real_pts, padded_pts = _points("trainer_log-demo-shortbatch-nonpadding-cpu.jsonl"), \
        _points("trainer_log-demo-shortbatch-all-cpu.jsonl")
    shape = banner_of(FIX / "stdout-demo-shortbatch-all-cpu.log")
    real_tok, padded_tok = _tokens(real_pts), _tokens(padded_pts)
    mean_len = real_tok[12] / (3 * 64)  # three epochs of every sample: the mean real length of a sample
    times = {p.step: float(p.elapsed_s) for p in real_pts}
    # the trainer's own non-padding count over steps 2-12 (three short steps inside)
    rate = steady_rate(times, 1, 12, total_tokens=real_tok, token_count="non_padding", shape=shape,
                       full_step_tokens=shape.full * mean_len)
    assert rate is not None and rate.short_steps == (4, 8, 12) and rate.counted.startswith("real")
    seconds = times[12] - times[1]
    assert rate.real_tokens_per_s == pytest.approx((real_tok[12] - real_tok[1]) / seconds)
    # naive: 11 full steps of 20 samples; real: 8 x 20 + 3 x 4 = 172 samples. The trainer's count, which knows
    # nothing of EpochShape, agrees with the samples' ratio within the samples' length spread (0.1%)
    assert rate.naive_tokens_per_s / rate.tokens_per_s == pytest.approx(220 / 172, rel=2e-3)
    assert rate.naive_tokens_per_s / rate.tokens_per_s > 1.27  # the naive rate is 28% high here
    # without the trainer's count: samples x mean length gives the same real rate
    by_samples = steady_rate(times, 1, 12, shape=shape, sample_tokens=mean_len)
    assert by_samples.tokens_per_s == pytest.approx(rate.tokens_per_s, rel=2e-3)
    # the "all" run counts padding: with the samples' real tokens beside it the padding comes out apart; the
    # same seed fed the same samples, so the non-padding run says what the padding really was
    ptimes = {p.step: float(p.elapsed_s) for p in padded_pts}
    both = steady_rate(ptimes, 1, 12, total_tokens=padded_tok, token_count="all", shape=shape, sample_tokens=mean_len)
    true_share = 1 - (real_tok[12] - real_tok[1]) / (padded_tok[12] - padded_tok[1])
    assert both.padding_share == pytest.approx(true_share, abs=2e-3) and 0.1 < true_share < 0.2
    assert both.padded_tokens_per_s == pytest.approx((padded_tok[12] - padded_tok[1]) / (ptimes[12] - ptimes[1]))
    assert "padding" in both.line() and "3 short step(s)" in both.line()
    # the "all" count alone is labelled as such, never called real
    alone = steady_rate(ptimes, 1, 12, total_tokens=padded_tok, token_count="all", shape=shape)
    assert alone.real_tokens_per_s is None and "padding" in alone.counted


def test_run_view_steady_keeps_the_median_window_and_says_how_tokens_were_counted():
    pts = _points("trainer_log-8b-lora-plain-h200.jsonl")
    rate = steady_of_records(pts, shape=banner_of(FIX / "stdout-8b-lora-plain-h200.log"))
    assert rate is not None and round(rate.tokens_per_s) == 7981 and "padding" in rate.counted
    # a resume restarts the trainer's clock: only the latest attempt's records are windowed
    later = [TrainerPoint(p.step + 12, elapsed_s=(p.elapsed_s or 0) / 2, total_tokens=p.total_tokens) for p in pts]
    again = steady_of_records(pts + later)
    assert again is not None and again.first > 12 and again.tokens_per_s == pytest.approx(2 * rate.tokens_per_s, rel=0.3)
    assert token_count_mode(True) == "all" and token_count_mode("non_padding") == "non_padding"
    assert token_count_mode(False) is None and token_count_mode(None) is None


def test_calibration_tokens_per_s_counts_the_short_step_from_the_banner(tmp_path):
    """measure's tokens/s on the recorded run's files: the trainer's count when logged, else samples x length."""
    run = tmp_path / "run"
    run.mkdir()
    cfg = yaml.safe_load((FIX / "config-demo-shortbatch-cpu.yaml").read_text())
    pts = _points("trainer_log-demo-shortbatch-nonpadding-cpu.jsonl")
    records = {p.step: {"total_tokens": p.total_tokens} for p in pts}
    log = FIX / "stdout-demo-shortbatch-all-cpu.log"
    for mode, expect in (("non_padding", (pts[-1].total_tokens - pts[0].total_tokens) / 11.0),
                         (False, 172 * 60 / 11.0)):
        (run / "config.yaml").write_text(yaml.safe_dump(dict(cfg, include_num_input_tokens_seen=mode)))
        recs = records if mode else {s: {} for s in records}
        got = _tokens_per_s(run, log, recs, 1, 12, 1.0, 60, 20 * 60)
        assert got == pytest.approx(expect), mode
    # no banner (a log without it): every step a full batch, as before
    assert _tokens_per_s(run, tmp_path / "none.log", {s: {} for s in records}, 1, 12, 1.0, 60, 20 * 60) == \
        pytest.approx(20 * 60)


@pytest.mark.slow
def test_real_tiny_cpu_run_with_a_short_last_step(tmp_path, demo_assets):
    """A real llamafactory-cli run through the launcher (64 samples at 4 x 5, 8 steps: steps 4 and 8 hold 4
    samples): the Run view and calibration's rate count the trainer's tokens; the banner gives the short steps."""
    from hipwizard.train.demo import demo_values
    from hipwizard.train.run.launcher import LaunchOptions, launch
    from hipwizard.train.run.runs import run_info
    from hipwizard.train.run.watch import RunWatch

    from .helpers import LF_ENV, wait_for

    d = tmp_path / "short"
    d.mkdir()
    cfg = demo_values(demo_assets.root, max_steps=8)
    cfg.update(per_device_train_batch_size=4, gradient_accumulation_steps=5, include_num_input_tokens_seen="non_padding",
               overwrite_output_dir=True, seed=7, data_seed=7)
    (d / "config.yaml").write_text(yaml.safe_dump(cfg))
    m = launch(d, LaunchOptions(platform="cpu", extra_env=LF_ENV))
    wait_for(lambda: run_info(d).state != "running", timeout=300, poll=0.5)
    assert run_info(d).state == "finished", run_info(d).cause
    shape = banner_of(m.log_path)
    assert shape == EpochShape(64, 4, 5, 1) and [shape.samples(s) for s in range(1, 9)] == [20, 20, 20, 4] * 2
    w = RunWatch(d)
    w.attach()
    tok = _tokens(w.history.points)
    deltas = {s: tok[s] - tok[s - 1] for s in range(2, 9)}
    # the trainer fed the short steps a fifth of the samples: their tokens are about a fifth of a full step's
    full = [deltas[s] for s in (2, 3, 5, 6, 7)]
    short = [deltas[s] / (sum(full) / len(full)) for s in (4, 8)]
    assert short and all(0.1 < r < 0.35 for r in short), deltas
    records = {p.step: {"total_tokens": p.total_tokens} for p in w.history.points}
    got = _tokens_per_s(d, m.log_path, records, 1, 8, 0.5, 60, 20 * 60)
    assert got == pytest.approx((tok[8] - tok[1]) / 3.5)  # real tokens, the short steps as they were
    naive = 7 * 20 * (tok[8] / 128) / 3.5  # every step full, at the run's mean sample length
    assert naive / got == pytest.approx(140 / 108, rel=0.02)  # 7 x 20 samples counted; 5 x 20 + 2 x 4 were fed


def test_run_view_without_a_token_count_shows_samples_per_s_with_the_short_steps():
    from dataclasses import replace

    pts = [replace(p, total_tokens=None) for p in _points("trainer_log-demo-shortbatch-all-cpu.jsonl")]
    shape = banner_of(FIX / "stdout-demo-shortbatch-all-cpu.log")
    rate = steady_of_records(pts, shape=shape, min_span_s=2.0)
    assert rate is not None and rate.tokens_per_s is None and rate.samples_per_s is not None
    # the window's samples are the steps' own: a window over a short step holds 4 samples for it, not 20
    assert rate.samples_per_s * rate.seconds == shape.samples_between(rate.first, rate.last)
    assert "tokens unknown" in rate.line()
