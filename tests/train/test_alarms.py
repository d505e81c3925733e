"""Alarms: the detector on hand-made series, and a real LLaMA-Factory run with an injected learning-rate jump
whose alarm must show in `attach` within one log interval of the jump."""

from __future__ import annotations

import math
import os

import pytest

from hipwizard.train.run.alarms import MetricPoint, detect_alarms, metric_points, rate_points, step_key
from hipwizard.train.run.history import TrainerPoint


def _series(grads, losses=None, rates=None):
    n = len(grads)
    losses = losses or [2.0 - 0.01 * i for i in range(n)]
    rates = rates or [1000.0] * n
    return [MetricPoint(i + 1, losses[i], grads[i], rates[i]) for i in range(n)]


def test_grad_spike_needs_ten_times_the_running_median_and_rearms():
    grads = [1.0, 1.1, 0.9, 1.0, 9.0, 1.0, 1.0, 15.0, 14.0, 1.0, 12.0]
    alarms = detect_alarms(_series(grads))
    assert [(a.kind, a.step) for a in alarms] == [("grad_spike", 8), ("grad_spike", 11)]
    assert "step 8" in alarms[0].line() and "grad_norm 15" in alarms[0].line()


def test_nan_and_inf_alarm_once_per_episode_with_the_step():
    losses = [2.0, 1.9, float("nan"), float("nan"), 1.8, float("inf")]
    alarms = detect_alarms(_series([1.0] * 6, losses=losses))
    assert [(a.kind, a.step) for a in alarms] == [("nonfinite", 3), ("nonfinite", 6)]
    assert "NaN" in alarms[0].message and "infinite" in alarms[1].message and alarms[0].line().startswith("✖")


def test_throughput_drop_and_plateau():
    rates = [1000.0] * 6 + [400.0, 420.0, 1000.0]
    alarms = detect_alarms(_series([1.0] * 9, rates=rates))
    assert [(a.kind, a.step) for a in alarms] == [("throughput_drop", 7)]
    flat = [1.0] * 130
    plateau = [a for a in detect_alarms(_series([1.0] * 130, losses=flat), plateau_points=50) if a.kind == "plateau"]
    assert len(plateau) == 1 and plateau[0].step == 101  # 2 x 50 points seen, 50 without a new best
    falling = [2.0 * 0.99 ** i for i in range(130)]
    assert not detect_alarms(_series([1.0] * 130, losses=falling), plateau_points=50)


def test_rates_wait_for_four_seconds_of_elapsed_time():
    rates = rate_points([1, 2, 3, 4, 5], [1.0, 1.0, 3.0, 5.0, 9.0], [100, 200, 300, 400, 500])
    assert rates == [None, None, None, 300 / 4, 100 / 4]  # from the last record a rate was measured from


def test_metric_points_pair_grad_norms_by_epoch_and_loss_not_position():
    pts = [TrainerPoint(step=s, loss=2.0 / s, epoch=s / 300) for s in range(1, 6)]
    grads = {step_key(f"{p.epoch:.4g}", f"{p.loss:.4g}"): 0.1 * p.step for p in pts[2:4]}  # stdout tail only
    mp = metric_points(pts, grads)
    assert [m.grad_norm for m in mp] == [None, None, pytest.approx(0.3), pytest.approx(0.4), None]
    assert math.isnan(float(step_key("1", "nan").split("/")[1]))


# An injected gradient spike: at step HW_SPIKE_AT the loss (so every gradient) is scaled 1000x for one step.
# (A learning-rate jump was tried first: on the tiny random-weight demo model a 30x..1e5x lr jump under
# Adam with LoRA made grad_norm fall, not spike, so it cannot test the alarm there.)
SITE = '''
import os
_at = int(os.environ["HW_SPIKE_AT"])
import transformers.trainer as _tr
_orig = _tr.Trainer.compute_loss
def compute_loss(self, *a, **k):
    out = _orig(self, *a, **k)
    if self.state.global_step + 1 != _at:
        return out
    return (out[0] * 1000, *out[1:]) if isinstance(out, tuple) else out * 1000
_tr.Trainer.compute_loss = compute_loss
'''


def launch_spiked_demo(tmp_path, demo_assets, *, max_steps: int, at: int = 5, save_steps: int | None = None):
    """Launch, through hipwizard's launcher (CPU), a real demo LoRA run whose gradients are scaled 1000x at step
    ``at`` (``SITE`` through sitecustomize); ``save_steps``: keep a checkpoint every that many steps. Returns the
    ``Launched`` run and its workspace."""
    from hipwizard.train import services
    from hipwizard.train.demo import write_demo_run_dir
    from hipwizard.train.run.launcher import LaunchOptions
    from hipwizard.workspace import Workspace

    from .helpers import LF_ENV

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE)
    run_dir = write_demo_run_dir(tmp_path / "runs", demo_assets.root, max_steps=max_steps)
    if save_steps is not None:
        cfg = run_dir / "config.yaml"
        kept = [ln for ln in cfg.read_text().splitlines() if not ln.startswith(("save_steps:", "save_strategy:"))]
        cfg.write_text("\n".join(kept + [f"save_steps: {save_steps}", "save_strategy: steps"]) + "\n")
    env = {**LF_ENV, "HW_SPIKE_AT": str(at),
           "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    ws = Workspace.open(tmp_path / "ws")
    return services.launch(ws, run_dir, LaunchOptions(platform="cpu", extra_env=env)), ws


@pytest.mark.slow
def test_injected_gradient_spike_alarms_in_attach_within_one_log_interval(tmp_path, demo_assets, capsys):
    """A real demo run (LoRA, CPU, launched by hipwizard's launcher) whose gradients are scaled 1000x at
    step 5 (patched in through sitecustomize): `attach` prints the grad_norm alarm at step 5 itself."""
    from hipwizard.cli.train_run import follow

    launched, _ = launch_spiked_demo(tmp_path, demo_assets, max_steps=9)
    rc = follow(launched.run_dir, poll_s=0.5)
    out = capsys.readouterr().out
    assert rc == 0, out[-2000:]
    alarm_lines = [line for line in out.splitlines() if "ALARM" in line and "grad_norm" in line]
    assert alarm_lines, out[-2000:]
    step = int(alarm_lines[0].split("step ")[1].split(":")[0])
    assert step == 5, alarm_lines[0]  # logging_steps is 1: the alarm names the step of the spike
